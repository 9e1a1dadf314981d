//! `Linear<B, I, O>`: `y = x W^T + b` over the last dim, as `torch.nn.Linear`.

use super::{Ctx, GradVisitor, Layer, Module, ParamMapper, ParamVisitor, fan_in_uniform, join};
use crate::rng::Rng;
use crate::{Backend, Tensor};

/// Options of [`Linear`].
#[derive(Clone, Copy, Debug)]
pub struct LinearConfig {
    /// Whether the layer adds a bias (PyTorch's default: yes).
    pub bias: bool,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig { bias: true }
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
#[derive(Clone, Debug)]
pub struct LinearGrads<B: Backend> {
    /// Gradient of the weight.
    pub weight: Tensor<B, 2>,
    /// Gradient of the bias.
    pub bias: Option<Tensor<B, 1>>,
}

impl<B: Backend, const I: usize, const O: usize> Linear<B, I, O> {
    /// Initialised as PyTorch does: weight and bias uniform in `±1/sqrt(I)`.
    pub fn new(config: LinearConfig, rng: &mut Rng, device: &B::Device) -> Self {
        let weight = fan_in_uniform([O, I], I, rng, device);
        let bias = config.bias.then(|| fan_in_uniform([O], I, rng, device));
        Linear { weight, bias }
    }

    fn check<const D: usize>(x: &Tensor<B, D>) {
        let s = x.shape();
        assert!(D >= 2 && s[D - 1] == I, "Linear<{I}, {O}>: expects input [.., {I}], got {:?}", s);
    }
}

impl<B: Backend, const I: usize, const O: usize> Module<B> for Linear<B, I, O> {
    type Grads = LinearGrads<B>;

    fn visit_params<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        v.visit(&join(prefix, "weight"), &self.weight);
        if let Some(b) = &self.bias {
            v.visit(&join(prefix, "bias"), b);
        }
    }

    fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        self.weight = m.map(&join(prefix, "weight"), self.weight.clone());
        if let Some(b) = self.bias.take() {
            self.bias = Some(m.map(&join(prefix, "bias"), b));
        }
    }

    fn visit_grads<V: GradVisitor<B>>(&mut self, g: &LinearGrads<B>, prefix: &str, v: &mut V) {
        v.visit(&join(prefix, "weight"), &mut self.weight, &g.weight);
        if let (Some(b), Some(gb)) = (&mut self.bias, &g.bias) {
            v.visit(&join(prefix, "bias"), b, gb);
        }
    }

    fn visit_grad_tensors<V: ParamVisitor<B>>(g: &LinearGrads<B>, prefix: &str, v: &mut V) {
        v.visit(&join(prefix, "weight"), &g.weight);
        if let Some(b) = &g.bias {
            v.visit(&join(prefix, "bias"), b);
        }
    }

    fn map_grad_tensors<M: ParamMapper<B>>(g: &mut LinearGrads<B>, prefix: &str, m: &mut M) {
        g.weight = m.map(&join(prefix, "weight"), g.weight.clone());
        if let Some(b) = g.bias.take() {
            g.bias = Some(m.map(&join(prefix, "bias"), b));
        }
    }
}

impl<B: Backend, const I: usize, const O: usize, const D: usize> Layer<B, D, D> for Linear<B, I, O> {
    /// The input, flattened to `[rows, I]`.
    type Cache = (Tensor<B, 2>, [usize; D]);

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        Self::check(x);
        let mut out = x.shape();
        out[D - 1] = O;
        let flat: Tensor<B, 2> = x.reshape([-1, I as i64]);
        let y = flat.matmul(&self.weight.t());
        let y = match &self.bias {
            Some(b) => y.add(&b.unsqueeze(0)),
            None => y,
        };
        y.reshape(out)
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        (Layer::<B, D, D>::forward(self, x), (x.reshape([-1, I as i64]), x.shape()))
    }

    fn backward(&self, (x, shape): &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, LinearGrads<B>) {
        // y = x W^T + b  =>  dx = g W,  dW = g^T x,  db = sum over rows of g.
        let g: Tensor<B, 2> = g.reshape([-1, O as i64]);
        let dx = g.matmul(&self.weight).reshape(*shape);
        let weight = g.t().matmul(x);
        let bias = self.bias.as_ref().map(|_| g.sum_dim(0).squeeze(0));
        (dx, LinearGrads { weight, bias })
    }
}
