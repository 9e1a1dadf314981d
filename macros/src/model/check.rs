//! The rules: every `#[layer]` option is known and in range, and every
//! layer accepts the per-sample shape the previous one produces. One small
//! function per rule; all errors are collected.

use blaze_kernel_dsl::errors::{Errors, closest};
use blaze_spec::{ShapeError, StaticShape};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::ir::{Field, LayerKind, LayerOption, Model, OptionValue, Options, layer_tokens};

/// A per-sample shape: known dims, or (after a nested model or user layer)
/// an expression the compiler evaluates, of type `blaze::nn::StaticShape`.
#[derive(Clone)]
pub enum Shape {
    Known(Vec<usize>),
    Opaque(TokenStream),
}

impl Shape {
    /// An expression of type `StaticShape`.
    pub fn static_tokens(&self) -> TokenStream {
        match self {
            Shape::Known(d) => quote!(::blaze::nn::StaticShape::new(&[#(#d),*])),
            Shape::Opaque(e) => e.clone(),
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
}

/// The checked model.
pub struct Plan {
    pub steps: Vec<Step>,
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
        if i > 0 && field.kind.builtin().is_some_and(|(l, _)| l.takes_ids()) {
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
        steps.push(Step { input: shape.clone(), output: output.clone(), output_def, options });
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

/// Checks every option against the layer kind and fills in defaults.
pub(crate) fn resolve_options(field: &Field) -> syn::Result<Options> {
    let mut errors = Errors::default();
    let mut o = Options::default();
    if let LayerKind::Builtin { layer, .. } = &field.kind {
        o.spec = layer.defaults();
    }
    for opt in &field.options {
        if !field.kind.keys().contains(&opt.key.to_string().as_str()) {
            errors.push(unknown_key(field, opt));
            continue;
        }
        let r = match (&field.kind, &opt.value) {
            (LayerKind::Opaque { .. }, OptionValue::Shape(dims)) => {
                o.output = Some(dims.clone());
                Ok(())
            }
            (LayerKind::Opaque { .. }, _) => {
                Err(syn::Error::new(opt.span, "`output` takes a per-sample shape, e.g. output = [T, 10]"))
            }
            (LayerKind::Builtin { layer, .. }, value) => {
                let value = match value {
                    OptionValue::Int(v) => Some(blaze_spec::Value::Int(*v)),
                    OptionValue::Float(v) => Some(blaze_spec::Value::Float(*v)),
                    OptionValue::Bool(v) => Some(blaze_spec::Value::Bool(*v)),
                    OptionValue::Str(v) => Some(blaze_spec::Value::Str(v)),
                    OptionValue::Shape(_) => None,
                };
                match value {
                    Some(v) => o.spec.set(*layer, &opt.key.to_string(), v).map_err(|e| syn::Error::new(opt.span, e)),
                    None => {
                        Err(syn::Error::new(opt.span, format!("`{}` takes a literal number, bool or string", opt.key)))
                    }
                }
            }
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    errors.finish().map(|()| o)
}

/// The output shape of a built-in layer for a known input, or the error.
pub(crate) fn infer(field: &Field, o: &Options, dims: &[usize], from: &Source<'_>) -> syn::Result<Shape> {
    let LayerKind::Builtin { layer, sizes, .. } = &field.kind else {
        // The compiler checks the nested input; the output comes from its consts.
        return Ok(Shape::Opaque(opaque_output(&field.kind)));
    };
    let me = format!("`{}: {}`", field.ident, field.kind.display());
    if dims.len() > 8 {
        return Err(field_error(field, format!("{me}: its input {} has more than 8 dims", fmt_dims(dims))));
    }
    let input = StaticShape::new(dims);
    match blaze_spec::output(*layer, sizes, &o.spec, input) {
        Ok(out) => Ok(Shape::Known(out.as_slice().to_vec())),
        Err(e) => {
            let src = from.name();
            let msg = e.message(&me, &input, &fmt_dims(dims), Some(&src), &field.ident.to_string());
            // An option's own mistake is shown at the option.
            let key = match e {
                ShapeError::Groups { .. } => Some("groups"),
                ShapeError::Padding { .. } => Some("padding"),
                _ => None,
            };
            let span = key.and_then(|k| field.options.iter().find(|x| x.key == k)).map(|x| x.span);
            Err(match span {
                Some(span) => syn::Error::new(span, msg),
                None => field_error(field, msg),
            })
        }
    }
}

/// After a layer the macro cannot see, the shape is a const expression; a
/// built-in layer's output is computed (and checked) by the const rules in
/// `blaze::nn::shape_rules`, which fail compilation with `what`.
fn opaque_after(field: &Field, o: &Options, prev: &TokenStream, from: &Source<'_>) -> Shape {
    let LayerKind::Builtin { layer, sizes, .. } = &field.kind else {
        return Shape::Opaque(opaque_output(&field.kind));
    };
    let what = format!(
        "`{}: {}` {}, but {} produces another shape (see its OUTPUT_SHAPE)",
        field.ident,
        field.kind.display(),
        layer.expects(sizes),
        from.name()
    );
    let span = field.ty.span();
    let layer = layer_tokens(*layer);
    let options = o.spec_tokens();
    Shape::Opaque(quote_spanned!(span=> ::blaze::nn::shape_rules::layer(
        #layer, &[#(#sizes),*], &#options, #prev, #what)))
}

/// The per-sample output shape of a type the macro cannot see, as a const
/// expression (shapes do not depend on the backend, so the CPU's stands in).
fn opaque_output(kind: &LayerKind) -> TokenStream {
    let cpu = quote!(::blaze::Cpu);
    let ty = kind.opaque_ty(&cpu);
    quote!(<#ty as ::blaze::nn::Block<#cpu>>::OUTPUT)
}
