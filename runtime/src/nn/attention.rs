//! Attention: the [`Attend`] trait of layers a forward body calls on a
//! query, keys and values (`self.attn(q, k, v)`, optionally with a
//! key-padding mask).

use std::fmt::Debug;

use super::{Ctx, Module};
use crate::{Backend, Tensor};

/// A layer a forward body may call on a query `[n, T, D]`, keys and values
/// `[n, S, D]`, and optionally a key-padding mask `[n, S]` (nonzero where a
/// key is padding and no query may attend to it).
pub trait Attend<B: Backend>: Module<B> {
    /// What its training forward keeps for its backward pass.
    type AttendCache: Clone + Debug;

    /// The output `[n, T, D]`.
    fn attend(
        &self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3>;

    /// The output and what the backward needs, in the mode `ctx` says.
    fn attend_train(
        &mut self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
        ctx: &mut Ctx,
    ) -> (Tensor<B, 3>, Self::AttendCache);

    /// The gradients of the query, keys and values, and of the parameters,
    /// for the output's gradient `g`.
    fn attend_backward(&self, cache: &Self::AttendCache, g: &Tensor<B, 3>) -> (AttendInputs<B>, Self::Grads);
}

/// The gradients of a query, keys and values.
pub type AttendInputs<B> = (Tensor<B, 3>, Tensor<B, 3>, Tensor<B, 3>);
