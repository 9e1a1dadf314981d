//! `Linear<B, I, O>`: `y = x W^T + b` over the last dim, as `torch.nn.Linear`.

use super::params::weight_bias_module;
use super::spec::init_weight_bias;
use super::{Ctx, Layer, WeightGrads};
use blaze_runtime::adjoint;
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor, UnaryOp};
use blaze_spec::{Layer as Spec, Options};

/// Options of [`Linear`].
#[derive(Clone, Copy, Debug)]
pub struct LinearConfig {
    /// Whether the layer adds a bias (PyTorch's default: yes).
    pub bias: bool,
}

impl Default for LinearConfig {
    fn default() -> Self {
        (&Options::DEFAULT).into()
    }
}

/// A fully connected layer from `I` to `O` features.
#[derive(Clone, Debug)]
pub struct Linear<B: Backend, const I: usize, const O: usize> {
    /// `[O, I]`, as PyTorch stores it.
    pub weight: Tensor<B, 2>,
    /// `[O]`.
    pub bias: Option<Tensor<B, 1>>,
}

/// Gradients of a [`Linear`].
pub type LinearGrads<B> = WeightGrads<B, 2>;

impl<B: Backend, const I: usize, const O: usize> Linear<B, I, O> {
    /// Initialised as PyTorch does (the spec's parameter list): weight and
    /// bias uniform in `±1/sqrt(I)`.
    pub fn new(config: LinearConfig, rng: &mut Rng, device: &B::Device) -> Self {
        let options = Options { bias: config.bias, ..Options::DEFAULT };
        let (weight, bias) = init_weight_bias(Spec::Linear, &[I, O], &options, rng, device);
        Linear { weight, bias }
    }

    /// `x W^T + b` over the last dim of `x`, for any rank (as `nn.Linear`),
    /// so hand-written forwards read `self.fc.forward(&x)`.
    pub fn forward<const D: usize>(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        Layer::<B, D, D>::forward(self, x)
    }

    /// `act(x W^T + b)`: the forward with the activation after the layer
    /// fused into the bias pass. `#[model]` calls it for a `Linear`
    /// followed by an activation whose derivative reads its output (ReLU,
    /// sigmoid, tanh: the bias pass keeps no input for it).
    pub fn forward_act<const D: usize>(&self, x: &Tensor<B, D>, act: Option<UnaryOp>) -> Tensor<B, D> {
        self.forward_fused(x, act, None)
    }

    /// `act(x W^T + b) + residual`, the bias, activation and residual
    /// connection in one pass over the product where the backend fuses
    /// them. `#[model]` calls it for a block's `x + fc(h)`.
    pub fn forward_fused<const D: usize>(
        &self,
        x: &Tensor<B, D>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, D>>,
    ) -> Tensor<B, D> {
        linear_fused(&self.weight, self.bias.as_ref(), x, act, residual)
    }

    /// The training [`Linear::forward_act`]: its output and the layer's cache.
    pub fn forward_train_act<const D: usize>(
        &self,
        x: &Tensor<B, D>,
        act: Option<UnaryOp>,
    ) -> (Tensor<B, D>, <Self as Layer<B, D, D>>::Cache) {
        self.forward_train_fused(x, act, None)
    }

    /// The training [`Linear::forward_fused`]: its output and the layer's cache.
    pub fn forward_train_fused<const D: usize>(
        &self,
        x: &Tensor<B, D>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, D>>,
    ) -> (Tensor<B, D>, <Self as Layer<B, D, D>>::Cache) {
        (self.forward_fused(x, act, residual), super::CachesInput::cache_input(self, x))
    }
}

/// [`Linear::forward_fused`] for a weight `[O, I]`: one copy for every
/// `Linear<I, O>`, as the sizes come from the weight.
fn linear_fused<B: Backend, const D: usize>(
    weight: &Tensor<B, 2>,
    bias: Option<&Tensor<B, 1>>,
    x: &Tensor<B, D>,
    act: Option<UnaryOp>,
    residual: Option<&Tensor<B, D>>,
) -> Tensor<B, D> {
    let [o, i] = weight.shape();
    rows_through("Linear", [o, i], x, |rows| rows.matmul(&weight.t()), bias, act, residual)
}

/// `act(product(rows) + b) (+ residual)` over the last dim of `x`, the
/// product taking its rows `[n, i]` to `[n, o]`: a linear layer's
/// forward, float ([`Linear`]) or int8 (`blaze::quant`); `layer` names
/// it in a shape panic.
pub(crate) fn rows_through<B: Backend, const D: usize>(
    layer: &str,
    [o, i]: [usize; 2],
    x: &Tensor<B, D>,
    product: impl FnOnce(&Tensor<B, 2>) -> Tensor<B, 2>,
    bias: Option<&Tensor<B, 1>>,
    act: Option<UnaryOp>,
    residual: Option<&Tensor<B, D>>,
) -> Tensor<B, D> {
    let mut out = x.shape();
    assert!(D >= 2 && out[D - 1] == i, "{layer}<{i}, {o}>: expects input [.., {i}], got {out:?}");
    out[D - 1] = o;
    let y = product(&x.reshape([-1, i as i64]));
    match residual {
        Some(r) => {
            assert!(r.shape() == out, "{layer}<{i}, {o}>: residual {:?} for output {:?}", r.shape(), out);
            y.bias_act_add(bias, 1, act, &r.reshape([-1, o as i64]))
        }
        None => y.bias_act(bias, 1, act),
    }
    .reshape(out)
}

weight_bias_module!([const I: usize, const O: usize] Linear<B, I, O>, 2);

impl<B: Backend, const I: usize, const O: usize, const D: usize> Layer<B, D, D> for Linear<B, I, O> {
    /// The input, flattened to `[rows, I]`.
    type Cache = (Tensor<B, 2>, [usize; D]);

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        self.forward_act(x, None)
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        self.forward_train_act(x, None)
    }

    fn backward(&self, cache: &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, LinearGrads<B>) {
        let rows: Tensor<B, 2> = g.reshape([-1, O as i64]);
        let dx = Tensor::<B, 2>::from_storage(adjoint::linear_input::<B>(rows.storage(), self.weight.storage()));
        (dx.reshape(cache.1), self.backward_params(cache, g))
    }

    fn backward_params(&self, (x, _): &Self::Cache, g: &Tensor<B, D>) -> LinearGrads<B> {
        let rows: Tensor<B, 2> = g.reshape([-1, O as i64]);
        let (weight, bias) = adjoint::linear_params::<B>(rows.storage(), x.storage(), self.bias.is_some());
        LinearGrads { weight: Tensor::from_storage(weight), bias: bias.map(Tensor::from_storage) }
    }
}

impl<B: Backend, const I: usize, const O: usize, const D: usize> super::CachesInput<B, D> for Linear<B, I, O> {
    fn cache_input(&self, x: &Tensor<B, D>) -> Self::Cache {
        (x.reshape([-1, I as i64]), x.shape())
    }
}

impl From<&Options> for LinearConfig {
    fn from(o: &Options) -> Self {
        LinearConfig { bias: o.bias }
    }
}

impl<B: Backend, const I: usize, const O: usize> super::FromSpec<B> for Linear<B, I, O> {
    const LAYER: Spec = Spec::Linear;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Linear::new(o.into(), rng, device)
    }
}
