//! The built-in layers as the spec (`blaze_spec`) describes them:
//! [`FromSpec`] builds each from the spec's resolved options (what
//! `#[model]` generates for a field), and [`init_params`] draws a layer's
//! parameters as the spec's parameter list says, so the shapes, names
//! and initialisation that the macro counts and the runtime creates are
//! one definition.

use blaze_spec::{Init, Layer, Options, Param};

use super::{
    AvgPool2d, BatchNorm2d, Conv2d, Conv2dConfig, Dropout, DropoutConfig, Embedding, Flatten, Gelu, GlobalAvgPool,
    LayerNorm, LeakyRelu, LeakyReluConfig, Linear, LinearConfig, Map, MaxPool2d, NormConfig, PoolConfig, Relu, Sigmoid,
    Tanh,
};
use crate::kernel::Elementwise;
use crate::rng::Rng;
use crate::{Backend, Tensor};

/// A built-in layer, built from the spec's options.
pub trait FromSpec<B: Backend>: Sized {
    /// The spec's layer this type is.
    const LAYER: Layer;
    /// A fresh layer with `options`, drawing its parameters from `rng`.
    fn from_spec(options: &Options, rng: &mut Rng, device: &B::Device) -> Self;
}

/// The initial values of `param`, of rank `D`.
pub(crate) fn init_param<B: Backend, const D: usize>(param: &Param, rng: &mut Rng, device: &B::Device) -> Tensor<B, D> {
    let shape: [usize; D] =
        param.shape.as_slice().try_into().unwrap_or_else(|_| {
            panic!("{}: the spec gives shape {:?}, the layer holds rank {D}", param.name, param.shape)
        });
    match param.init {
        Init::FanInUniform { fan_in } => {
            // PyTorch's Kaiming-uniform with a = sqrt(5), and its bias rule.
            let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
            Tensor::uniform_with(shape, -bound, bound, rng, device)
        }
        Init::Normal => Tensor::normal_with(shape, 0.0, 1.0, rng, device),
        Init::Ones => Tensor::ones(shape, device),
        Init::Zeros => Tensor::zeros(shape, device),
    }
}

impl From<&Options> for LinearConfig {
    fn from(o: &Options) -> Self {
        LinearConfig { bias: o.bias }
    }
}

impl From<&Options> for Conv2dConfig {
    fn from(o: &Options) -> Self {
        let stride = o.stride_of(Layer::Conv2d, 0);
        Conv2dConfig { stride, padding: o.padding, dilation: o.dilation, groups: o.groups, bias: o.bias }
    }
}

impl From<&Options> for PoolConfig {
    fn from(o: &Options) -> Self {
        PoolConfig { stride: o.stride, padding: o.padding }
    }
}

impl From<&Options> for NormConfig {
    fn from(o: &Options) -> Self {
        NormConfig { eps: o.eps, momentum: o.momentum }
    }
}

impl From<&Options> for DropoutConfig {
    fn from(o: &Options) -> Self {
        DropoutConfig { p: o.p }
    }
}

impl From<&Options> for LeakyReluConfig {
    fn from(o: &Options) -> Self {
        LeakyReluConfig { negative_slope: o.negative_slope }
    }
}

impl<B: Backend, const I: usize, const O: usize> FromSpec<B> for Linear<B, I, O> {
    const LAYER: Layer = Layer::Linear;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Linear::new(o.into(), rng, device)
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> FromSpec<B> for Conv2d<B, CIN, COUT, K> {
    const LAYER: Layer = Layer::Conv2d;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Conv2d::new(o.into(), rng, device)
    }
}

impl<B: Backend, const C: usize> FromSpec<B> for BatchNorm2d<B, C> {
    const LAYER: Layer = Layer::BatchNorm2d;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        BatchNorm2d::new(o.into(), device)
    }
}

impl<B: Backend, const N: usize> FromSpec<B> for LayerNorm<B, N> {
    const LAYER: Layer = Layer::LayerNorm;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        LayerNorm::new(o.into(), device)
    }
}

impl<B: Backend, const V: usize, const D: usize> FromSpec<B> for Embedding<B, V, D> {
    const LAYER: Layer = Layer::Embedding;
    fn from_spec(_: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Embedding::new(rng, device)
    }
}

impl<B: Backend, const K: usize> FromSpec<B> for MaxPool2d<K> {
    const LAYER: Layer = Layer::MaxPool2d;
    fn from_spec(o: &Options, _: &mut Rng, _: &B::Device) -> Self {
        MaxPool2d::new(o.into())
    }
}

impl<B: Backend, const K: usize> FromSpec<B> for AvgPool2d<K> {
    const LAYER: Layer = Layer::AvgPool2d;
    fn from_spec(o: &Options, _: &mut Rng, _: &B::Device) -> Self {
        AvgPool2d::new(o.into())
    }
}

impl<B: Backend> FromSpec<B> for LeakyRelu {
    const LAYER: Layer = Layer::LeakyRelu;
    fn from_spec(o: &Options, _: &mut Rng, _: &B::Device) -> Self {
        LeakyRelu::new(o.into())
    }
}

impl<B: Backend> FromSpec<B> for Dropout {
    const LAYER: Layer = Layer::Dropout;
    fn from_spec(o: &Options, _: &mut Rng, _: &B::Device) -> Self {
        Dropout::new(o.into())
    }
}

impl<B: Backend, K: Elementwise> FromSpec<B> for Map<K> {
    const LAYER: Layer = Layer::Map;
    fn from_spec(_: &Options, _: &mut Rng, _: &B::Device) -> Self {
        Map::new()
    }
}

/// The layers without options or parameters.
macro_rules! plain_from_spec {
    ($($t:ident),*) => {
        $(
            impl<B: Backend> FromSpec<B> for $t {
                const LAYER: Layer = Layer::$t;
                fn from_spec(_: &Options, _: &mut Rng, _: &B::Device) -> Self {
                    $t
                }
            }
        )*
    };
}
plain_from_spec!(GlobalAvgPool, Flatten, Relu, Gelu, Sigmoid, Tanh);
