//! Parsing: the `#[model(...)]` arguments, the struct, each field's type and
//! `#[layer(...)]` options, into the IR. The attributes are read by darling
//! receivers (`ModelArgs`, `LayerOptions`) whose values are types of their
//! own (`InputShape`, `InputShapes`, `Fuse`), parsed with syn inside, so
//! that each error says what was expected at the tokens that are wrong.
//! Only syntax is checked here; the rules live in `check.rs`.

use blaze_spec::Layer;
use darling::ast::NestedMeta;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, GenericArgument, Lit, Meta, PathArguments, Type};

use super::ir::{Field, LayerKind, LayerOption, LoadEntry, Model, OptionValue};
use super::load::check_load;
use crate::meta;
use blaze_kernel_dsl::errors::Errors;

pub(crate) use super::args::{InputShape, InputShapes, MAX_SIZE, ModelArgs, Precision, int_literal};

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
    let (input, fuse, precision) = if graph {
        (Vec::new(), true, None)
    } else {
        // Options alone on a struct: likely a forward body's, put on its struct.
        let options_alone = attr.clone().into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "fuse" || i == "precision",
            _ => false,
        });
        let missing = || {
            let hint = if options_alone {
                "; a model with a forward body keeps #[model] on its struct bare and takes `fuse` and `precision` \
                 on its #[model(input = ..)] impl"
            } else {
                ""
            };
            Error::custom(format!(
                "#[model] needs the per-sample input shape, e.g. #[model(input = [1, 28, 28])] (the batch dim is implicit){hint}"
            ))
            .with_span(&s.ident)
        };
        let mut args_errors = Error::accumulator();
        let args = ModelArgs::<InputShape>::parse(attr, missing, &mut args_errors);
        if let Err(e) = args_errors.finish() {
            errors.push(e.into());
        }
        (args.input.map(|InputShape(dims)| dims).unwrap_or_default(), args.fuse, args.precision)
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
        let mut load = Vec::new();
        for a in &f.attrs {
            if a.path().is_ident("load") {
                match a.parse_args_with(syn::punctuated::Punctuated::<LoadEntry, syn::Token![,]>::parse_terminated) {
                    Ok(entries) => load.extend(entries),
                    Err(e) => errors.push(e),
                }
            } else if a.path().is_ident("layer") {
                match LayerOptions::from_meta(&a.meta) {
                    Ok(LayerOptions(opts)) => {
                        for o in opts {
                            match o {
                                Ok(o) => options.push(o),
                                Err(e) => errors.push(e.into()),
                            }
                        }
                    }
                    Err(e) => errors.push(e.into()),
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
        check_load(&load, &kind, &options, array, &mut errors);
        fields.push(Field { ident, vis: f.vis.clone(), attrs, ty: f.ty.clone(), kind, options, array, load });
    }
    if named.named.is_empty() {
        errors.push(syn::Error::new(s.ident.span(), "a model needs at least one layer; this struct has no fields"));
    }
    let attrs = s.attrs.iter().filter(|a| !a.path().is_ident("model")).cloned().collect();
    Ok((Model { vis: s.vis, ident: s.ident, attrs, input, fields, graph, fuse, precision }, errors.finish().err()))
}

/// The most layers one array field may hold: loops over it are unrolled.
pub(crate) const MAX_LAYER_ARRAY: usize = 1024;

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

/// `#[layer(key = value, ...)]`: the options in the order written, each
/// parsed on its own, so that one mistake does not hide the others. Which
/// keys a layer takes, and the values' ranges, are the rules of `check.rs`.
pub(crate) struct LayerOptions(pub Vec<darling::Result<LayerOption>>);

impl LayerOptions {
    const EXAMPLE: &str = "#[layer(padding = 2)]";
    const SYNTAX: meta::Syntax = meta::Syntax { item: "`key = value`", example: Self::EXAMPLE };
}

impl FromMeta for LayerOptions {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let Meta::List(list) = item else {
            let message = format!("expected `key = value` options in parentheses, e.g. {}", Self::EXAMPLE);
            return Err(Error::custom(message).with_span(item));
        };
        let mut errors = Error::accumulator();
        let items = meta::items(list.tokens.clone(), &Self::SYNTAX, &mut errors).unwrap_or_default();
        let mut options: Vec<_> = errors.into_inner().into_iter().map(Err).collect();
        options.extend(Self::from_list(&items)?.0);
        Ok(LayerOptions(options))
    }

    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        Ok(LayerOptions(items.iter().map(layer_option).collect()))
    }
}

/// One `key = value` of `#[layer(...)]`.
fn layer_option(item: &NestedMeta) -> darling::Result<LayerOption> {
    let syntax = LayerOptions::SYNTAX;
    let expected = || format!("expected {}, e.g. {}", syntax.item, syntax.example);
    let (path, value) = match item {
        NestedMeta::Meta(Meta::NameValue(nv)) => (&nv.path, Ok(&nv.value)),
        NestedMeta::NameValueInvalidExpr(nv) => (&nv.path, Err(nv)),
        NestedMeta::Meta(other) => return Err(Error::custom(expected()).with_span(other)),
        NestedMeta::Lit(lit) => return Err(Error::custom(expected()).with_span(lit)),
    };
    let Some(key) = path.get_ident().cloned() else {
        let found = darling::util::path_to_string(path);
        return Err(Error::custom(format!("expected a plain option name, found `{found}`")).with_span(path));
    };
    let literal = format!("`{key}` takes a literal number, bool or string");
    let value_expr = value.map_err(|nv| meta::invalid_value(nv, &literal))?;
    let value = match value_expr {
        Expr::Array(a) => OptionValue::Shape(a.elems.iter().cloned().collect()),
        v => literal_value(v).ok_or_else(|| Error::custom(&literal).with_span(v))?,
    };
    Ok(LayerOption { key, value, span: value_expr.span() })
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

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;
    use syn::parse_quote;

    use super::*;

    /// Every message of `errors`, as the user sees them.
    fn messages(errors: darling::error::Accumulator) -> Vec<String> {
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => syn::Error::from(e).into_iter().map(|e| e.to_string()).collect(),
        }
    }

    /// `#[model(tokens)]` on a struct: its input dims, `fuse`, and every error.
    fn struct_args(tokens: TokenStream) -> (Option<Vec<usize>>, bool, Vec<String>) {
        let mut errors = Error::accumulator();
        let args = ModelArgs::<InputShape>::parse(tokens, || Error::custom("missing input"), &mut errors);
        let dims = args.input.map(|InputShape(d)| d.into_iter().map(|(d, _)| d).collect());
        (dims, args.fuse, messages(errors))
    }

    #[test]
    fn model_arguments_parse() {
        assert_eq!(struct_args(quote!(input = [1, 28, 28])), (Some(vec![1, 28, 28]), true, vec![]));
        assert_eq!(struct_args(quote!(fuse = false, input = [4])), (Some(vec![4]), false, vec![]));
        // A `$e:expr` of a `macro_rules!` arrives in an invisible group.
        let grouped = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote!([2, 3]));
        assert_eq!(struct_args(quote!(input = #grouped)), (Some(vec![2, 3]), true, vec![]));
    }

    #[test]
    fn precision_parses() {
        let precision = |tokens: TokenStream| {
            let mut errors = Error::accumulator();
            let args = ModelArgs::<InputShape>::parse(tokens, || Error::custom("missing input"), &mut errors);
            assert!(errors.finish().is_ok());
            args.precision
        };
        assert_eq!(precision(quote!(input = [4], precision = bf16)), Some(Precision("Bf16")));
        assert_eq!(precision(quote!(precision = "f16", input = [4])), Some(Precision("F16")));
        assert_eq!(precision(quote!(input = [4], precision = f32)), Some(Precision("F32")));
        assert_eq!(precision(quote!(input = [4])), None);
        assert_eq!(Precision("Bf16").name(), "bf16");
    }

    #[test]
    fn each_mistake_in_model_arguments_has_its_message() {
        let cases: Vec<(TokenStream, &[&str])> = vec![
            (quote!(input = [4], fuse = 1), &["`fuse` is `true` or `false`"]),
            (quote!(input = [4], precision = fp8), &["unknown precision `fp8`: `precision` is `bf16`, `f16` or `f32`"]),
            (quote!(input = [4], precision = 16), &["`precision` is `bf16`, `f16` or `f32`"]),
            (quote!(input = [4], precision), &["`precision` is `bf16`, `f16` or `f32`: write `precision = bf16`"]),
            (quote!(input = [4], precision = bf16, precision = f16), &["`precision` is given twice"]),
            (quote!(input = [4], fuse), &["`fuse` is `true` or `false`: write `fuse = false`"]),
            (
                quote!(input = [4], fusion = false),
                &["unknown argument `fusion` (#[model] takes `input`, `fuse` and `precision`)"],
            ),
            (
                quote!(input = [4], fusee = false),
                &["unknown argument `fusee`; did you mean `fuse`? (#[model] takes `input`, `fuse` and `precision`)"],
            ),
            (
                quote!(input = [4], a::b = 1),
                &["unknown argument `a::b` (#[model] takes `input`, `fuse` and `precision`)"],
            ),
            (quote!(input = [4], input = [5]), &["`input` is given twice"]),
            (quote!(fuse = false), &["missing input"]),
            (quote!(), &["missing input"]),
            (quote!(input = 4), &["`input` is a list of dims, e.g. input = [1, 28, 28]"]),
            (quote!(input), &["`input` is a list of dims, e.g. input = [1, 28, 28]"]),
            (quote!(input = []), &["`input` needs at least one dim"]),
            (
                quote!(input = pub, fuse = pub),
                &["`input` is a list of dims, e.g. input = [1, 28, 28]", "`fuse` is `true` or `false`"],
            ),
            (quote!(input = [1, 1, 1, 1, 1, 1, 1, 1, 1]), &["`input` has 9 dims; a per-sample shape has at most 8"]),
            (
                quote!(input = [0, -1, n, 4, 99999999999999]),
                &[
                    "input dims must be positive integer literals",
                    "input dims must be positive integer literals",
                    "input dims must be positive integer literals",
                    "input dim 99999999999999 is larger than any tensor's (at most 2147483647)",
                ],
            ),
            (quote!(4, input = [4]), &["expected `key = value`, e.g. #[model(input = [1, 28, 28])]"]),
            (
                quote!(input = [4] fuse = false),
                &["expected `,`; expected `key = value`, e.g. #[model(input = [1, 28, 28])]"],
            ),
        ];
        for (tokens, expected) in cases {
            let (_, _, errors) = struct_args(tokens.clone());
            assert_eq!(errors, expected, "#[model({tokens})]");
        }
    }

    /// Every mistake is reported, and what is right is kept: a bad `fuse`
    /// or an unknown key does not lose the input shape.
    #[test]
    fn model_arguments_report_every_mistake_and_keep_the_rest() {
        let (dims, fuse, errors) = struct_args(quote!(inptu = [4], fuse = 2, input = [3], fuse = true));
        assert_eq!(dims, Some(vec![3]));
        assert!(fuse);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("did you mean `input`?")), "{errors:?}");
        assert!(errors.contains(&"`fuse` is given twice".to_owned()), "{errors:?}");
    }

    /// `#[model(tokens)]` on the impl of a forward body: each input's dims, and every error.
    fn impl_args(tokens: TokenStream) -> (Option<Vec<usize>>, Vec<String>) {
        let mut errors = Error::accumulator();
        let args = ModelArgs::<InputShapes>::parse(tokens, || Error::custom("missing input"), &mut errors);
        (args.input.map(|InputShapes(s)| s.iter().map(Vec::len).collect()), messages(errors))
    }

    #[test]
    fn forward_body_input_shapes_parse() {
        assert_eq!(impl_args(quote!(input = [T, 64])), (Some(vec![2]), vec![]));
        assert_eq!(impl_args(quote!(input = ([T, 64], [T]), fuse = false)), (Some(vec![2, 1]), vec![]));
        assert_eq!(impl_args(quote!(input = ([T, 64]))), (Some(vec![2]), vec![]));
        let (_, errors) = impl_args(quote!(input = ()));
        assert_eq!(errors, ["a model takes at least one input: `input = [T, 64]`"]);
        let (_, errors) = impl_args(quote!(input = ([T], T, 4)));
        assert_eq!(errors, ["an input shape is a list of dims, e.g. [T, 64]"; 2]);
        let (_, errors) = impl_args(quote!(input = pub(crate)));
        assert_eq!(errors, [InputShapes::EXPECTED]);
        let (_, errors) = impl_args(quote!(input = [T], fusion = false));
        assert_eq!(errors, ["unknown argument `fusion` (#[model] takes `input`, `fuse` and `precision`)"]);
    }

    /// One `#[layer]` attribute: its options, and every error.
    fn layer(attr: syn::Attribute) -> (Vec<(String, OptionValue)>, Vec<String>) {
        let mut errors = Error::accumulator();
        let mut options = Vec::new();
        match LayerOptions::from_meta(&attr.meta) {
            Ok(LayerOptions(opts)) => {
                for o in opts {
                    if let Some(o) = errors.handle(o) {
                        options.push((o.key.to_string(), o.value));
                    }
                }
            }
            Err(e) => errors.push(e),
        }
        (options, messages(errors))
    }

    #[test]
    fn layer_options_parse_in_order() {
        let (options, errors) =
            layer(parse_quote!(#[layer(padding = 1, stride = -2, p = 0.5, bias = false, mode = "bilinear")]));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            options,
            [
                ("padding".to_owned(), OptionValue::Int(1)),
                ("stride".to_owned(), OptionValue::Int(-2)),
                ("p".to_owned(), OptionValue::Float(0.5)),
                ("bias".to_owned(), OptionValue::Bool(false)),
                ("mode".to_owned(), OptionValue::Str("bilinear".to_owned())),
            ]
        );
        let (options, errors) = layer(parse_quote!(#[layer(output = [T, 10])]));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(matches!(&options[..], [(k, OptionValue::Shape(dims))] if k == "output" && dims.len() == 2));
        assert_eq!(layer(parse_quote!(#[layer()])), (vec![], vec![]));
    }

    /// Each bad option is reported; the good ones around it are kept, so
    /// that `check.rs` still checks their values.
    #[test]
    fn every_bad_layer_option_is_reported_and_the_others_kept() {
        let (options, errors) = layer(parse_quote!(#[layer(1, bias, a::b = 1, padding = foo, eps = 1e-5, p = pub)]));
        assert_eq!(options, [("eps".to_owned(), OptionValue::Float(1e-5))]);
        assert_eq!(
            errors,
            [
                "expected `key = value`, e.g. #[layer(padding = 2)]",
                "expected `key = value`, e.g. #[layer(padding = 2)]",
                "expected a plain option name, found `a::b`",
                "`padding` takes a literal number, bool or string",
                "`p` takes a literal number, bool or string",
            ]
        );
        for attr in [parse_quote!(#[layer]), parse_quote!(#[layer = 1])] {
            let (_, errors) = layer(attr);
            assert_eq!(errors, ["expected `key = value` options in parentheses, e.g. #[layer(padding = 2)]"]);
        }
        let (_, errors) = layer(parse_quote!(#[layer(padding = 1 stride = 2)]));
        assert_eq!(errors, ["expected `,`; expected `key = value`, e.g. #[layer(padding = 2)]"]);
    }
}
