//! The `blaze::export::Export` and `OnnxModel` impls around a model's
//! export body (`emit/export.rs` writes the body).

use proc_macro2::TokenStream;
use quote::quote;

/// `Export` for model `ident`: `body` computes the output from `inputs`
/// into `g`, under `name`; a `where` bound per field type `tys`.
pub fn export_impl(ident: &syn::Ident, tys: &[TokenStream], takes_ids: TokenStream, body: TokenStream) -> TokenStream {
    quote! {
        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::export::Export for #ident<B>
        where
            #(#tys: ::blaze::export::Export,)*
        {
            const TAKES_IDS: bool = #takes_ids;

            #[allow(unused_variables, clippy::all)]
            fn export(
                &self,
                g: &mut ::blaze::export::OnnxGraph,
                name: &str,
                inputs: &[::blaze::export::Value],
            ) -> ::blaze::export::Value {
                #body
            }
        }
    }
}

/// `OnnxModel` for model `ident` whose inputs' per-sample dims are the
/// `Vec<Dim>` expressions `inputs`, and whether each is ids the `bool`
/// const expressions `ids`: both forms of model emit it.
pub fn onnx_model(ident: &syn::Ident, inputs: &[TokenStream], ids: &[TokenStream]) -> TokenStream {
    let name = ident.to_string();
    quote! {
        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::export::OnnxModel for #ident<B>
        where
            Self: ::blaze::export::Export,
        {
            const NAME: &'static str = #name;

            fn onnx_inputs() -> ::std::vec::Vec<::std::vec::Vec<::blaze::export::Dim>> {
                ::std::vec![#(#inputs),*]
            }

            fn input_is_ids(i: usize) -> bool {
                [#(#ids),*].get(i).copied().unwrap_or(false)
            }
        }
    }
}
