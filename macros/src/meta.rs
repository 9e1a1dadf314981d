//! Pieces shared by the macros' darling receivers (`#[model(...)]`,
//! `#[layer(...)]`, `#[module(...)]`): an attribute's items with the
//! mistakes darling would word poorly caught first, an option that keeps
//! the span of its key and the error of its value, and the keys no field
//! of a receiver claimed. Each receiver words its own errors with these, so
//! that every error names the option and points at its tokens.

use std::fmt::Display;

use darling::ast::{MetaNameValueInvalidExpr, NestedMeta};
use darling::error::Accumulator;
use darling::util::path_to_string;
use darling::{Error, FromMeta};
use proc_macro2::TokenStream;

/// How an attribute is written, for the errors of [`items`].
pub(crate) struct Syntax {
    /// What one item is: "`key = value`".
    pub item: &'static str,
    /// A correct use: "#[layer(padding = 2)]".
    pub example: &'static str,
}

/// The items of an attribute's list, `a = 1, b = [2, 3]`. A list that does
/// not parse is one error at the token that broke it, and `None`; a bare
/// literal (`1`) is an error at the literal and left out, where darling's
/// derived parser would say "Unexpected meta-item format".
pub(crate) fn items(tokens: TokenStream, syntax: &Syntax, errors: &mut Accumulator) -> Option<Vec<NestedMeta>> {
    let Syntax { item, example } = syntax;
    match NestedMeta::parse_meta_list(tokens) {
        Ok(items) => Some(
            items
                .into_iter()
                .filter(|i| match i {
                    NestedMeta::Lit(lit) => {
                        errors.push(Error::custom(format!("expected {item}, e.g. {example}")).with_span(lit));
                        false
                    }
                    NestedMeta::Meta(_) | NestedMeta::NameValueInvalidExpr(_) => true,
                })
                .collect(),
        ),
        Err(e) => {
            errors.push(syn::Error::new(e.span(), format!("{e}; expected {item}, e.g. {example}")).into());
            None
        }
    }
}

/// One option as written: its key (for errors about the option itself,
/// such as a second one) and its value or what is wrong with the value.
/// Parsing never fails here, so that a bad value does not lose the other
/// options: a receiver's fields of this type take `#[darling(multiple)]`
/// and go through [`once`], which also words a repeated key.
pub(crate) struct Given<T> {
    pub key: syn::Path,
    pub value: darling::Result<T>,
}

impl<T: FromMeta> FromMeta for Given<T> {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        Ok(Given { key: item.path().clone(), value: T::from_meta(item) })
    }

    /// `key = <tokens that are not an expression>`.
    fn from_invalid_expr(item: &MetaNameValueInvalidExpr) -> darling::Result<Self> {
        let value = T::from_invalid_expr(item).map_err(|e| e.with_span(item));
        Ok(Given { key: item.path.clone(), value })
    }
}

/// The value of a `key = value` option, read by `parse`; `expected` (a
/// correct use) is the error at a bare `key` or a `key(...)`.
pub(crate) fn name_value<T>(
    item: &syn::Meta,
    expected: &str,
    parse: impl FnOnce(&syn::Expr) -> darling::Result<T>,
) -> darling::Result<T> {
    match item {
        syn::Meta::NameValue(nv) => parse(&nv.value),
        syn::Meta::Path(_) | syn::Meta::List(_) => Err(Error::custom(expected).with_span(item)),
    }
}

/// The error at `key = <tokens that are not an expression>`: at the
/// tokens, or at the key when nothing follows the `=`.
pub(crate) fn invalid_value(nv: &MetaNameValueInvalidExpr, message: impl Display) -> Error {
    let error = Error::custom(message);
    if nv.value.is_empty() { error.with_span(&nv.path) } else { error.with_span(&nv.value) }
}

/// The value of an option that may be given once: each further one is an
/// error at its key. `None` when the option is absent or its value is
/// wrong (that error is in `errors`).
pub(crate) fn once<T>(given: Vec<Given<T>>, errors: &mut Accumulator) -> Option<T> {
    let mut given = given.into_iter();
    let first = given.next()?;
    for again in given {
        let key = path_to_string(&again.key);
        errors.push(Error::custom(format!("`{key}` is given twice")).with_span(&again.key));
    }
    errors.handle(first.value)
}

/// The items of a receiver that none of its fields claimed: with
/// `#[darling(flatten)]` darling hands them all here instead of failing
/// with its own "Unknown field" over the whole item, and the receiver
/// reports each at its key, with the keys it takes ([`Unclaimed::report`]).
pub(crate) struct Unclaimed(Vec<NestedMeta>);

impl FromMeta for Unclaimed {
    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        Ok(Unclaimed(items.to_vec()))
    }
}

impl Unclaimed {
    /// One error per unclaimed item: `unknown(key as written)` at its key.
    pub(crate) fn report(self, errors: &mut Accumulator, unknown: impl Fn(&str) -> String) {
        for item in self.0 {
            let error = match &item {
                NestedMeta::Meta(meta) => Error::custom(unknown(&path_to_string(meta.path()))).with_span(meta.path()),
                NestedMeta::NameValueInvalidExpr(nv) => {
                    Error::custom(unknown(&path_to_string(&nv.path))).with_span(&nv.path)
                }
                // `items` leaves literals out, and darling reports those it sees itself.
                NestedMeta::Lit(lit) => Error::custom("expected `key = value`").with_span(lit),
            };
            errors.push(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use darling::FromMeta;
    use quote::quote;

    use super::*;

    #[derive(FromMeta)]
    struct Receiver {
        #[darling(multiple)]
        size: Vec<Given<u32>>,
        #[darling(flatten)]
        unclaimed: Unclaimed,
    }

    /// Parses `tokens` as `#[demo(...)]`: the size, and every error's text.
    fn parse(tokens: TokenStream) -> (Option<u32>, Vec<String>) {
        let mut errors = Error::accumulator();
        let syntax = Syntax { item: "`key = value`", example: "#[demo(size = 2)]" };
        let items = items(tokens, &syntax, &mut errors).unwrap_or_default();
        let size = match errors.handle(Receiver::from_list(&items)) {
            Some(r) => {
                r.unclaimed.report(&mut errors, |key| format!("unknown `{key}`"));
                once(r.size, &mut errors)
            }
            None => None,
        };
        let messages = errors.into_inner().into_iter().flat_map(|e| e.flatten()).map(|e| e.to_string()).collect();
        (size, messages)
    }

    #[test]
    fn a_valid_list_parses() {
        assert_eq!(parse(quote!(size = 3)), (Some(3), vec![]));
        assert_eq!(parse(quote!()), (None, vec![]));
    }

    #[test]
    fn every_mistake_of_one_list_is_reported() {
        let (size, errors) = parse(quote!(4, size = 3, colour = 1, size = 5, a::b));
        assert_eq!(size, Some(3));
        assert_eq!(
            errors,
            [
                "expected `key = value`, e.g. #[demo(size = 2)]",
                "unknown `colour`",
                "unknown `a::b`",
                "`size` is given twice"
            ],
            "{errors:?}"
        );
    }

    #[test]
    fn a_list_that_does_not_parse_shows_a_correct_one() {
        let (_, errors) = parse(quote!(size = 3 colour = 1));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].ends_with("; expected `key = value`, e.g. #[demo(size = 2)]"), "{errors:?}");
    }

    #[test]
    fn a_bad_value_keeps_its_key_and_the_other_options() {
        let (size, errors) = parse(quote!(size = "x", colour = 1));
        assert_eq!(size, None);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors.contains(&"unknown `colour`".to_owned()), "{errors:?}");
    }
}
