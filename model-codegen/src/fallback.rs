//! What a model's expansion emits next to its errors: every item and method
//! the real expansion has, typed as far as the macro knows, with bodies that
//! never run (the `compile_error!` beside them stops the build). rustc then
//! reports the macro's errors alone, not "no function `new`" or "no method
//! `forward`" at every use of the model.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{LayerKind, Model};
use super::structs::struct_and_module;

/// A per-sample rank: a number, or a const expression when a type the macro
/// cannot see (a nested model, a user block) decides it.
#[derive(Debug, Clone)]
pub enum Rank {
    Known(usize),
    Expr(TokenStream),
}

impl Rank {
    /// The tensor rank (the batch dim included) as a const generic argument.
    fn tensor(&self) -> TokenStream {
        match self {
            Rank::Known(r) => {
                let r = r + 1;
                quote!(#r)
            }
            Rank::Expr(e) => quote!({ #e + 1 }),
        }
    }

    fn tokens(&self) -> TokenStream {
        match self {
            Rank::Known(r) => quote!(#r),
            Rank::Expr(e) => e.clone(),
        }
    }
}

/// The per-sample output rank of a model of fields in sequence: the spec's
/// rank rule, which holds whether or not a layer accepted its input.
pub fn sequential_output_rank(model: &Model) -> Rank {
    let mut rank = Rank::Known(model.input.len());
    for f in &model.fields {
        rank = match (&f.kind, rank) {
            (LayerKind::Builtin { layer, .. }, Rank::Known(r)) => Rank::Known(blaze_spec::output_rank(*layer, r)),
            (LayerKind::Builtin { layer, .. }, Rank::Expr(e)) => {
                let layer = super::ir::layer_tokens(*layer);
                Rank::Expr(quote!(::blaze::spec::output_rank(#layer, #e)))
            }
            (kind, _) => {
                let ty = kind.opaque_ty(&quote!(::blaze::Cpu));
                Rank::Expr(quote!(<#ty as ::blaze::nn::Block<::blaze::Cpu>>::OUTPUT.rank))
            }
        };
    }
    rank
}

/// The model's `forward` inputs: names and per-sample shapes where known.
#[derive(Debug)]
pub struct Inputs {
    pub names: Vec<syn::Ident>,
    pub ranks: Vec<usize>,
    /// The single input's dims when they are all fixed: the model is a `Block`.
    pub fixed: Option<Vec<usize>>,
}

/// The fallback items of `model`, whose output has per-sample rank `output`.
/// `sequential`: the struct and its `Module` impl are emitted here too (a
/// graph model's struct expansion emitted them already).
pub fn items(model: &Model, inputs: &Inputs, output: &Rank, sequential: bool) -> TokenStream {
    let Model { vis, ident, .. } = model;
    let cache_ident = format_ident!("{}Cache", ident);
    let grads_ident = format_ident!("{}Grads", ident);
    let never = format!("`{ident}` did not compile");
    let body = quote!(::core::unreachable!(#never));
    let out = output.tensor();
    let out_rank = output.tokens();
    let names = &inputs.names;
    let in_ranks: Vec<usize> = inputs.ranks.iter().map(|r| r + 1).collect();
    let in_grads = if in_ranks.len() == 1 {
        quote!(::blaze::Tensor<B, #(#in_ranks)*>)
    } else {
        quote!((#(::blaze::Tensor<B, #in_ranks>),*))
    };
    let in_sigs = inputs.ranks.iter().map(|&r| {
        let dims = vec![0usize; r];
        quote!(::blaze::nn::StaticShape::new(&[#(#dims),*]))
    });
    let structs = match sequential {
        true => {
            let mut items = super::quant::struct_items(model);
            items.extend(struct_and_module(model));
            items
        }
        false => TokenStream::new(),
    };
    let block = match names.as_slice() {
        [x] => {
            let ri = &in_ranks[0];
            let differentiable = quote! {
                #[automatically_derived]
                #[allow(unused_variables)]
                impl<B: ::blaze::Backend> ::blaze::nn::Differentiable<B> for #ident<B> {
                    type Input = ::blaze::Tensor<B, #ri>;
                    type Output = ::blaze::Tensor<B, #out>;
                    type Cache = #cache_ident<B>;
                    fn forward(&self, #x: &Self::Input) -> Self::Output { #body }
                    fn forward_train(&mut self, #x: &Self::Input, ctx: &mut ::blaze::nn::Ctx) -> (Self::Output, Self::Cache) { #body }
                    fn backward(&self, cache: &Self::Cache, grad: &Self::Output) -> (Self::Input, Self::Grads) { #body }
                    fn backward_params(&self, cache: &Self::Cache, grad: &Self::Output) -> Self::Grads { #body }
                }
            };
            match &inputs.fixed {
                Some(dims) => quote! {
                    #differentiable

                    #[automatically_derived]
                    #[allow(unused_variables)]
                    impl<B: ::blaze::Backend> ::blaze::nn::Block<B> for #ident<B> {
                        const INPUT: ::blaze::nn::StaticShape = ::blaze::nn::StaticShape::new(&[#(#dims),*]);
                        const OUTPUT: ::blaze::nn::StaticShape = ::blaze::nn::StaticShape { dims: [0; 8], rank: #out_rank };
                        const NUM_PARAMS: usize = 0;
                        fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self { #body }
                    }
                },
                None => differentiable,
            }
        }
        _ => TokenStream::new(),
    };
    // The fusion plan, as the full expansion has it (every model has one).
    let fusion = quote! {
        /// Which ops run fused.
        pub const FUSION: ::blaze::nn::FusionPlan =
            ::blaze::nn::FusionPlan {
                groups: &[],
                softmaxes: &[],
                epilogues: &[],
                recomputed: &[],
                forward_ops: [0, 0],
                backward_ops: [0, 0],
                precision: ::core::option::Option::None,
                products: &[],
            };
    };
    // As the full expansion: with a `Block` impl, the shapes as consts.
    let shape_consts = match (&inputs.fixed, names.len()) {
        (Some(dims), 1) => quote! {
            /// Per-sample input shape (the batch dim excluded).
            pub const INPUT_SHAPE: &'static [usize] = &[#(#dims),*];
            /// Per-sample output shape.
            pub const OUTPUT_SHAPE: &'static [usize] = &[];
            #fusion
        },
        _ => fusion,
    };
    let constructors = if sequential {
        quote! {
            /// A model initialised as PyTorch initialises these layers.
            pub fn new<Dev: ::blaze::nn::BackendDevice<B>>(device: &Dev) -> Self { #body }
            /// A model initialised from `seed` alone.
            pub fn new_seeded<Dev: ::blaze::nn::BackendDevice<B>>(seed: u64, device: &Dev) -> Self { #body }
        }
    } else {
        TokenStream::new()
    };
    quote! {
        #structs

        #[allow(missing_docs)]
        #vis struct #cache_ident<B: ::blaze::Backend>(::core::marker::PhantomData<B>);

        impl<B: ::blaze::Backend> ::core::fmt::Debug for #cache_ident<B> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result { #body }
        }

        #[automatically_derived]
        #[allow(unused_variables)]
        impl<B: ::blaze::Backend> ::blaze::nn::Graph<B> for #ident<B> {
            const SIGNATURE: ::blaze::nn::Signature = ::blaze::nn::Signature {
                inputs: &[#(#in_sigs),*],
                output: ::blaze::nn::StaticShape { dims: [0; 8], rank: #out_rank },
            };
            const NUM_PARAMS: usize = 0;
            type Cache = #cache_ident<B>;
            fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self { #body }
        }

        #block

        #[automatically_derived]
        #[allow(unused_variables, clippy::all)]
        impl<B: ::blaze::Backend> #ident<B> {
            /// Number of trainable scalars.
            pub const NUM_PARAMS: usize = 0;
            #shape_consts
            #constructors
            /// Inference.
            pub fn forward(&self, #(#names: &::blaze::Tensor<B, #in_ranks>),*) -> ::blaze::Tensor<B, #out> { #body }
            /// The training forward.
            pub fn forward_train(
                &mut self,
                #(#names: &::blaze::Tensor<B, #in_ranks>,)*
                ctx: &mut ::blaze::nn::Ctx,
            ) -> (::blaze::Tensor<B, #out>, #cache_ident<B>) { #body }
            /// The gradients of the inputs and parameters.
            pub fn backward(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out>) -> (#in_grads, #grads_ident<B>) { #body }
            /// The parameter gradients alone.
            pub fn backward_params(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out>) -> #grads_ident<B> { #body }
            /// The layer table.
            pub fn summary(&self) -> ::std::string::String { #body }
        }
    }
}
