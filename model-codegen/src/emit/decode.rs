//! `blaze::nn::Decode` for a forward body that can run one position at a
//! time: its input is `[T, ..]`, `T` its only symbol, and every op acts on
//! each position on its own (layers over a last dim that is not `T`,
//! elementwise ops, `positions(T)`, products that do not sum over `T`,
//! every value holding the positions in its first dim if at all),
//! but for causal self-attention, which attends over a cache of the keys
//! and values of the positions seen. The step is the inference forward
//! with `T` the new positions' count and three substitutions
//! ([`Gen::decode_stmt`]). A body that does anything else across positions
//! (a causal mask written out, a sum or softmax over `T`, a recurrent
//! layer) gets no `Decode`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Gen, access, field_ty, value_ident};
use crate::ops::{Dim, Op, SampleDim, elementwise_ops, fused_ops, movement_ops, row_ops};
use blaze_spec::Layer;

/// The ops a decoding step runs as the forward does, keeping nothing
/// between steps: a pattern, so that the matches here name every op.
macro_rules! stateless {
    () => {
        Op::Input | Op::Matmul | elementwise_ops!() | movement_ops!() | row_ops!() | fused_ops!()
    };
}

/// The cache slot of node `i`: an attention's keys and values, or a
/// nested model's state.
fn slot(i: usize) -> syn::Ident {
    format_ident!("s{}", i)
}

impl Gen<'_> {
    /// Whether callee `c` is a `MultiHeadAttention` field.
    fn attends(&self, c: &crate::ops::Callee) -> bool {
        matches!(self.fields()[c.field].kind.builtin(), Some((Layer::MultiHeadAttention, _)))
    }

    /// Whether dim `d` runs along the positions.
    fn along_t(d: &Dim) -> bool {
        d.syms.contains(&0)
    }

    /// Whether the body decodes (see the module's comment), as it was
    /// written.
    fn decodes(&self) -> bool {
        let low = self.unfused;
        if low.symbols.len() != 1 || low.inputs.len() != 1 {
            return false;
        }
        let is_t = |d: &Dim| d.name() == Some(&0);
        // Every value holds the positions in its first dim alone, if at all:
        // then a reshape keeps each position's values apart (row-major, the
        // positions outermost), and no transpose moves them.
        let positional =
            low.vals.iter().all(|v| v.shape.iter().enumerate().all(|(i, d)| !Self::along_t(d) || (i == 0 && is_t(d))));
        let input = &low.vals[low.inputs[0]].shape;
        if !positional || !input.first().is_some_and(is_t) {
            return false;
        }
        let shape = |k: usize| &low.vals[k].shape;
        let last_free = |k: usize| shape(k).last().is_none_or(|d| !Self::along_t(d));
        let first_is_t = |k: usize| shape(k).first().is_some_and(is_t);
        let causal_attention = |c: &crate::ops::Callee| self.attends(c) && self.options[c.field].spec.causal;
        low.nodes.iter().all(|n| {
            let a = |i: usize| n.args[i];
            match &n.op {
                Op::Input
                | Op::Unary(_)
                | Op::Bin(_)
                | Op::Binary(_)
                | Op::Scalar(..)
                | Op::Neg
                | Op::Kernel { .. }
                | Op::Transpose(..)
                | Op::Permute(_)
                | Op::Reshape(_) => true,
                Op::Positions(t) => is_t(t),
                Op::Matmul => last_free(a(0)) && shape(a(1)).iter().all(|d| !Self::along_t(d)),
                Op::Narrow { dim, .. } | Op::Cat(dim) | Op::Softmax(dim) | Op::LogSoftmax(dim) => {
                    n.args.iter().all(|&k| !Self::along_t(&shape(k)[*dim]))
                }
                Op::Reduce { dim, .. } => !Self::along_t(&shape(a(0))[*dim]),
                Op::CausalFill { .. } => false,
                fused_ops!() => unreachable!("the ops before fusion"),
                Op::Attend(c) => n.args.len() == 3 && n.args.iter().all(|&k| k == a(0)) && causal_attention(c),
                Op::Nested(_) => n.args.len() == 1 && first_is_t(a(0)),
                Op::Layer(c) => match self.fields()[c.field].kind.builtin() {
                    Some((Layer::MultiHeadAttention, _)) => causal_attention(c) && first_is_t(a(0)),
                    Some((Layer::Linear | Layer::LayerNorm | Layer::RMSNorm, _)) => last_free(a(0)),
                    Some((
                        Layer::Embedding
                        | Layer::Unary(_)
                        | Layer::LeakyRelu
                        | Layer::Silu
                        | Layer::Identity
                        | Layer::Softplus
                        | Layer::Elu
                        | Layer::Dropout,
                        _,
                    )) => true,
                    // Layers that mix positions, or are not known to keep
                    // them apart (each is a decision: a layer added to the
                    // spec must be placed here).
                    Some((
                        Layer::Conv2d
                        | Layer::ConvTranspose2d
                        | Layer::Conv1d
                        | Layer::MaxPool2d
                        | Layer::AvgPool2d
                        | Layer::AdaptiveAvgPool2d
                        | Layer::Upsample
                        | Layer::GlobalAvgPool
                        | Layer::Flatten
                        | Layer::Softmax
                        | Layer::LogSoftmax
                        | Layer::Map
                        | Layer::BatchNorm2d
                        | Layer::BatchNorm1d
                        | Layer::GroupNorm
                        | Layer::Lstm
                        | Layer::Gru,
                        _,
                    ))
                    | None => false,
                },
            }
        })
    }

    /// Node `i` of a decoding step where it differs from the forward's.
    pub(super) fn decode_stmt(&self, i: usize, int8: bool) -> Option<TokenStream> {
        let n = &self.low.nodes[i];
        let (o, s) = (value_ident(n.out), slot(i));
        let x = n.args.first().map(|&k| value_ident(k));
        Some(match &n.op {
            Op::Layer(c) | Op::Attend(c) if self.attends(c) => {
                let at = access(*c, self.fields());
                quote!(let #o = #at.attend_step(&#x, &mut state.#s);)
            }
            Op::Nested(c) => {
                let (at, ty) = (access(*c, self.fields()), self.decoded_ty(c, int8));
                quote!(let #o = <#ty as ::blaze::nn::Decode<B>>::decode_step(&#at, &#x, &mut state.#s);)
            }
            Op::Positions(t) => {
                let t = t.tokens();
                quote!(let #o = ::blaze::nn::graph::positions_from::<B>(state.pos, #t, &__device);)
            }
            // As in the forward: `decodes` let only ops through that see
            // each position on its own.
            Op::Layer(_) | Op::Attend(_) | stateless!() => return None,
        })
    }

    /// The type of nested field `c` that decodes: its own, or its int8
    /// form's.
    fn decoded_ty(&self, c: &crate::ops::Callee, int8: bool) -> TokenStream {
        let ty = field_ty(&self.fields()[c.field].kind);
        if int8 { quote!(<#ty as ::blaze::quant::Quantize<B>>::Quantized) } else { ty }
    }

    /// The state struct and the `Decode` impl, for the model and for its
    /// int8 form (`blaze::quant`); nothing for a body that does not decode.
    pub fn decode(&self) -> TokenStream {
        if !self.decodes() {
            return TokenStream::new();
        }
        let mut out = self.decode_impl(false);
        out.extend(self.decode_impl(true));
        out
    }

    fn decode_impl(&self, int8: bool) -> TokenStream {
        let (vis, low) = (&self.model.vis, self.low);
        let ident = if int8 { crate::quant::ident(self.model) } else { self.model.ident.clone() };
        let state = format_ident!("{}DecodeState", ident);
        let mut fields = Vec::new();
        let mut inits = Vec::new();
        let mut bounds = if int8 { crate::quant::opaque_bounds(self.model) } else { Vec::new() };
        for (i, n) in low.nodes.iter().enumerate() {
            let s = slot(i);
            match &n.op {
                Op::Layer(c) | Op::Attend(c) if self.attends(c) => {
                    fields.push(quote!(#s: ::blaze::nn::KvCache<B>));
                    inits.push(quote!(#s: ::blaze::nn::KvCache::new()));
                }
                Op::Nested(c) => {
                    let (at, ty) = (access(*c, self.fields()), self.decoded_ty(c, int8));
                    let (ri, ro) = (low.vals[n.args[0]].rank(), low.vals[n.out].rank());
                    fields.push(quote!(#s: <#ty as ::blaze::nn::Decode<B>>::State));
                    inits.push(quote!(#s: <#ty as ::blaze::nn::Decode<B>>::decode_state(&#at)));
                    let bound = quote! {
                        #ty: ::blaze::nn::Decode<B, Input = ::blaze::Tensor<B, #ri>, Output = ::blaze::Tensor<B, #ro>>
                    };
                    if !bounds.iter().any(|b: &TokenStream| b.to_string() == bound.to_string()) {
                        bounds.push(bound);
                    }
                }
                Op::Layer(_) | Op::Attend(_) | Op::Positions(_) | stateless!() => {}
            }
        }
        let body = self.forward_stmts(true, int8);
        let device = match int8 {
            true => quote!(::blaze::quant::QuantModule::<B>::device(self)),
            false => quote!(::blaze::nn::device_of::<B, Self>(self)),
        };
        let (ri, ro) = (low.vals[low.inputs[0]].rank(), low.vals[low.output].rank());
        let x = &self.input_names[0];
        let doc = format!("What [`{ident}`]'s decoding step keeps between positions.");
        quote! {
            #[doc = #doc]
            #[allow(missing_docs)]
            #vis struct #state<B: ::blaze::Backend>
            where
                #(#bounds,)*
            {
                /// The positions seen.
                pub pos: usize,
                #(#fields,)*
                _backend: ::core::marker::PhantomData<B>,
            }

            #[automatically_derived]
            #[allow(unused_variables, clippy::all)]
            impl<B: ::blaze::Backend> ::blaze::nn::Decode<B> for #ident<B>
            where
                #(#bounds,)*
            {
                type Input = ::blaze::Tensor<B, #ri>;
                type Output = ::blaze::Tensor<B, #ro>;
                type State = #state<B>;

                fn decode_state(&self) -> #state<B> {
                    #state { pos: 0, #(#inits,)* _backend: ::core::marker::PhantomData }
                }

                fn decode_step(&self, #x: &::blaze::Tensor<B, #ri>, state: &mut #state<B>) -> ::blaze::Tensor<B, #ro> {
                    let __steps = #x.shape()[1];
                    let __out = { #body };
                    state.pos += __steps;
                    __out
                }

                fn decoded(state: &#state<B>) -> usize {
                    state.pos
                }

                fn device(&self) -> ::core::option::Option<B::Device> {
                    #device
                }
            }
        }
    }
}
