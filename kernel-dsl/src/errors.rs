//! The one way the macros collect errors: every stage (attribute parsing,
//! shape checking, lowering a forward body or a kernel, checking it) pushes
//! what it finds and goes on, so that one expansion reports every
//! independent mistake, each at its own tokens. darling's accumulator,
//! inside attribute parsing, ends in one of these. Also the "did you
//! mean" of every diagnostic ([`closest`]).

use proc_macro2::TokenStream;

/// Errors in the order found, kept as one combined `syn::Error`.
#[derive(Debug, Default)]
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

    /// How many errors were pushed (each part of a combined one counts).
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |e| e.into_iter().count())
    }

    /// Each error's message, in order.
    pub fn messages(&self) -> Vec<String> {
        self.0.iter().flat_map(|e| e.into_iter().map(|e| e.to_string())).collect()
    }

    /// `Err` with every error when there is one.
    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }

    /// Every error as a compile error at its tokens (nothing when empty).
    pub fn to_compile_error(&self) -> TokenStream {
        self.0.as_ref().map(syn::Error::to_compile_error).unwrap_or_default()
    }
}

impl From<syn::Error> for Errors {
    fn from(e: syn::Error) -> Errors {
        Errors(Some(e))
    }
}

/// The candidate nearest to `name` by edit distance, if within two edits:
/// the "did you mean" of every diagnostic.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, for "did you mean" suggestions.
pub fn distance(a: &str, b: &str) -> usize {
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

#[cfg(test)]
mod tests {
    use proc_macro2::Span;

    use super::*;

    #[test]
    fn errors_keep_every_message_in_order() {
        let none = Errors::default();
        assert!(none.is_empty() && none.messages().is_empty() && none.finish().is_ok());
        let mut errors = Errors::default();
        errors.push(syn::Error::new(Span::call_site(), "first"));
        errors.push(syn::Error::new(Span::call_site(), "second"));
        assert_eq!((errors.len(), errors.messages()), (2, vec!["first".to_owned(), "second".to_owned()]));
        assert_eq!(errors.to_compile_error().to_string().matches("compile_error").count(), 2);
        assert_eq!(errors.finish().unwrap_err().into_iter().count(), 2);
    }
}
