//! The built-in layers as the spec (`blaze_spec`) describes them:
//! [`FromSpec`] builds each from the spec's resolved options (what
//! `#[model]` generates for a field; each layer implements it next to its
//! type), and [`init_param`] draws a parameter as the spec's parameter
//! list says, so the shapes, names and initialisation that the macro
//! counts and the runtime creates are one definition.

use blaze_spec::{Init, Layer, Options, Param};

use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor};

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
        Init::XavierUniform { fan_in, fan_out } => {
            let bound = (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
            Tensor::uniform_with(shape, -bound, bound, rng, device)
        }
        Init::Normal => Tensor::normal_with(shape, 0.0, 1.0, rng, device),
        Init::Ones => Tensor::ones(shape, device),
        Init::Zeros => Tensor::zeros(shape, device),
    }
}

/// The weight (rank `D`) and the optional bias of `layer` with `sizes` and
/// `options`, as the spec lists them: one copy for every size of the
/// layers that hold these two (`Linear`, the convolutions).
pub(crate) fn init_weight_bias<B: Backend, const D: usize>(
    layer: Layer,
    sizes: &[usize],
    options: &Options,
    rng: &mut Rng,
    device: &B::Device,
) -> (Tensor<B, D>, Option<Tensor<B, 1>>) {
    let params = layer.params(sizes, options);
    let weight = init_param(&params[0], rng, device);
    (weight, params.get(1).map(|p| init_param(p, rng, device)))
}

/// `FromSpec` for layers without options or parameters.
macro_rules! plain_from_spec {
    ($($t:ident),*) => {
        $(
            impl<B: ::blaze_runtime::Backend> $crate::FromSpec<B> for $t {
                const LAYER: ::blaze_spec::Layer = ::blaze_spec::Layer::$t;
                fn from_spec(_: &::blaze_spec::Options, _: &mut ::blaze_runtime::rng::Rng, _: &B::Device) -> Self {
                    $t
                }
            }
        )*
    };
}
pub(crate) use plain_from_spec;
