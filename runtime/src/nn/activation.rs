//! Elementwise activations. Each keeps the tensor its derivative is cheapest
//! from: the output for ReLU, sigmoid and tanh (so a layer before them can
//! fuse them into its bias pass), the input for leaky ReLU, GELU and SiLU.

use std::fmt;
use std::marker::PhantomData;

use super::{Ctx, Layer, stateless_module};
use crate::adjoint;
use crate::kernel::{self, Arg, Elementwise};
use crate::{Backend, Tensor};

/// `max(x, 0)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Relu;

/// `x` for positive `x`, `negative_slope * x` otherwise.
#[derive(Clone, Copy, Debug)]
pub struct LeakyRelu {
    /// The slope for negative inputs.
    pub negative_slope: f64,
}

/// Options of [`LeakyRelu`].
#[derive(Clone, Copy, Debug)]
pub struct LeakyReluConfig {
    /// PyTorch's default is 0.01.
    pub negative_slope: f64,
}

impl Default for LeakyReluConfig {
    fn default() -> Self {
        (&blaze_spec::Options::DEFAULT).into()
    }
}

impl LeakyRelu {
    /// A leaky ReLU with the given options.
    pub fn new(config: LeakyReluConfig) -> Self {
        LeakyRelu { negative_slope: config.negative_slope }
    }
}

impl Default for LeakyRelu {
    fn default() -> Self {
        Self::new(LeakyReluConfig::default())
    }
}

/// Exact (erf) GELU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gelu;

/// Logistic sigmoid.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sigmoid;

/// Hyperbolic tangent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

/// SiLU, `x * sigmoid(x)` (PyTorch's `nn.SiLU`; swish with β = 1).
#[derive(Clone, Copy, Debug, Default)]
pub struct Silu;

/// A `kernel!` kernel of one argument applied elementwise: a custom
/// activation. In a `#[model]`: `act: Map<swish::Kernel>`.
pub struct Map<K>(PhantomData<fn() -> K>);

impl<K> Map<K> {
    /// The layer.
    pub fn new() -> Self {
        Map(PhantomData)
    }
}

impl<K> Default for Map<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for Map<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Map<K> {}

impl<K: Elementwise> fmt::Debug for Map<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Map<{}>", K::NAME)
    }
}

stateless_module!(Relu, LeakyRelu, Gelu, Sigmoid, Tanh, Silu);
stateless_module!(generics [K: Elementwise] Map<K>);

impl<B: Backend, const D: usize> Layer<B, D, D> for Relu {
    /// The output: `y > 0` exactly where `x > 0`.
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.relu()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.relu();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::relu::<B>(g.storage(), y.storage())), ())
    }
}

impl<B: Backend, K: Elementwise, const D: usize> Layer<B, D, D> for Map<K> {
    /// The input: the kernel's derivative is taken there.
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        const { assert!(K::ARGS.len() == 1, "Map applies a kernel of one argument") };
        kernel::call::<K, B, D>(&[Arg::Tensor(x)])
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (Layer::<B, D, D>::forward(self, x), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        let partial = kernel::partial::<K, B, D>(0, &[Arg::Tensor(x)]);
        (Tensor::from_storage(adjoint::times::<B>(g.storage(), partial.storage())), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for LeakyRelu {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.leaky_relu(self.negative_slope)
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (x.leaky_relu(self.negative_slope), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::leaky_relu::<B>(g.storage(), x.storage(), self.negative_slope)), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Gelu {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.gelu()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (x.gelu(), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::gelu::<B>(g.storage(), x.storage())), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Sigmoid {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.sigmoid()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.sigmoid();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::sigmoid::<B>(g.storage(), y.storage())), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Tanh {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.tanh()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.tanh();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::tanh::<B>(g.storage(), y.storage())), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Silu {
    /// The input: the derivative `s (1 + x (1 - s))`, with `s = sigmoid(x)`,
    /// is taken there.
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x * &x.sigmoid()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (Layer::<B, D, D>::forward(self, x), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        let s = x.sigmoid();
        let slope = &s * &(x * &s.rsub_scalar(1.0)).add_scalar(1.0);
        (g * &slope, ())
    }
}

impl From<&blaze_spec::Options> for LeakyReluConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        LeakyReluConfig { negative_slope: o.negative_slope }
    }
}

impl<B: Backend> super::FromSpec<B> for LeakyRelu {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::LeakyRelu;
    fn from_spec(o: &blaze_spec::Options, _: &mut crate::rng::Rng, _: &B::Device) -> Self {
        LeakyRelu::new(o.into())
    }
}

impl<B: Backend, K: Elementwise> super::FromSpec<B> for Map<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Map;
    fn from_spec(_: &blaze_spec::Options, _: &mut crate::rng::Rng, _: &B::Device) -> Self {
        Map::new()
    }
}

super::spec::plain_from_spec!(Relu, Gelu, Sigmoid, Tanh, Silu);
