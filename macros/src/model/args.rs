//! `#[model(...)]`'s arguments as darling receivers: the input shapes,
//! the precision and whether to fuse, each a type that parses itself with
//! syn and says what was expected at the tokens that are wrong.

use darling::ast::MetaNameValueInvalidExpr;
use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Lit, Meta};

use crate::meta::{self, Given, Unclaimed};
pub(crate) use blaze_model_codegen::ir::Precision;

/// `#[model(...)]`'s options: on a struct of layers in sequence, whose
/// `input` is an [`InputShape`], and on the impl of a forward body, whose
/// `input` is [`InputShapes`].
#[derive(FromMeta)]
pub(crate) struct ModelArgs<I> {
    /// The per-sample input shape (`multiple`, so that a second one is
    /// worded by [`meta::once`]).
    #[darling(multiple)]
    input: Vec<Given<I>>,
    /// `fuse = false`: no runs of fields as one kernel, no recomputed
    /// inputs (what a forward body's `fuse = false` turns off too).
    #[darling(multiple)]
    fuse: Vec<Given<Fuse>>,
    /// `precision = bf16`: the products of the model's passes round to
    /// 16 bits (`blaze::precision`).
    #[darling(multiple)]
    precision: Vec<Given<PrecisionArg>>,
    #[darling(flatten)]
    unclaimed: Unclaimed,
}

/// What `#[model(...)]` says, once every mistake in it is reported.
pub(crate) struct Args<I> {
    /// `None` when `input` is missing or wrong.
    pub input: Option<I>,
    pub fuse: bool,
    /// `None` when not given: the passes follow the caller's scope.
    pub precision: Option<Precision>,
}

impl<I: FromMeta> ModelArgs<I> {
    const KEYS: [&str; 3] = ["input", "fuse", "precision"];

    /// Parses `#[model(...)]`'s tokens. Every mistake goes to `errors`, a
    /// missing `input` as `missing()`; the options that parsed come back,
    /// so that a bad `fuse` does not lose the input shape.
    pub(crate) fn parse(tokens: TokenStream, missing: impl FnOnce() -> Error, errors: &mut Accumulator) -> Args<I> {
        let syntax = meta::Syntax { item: "`key = value`", example: "#[model(input = [1, 28, 28])]" };
        // A list that does not parse is its one error: no `input` to miss.
        let Some(args) = meta::items(tokens, &syntax, errors).and_then(|items| errors.handle(Self::from_list(&items)))
        else {
            return Args { input: None, fuse: true, precision: None };
        };
        let given = !args.input.is_empty();
        let input = meta::once(args.input, errors);
        let fuse = meta::once(args.fuse, errors).is_none_or(|Fuse(on)| on);
        let precision = meta::once(args.precision, errors).map(|PrecisionArg(p)| p);
        args.unclaimed.report(errors, |key| {
            let hint = super::closest(key, Self::KEYS).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
            format!("unknown argument `{key}`{hint} (#[model] takes `input`, `fuse` and `precision`)")
        });
        if !given {
            errors.push(missing());
        }
        Args { input, fuse, precision }
    }
}

/// `precision = bf16`, `f16` or `f32`, as written: parses to the IR's
/// [`Precision`].
pub(crate) struct PrecisionArg(Precision);

impl FromMeta for PrecisionArg {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        meta::name_value(item, "`precision` is `bf16`, `f16` or `f32`: write `precision = bf16`", Self::from_expr)
    }

    fn from_invalid_expr(nv: &MetaNameValueInvalidExpr) -> darling::Result<Self> {
        Err(meta::invalid_value(nv, Precision::EXPECTED))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let name = match expr {
            Expr::Group(g) => return Self::from_expr(&g.expr),
            Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
            Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        };
        let Some(name) = name else { return Err(Error::custom(Precision::EXPECTED).with_span(expr)) };
        match Precision::NAMES.iter().find(|(n, _)| *n == name) {
            Some(&(_, variant)) => Ok(PrecisionArg(Precision(variant))),
            None => Err(Error::custom(format!("unknown precision `{name}`: {}", Precision::EXPECTED)).with_span(expr)),
        }
    }
}

/// `fuse = true` or `fuse = false`.
pub(crate) struct Fuse(bool);

impl FromMeta for Fuse {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        match item {
            Meta::NameValue(nv) => Self::from_expr(&nv.value),
            Meta::Path(_) | Meta::List(_) => {
                Err(Error::custom("`fuse` is `true` or `false`: write `fuse = false`").with_span(item))
            }
        }
    }

    fn from_invalid_expr(nv: &MetaNameValueInvalidExpr) -> darling::Result<Self> {
        Err(meta::invalid_value(nv, "`fuse` is `true` or `false`"))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Lit(syn::ExprLit { lit: Lit::Bool(b), .. }) => Ok(Fuse(b.value)),
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom("`fuse` is `true` or `false`").with_span(other)),
        }
    }
}

/// `input = [1, 28, 28]` on a struct of layers in sequence: the per-sample
/// shape, each dim a positive integer literal with its span.
pub(crate) struct InputShape(pub Vec<(usize, Span)>);

impl InputShape {
    pub(crate) const EXPECTED: &str = "`input` is a list of dims, e.g. input = [1, 28, 28]";
}

impl FromMeta for InputShape {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        meta::name_value(item, Self::EXPECTED, Self::from_expr)
    }

    fn from_invalid_expr(nv: &MetaNameValueInvalidExpr) -> darling::Result<Self> {
        Err(meta::invalid_value(nv, Self::EXPECTED))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let arr = match expr {
            Expr::Array(arr) => arr,
            // A `$e:expr` of a `macro_rules!` arrives in an invisible group.
            Expr::Group(g) => return Self::from_expr(&g.expr),
            other => return Err(Error::custom(Self::EXPECTED).with_span(other)),
        };
        let n = arr.elems.len();
        if n == 0 {
            return Err(Error::custom("`input` needs at least one dim").with_span(expr));
        }
        if n > 8 {
            return Err(
                Error::custom(format!("`input` has {n} dims; a per-sample shape has at most 8")).with_span(expr)
            );
        }
        let mut errors = Error::accumulator();
        let dims = arr
            .elems
            .iter()
            .filter_map(|e| {
                errors.handle(match int_literal(e) {
                    Some(d) if d > MAX_SIZE => {
                        Err(Error::custom(format!("input dim {d} is larger than any tensor's (at most {MAX_SIZE})"))
                            .with_span(e))
                    }
                    Some(d) if d > 0 => Ok((d as usize, e.span())),
                    _ => Err(Error::custom("input dims must be positive integer literals").with_span(e)),
                })
            })
            .collect();
        errors.finish_with(InputShape(dims))
    }
}

/// `input = [T, 64]`, or for several inputs `input = ([T, 64], [T])`, on
/// the impl of a forward body: each input's dims as written. Symbols such
/// as `T` are resolved when the body is lowered (`crate::graph`).
pub(crate) struct InputShapes(pub Vec<Vec<Expr>>);

impl InputShapes {
    pub(crate) const EXPECTED: &str =
        "`input` is the per-sample shape, e.g. input = [T, 64], or input = ([T, 64], [T]) for two inputs";
}

impl FromMeta for InputShapes {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        meta::name_value(item, Self::EXPECTED, Self::from_expr)
    }

    fn from_invalid_expr(nv: &MetaNameValueInvalidExpr) -> darling::Result<Self> {
        Err(meta::invalid_value(nv, Self::EXPECTED))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let shapes: Vec<&Expr> = match expr {
            Expr::Tuple(t) => t.elems.iter().collect(),
            Expr::Paren(p) => vec![&*p.expr],
            Expr::Group(g) => return Self::from_expr(&g.expr),
            e => vec![e],
        };
        if shapes.is_empty() {
            return Err(Error::custom("a model takes at least one input: `input = [T, 64]`").with_span(expr));
        }
        let mut errors = Error::accumulator();
        let shapes = shapes
            .into_iter()
            .filter_map(|shape| match shape {
                Expr::Array(arr) => Some(arr.elems.iter().cloned().collect()),
                other => {
                    errors.push(Error::custom("an input shape is a list of dims, e.g. [T, 64]").with_span(other));
                    None
                }
            })
            .collect();
        errors.finish_with(InputShapes(shapes))
    }
}

/// The largest size a layer or an input dim may have (the spec's).
pub(crate) const MAX_SIZE: i128 = blaze_spec::MAX_SIZE as i128;

pub(crate) fn int_literal(e: &Expr) -> Option<i128> {
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
