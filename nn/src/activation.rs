//! Activations with options or of several ops; those that are one op of
//! the op table (ReLU, GELU, sigmoid, tanh, ...) are generated from it in
//! `unary_layers`. Each keeps the tensor its derivative is cheapest from:
//! the output for softmax, the input for leaky ReLU, SiLU, softplus and
//! ELU. Leaky ReLU, softplus and ELU are the op table's ops with the
//! layer's options as their parameters.

use std::fmt;
use std::marker::PhantomData;

use super::{Ctx, Layer, stateless_module};
use blaze_runtime::adjoint;
use blaze_runtime::kernel::{self, Arg, Elementwise};
use blaze_runtime::{Backend, SoftmaxOptions, Tensor, UnaryOp};

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

/// SiLU, `x * sigmoid(x)` (PyTorch's `nn.SiLU`; swish with β = 1).
#[derive(Clone, Copy, Debug, Default)]
pub struct Silu;

/// The identity: passes its input through (PyTorch's `nn.Identity`), a
/// placeholder where a model has an optional layer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

/// `log(1 + exp(beta x)) / beta`, and `x` itself where `beta x >
/// threshold` (PyTorch's `nn.Softplus`): a smooth ReLU.
#[derive(Clone, Copy, Debug)]
pub struct Softplus {
    /// Sharpness (PyTorch's default 1).
    pub beta: f64,
    /// Above this `beta x`, the identity (PyTorch's default 20).
    pub threshold: f64,
}

/// Options of [`Softplus`].
#[derive(Clone, Copy, Debug)]
pub struct SoftplusConfig {
    /// PyTorch's default is 1.
    pub beta: f64,
    /// PyTorch's default is 20.
    pub threshold: f64,
}

/// `x` for positive `x`, `alpha (exp(x) - 1)` otherwise (PyTorch's
/// `nn.ELU`).
#[derive(Clone, Copy, Debug)]
pub struct Elu {
    /// The value approached for large negative inputs is `-alpha`.
    pub alpha: f64,
}

/// Options of [`Elu`].
#[derive(Clone, Copy, Debug)]
pub struct EluConfig {
    /// PyTorch's default is 1.
    pub alpha: f64,
}

/// Softmax along `dim` (PyTorch's `nn.Softmax(dim)`): dims count as
/// PyTorch counts them, the batch at 0, negative from the last.
#[derive(Clone, Copy, Debug)]
pub struct Softmax {
    /// The dimension the outputs sum to 1 along.
    pub dim: i64,
}

macro_rules! config_defaults {
    ($($config:ident => $layer:ident),*) => {$(
        impl Default for $config {
            fn default() -> Self {
                (&blaze_spec::Layer::$layer.defaults()).into()
            }
        }
        impl Default for $layer {
            fn default() -> Self {
                Self::new(<$config>::default())
            }
        }
    )*};
}

config_defaults!(SoftplusConfig => Softplus, EluConfig => Elu);

impl Softplus {
    /// A softplus with the given options.
    pub fn new(config: SoftplusConfig) -> Self {
        Softplus { beta: config.beta, threshold: config.threshold }
    }
}

impl Elu {
    /// An ELU with the given options.
    pub fn new(config: EluConfig) -> Self {
        Elu { alpha: config.alpha }
    }
}

/// Log-softmax along `dim` (PyTorch's `nn.LogSoftmax(dim)`), the dims
/// counted as [`Softmax`] counts them.
#[derive(Clone, Copy, Debug)]
pub struct LogSoftmax {
    /// The dimension whose exponentiated outputs sum to 1.
    pub dim: i64,
}

impl Softmax {
    /// Softmax along `dim` (`-1`: the last).
    pub fn new(dim: i64) -> Self {
        Softmax { dim }
    }
}

impl LogSoftmax {
    /// Log-softmax along `dim` (`-1`: the last).
    pub fn new(dim: i64) -> Self {
        LogSoftmax { dim }
    }
}

/// The tensor dim of a rank-`d` batch that `layer`'s `dim` names, checked.
fn softmax_axis(layer: &str, dim: i64, d: usize) -> usize {
    let rank = d as i64;
    let axis = if dim < 0 { rank + dim } else { dim };
    assert!(
        (1..rank).contains(&axis),
        "{layer}: dim {dim} is not a dimension of a sample of a rank-{d} batch (1 to {} or -{} to -1; 0 is the batch)",
        d - 1,
        d - 1
    );
    axis as usize
}

impl Default for Softmax {
    fn default() -> Self {
        Softmax::new(blaze_spec::Layer::Softmax.defaults().dim)
    }
}

impl Default for LogSoftmax {
    fn default() -> Self {
        LogSoftmax::new(blaze_spec::Layer::LogSoftmax.defaults().dim)
    }
}
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

stateless_module!(LeakyRelu, Silu, Identity, Softplus, Elu, Softmax, LogSoftmax);
stateless_module!(generics [K: Elementwise] Map<K>);

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

impl<B: Backend, const D: usize> Layer<B, D, D> for Identity {
    type Cache = ();
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.clone()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, ()) {
        (x.clone(), ())
    }
    fn backward(&self, _: &(), g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (g.clone(), ())
    }
}

/// The layers that are one op of the table with their options as its
/// parameters: the input is the cache, where the op's derivative is taken.
macro_rules! parametric_layer {
    ($($layer:ident => |$s:ident| $op:expr);* $(;)?) => {$(
        impl<B: Backend, const D: usize> Layer<B, D, D> for $layer {
            type Cache = Tensor<B, D>;
            fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
                let $s = self;
                x.unary($op)
            }
            fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
                (Layer::<B, D, D>::forward(self, x), x.clone())
            }
            fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
                let $s = self;
                (Tensor::from_storage(adjoint::unary::<B>($op, x.storage(), x.storage(), g.storage())), ())
            }
        }
    )*};
}

parametric_layer! {
    LeakyRelu => |l| UnaryOp::LeakyRelu(l.negative_slope);
    Softplus => |l| UnaryOp::Softplus(l.beta, l.threshold);
    Elu => |l| UnaryOp::Elu(l.alpha);
}

/// `Softmax` and `LogSoftmax`: the output is the cache, which the adjoint
/// takes.
macro_rules! softmax_layer {
    ($($layer:ident => $method:ident, $options:expr);*) => {$(
        impl<B: Backend, const D: usize> Layer<B, D, D> for $layer {
            type Cache = Tensor<B, D>;
            fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
                x.$method(softmax_axis(stringify!($layer), self.dim, D))
            }
            fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
                let y = Layer::<B, D, D>::forward(self, x);
                (y.clone(), y)
            }
            fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
                let axis = softmax_axis(stringify!($layer), self.dim, D);
                (Tensor::from_storage(adjoint::softmax::<B>(g.storage(), y.storage(), axis, $options)), ())
            }
        }

        impl<B: Backend> super::FromSpec<B> for $layer {
            const LAYER: blaze_spec::Layer = blaze_spec::Layer::$layer;
            fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
                $layer::new(o.dim)
            }
        }
    )*};
}

softmax_layer!(Softmax => softmax, SoftmaxOptions::default(); LogSoftmax => log_softmax, SoftmaxOptions::default().log());

impl From<&blaze_spec::Options> for SoftplusConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        SoftplusConfig { beta: o.beta, threshold: o.threshold }
    }
}

impl From<&blaze_spec::Options> for EluConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        EluConfig { alpha: o.alpha }
    }
}

impl<B: Backend> super::FromSpec<B> for Softplus {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Softplus;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        Softplus::new(o.into())
    }
}

impl<B: Backend> super::FromSpec<B> for Elu {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Elu;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        Elu::new(o.into())
    }
}

impl From<&blaze_spec::Options> for LeakyReluConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        LeakyReluConfig { negative_slope: o.negative_slope }
    }
}

impl<B: Backend> super::FromSpec<B> for LeakyRelu {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::LeakyRelu;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        LeakyRelu::new(o.into())
    }
}

impl<B: Backend, K: Elementwise> super::FromSpec<B> for Map<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Map;
    fn from_spec(_: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        Map::new()
    }
}

super::spec::plain_from_spec!(Silu, Identity);
