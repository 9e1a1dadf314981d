//! Dropout: in training, zeroes each element with probability `p` and
//! scales the rest by `1 / (1 - p)`; in evaluation, the identity.

use super::{Ctx, Layer, stateless_module};
use crate::{Backend, Tensor};

/// Options of [`Dropout`].
#[derive(Clone, Copy, Debug)]
pub struct DropoutConfig {
    /// Probability of zeroing an element, in `[0, 1)`; PyTorch's default is 0.5.
    pub p: f64,
}

impl Default for DropoutConfig {
    fn default() -> Self {
        (&blaze_spec::Options::DEFAULT).into()
    }
}

/// Inverted dropout.
#[derive(Clone, Copy, Debug)]
pub struct Dropout {
    /// Probability of zeroing an element.
    pub p: f64,
}

impl Dropout {
    /// Dropout with the given options; panics unless `0 <= p < 1`.
    pub fn new(config: DropoutConfig) -> Self {
        assert!((0.0..1.0).contains(&config.p), "Dropout: p = {} is outside [0, 1)", config.p);
        Dropout { p: config.p }
    }
}

impl Default for Dropout {
    fn default() -> Self {
        Self::new(DropoutConfig::default())
    }
}

stateless_module!(Dropout);

impl<B: Backend, const D: usize> Layer<B, D, D> for Dropout {
    /// The scaled mask, or `None` when nothing was dropped (evaluation).
    type Cache = Option<Tensor<B, D>>;

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.clone()
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, ctx: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        if !ctx.train || self.p == 0.0 {
            return (x.clone(), None);
        }
        let keep = Tensor::<B, D>::uniform_with(x.shape(), 0.0, 1.0, &mut ctx.rng, &x.device()).ge_scalar(self.p);
        let mask = keep.to_dtype(x.dtype()).mul_scalar(1.0 / (1.0 - self.p));
        (x.mul(&mask), Some(mask))
    }

    fn backward(&self, mask: &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (
            mask.as_ref().map_or_else(
                || g.clone(),
                |m| Tensor::from_storage(crate::adjoint::times::<B>(g.storage(), m.storage())),
            ),
            (),
        )
    }
}

impl From<&blaze_spec::Options> for DropoutConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        DropoutConfig { p: o.p }
    }
}

impl<B: Backend> super::FromSpec<B> for Dropout {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Dropout;
    fn from_spec(o: &blaze_spec::Options, _: &mut crate::rng::Rng, _: &B::Device) -> Self {
        Dropout::new(o.into())
    }
}
