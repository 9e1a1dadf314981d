//! The int8 form of a model (`blaze::quant`): `NetInt8<B>`, a struct with
//! the model's fields, each as its quantized type (`Linear` as
//! `Int8Linear`, a norm as itself, a nested model as its own int8 form),
//! with `Quantize` for the model, `QuantModule` (saving, loading,
//! calibration) and `summary`/`save`/`load` for the int8 form. Both forms
//! of model emit these with the struct; each emits the int8 forward where
//! it emits its own ([`forward_impl`]).
//!
//! A field of a type the macro cannot see (a nested model, a user block)
//! is bounded by `where` clauses rather than required: a model with a
//! user layer that has no int8 form still compiles, and only quantizing
//! it fails, naming the bound.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::ir::{LayerKind, Model};
use super::structs::{backend_marker, field_ty, full_ty};

/// `NetInt8` for model `Net`.
pub fn ident(model: &Model) -> Ident {
    format_ident!("{}Int8", model.ident)
}

/// `T: Quantize<B>` for each field type the macro cannot see.
pub fn opaque_bounds(model: &Model) -> Vec<TokenStream> {
    model
        .fields
        .iter()
        .filter(|f| matches!(f.kind, LayerKind::Opaque { .. }))
        .map(|f| {
            let ty = field_ty(&f.kind);
            quote!(#ty: ::blaze::quant::Quantize<B>)
        })
        .collect()
}

/// The struct, `Quantize` for the model, `QuantModule` and the inherent
/// `summary`, `save` and `load`.
pub fn struct_items(model: &Model) -> TokenStream {
    let Model { vis, ident, .. } = model;
    let q = self::ident(model);
    let names: Vec<&Ident> = model.fields.iter().map(|f| &f.ident).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let kinds: Vec<String> = model.fields.iter().map(|f| f.kind.display()).collect();
    let fields = model.fields.iter().map(|f| {
        let (attrs, fv, fi, ty) = (&f.attrs, &f.vis, &f.ident, full_ty(f));
        quote!(#(#attrs)* #fv #fi: <#ty as ::blaze::quant::Quantize<B>>::Quantized)
    });
    let bounds = opaque_bounds(model);
    let (marker, marker_init) = backend_marker(model);
    let doc = format!(
        "The int8 form of [`{ident}`] for inference (`blaze::quant::quantize_dynamic`): its products' \
         weights in int8 per output channel, its other layers as they are."
    );
    // Rust checks a default type against the struct's bounds, which a
    // user layer without an int8 form fails: such a form names its backend.
    let default = bounds.is_empty().then(|| quote!(= ::blaze::Cpu));
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug)]
        #vis struct #q<B: ::blaze::Backend #default>
        where
            #(#bounds,)*
        {
            #(#fields,)*
            #marker
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::quant::Quantize<B> for #ident<B>
        where
            #(#bounds,)*
        {
            type Quantized = #q<B>;

            fn quantize(&self) -> #q<B> {
                #q { #(#names: ::blaze::quant::Quantize::<B>::quantize(&self.#names),)* #marker_init }
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::quant::QuantModule<B> for #q<B>
        where
            #(#bounds,)*
        {
            fn save_state(&self, prefix: &str, out: &mut ::blaze::quant::StateWriter) {
                #(::blaze::quant::QuantModule::<B>::save_state(&self.#names, &::blaze::nn::join(prefix, #name_strs), out);)*
            }

            fn load_state(&mut self, prefix: &str, src: &mut ::blaze::quant::StateReader<'_, B>) {
                #(::blaze::quant::QuantModule::<B>::load_state(&mut self.#names, &::blaze::nn::join(prefix, #name_strs), src);)*
            }

            fn calibrate(&mut self, phase: ::blaze::quant::Phase) {
                #(::blaze::quant::QuantModule::<B>::calibrate(&mut self.#names, phase);)*
            }

            fn device(&self) -> ::core::option::Option<B::Device> {
                ::core::option::Option::None #(.or_else(|| ::blaze::quant::QuantModule::<B>::device(&self.#names)))*
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> #q<B>
        where
            #(#bounds,)*
        {
            /// A table of the fields with their sizes in this form and in
            /// f32, and the totals.
            pub fn summary(&self) -> ::std::string::String {
                ::blaze::quant::summary::<B, _>(self, ::core::stringify!(#q), &[#((#name_strs, #kinds)),*])
            }

            /// Saves the int8 weights, their scales and the float
            /// parameters as safetensors (`blaze::quant::save`).
            pub fn save(&self, path: impl ::core::convert::AsRef<::std::path::Path>) -> ::core::result::Result<(), ::blaze::record::RecordError> {
                ::blaze::quant::save::<B, _>(self, path.as_ref())
            }

            /// Loads what [`Self::save`] wrote, on `device`.
            pub fn load<Dev: ::blaze::nn::BackendDevice<B>>(
                path: impl ::core::convert::AsRef<::std::path::Path>,
                device: &Dev,
            ) -> ::core::result::Result<Self, ::blaze::record::RecordError>
            where
                #ident<B>: ::blaze::nn::Graph<B>,
            {
                let device = ::blaze::nn::BackendDevice::<B>::as_device(device);
                // The shapes come from a model of the type; its values are replaced.
                let model = <#ident<B> as ::blaze::nn::Graph<B>>::init(&mut ::blaze::Rng::seed_from_u64(0), device);
                let mut q = ::blaze::quant::Quantize::<B>::quantize(&model);
                ::blaze::quant::load::<B, _>(&mut q, path.as_ref(), device)?;
                ::core::result::Result::Ok(q)
            }
        }
    }
}

/// The int8 form's `forward` (`inputs`, each `name: &Tensor<B, rank>`,
/// the statements `body` ending with the output of rank `out_rank`) and,
/// for one input, `InferBlock`; `bounds` are the nested calls' own.
pub fn forward_impl(
    model: &Model,
    inputs: &[(Ident, TokenStream)],
    out_rank: TokenStream,
    body: TokenStream,
    extra: &[TokenStream],
) -> TokenStream {
    let q = ident(model);
    let mut bounds = opaque_bounds(model);
    bounds.extend(extra.iter().cloned());
    let names: Vec<&Ident> = inputs.iter().map(|(n, _)| n).collect();
    let ranks: Vec<&TokenStream> = inputs.iter().map(|(_, r)| r).collect();
    let infer = match inputs {
        [(x, r)] => quote! {
            #[automatically_derived]
            impl<B: ::blaze::Backend> ::blaze::quant::InferBlock<B, #r, #out_rank> for #q<B>
            where
                #(#bounds,)*
            {
                fn forward(&self, #x: &::blaze::Tensor<B, #r>) -> ::blaze::Tensor<B, #out_rank> {
                    #q::forward(self, #x)
                }
            }
        },
        _ => TokenStream::new(),
    };
    quote! {
        #[automatically_derived]
        #[allow(unused_variables, clippy::all)]
        impl<B: ::blaze::Backend> #q<B>
        where
            #(#bounds,)*
        {
            /// Inference on the int8 weights: the model's forward, each
            /// product in int8 (inputs quantized per row, or as calibrated).
            pub fn forward(&self, #(#names: &::blaze::Tensor<B, #ranks>),*) -> ::blaze::Tensor<B, #out_rank> {
                #body
            }
        }

        #infer
    }
}
