//! `blaze::export::Export` and `OnnxModel` for a sequential model: each
//! field's operators in order, the shape the macro checked after each
//! layer recorded on its output.

use proc_macro2::TokenStream;
use quote::quote;

use super::check::Plan;
use super::codegen::field_ty;
use super::ir::Model;

/// The impls; a field type that does not export (a user layer without
/// `Export`) leaves them unusable rather than failing the model.
pub fn items(model: &Model, plan: &Plan) -> TokenStream {
    let ident = &model.ident;
    let tys: Vec<TokenStream> = model.fields.iter().map(|f| field_ty(&f.kind)).collect();
    let names: Vec<&syn::Ident> = model.fields.iter().map(|f| &f.ident).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let outputs: Vec<TokenStream> = plan.steps.iter().map(|s| s.output.static_tokens()).collect();
    let first = &tys[0];
    let input_dims: Vec<usize> = model.input.iter().map(|d| d.0).collect();
    let takes_ids = quote!(<#first as ::blaze::export::Export>::TAKES_IDS);
    let dims = quote!(::std::vec![#(::blaze::export::Dim::Size(#input_dims)),*]);
    let onnx_model = onnx_model(ident, &[dims], std::slice::from_ref(&takes_ids));
    let body = quote! {
        let x = ::core::clone::Clone::clone(&inputs[0]);
        #(
            let x = ::blaze::export::sublayer(g, &self.#names, name, #name_strs, &[x])
                .with_sample_dims(&::blaze::export::sample_dims(&#outputs));
        )*
        x
    };
    let export = export_impl(ident, &tys, takes_ids, body);
    quote! {
        #export

        #onnx_model
    }
}

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
