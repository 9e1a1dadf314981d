//! `#[model]`: parse, check, generate.

pub(crate) mod args;
pub(crate) mod attr;
pub(crate) mod check;
pub(crate) mod lower;

// The back end: the op IR, its passes and the printers.
pub(crate) use blaze_model_codegen::{fallback, generate, ir, load, ops};

pub(crate) use attr::PLAIN_TYPES;
pub(crate) use blaze_kernel_dsl::errors::closest;

use proc_macro2::TokenStream;

/// Expands `#[model(attr)] item`. On errors, emits them together with a
/// plain version of the struct so that uses of it elsewhere do not add a
/// cascade of unrelated errors.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed = match attr::parse(attr, item.clone()) {
        Ok((model, None)) => model,
        Ok((model, Some(mut e))) => {
            // Shapes cannot be inferred with fields missing, but every
            // option can still be checked.
            if let Err(more) = check::check_options(&model) {
                e.combine(more);
            }
            let mut out = e.to_compile_error();
            out.extend(fallback_model(&model, &item));
            return out;
        }
        Err(e) => return fallback(e, item),
    };
    if parsed.graph {
        // With bad options the struct, its constructors and the callback are
        // still emitted; the impl's expansion then emits fallback passes.
        let mut out = check::check_options(&parsed).err().map(|e| e.to_compile_error()).unwrap_or_default();
        out.extend(generate::expand_struct(&parsed, &item));
        return out;
    }
    match check::check(&parsed) {
        Ok(plan) => {
            // The fields in order as the one op IR, then the passes every
            // model takes.
            let low = lower::lower(&parsed, &plan);
            let options: Vec<ir::Options> = plan.steps.iter().map(|s| s.options.clone()).collect();
            let mut out = generate::struct_items(&parsed);
            out.extend(generate::generate(&parsed, &options, &low, vec![quote::format_ident!("x")], parsed.fuse));
            out
        }
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(fallback_model(&parsed, &item));
            out
        }
    }
}

/// Next to errors in the struct: the struct with the fields that parsed and
/// every item uses of the model need, so rustc adds no errors of its own. A
/// graph model keeps its callback, whose expansion emits fallback passes.
fn fallback_model(model: &ir::Model, item: &TokenStream) -> TokenStream {
    if model.graph {
        return generate::expand_struct(model, item);
    }
    let dims: Vec<usize> = model.input.iter().map(|d| d.0).collect();
    let inputs =
        fallback::Inputs { names: vec![quote::format_ident!("x")], ranks: vec![dims.len()], fixed: Some(dims) };
    fallback::items(model, &inputs, &fallback::sequential_output_rank(model), true)
}

fn fallback(e: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = e.to_compile_error();
    // Re-emit a struct only when it parses as one; otherwise the error alone.
    if let Ok(s) = syn::parse2::<syn::ItemStruct>(item)
        && matches!(s.fields, syn::Fields::Named(_))
    {
        let ident = &s.ident;
        let vis = &s.vis;
        out.extend(quote::quote! { #vis struct #ident<B = ()>(::core::marker::PhantomData<B>); });
    }
    out
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    fn expand_str(attr: TokenStream, item: TokenStream) -> String {
        let out = std::panic::catch_unwind(|| super::expand(attr.clone(), item.clone()).to_string());
        assert!(out.is_ok(), "#[model] panicked on {attr} / {item}");
        out.unwrap_or_default()
    }

    fn errors(attr: TokenStream, item: TokenStream) -> String {
        let out = expand_str(attr, item);
        assert!(out.contains("compile_error"), "expected an error, got {out}");
        out
    }

    /// Loops over layer arrays are unrolled: a huge length is refused
    /// before anything is unrolled, not expanded for hours.
    #[test]
    fn a_huge_layer_array_is_refused_not_unrolled() {
        let out = errors(
            quote!(),
            quote!(
                pub struct N {
                    fc: Linear<4, 4>,
                    blocks: [Inner; 4294967296],
                }
            ),
        );
        assert!(out.contains("at most 1024 layers"), "{out}");
        let out = expand_str(
            quote!(),
            quote!(
                pub struct N {
                    blocks: [Inner; 1024],
                }
            ),
        );
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn a_valid_model_expands_without_errors() {
        let out = expand_str(
            quote!(input = [1, 8, 8]),
            quote!(
                pub struct Net {
                    #[layer(padding = 1)]
                    conv: Conv2d<1, 4, 3>,
                    act: Relu,
                    flat: Flatten,
                    fc: Linear<256, 2>,
                }
            ),
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("NetGrads") && out.contains("NetCache"));
    }

    #[test]
    fn every_rule_reports_instead_of_panicking() {
        let cases: Vec<(TokenStream, TokenStream, &str)> = vec![
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        fc: Linear<3, 2>,
                    }
                ),
                "expects 3 input features",
            ),
            (
                quote!(input = [0]),
                quote!(
                    struct N {
                        fc: Linear<3, 2>,
                    }
                ),
                "positive integer literals",
            ),
            (
                quote!(input = []),
                quote!(
                    struct N {
                        fc: Linear<3, 2>,
                    }
                ),
                "at least one dim",
            ),
            (
                quote!(input = 4),
                quote!(
                    struct N {
                        fc: Linear<3, 2>,
                    }
                ),
                "list of dims",
            ),
            (
                quote!(inptu = [4]),
                quote!(
                    struct N {
                        fc: Linear<4, 2>,
                    }
                ),
                "inptu",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        c: Conv2d<0, 4, 3>,
                    }
                ),
                "must be positive",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        c: Conv2d<1, 4>,
                    }
                ),
                "takes 3 const generic",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        #[layer(stride = 0)]
                        c: Conv2d<1, 4, 3>,
                    }
                ),
                "positive integer",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        #[layer(groups = 3)]
                        c: Conv2d<1, 4, 3>,
                    }
                ),
                "groups must divide",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        #[layer(groups = 0)]
                        c: Conv2d<1, 4, 3>,
                    }
                ),
                "positive integer",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        #[layer(padding = 2)]
                        p: MaxPool2d<2>,
                    }
                ),
                "at most half",
            ),
            (
                quote!(input = [1, 8, 8]),
                quote!(
                    struct N {
                        p: MaxPool2d<9>,
                    }
                ),
                "larger than",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        p: MaxPool2d<2>,
                    }
                ),
                "expects an image",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        n: LayerNorm<5>,
                    }
                ),
                "last dim of 5",
            ),
            (
                quote!(input = [2, 4, 4]),
                quote!(
                    struct N {
                        n: BatchNorm2d<3>,
                    }
                ),
                "expects 3 channels",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        #[layer(eps = 0.0)]
                        n: LayerNorm<4>,
                    }
                ),
                "`eps` must be positive",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        #[layer(p = -0.1)]
                        d: Dropout,
                    }
                ),
                "[0, 1)",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        #[layer(bias = 2)]
                        f: Linear<4, 2>,
                    }
                ),
                "`true` or `false`",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        #[layer(bias)]
                        f: Linear<4, 2>,
                    }
                ),
                "key = value",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        #[layer(bias = "no")]
                        f: Linear<4, 2>,
                    }
                ),
                "not a string",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        f: Relu<4>,
                    }
                ),
                "no generic arguments",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        f: &'static Relu,
                    }
                ),
                "not a layer",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        f: (Relu, Relu),
                    }
                ),
                "not a layer",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        f: Vec<Relu>,
                    }
                ),
                "not a layer",
            ),
            (
                quote!(input = [4]),
                quote!(
                    fn n() {}
                ),
                "applies to a struct",
            ),
            (quote!(input = [4]), quote!(union N { a: u32 }), "not to a union"),
            (
                quote!(input = [4]),
                quote!(
                    struct N;
                ),
                "no fields",
            ),
            (
                quote!(input = [4]),
                quote!(
                    struct N {
                        e: Linear<4, 4>,
                        x: Embedding<10, 2>,
                    }
                ),
                "must be the first layer",
            ),
        ];
        for (attr, item, needle) in cases {
            let out = errors(attr.clone(), item.clone());
            assert!(out.contains(needle), "{attr} / {item}: expected {needle:?} in {out}");
        }
    }

    #[test]
    fn all_errors_of_one_model_are_reported_together() {
        let out = errors(
            quote!(input = [1, 8, 8]),
            quote!(
                struct N {
                    #[layer(paddng = 1)]
                    c: Conv2d<1, 4, 3>,
                    #[layer(p = 2.0)]
                    d: Dropout,
                    s: String,
                }
            ),
        );
        assert!(out.contains("paddng") && out.contains("[0, 1)") && out.contains("`String` is not a layer"), "{out}");
    }
}
