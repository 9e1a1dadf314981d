//! The rules: every `#[layer]` option is known and in range, and every
//! layer accepts the per-sample shape the previous one produces. One small
//! function per rule; all errors are collected.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::attr::Errors;
use super::ir::{Field, LayerKind, LayerOption, Model, OptionValue};

/// A per-sample shape: known dims, or (after a nested model or user layer)
/// an expression the compiler evaluates, of type `blaze::nn::StaticShape`.
#[derive(Clone)]
pub enum Shape {
    Known(Vec<usize>),
    Opaque(TokenStream),
}

impl Shape {
    /// The tensor rank (with the batch dim) as tokens usable as a const generic.
    pub fn rank_tokens(&self) -> TokenStream {
        match self {
            Shape::Known(d) => {
                let r = d.len() + 1;
                quote!(#r)
            }
            Shape::Opaque(e) => quote!({ (#e).rank + 1 }),
        }
    }

    /// An expression of type `StaticShape`.
    pub fn static_tokens(&self) -> TokenStream {
        match self {
            Shape::Known(d) => quote!(::blaze::nn::StaticShape::new(&[#(#d),*])),
            Shape::Opaque(e) => e.clone(),
        }
    }
}

/// Resolved options of one layer, with defaults filled in.
#[derive(Clone, Debug)]
pub struct Options {
    pub stride: Option<usize>,
    pub padding: usize,
    pub dilation: usize,
    pub groups: usize,
    pub bias: bool,
    pub p: Option<f64>,
    pub negative_slope: Option<f64>,
    pub eps: Option<f64>,
    pub momentum: Option<f64>,
    /// A nested model's per-sample output shape (forward bodies only).
    pub output: Option<Vec<syn::Expr>>,
}

impl Default for Options {
    /// PyTorch's defaults.
    fn default() -> Self {
        Options {
            stride: None,
            padding: 0,
            dilation: 1,
            groups: 1,
            bias: true,
            p: None,
            negative_slope: None,
            eps: None,
            momentum: None,
            output: None,
        }
    }
}

/// One checked layer.
pub struct Step {
    pub input: Shape,
    pub output: Shape,
    /// When the output is only known to the compiler: the const item that
    /// computes it (named by `output`), so each rule is evaluated once.
    pub output_def: Option<TokenStream>,
    pub options: Options,
    /// Trainable scalars, when the macro can count them.
    pub params: Option<usize>,
}

/// The checked model.
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The model's output shape (`check` rejects models without layers).
    pub fn output(&self) -> Option<&Shape> {
        self.steps.last().map(|s| &s.output)
    }
}

/// Checks the `#[layer]` options of every field, without shapes.
pub fn check_options(model: &Model) -> syn::Result<()> {
    let mut errors = Errors::default();
    for f in &model.fields {
        if let Err(e) = resolve_options(f) {
            errors.push(e);
        }
    }
    errors.finish()
}

/// The name of the const holding step `i`'s output shape.
fn shape_const(model: &Model, i: usize) -> TokenStream {
    let name = syn::ext::IdentExt::unraw(&model.ident).to_string().to_uppercase();
    let id = quote::format_ident!("__BLAZE_{}_SHAPE_{}", name, i);
    quote!(#id)
}

pub fn check(model: &Model) -> syn::Result<Plan> {
    let mut errors = Errors::default();
    let mut shape = Shape::Known(model.input.iter().map(|d| d.0).collect());
    let mut prev: Option<&Field> = None;
    let mut steps = Vec::new();
    for (i, field) in model.fields.iter().enumerate() {
        let options = match resolve_options(field) {
            Ok(o) => o,
            Err(e) => {
                errors.push(e);
                Options::default()
            }
        };
        let from = Source { prev };
        if let Some(opt) = field.options.iter().find(|o| o.key == "output") {
            errors.push(syn::Error::new(
                opt.key.span(),
                "`output` states a nested model's output shape in a forward body; a model of fields in \
                 sequence reads it from the nested model",
            ));
        }
        if i > 0 && matches!(field.kind, LayerKind::Embedding { .. }) {
            errors.push(field_error(
                field,
                format!(
                    "`{}: {}` takes token ids, so it must be the first layer; {} produces floats",
                    field.ident,
                    field.kind.display(),
                    from.name()
                ),
            ));
        }
        let computed = match &shape {
            Shape::Known(dims) => match infer(field, &options, dims, &from) {
                Ok(out) => out,
                Err(e) => {
                    errors.push(e);
                    // Stop inferring: later layers would only repeat the error.
                    return errors.finish().and(Err(syn::Error::new(Span::call_site(), "unreachable")));
                }
            },
            Shape::Opaque(expr) => opaque_after(field, &options, expr, &from),
        };
        let (output, output_def) = match computed {
            Shape::Opaque(def) => (Shape::Opaque(shape_const(model, i)), Some(def)),
            known => (known, None),
        };
        let params = count_params(&field.kind, &options);
        steps.push(Step { input: shape.clone(), output: output.clone(), output_def, options, params });
        shape = output;
        prev = Some(field);
    }
    errors.finish()?;
    Ok(Plan { steps })
}

/// Where a layer's input comes from, for messages.
pub(crate) struct Source<'a> {
    pub(crate) prev: Option<&'a Field>,
}

impl Source<'_> {
    fn name(&self) -> String {
        match self.prev {
            Some(f) => format!("`{}`", f.ident),
            None => "the model input".to_owned(),
        }
    }
}

fn field_error(field: &Field, msg: String) -> syn::Error {
    syn::Error::new_spanned(&field.ty, msg)
}

fn fmt_dims(d: &[usize]) -> String {
    format!("[{}]", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

/// Levenshtein distance, for "did you mean" suggestions.
/// The candidate nearest to `name` by edit distance, if within two edits:
/// the "did you mean" of every diagnostic.
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn unknown_key(field: &Field, opt: &LayerOption) -> syn::Error {
    let keys = field.kind.keys();
    let key = opt.key.to_string();
    let name = field.kind.display();
    let msg = if keys.is_empty() {
        format!("`{name}` takes no `#[layer]` options")
    } else {
        let best = closest(&key, keys.iter().copied());
        let list = keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
        match best {
            Some(b) => format!("unknown option `{key}` for `{name}`; did you mean `{b}`? (it takes {list})"),
            None => format!("unknown option `{key}` for `{name}` (it takes {list})"),
        }
    };
    syn::Error::new(opt.key.span(), msg)
}

fn as_count(opt: &LayerOption, min: i128) -> syn::Result<usize> {
    const MAX: i128 = super::attr::MAX_SIZE;
    match opt.value {
        OptionValue::Int(v) if v > MAX => {
            Err(syn::Error::new(opt.span, format!("`{}` is {v}, more than any layer takes (at most {MAX})", opt.key)))
        }
        OptionValue::Int(v) if v >= min => Ok(v as usize),
        OptionValue::Int(v) => Err(syn::Error::new(
            opt.span,
            format!(
                "`{}` must be {} integer, got {v}",
                opt.key,
                if min == 0 { "a non-negative" } else { "a positive" }
            ),
        )),
        _ => Err(syn::Error::new(opt.span, format!("`{}` takes an integer", opt.key))),
    }
}

fn as_float(opt: &LayerOption) -> syn::Result<f64> {
    match opt.value {
        OptionValue::Float(v) => Ok(v),
        OptionValue::Int(v) => Ok(v as f64),
        OptionValue::Bool(_) | OptionValue::Shape(_) => {
            Err(syn::Error::new(opt.span, format!("`{}` takes a number", opt.key)))
        }
    }
}

/// Checks every option against the layer kind and fills in defaults.
pub(crate) fn resolve_options(field: &Field) -> syn::Result<Options> {
    let mut errors = Errors::default();
    let mut o = Options::default();
    for opt in &field.options {
        if !field.kind.keys().contains(&opt.key.to_string().as_str()) {
            errors.push(unknown_key(field, opt));
            continue;
        }
        let r = match opt.key.to_string().as_str() {
            "stride" => as_count(opt, 1).map(|v| o.stride = Some(v)),
            "padding" => as_count(opt, 0).map(|v| o.padding = v),
            "dilation" => as_count(opt, 1).map(|v| o.dilation = v),
            "groups" => as_count(opt, 1).map(|v| o.groups = v),
            "bias" => match opt.value {
                OptionValue::Bool(b) => {
                    o.bias = b;
                    Ok(())
                }
                _ => Err(syn::Error::new(opt.span, "`bias` takes `true` or `false`")),
            },
            "p" => as_float(opt).and_then(|p| {
                if (0.0..1.0).contains(&p) {
                    o.p = Some(p);
                    Ok(())
                } else {
                    Err(syn::Error::new(opt.span, format!("dropout probability `p` must lie in [0, 1), got {p}")))
                }
            }),
            "negative_slope" => as_float(opt).map(|v| o.negative_slope = Some(v)),
            "output" => match &opt.value {
                OptionValue::Shape(dims) => {
                    o.output = Some(dims.clone());
                    Ok(())
                }
                _ => Err(syn::Error::new(opt.span, "`output` takes a per-sample shape, e.g. output = [T, 10]")),
            },
            "eps" => as_float(opt).and_then(|v| {
                if v > 0.0 {
                    o.eps = Some(v);
                    Ok(())
                } else {
                    Err(syn::Error::new(opt.span, format!("`eps` must be positive, got {v}")))
                }
            }),
            "momentum" => as_float(opt).and_then(|v| {
                if (0.0..=1.0).contains(&v) {
                    o.momentum = Some(v);
                    Ok(())
                } else {
                    Err(syn::Error::new(opt.span, format!("`momentum` must lie in [0, 1], got {v}")))
                }
            }),
            _ => Ok(()),
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    errors.finish().map(|()| o)
}

/// The number of elements of `dims`, if it fits a `usize`.
fn numel(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// The runtime's `shape::window_output_size`, which a proc macro cannot
/// call; `None` for a window that does not fit, or sizes that overflow.
fn window(size: usize, k: usize, stride: usize, pad: usize, dil: usize) -> Option<usize> {
    let span = dil.checked_mul(k.checked_sub(1)?)?.checked_add(1)?;
    let padded = pad.checked_mul(2)?.checked_add(size)?;
    (span <= padded && stride > 0).then(|| (padded - span) / stride + 1)
}

/// The output shape of a built-in layer for a known input, or the error.
pub(crate) fn infer(field: &Field, o: &Options, dims: &[usize], from: &Source<'_>) -> syn::Result<Shape> {
    let me = format!("`{}: {}`", field.ident, field.kind.display());
    let got = fmt_dims(dims);
    let src = from.name();
    let err = |msg: String| Err(field_error(field, msg));
    let out = match &field.kind {
        LayerKind::Linear { i, o: out } => {
            let Some(&last) = dims.last() else { return err(format!("{me} needs an input with a feature dim")) };
            if last != *i {
                let n = numel(dims).unwrap_or(usize::MAX);
                if dims.len() > 1 && n == *i {
                    return err(format!(
                        "{me} expects {i} input features, but {src} produces {got}; \
                         add a `Flatten` layer before `{}` to get [{n}]",
                        field.ident
                    ));
                }
                let flat = if dims.len() > 1 { format!(" ({n} after Flatten)") } else { String::new() };
                return err(format!("{me} expects {i} input features, but {src} produces {got}{flat}"));
            }
            let mut d = dims[..dims.len() - 1].to_vec();
            d.push(*out);
            d
        }
        LayerKind::Conv2d { cin, cout, k } => {
            let [c, h, w] = image(dims, &me, &src, "[C, H, W]", field)?;
            if c != *cin {
                return err(format!("{me} expects {cin} input channels, but {src} produces {got} ({c} channels)"));
            }
            if cin % o.groups != 0 || cout % o.groups != 0 {
                let span = field.options.iter().find(|x| x.key == "groups").map_or(field.ty.span(), |x| x.span);
                return Err(syn::Error::new(
                    span,
                    format!("{me}: {} groups must divide both {cin} input and {cout} output channels", o.groups),
                ));
            }
            let stride = o.stride.unwrap_or(1);
            match (window(h, *k, stride, o.padding, o.dilation), window(w, *k, stride, o.padding, o.dilation)) {
                (Some(oh), Some(ow)) => vec![*cout, oh, ow],
                _ => {
                    return err(format!(
                        "{me}: the {k}x{k} kernel (dilation {}) is larger than the {h}x{w} input from {src} \
                         (padding {})",
                        o.dilation, o.padding
                    ));
                }
            }
        }
        LayerKind::MaxPool2d { k } | LayerKind::AvgPool2d { k } => {
            let [c, h, w] = image(dims, &me, &src, "[C, H, W]", field)?;
            if o.padding.saturating_mul(2) > *k {
                let span = field.options.iter().find(|x| x.key == "padding").map_or(field.ty.span(), |x| x.span);
                return Err(syn::Error::new(
                    span,
                    format!("{me}: padding {} must be at most half the window {k}", o.padding),
                ));
            }
            let stride = o.stride.unwrap_or(*k);
            match (window(h, *k, stride, o.padding, 1), window(w, *k, stride, o.padding, 1)) {
                (Some(oh), Some(ow)) => vec![c, oh, ow],
                _ => return err(format!("{me}: the {k}x{k} window is larger than the {h}x{w} input from {src}")),
            }
        }
        LayerKind::GlobalAvgPool => {
            let [c, _, _] = image(dims, &me, &src, "[C, H, W]", field)?;
            vec![c]
        }
        LayerKind::Flatten => match numel(dims) {
            Some(n) => vec![n],
            None => return err(format!("{me}: {src} produces {got}, more elements than a tensor can hold")),
        },
        LayerKind::BatchNorm2d { c } => {
            let [ch, _, _] = image(dims, &me, &src, &format!("[{c}, H, W]"), field)?;
            if ch != *c {
                return err(format!("{me} expects {c} channels, but {src} produces {got} ({ch} channels)"));
            }
            dims.to_vec()
        }
        LayerKind::LayerNorm { n } => {
            if dims.last() != Some(n) {
                return err(format!("{me} normalises a last dim of {n}, but {src} produces {got}"));
            }
            dims.to_vec()
        }
        LayerKind::Embedding { d, .. } => {
            let mut v = dims.to_vec();
            v.push(*d);
            v
        }
        LayerKind::Relu
        | LayerKind::LeakyRelu
        | LayerKind::Gelu
        | LayerKind::Sigmoid
        | LayerKind::Tanh
        | LayerKind::Map { .. }
        | LayerKind::Dropout => dims.to_vec(),
        LayerKind::Opaque { .. } => {
            // The compiler checks the nested input; the output comes from its consts.
            return Ok(Shape::Opaque(opaque_output(&field.kind)));
        }
    };
    Ok(Shape::Known(out))
}

fn image(dims: &[usize], me: &str, src: &str, want: &str, field: &Field) -> syn::Result<[usize; 3]> {
    match dims {
        [c, h, w] => Ok([*c, *h, *w]),
        _ => Err(field_error(field, format!("{me} expects an image {want}, but {src} produces {}", fmt_dims(dims)))),
    }
}

/// After a layer the macro cannot see, the shape is a const expression; a
/// built-in layer's output is computed (and checked) by the const rules in
/// `blaze::nn::shape_rules`, which fail compilation with `what`.
fn opaque_after(field: &Field, o: &Options, prev: &TokenStream, from: &Source<'_>) -> Shape {
    let expects = match &field.kind {
        LayerKind::Linear { i, .. } => format!("expects {i} input features"),
        LayerKind::Conv2d { cin, k, .. } => format!("expects an image of {cin} channels that its {k}x{k} kernel fits"),
        LayerKind::MaxPool2d { k } | LayerKind::AvgPool2d { k } => {
            format!("expects an image that its {k}x{k} window fits")
        }
        LayerKind::GlobalAvgPool => "expects an image [C, H, W]".to_owned(),
        LayerKind::BatchNorm2d { c } => format!("expects an image of {c} channels"),
        LayerKind::LayerNorm { n } => format!("expects a last dim of {n}"),
        _ => "does not accept its input".to_owned(),
    };
    let what = format!(
        "`{}: {}` {expects}, but {} produces another shape (see its OUTPUT_SHAPE)",
        field.ident,
        field.kind.display(),
        from.name()
    );
    let stride = o.stride;
    let span = field.ty.span();
    let e = match &field.kind {
        LayerKind::Linear { i, o: out } => {
            quote_spanned!(span=> ::blaze::nn::shape_rules::linear(#prev, #i, #out, #what))
        }
        LayerKind::Conv2d { cin, cout, k } => {
            let (s, p, d, g) = (stride.unwrap_or(1), o.padding, o.dilation, o.groups);
            quote_spanned!(span=> ::blaze::nn::shape_rules::conv2d(#prev, #cin, #cout, #k, #s, #p, #d, #g, #what))
        }
        LayerKind::MaxPool2d { k } | LayerKind::AvgPool2d { k } => {
            let (s, p) = (stride.unwrap_or(*k), o.padding);
            quote_spanned!(span=> ::blaze::nn::shape_rules::pool2d(#prev, #k, #s, #p, #what))
        }
        LayerKind::GlobalAvgPool => quote_spanned!(span=> ::blaze::nn::shape_rules::global_avg_pool(#prev, #what)),
        LayerKind::Flatten => quote_spanned!(span=> ::blaze::nn::shape_rules::flatten(#prev)),
        LayerKind::BatchNorm2d { c } => quote_spanned!(span=> ::blaze::nn::shape_rules::batch_norm2d(#prev, #c, #what)),
        LayerKind::LayerNorm { n } => quote_spanned!(span=> ::blaze::nn::shape_rules::layer_norm(#prev, #n, #what)),
        LayerKind::Opaque { .. } => opaque_output(&field.kind),
        // Embedding after another layer is reported by `check`.
        _ => prev.clone(),
    };
    Shape::Opaque(e)
}

/// The per-sample output shape of a type the macro cannot see, as a const
/// expression (shapes do not depend on the backend, so the CPU's stands in).
fn opaque_output(kind: &LayerKind) -> TokenStream {
    let cpu = quote!(::blaze::Cpu);
    let ty = kind.opaque_ty(&cpu);
    quote!(<#ty as ::blaze::nn::Block<#cpu>>::OUTPUT)
}

/// Trainable scalars of a built-in layer.
pub(crate) fn count_params(kind: &LayerKind, o: &Options) -> Option<usize> {
    let bias = |n: usize| if o.bias { n } else { 0 };
    Some(match kind {
        // Saturating: absurd sizes fail to compile elsewhere, not here.
        LayerKind::Linear { i, o: out } => i.saturating_mul(*out).saturating_add(bias(*out)),
        LayerKind::Conv2d { cin, cout, k } => {
            cout.saturating_mul(cin / o.groups.max(1)).saturating_mul(k.saturating_mul(*k)).saturating_add(bias(*cout))
        }
        LayerKind::BatchNorm2d { c } => c.saturating_mul(2),
        LayerKind::LayerNorm { n } => n.saturating_mul(2),
        LayerKind::Embedding { v, d } => v.saturating_mul(*d),
        LayerKind::Opaque { .. } => return None,
        _ => 0,
    })
}
