//! Parsing: the `#[model(...)]` arguments, the struct, each field's type and
//! `#[layer(...)]` options, into the IR. Only syntax is checked here; the
//! rules live in `check.rs`.

use blaze_spec::Layer;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, GenericArgument, Lit, MetaNameValue, PathArguments, Token, Type};

use super::ir::{Field, LayerKind, LayerOption, Model, OptionValue};

/// `#[model(...)]`'s arguments.
#[derive(Default)]
struct ModelArgs {
    input: Option<Expr>,
    /// `fuse = false`: no runs of fields as one kernel, no recomputed
    /// inputs (what a forward body's `fuse = false` turns off too).
    fuse: Option<Expr>,
}

impl ModelArgs {
    const KEYS: [&str; 2] = ["input", "fuse"];

    /// `key = value` pairs, each key known and given once.
    fn parse(attr: TokenStream) -> syn::Result<Self> {
        let mut args = ModelArgs::default();
        for MetaNameValue { path, value, .. } in
            Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse2(attr)?
        {
            let key = path.get_ident().map(ToString::to_string).unwrap_or_default();
            let slot = match key.as_str() {
                "input" => &mut args.input,
                "fuse" => &mut args.fuse,
                _ => {
                    let hint =
                        super::closest(&key, Self::KEYS).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
                    let message = format!(
                        "unknown argument `{}`{hint} (#[model] takes `input` and `fuse`)",
                        path.to_token_stream()
                    );
                    return Err(syn::Error::new(path.span(), message));
                }
            };
            if slot.replace(value).is_some() {
                return Err(syn::Error::new(path.span(), format!("`{key}` is given twice")));
            }
        }
        Ok(args)
    }
}

/// Parses `#[model(attr)] item`. A struct comes back even with errors in
/// some fields (those are left out), with the errors, so that the other
/// rules can still be checked and reported in the same build.
pub fn parse(attr: TokenStream, item: TokenStream) -> syn::Result<(Model, Option<syn::Error>)> {
    let item: syn::Item = syn::parse2(item)?;
    let s = match item {
        syn::Item::Struct(s) => s,
        syn::Item::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "#[model] applies to a struct with one named field per layer, not to an enum",
            ));
        }
        syn::Item::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "#[model] applies to a struct with one named field per layer, not to a union",
            ));
        }
        other => {
            return Err(syn::Error::new(other.span(), "#[model] applies to a struct with one named field per layer"));
        }
    };
    let named = match &s.fields {
        syn::Fields::Named(n) => n,
        syn::Fields::Unnamed(u) => {
            return Err(syn::Error::new(
                u.span(),
                "#[model] needs named fields: each layer's name is its parameter prefix (`conv1.weight`)",
            ));
        }
        syn::Fields::Unit => {
            return Err(syn::Error::new(s.ident.span(), "a model needs at least one layer; this struct has no fields"));
        }
    };
    if !s.generics.params.is_empty() {
        return Err(syn::Error::new(
            s.generics.span(),
            "#[model] makes the model generic over the backend itself; remove these generic parameters",
        ));
    }
    if s.ident == "B" {
        return Err(syn::Error::new(
            s.ident.span(),
            "a #[model] cannot be named `B`: the code it generates names the backend parameter `B`; rename the model",
        ));
    }

    let mut errors = Errors::default();
    // Without arguments the struct is a graph model: its `forward` body
    // (and input shapes) come with `#[model(input = ..)] impl`.
    let graph = attr.is_empty();
    let input = if graph { Ok((Vec::new(), true)) } else { parse_args(attr, s.ident.span()) };
    let (input, fuse) = match input {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            (Vec::new(), true)
        }
    };
    let mut fields = Vec::new();
    for f in &named.named {
        let Some(ident) = f.ident.clone() else { continue };
        let (ty, array) = match (&f.ty, graph) {
            (Type::Array(a), true) => match int_literal(&a.len) {
                Some(n) if n > 0 && n <= MAX_LAYER_ARRAY as i128 => (&*a.elem, Some(n as usize)),
                Some(n) if n > 0 => {
                    errors.push(syn::Error::new(
                        a.len.span(),
                        format!(
                            "an array of {n} layers: the forward pass is unrolled at compile time, \
                             so an array holds at most {MAX_LAYER_ARRAY} layers"
                        ),
                    ));
                    continue;
                }
                _ => {
                    errors.push(syn::Error::new(
                        a.len.span(),
                        "the length of an array of layers must be a positive integer literal",
                    ));
                    continue;
                }
            },
            _ => (&f.ty, None),
        };
        let kind = match layer_kind(ty) {
            Ok(k) => k,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut options = Vec::new();
        let mut attrs = Vec::new();
        for a in &f.attrs {
            if a.path().is_ident("layer") {
                match parse_options(a) {
                    Ok(opts) => options.extend(opts),
                    Err(e) => errors.push(e),
                }
            } else {
                attrs.push(a.clone());
            }
        }
        // A key given twice is an error at its second occurrence.
        for (i, o) in options.iter().enumerate() {
            if options[..i].iter().any(|p| p.key == o.key) {
                errors.push(syn::Error::new(o.key.span(), format!("duplicate `#[layer]` option `{}`", o.key)));
            }
        }
        fields.push(Field { ident, vis: f.vis.clone(), attrs, ty: f.ty.clone(), kind, options, array });
    }
    if named.named.is_empty() {
        errors.push(syn::Error::new(s.ident.span(), "a model needs at least one layer; this struct has no fields"));
    }
    let attrs = s.attrs.iter().filter(|a| !a.path().is_ident("model")).cloned().collect();
    Ok((Model { vis: s.vis, ident: s.ident, attrs, input, fields, graph, fuse }, errors.finish().err()))
}

/// Collects errors so that one expansion reports them all.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// The input dims, and whether to fuse.
fn parse_args(attr: TokenStream, struct_span: Span) -> syn::Result<(Vec<(usize, Span)>, bool)> {
    let missing = || {
        syn::Error::new(
            struct_span,
            "#[model] needs the per-sample input shape, e.g. #[model(input = [1, 28, 28])] (the batch dim is implicit)",
        )
    };
    let args = ModelArgs::parse(attr)?;
    let Some(expr) = args.input else { return Err(missing()) };
    let span = expr.span();
    let Expr::Array(arr) = &expr else {
        return Err(syn::Error::new(span, "`input` is a list of dims, e.g. input = [1, 28, 28]"));
    };
    if arr.elems.is_empty() {
        return Err(syn::Error::new(span, "`input` needs at least one dim"));
    }
    if arr.elems.len() > 8 {
        return Err(syn::Error::new(
            span,
            format!("`input` has {} dims; a per-sample shape has at most 8", arr.elems.len()),
        ));
    }
    let mut dims = Vec::new();
    for e in &arr.elems {
        match int_literal(e) {
            Some(d) if d > MAX_SIZE => {
                return Err(syn::Error::new(
                    e.span(),
                    format!("input dim {d} is larger than any tensor's (at most {MAX_SIZE})"),
                ));
            }
            Some(d) if d > 0 => dims.push((d as usize, e.span())),
            _ => return Err(syn::Error::new(e.span(), "input dims must be positive integer literals")),
        }
    }
    let fuse = match &args.fuse {
        None => true,
        Some(Expr::Lit(syn::ExprLit { lit: Lit::Bool(b), .. })) => b.value,
        Some(other) => return Err(syn::Error::new(other.span(), "`fuse` is `true` or `false`")),
    };
    Ok((dims, fuse))
}

/// The largest size a layer or an input dim may have (the spec's).
pub(crate) const MAX_SIZE: i128 = blaze_spec::MAX_SIZE as i128;

/// The most layers one array field may hold: loops over it are unrolled.
pub(crate) const MAX_LAYER_ARRAY: usize = 1024;

fn int_literal(e: &Expr) -> Option<i128> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => int_literal(&u.expr).map(|v| -v),
        Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

/// Plain value types: never layers, never modules. Shared with
/// `derive(Module)`, so both macros name the same mistakes.
pub(crate) const PLAIN_TYPES: &[&str] = &[
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "bool",
    "char",
    "str",
    "String",
    "PhantomData",
];

/// Containers and handles that are not layers themselves (a model's field
/// is one layer), for a clearer message than a missing trait bound.
const NOT_LAYERS: &[&str] = &["Vec", "Option", "Box", "Rc", "Arc", "HashMap", "Tensor"];

/// Recognises a field's type: a built-in layer with literal const generics,
/// or another type (a nested model or a user layer).
fn layer_kind(ty: &Type) -> syn::Result<LayerKind> {
    let not_a_layer = |span: Span, what: &str| {
        syn::Error::new(
            span,
            format!(
                "`{what}` is not a layer: a #[model] field must be a built-in layer (Linear, Conv2d, Relu, ...), \
                 a nested #[model], or a type implementing `blaze::nn::Block`"
            ),
        )
    };
    // A `$t:ty` of a `macro_rules!` arrives in an invisible group.
    if let Type::Group(g) = ty {
        return layer_kind(&g.elem);
    }
    let Type::Path(tp) = ty else {
        return Err(not_a_layer(ty.span(), &ty.to_token_stream().to_string()));
    };
    if tp.qself.is_some() {
        return Err(not_a_layer(ty.span(), &ty.to_token_stream().to_string()));
    }
    let path = &tp.path;
    let Some(last) = path.segments.last() else { return Err(not_a_layer(ty.span(), "")) };
    let name = last.ident.to_string();
    if PLAIN_TYPES.contains(&name.as_str()) || NOT_LAYERS.contains(&name.as_str()) {
        return Err(not_a_layer(ty.span(), &ty.to_token_stream().to_string().replace(' ', "")));
    }
    // Built-ins are recognised by bare name or through `nn::` / `blaze::nn::`.
    let prefix: Vec<String> = path.segments.iter().rev().skip(1).map(|s| s.ident.to_string()).collect();
    let builtin_path = prefix.is_empty() || prefix.first().is_some_and(|p| p == "nn");
    let layer = Layer::from_name(&name).filter(|_| builtin_path);
    if let Some(layer) = layer {
        if layer == Layer::Map {
            let kernel = match &last.arguments {
                PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
                    syn::GenericArgument::Type(t) => t.clone(),
                    other => {
                        return Err(syn::Error::new(other.span(), "`Map` takes a kernel type: `Map<swish::Kernel>`"));
                    }
                },
                other => {
                    return Err(syn::Error::new(other.span(), "`Map` takes one kernel type: `Map<swish::Kernel>`"));
                }
            };
            let text = kernel.to_token_stream().to_string().replace(' ', "");
            return Ok(LayerKind::Builtin { layer, sizes: Vec::new(), kernel: Some((kernel.to_token_stream(), text)) });
        }
        let wanted = layer.generics();
        if wanted.is_empty() {
            return if matches!(last.arguments, PathArguments::None) {
                Ok(LayerKind::Builtin { layer, sizes: Vec::new(), kernel: None })
            } else {
                Err(syn::Error::new(last.arguments.span(), format!("`{name}` takes no generic arguments")))
            };
        }
        let (n, names) = (wanted.len(), wanted.join(", "));
        let args = const_args(&last.arguments)?;
        if args.len() != n {
            return Err(syn::Error::new(
                last.span(),
                format!(
                    "`{name}` takes {n} const generic argument{} <{names}>, found {}",
                    if n == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        let sizes = args
            .iter()
            .map(|(v, span)| match v {
                Some(v) if *v > MAX_SIZE => {
                    Err(syn::Error::new(*span, format!("`{name}`'s {names} must be at most {MAX_SIZE}, got {v}")))
                }
                Some(v) if *v > 0 => Ok(*v as usize),
                Some(_) => Err(syn::Error::new(*span, format!("`{name}`'s {names} must be positive"))),
                None => Err(syn::Error::new(
                    *span,
                    format!("`{name}`'s {names} must be integer literals, so that #[model] can check shapes"),
                )),
            })
            .collect::<syn::Result<Vec<usize>>>()?;
        return Ok(LayerKind::Builtin { layer, sizes, kernel: None });
    }
    // Another type: the backend goes first among its generic arguments.
    let span = ty.span();
    let mut segments = path.segments.clone();
    let last_seg = segments.pop().ok_or_else(|| not_a_layer(span, ""))?;
    let ident = &last_seg.ident;
    let extra = match &last_seg.arguments {
        PathArguments::None => quote!(),
        PathArguments::AngleBracketed(a) => {
            let args = a.args.iter();
            quote!(#(, #args)*)
        }
        PathArguments::Parenthesized(p) => return Err(not_a_layer(p.span(), &name)),
    };
    let leading = path.leading_colon;
    let segs = segments.iter();
    let path = quote_spanned!(span=> #leading #(#segs ::)* #ident);
    Ok(LayerKind::Opaque { path, extra, name: ty_name(tp) })
}

fn ty_name(tp: &syn::TypePath) -> String {
    tp.to_token_stream().to_string().replace(" < ", "<").replace(" >", ">").replace(" ,", ",").replace(" :: ", "::")
}

type ConstArgs = syn::Result<Vec<(Option<i128>, Span)>>;

fn const_args(args: &PathArguments) -> ConstArgs {
    match args {
        PathArguments::None => Ok(Vec::new()),
        PathArguments::AngleBracketed(a) => Ok(a
            .args
            .iter()
            .map(|g| match g {
                GenericArgument::Const(e) => (int_literal(e), e.span()),
                other => (None, other.span()),
            })
            .collect()),
        PathArguments::Parenthesized(p) => Err(syn::Error::new(p.span(), "layer types take angle-bracketed generics")),
    }
}

fn parse_options(attr: &syn::Attribute) -> syn::Result<Vec<LayerOption>> {
    let list = attr.meta.require_list()?;
    let expected = |span| syn::Error::new(span, "expected `key = value`, e.g. #[layer(padding = 2)]");
    let metas =
        list.parse_args_with(Punctuated::<syn::Meta, Token![,]>::parse_terminated).map_err(|e| expected(e.span()))?;
    let mut out = Vec::new();
    for m in metas {
        let syn::Meta::NameValue(nv) = &m else { return Err(expected(m.span())) };
        let Some(key) = nv.path.get_ident().cloned() else {
            return Err(syn::Error::new(nv.path.span(), "expected a plain option name"));
        };
        let value = match &nv.value {
            Expr::Array(a) => OptionValue::Shape(a.elems.iter().cloned().collect()),
            v => literal_value(v)
                .ok_or_else(|| syn::Error::new(v.span(), format!("`{key}` takes a literal number, bool or string")))?,
        };
        out.push(LayerOption { key, value, span: nv.value.span() });
    }
    Ok(out)
}

fn literal_value(e: &Expr) -> Option<OptionValue> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse().ok().map(OptionValue::Int),
            Lit::Float(f) => f.base10_parse().ok().map(OptionValue::Float),
            Lit::Bool(b) => Some(OptionValue::Bool(b.value)),
            Lit::Str(s) => Some(OptionValue::Str(s.value())),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match literal_value(&u.expr)? {
            OptionValue::Int(i) => Some(OptionValue::Int(-i)),
            OptionValue::Float(f) => Some(OptionValue::Float(-f)),
            OptionValue::Bool(_) | OptionValue::Str(_) | OptionValue::Shape(_) => None,
        },
        Expr::Group(g) => literal_value(&g.expr),
        _ => None,
    }
}
