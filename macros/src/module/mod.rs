//! `#[derive(Module)]`: parameter visiting for hand-written models. Every
//! field that is not `#[module(skip)]` is a module (a layer, a tensor, a
//! `Vec`, array or `Option` of them, or another derived struct) visited
//! under its field name, so names match PyTorch's `state_dict`. Parsing and
//! the rules are in `attr.rs`, the generated impl in `codegen.rs`.

mod attr;
mod codegen;

use proc_macro2::TokenStream;

pub fn expand(input: TokenStream) -> TokenStream {
    match attr::parse(input) {
        Ok(s) => codegen::generate(&s),
        Err(attr::Refused { error, partial }) => {
            let mut out = error.to_compile_error();
            out.extend(partial.as_deref().map(codegen::generate));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(item: proc_macro2::TokenStream) -> String {
        let out = std::panic::catch_unwind(|| super::expand(item.clone()).to_string());
        assert!(out.is_ok(), "derive(Module) panicked on {item}");
        out.unwrap_or_default()
    }

    #[test]
    fn every_misuse_is_reported_without_panicking() {
        let cases = [
            (quote!(union U<B> { a: u32 }), "needs a struct"),
            (
                quote!(
                    enum E<B> {
                        A(Linear<B, 1, 1>),
                    }
                ),
                "needs a struct",
            ),
            (
                quote!(
                    struct S {
                        fc: Tensor<Cpu, 1>,
                    }
                ),
                "the backend as a type parameter",
            ),
            (
                quote!(
                    struct S<B, T> {
                        fc: T,
                    }
                ),
                "one type parameter",
            ),
            (
                quote!(
                    struct S<'a, B> {
                        fc: &'a u8,
                    }
                ),
                "lifetime",
            ),
            (
                quote!(
                    struct S<B> {
                        fc: Linear<B, 2, 2>,
                        steps: usize,
                    }
                ),
                "holds no parameters",
            ),
            (
                quote!(
                    struct S<B> {
                        #[module(skp)]
                        steps: usize,
                    }
                ),
                "did you mean `skip`",
            ),
            (
                quote!(
                    struct S<B> {
                        #[module(skip = 1)]
                        steps: usize,
                    }
                ),
                "`#[module(skip)]`",
            ),
            (
                quote!(
                    struct S<B> {
                        #[module]
                        steps: usize,
                    }
                ),
                "in parentheses",
            ),
        ];
        for (item, needle) in cases {
            let out = expand(item.clone());
            assert!(out.contains("compile_error") && out.contains(needle), "{item}: expected {needle:?} in {out}");
        }
    }

    /// The field with a bad `#[module]` is left out; the impl is still
    /// derived for the others, so uses of the struct add no errors.
    #[test]
    fn a_bad_module_option_leaves_the_other_fields_derived() {
        let out = expand(quote!(
            struct S<B> {
                fc: Linear<B, 2, 2>,
                #[module(skp)]
                steps: usize,
            }
        ));
        assert!(out.contains("compile_error") && out.contains("did you mean `skip`"), "{out}");
        assert!(out.contains("SGrads") && !out.contains("steps"), "{out}");
    }

    #[test]
    fn a_valid_struct_expands() {
        let out = expand(quote!(
            struct Net<B: Backend, const N: usize> {
                layers: Vec<Linear<B, N, N>>,
                head: Option<Linear<B, N, 2>>,
                scale: Tensor<B, 1>,
                #[module(skip)]
                steps: usize,
            }
        ));
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("NetGrads"));
    }
}
