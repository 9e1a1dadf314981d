//! What a model emits from its lowered ops (`ops.rs`), whichever front
//! end made them: the passes (`emit/`, with `fuse.rs`'s plan), the cache,
//! the traits and the inherent API; and the items of the struct itself.

use proc_macro2::{Punct, Spacing, TokenStream};
use quote::{format_ident, quote};

use super::emit::Gen;
use super::ir::Model;
use super::ir::Options;
use super::ops::{self, Dim};
use super::structs::struct_and_module;
use super::{diff, fuse};
use blaze_spec::rules::Extent;

/// The macro a struct without `input` leaves behind for its impl's
/// expansion (`blaze-macros`' `graph::expand_impl` calls it).
pub fn callback_ident(model: &syn::Ident) -> syn::Ident {
    format_ident!("__blaze_model_{}", model)
}

/// What `#[model]` on a struct without `input` emits: the struct and its
/// `Module` impl, constructors through `Graph`, and the callback macro that
/// carries the struct to the impl's expansion.
pub fn expand_struct(model: &Model, item: &TokenStream) -> TokenStream {
    let callback = callback_ident(&model.ident);
    let structs = struct_items(model);
    let d = Punct::new('$', Spacing::Alone);
    quote! {
        #structs

        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #callback {
            (#d (#d t:tt)*) => { ::blaze::__model_graph! { { #item } #d (#d t)* } };
        }
    }
}

/// What every model has, whatever makes its passes: the struct, its
/// gradients and `Module` impl, its int8 form's struct, and the
/// constructors through `Graph`.
pub fn struct_items(model: &Model) -> TokenStream {
    let ident = &model.ident;
    let (structs, int8) = (struct_and_module(model), super::quant::struct_items(model));
    quote! {
        #int8
        #structs

        #[automatically_derived]
        impl<B: ::blaze::Backend> #ident<B> {
            /// A model initialised as PyTorch initialises these layers, from
            /// the global generator (`blaze::manual_seed`).
            pub fn new<Dev: ::blaze::nn::BackendDevice<B>>(device: &Dev) -> Self
            where
                Self: ::blaze::nn::Graph<B>,
            {
                let mut rng = ::blaze::rng::with_global_rng(|r| r.fork());
                <Self as ::blaze::nn::Graph<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }

            /// A model initialised from `seed` alone: the same seed gives the
            /// same weights on every backend.
            pub fn new_seeded<Dev: ::blaze::nn::BackendDevice<B>>(seed: u64, device: &Dev) -> Self
            where
                Self: ::blaze::nn::Graph<B>,
            {
                let mut rng = ::blaze::Rng::seed_from_u64(seed);
                <Self as ::blaze::nn::Graph<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }
        }
    }
}

/// A model's passes and the items around them, from its lowered ops
/// (a forward body's, or a sequential model's fields in order).
pub fn generate(
    model: &Model,
    options: &[Options],
    low: &ops::Lowered,
    names: Vec<syn::Ident>,
    fusion: bool,
) -> TokenStream {
    let ident = &model.ident;
    let vis = &model.vis;
    let cache_ident = format_ident!("{}Cache", ident);
    let grads_ident = format_ident!("{}Grads", ident);
    // The passes read the ops after fusion; the plan's counts, the export
    // and what decodes read them before.
    let none = fuse::Plan::none();
    let unfused = Gen { model, options, low, unfused: low, input_names: &names, plan: &none };
    let fused;
    let (low, plan) = if fusion {
        // What runs in layers' bias passes is decided first; groups take the rest.
        let before = Gen { plan: &fuse::Plan { enabled: true, ..fuse::Plan::none() }, ..unfused };
        let mut plan;
        (fused, plan) = fuse::fuse(ident, low, &before.fused_activations(), &before.dropouts(), &before.norms());
        plan.recompute = Gen { low: &fused, plan: &plan, ..unfused }.recomputable();
        (&fused, plan)
    } else {
        (low, fuse::Plan::none())
    };
    let (fused_items, fused_wgsl) = fuse::items(ident, unfused.low, &plan);
    let g = Gen { low, plan: &plan, ..unfused };
    let (full, params) =
        (diff::differentiate(low, &plan, &model.fields, true), diff::differentiate(low, &plan, &model.fields, false));
    let fusion_plan = g.fusion_plan(&fused_wgsl, &unfused, &full);
    let cache_fields = g.cache_fields(&full);
    let forward = g.forward();
    let forward_train = g.forward_train(&cache_ident, &full);
    let backward = g.backward(&full, false);
    let backward_params = g.backward(&params, false);
    let backward_params_each = g.backward(&params, true);
    let grads = g.grads_literal();
    let input_grads: Vec<syn::Ident> = low.inputs.iter().map(|&k| format_ident!("g{}", k)).collect();
    let in_grad_val = if names.len() == 1 { quote!(#(#input_grads)*) } else { quote!((#(#input_grads),*)) };
    // Each pass under the model's precision, when it sets one.
    let scoped = |body: TokenStream| crate::precision::scoped(model.precision, body);
    let (forward, forward_train) = (scoped(forward), scoped(forward_train));
    let backward = scoped(quote!(#backward (#in_grad_val, #grads)));
    let backward_params = scoped(quote!(#backward_params #grads));
    let backward_params_each = scoped(quote!(#backward_params_each #grads));
    let num_params = g.num_params();
    let inits = g.inits();
    let field_names: Vec<_> = model.fields.iter().map(|f| &f.ident).collect();
    let (_, marker_init) = crate::structs::backend_marker(model);
    let asserts = &low.asserts;
    let in_ranks: Vec<ops::Rank> = low.inputs.iter().map(|&k| low.vals[k].rank()).collect();
    let out_rank = low.vals[low.output].rank();
    let in_sigs: Vec<TokenStream> = low.inputs.iter().map(|&k| low.vals[k].static_shape()).collect();
    let out_sig = low.vals[low.output].static_shape();
    let in_grad_ty = if names.len() == 1 {
        let r = &in_ranks[0];
        quote!(::blaze::Tensor<B, #r>)
    } else {
        quote!((#(::blaze::Tensor<B, #in_ranks>),*))
    };
    let rows = g.summary_rows();
    let input_text =
        low.inputs.iter().map(|&k| ops::show(&low.vals[k].shape, &low.symbols)).collect::<Vec<_>>().join(", ");
    let cache_doc =
        format!("What [`{ident}::forward_train`] keeps for [`{ident}::backward`]: only what its adjoint code reads.");

    // A model of one input is `Differentiable`, which `fit` trains; with
    // fixed dims it is also a `Block`: a field of a sequential model.
    let fixed = |shape: &[Dim]| shape.iter().map(Extent::fixed).collect::<Option<Vec<usize>>>();
    let block = if names.len() == 1 {
        let (ri, x) = (&in_ranks[0], &names[0]);
        let differentiable = quote! {
            #[automatically_derived]
            impl<B: ::blaze::Backend> ::blaze::nn::Differentiable<B> for #ident<B> {
                type Input = ::blaze::Tensor<B, #ri>;
                type Output = ::blaze::Tensor<B, #out_rank>;
                type Cache = #cache_ident<B>;

                fn forward(&self, #x: &Self::Input) -> Self::Output {
                    #ident::forward(self, #x)
                }
                fn forward_train(&mut self, #x: &Self::Input, ctx: &mut ::blaze::nn::Ctx) -> (Self::Output, Self::Cache) {
                    #ident::forward_train(self, #x, ctx)
                }
                fn backward(&self, cache: &Self::Cache, grad: &Self::Output) -> (Self::Input, Self::Grads) {
                    #ident::backward(self, cache, grad)
                }
                fn backward_params(&self, cache: &Self::Cache, grad: &Self::Output) -> Self::Grads {
                    #ident::backward_params(self, cache, grad)
                }
                fn backward_params_each<V: ::blaze::nn::ParamVisitor<B>>(
                    &self,
                    cache: &Self::Cache,
                    grad: &Self::Output,
                    ready: &mut V,
                ) -> Self::Grads {
                    #backward_params_each
                }
                fn summary(&self) -> ::std::string::String {
                    #ident::summary(self)
                }
            }
        };
        // The output's dims are fixed, or known to the compiler after a
        // field the macro cannot see.
        let output = &low.vals[low.output];
        match (fixed(&low.vals[low.inputs[0]].shape), output.opaque.is_some() || fixed(&output.shape).is_some()) {
            (Some(i), true) => {
                let o = output.static_shape();
                quote! {
                    #differentiable

                    #[automatically_derived]
                    impl<B: ::blaze::Backend> ::blaze::nn::Block<B> for #ident<B> {
                        const INPUT: ::blaze::nn::StaticShape = ::blaze::nn::StaticShape::new(&[#(#i),*]);
                        const OUTPUT: ::blaze::nn::StaticShape = #o;
                        const NUM_PARAMS: usize = #num_params;

                        fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                            <Self as ::blaze::nn::Graph<B>>::init(rng, device)
                        }
                    }

                    #[automatically_derived]
                    impl<B: ::blaze::Backend> #ident<B> {
                        /// Per-sample input shape (the batch dim excluded).
                        pub const INPUT_SHAPE: &'static [usize] = &[#(#i),*];
                        /// Per-sample output shape.
                        pub const OUTPUT_SHAPE: &'static [usize] = <Self as ::blaze::nn::Block<B>>::OUTPUT.as_slice();
                    }
                }
            }
            (None, _) | (Some(_), false) => differentiable,
        }
    } else {
        TokenStream::new()
    };

    let export = unfused.export();
    let decode = g.decode();
    let int8 = g.forward_int8().map(|(body, bounds)| {
        let inputs: Vec<(syn::Ident, TokenStream)> =
            names.iter().zip(&in_ranks).map(|(n, r)| (n.clone(), quote!(#r))).collect();
        crate::quant::forward_impl(model, &inputs, quote!(#out_rank), body, &bounds)
    });
    quote! {
        #(#asserts)*

        #fused_items

        #export

        #decode

        #int8

        #[doc = #cache_doc]
        #vis struct #cache_ident<B: ::blaze::Backend> {
            #cache_fields
        }

        impl<B: ::blaze::Backend> ::core::fmt::Debug for #cache_ident<B> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#cache_ident)).finish_non_exhaustive()
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Graph<B> for #ident<B> {
            const SIGNATURE: ::blaze::nn::Signature = ::blaze::nn::Signature {
                inputs: &[#(#in_sigs),*],
                output: #out_sig,
            };
            const NUM_PARAMS: usize = #num_params;
            type Cache = #cache_ident<B>;

            fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                #ident { #(#field_names: #inits,)* #marker_init }
            }
        }

        #block

        #[automatically_derived]
        #[allow(unused_variables, clippy::all)]
        impl<B: ::blaze::Backend> #ident<B> {
            /// Number of trainable scalars.
            pub const NUM_PARAMS: usize = #num_params;

            /// Which elementwise ops of `forward` run fused, as one kernel
            /// each, and how many ops each pass runs with and without fusion.
            pub const FUSION: ::blaze::nn::FusionPlan = #fusion_plan;

            /// Inference: dropout off, normalisation on running statistics.
            /// Panics if an input's per-sample shape does not fit `input`.
            pub fn forward(&self, #(#names: &::blaze::Tensor<B, #in_ranks>),*) -> ::blaze::Tensor<B, #out_rank> {
                #forward
            }

            /// The training forward: the output, and what `backward` needs.
            pub fn forward_train(
                &mut self,
                #(#names: &::blaze::Tensor<B, #in_ranks>,)*
                ctx: &mut ::blaze::nn::Ctx,
            ) -> (::blaze::Tensor<B, #out_rank>, #cache_ident<B>) {
                #forward_train
            }

            /// The gradient of each input and of every parameter, given the
            /// gradient of the output: the adjoint of the forward body,
            /// generated as straight-line code.
            pub fn backward(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out_rank>) -> (#in_grad_ty, #grads_ident<B>) {
                #backward
            }

            /// The parameter gradients alone: the adjoint code that only the
            /// inputs' gradients need is left out.
            pub fn backward_params(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out_rank>) -> #grads_ident<B> {
                #backward_params
            }

            /// A Keras-style table of the fields, the output shape of each
            /// one's (first) call and their parameter counts.
            pub fn summary(&self) -> ::std::string::String {
                ::blaze::nn::model_summary::<B, _>(
                    self,
                    ::core::stringify!(#ident),
                    #input_text,
                    &[#(#rows),*],
                    &Self::FUSION,
                )
            }
        }
    }
}
