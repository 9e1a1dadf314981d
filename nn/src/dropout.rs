//! Dropout: in training, zeroes each element with probability `p` and
//! scales the rest by `1 / (1 - p)`; in evaluation, the identity.
//!
//! The mask is drawn inside the pass that applies it, by the counter-based
//! generator (`rng::counter_uniform`) from a seed and each element's
//! index: the training forward keeps the seed, not the mask, and the
//! backward draws the same mask again in its one pass over the gradient.

use super::own_kernels::OwnKernel;
use super::{Ctx, Layer, stateless_module};
use blaze_runtime::kernel::KernelFn;
use blaze_runtime::{Backend, Tensor};

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

impl Dropout {
    /// The fraction of draws that drop: `p` rounded to a multiple of
    /// 2^-24, the resolution of the draws, so that every backend and
    /// every float type compares them against the same number.
    pub fn threshold(&self) -> f64 {
        (self.p * 16_777_216.0).round() / 16_777_216.0
    }

    /// The factor kept elements are scaled by, `1 / (1 - p)`.
    pub fn scale(&self) -> f64 {
        1.0 / (1.0 - self.p)
    }

    /// `x` under the mask drawn from `seed`, in one pass: zero where the
    /// element's draw falls below [`Dropout::threshold`], scaled by
    /// [`Dropout::scale`] elsewhere. The same seed draws the same mask on
    /// every backend, so the backward applies it to the gradient.
    pub fn apply<B: Backend, const D: usize>(&self, x: &Tensor<B, D>, seed: u64) -> Tensor<B, D> {
        OwnKernel::Dropout { threshold: self.threshold(), scale: self.scale(), seed }.run(KernelFn::Value, x)
    }
}

impl Default for Dropout {
    fn default() -> Self {
        Self::new(DropoutConfig::default())
    }
}

stateless_module!(Dropout);

impl<B: Backend, const D: usize> Layer<B, D, D> for Dropout {
    /// The seed the mask was drawn from, or `None` when nothing was
    /// dropped (evaluation).
    type Cache = Option<u64>;

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.clone()
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, ctx: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        if !ctx.train || self.p == 0.0 {
            return (x.clone(), None);
        }
        let seed = ctx.rng.next_u64();
        (self.apply(x, seed), Some(seed))
    }

    fn backward(&self, seed: &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (seed.map_or_else(|| g.clone(), |seed| self.apply(g, seed)), ())
    }
}

impl From<&blaze_spec::Options> for DropoutConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        DropoutConfig { p: o.p }
    }
}

impl<B: Backend> super::FromSpec<B> for Dropout {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Dropout;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        Dropout::new(o.into())
    }
}
