//! The parameter plumbing shared by layers with a `weight` and a `bias`
//! (Linear, Conv2d, BatchNorm2d, LayerNorm): their gradient type and one
//! `Module` implementation for all of them.

use super::{GradSource, GradVisitor, ParamMapper, ParamVisitor, join};
use blaze_runtime::{Backend, Tensor};

/// Gradients of a layer with a weight of rank `D` and a bias.
#[derive(Clone, Debug)]
pub struct WeightGrads<B: Backend, const D: usize> {
    /// Gradient of the weight.
    pub weight: Tensor<B, D>,
    /// Gradient of the bias (`None` for a layer without one).
    pub bias: Option<Tensor<B, 1>>,
}

/// A bias field: optional (`Linear`, `Conv2d`) or always there (norms).
pub(crate) trait BiasSlot<B: Backend> {
    fn get(&self) -> Option<&Tensor<B, 1>>;
    fn get_mut(&mut self) -> Option<&mut Tensor<B, 1>>;
}

impl<B: Backend> BiasSlot<B> for Option<Tensor<B, 1>> {
    fn get(&self) -> Option<&Tensor<B, 1>> {
        self.as_ref()
    }
    fn get_mut(&mut self) -> Option<&mut Tensor<B, 1>> {
        self.as_mut()
    }
}

impl<B: Backend> BiasSlot<B> for Tensor<B, 1> {
    fn get(&self) -> Option<&Tensor<B, 1>> {
        Some(self)
    }
    fn get_mut(&mut self) -> Option<&mut Tensor<B, 1>> {
        Some(self)
    }
}

/// Implements [`super::Module`] for a layer with fields `weight` (rank
/// `$d`) and `bias`, and optionally buffers, visited under their field
/// names. Each method is one call of a function below, generic over the
/// backend, the weight's rank and the visitor but not over the layer's
/// sizes: every `Linear<I, O>` of a model shares one copy.
macro_rules! weight_bias_module {
    ($g:tt $t:ty, $d:literal $(, buffers: [$($buf:ident),*])?) => {
        weight_bias_module!(@impl $g $t, $d, [$($($buf),*)?]);
    };
    (@impl [$($g:tt)*] $t:ty, $d:literal, [$($buf:ident),*]) => {
        impl<B: Backend, $($g)*> $crate::Module<B> for $t {
            type Grads = $crate::WeightGrads<B, $d>;

            fn visit_params<V: $crate::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                let bias = $crate::params::BiasSlot::get(&self.bias);
                $crate::params::visit_weight_bias(&self.weight, bias, prefix, v);
            }

            fn visit_buffers<V: $crate::ParamVisitor<B>>(&self, _prefix: &str, _v: &mut V) {
                $(_v.visit(&$crate::join(_prefix, stringify!($buf)), &self.$buf);)*
            }

            fn map_tensors<M: $crate::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
                let bias = $crate::params::BiasSlot::get_mut(&mut self.bias);
                $crate::params::map_weight_bias(&mut self.weight, bias, prefix, m);
                $(self.$buf = m.map(&$crate::join(prefix, stringify!($buf)), self.$buf.clone());)*
            }

            fn visit_grads<V: $crate::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
                let bias = $crate::params::BiasSlot::get_mut(&mut self.bias);
                $crate::params::visit_weight_bias_grads(&mut self.weight, bias, g, prefix, v);
            }

            fn visit_grad_tensors<V: $crate::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
                $crate::params::visit_weight_bias(&g.weight, g.bias.as_ref(), prefix, v);
            }

            fn make_grads<F: $crate::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
                let bias = $crate::params::BiasSlot::get(&self.bias);
                $crate::params::make_weight_bias_grads(&self.weight, bias, prefix, f)
            }

            fn map_grad_tensors<M: $crate::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
                $crate::params::map_weight_bias(&mut g.weight, g.bias.as_mut(), prefix, m);
            }
        }
    };
}
pub(crate) use weight_bias_module;

/// Visits `prefix.weight` and `prefix.bias`.
pub(crate) fn visit_weight_bias<B: Backend, const D: usize, V: ParamVisitor<B>>(
    weight: &Tensor<B, D>,
    bias: Option<&Tensor<B, 1>>,
    prefix: &str,
    v: &mut V,
) {
    v.visit(&join(prefix, "weight"), weight);
    if let Some(b) = bias {
        v.visit(&join(prefix, "bias"), b);
    }
}

/// Replaces `prefix.weight` and `prefix.bias` by what `m` returns.
pub(crate) fn map_weight_bias<B: Backend, const D: usize, M: ParamMapper<B>>(
    weight: &mut Tensor<B, D>,
    bias: Option<&mut Tensor<B, 1>>,
    prefix: &str,
    m: &mut M,
) {
    *weight = m.map(&join(prefix, "weight"), weight.clone());
    if let Some(b) = bias {
        *b = m.map(&join(prefix, "bias"), b.clone());
    }
}

/// Visits the weight and the bias with their gradients in `g`.
pub(crate) fn visit_weight_bias_grads<B: Backend, const D: usize, V: GradVisitor<B>>(
    weight: &mut Tensor<B, D>,
    bias: Option<&mut Tensor<B, 1>>,
    g: &WeightGrads<B, D>,
    prefix: &str,
    v: &mut V,
) {
    v.visit(&join(prefix, "weight"), weight, &g.weight);
    if let (Some(b), Some(gb)) = (bias, &g.bias) {
        v.visit(&join(prefix, "bias"), b, gb);
    }
}

/// The weight's and the bias's gradients from `f`.
pub(crate) fn make_weight_bias_grads<B: Backend, const D: usize, F: GradSource<B>>(
    weight: &Tensor<B, D>,
    bias: Option<&Tensor<B, 1>>,
    prefix: &str,
    f: &mut F,
) -> WeightGrads<B, D> {
    WeightGrads {
        weight: f.grad(&join(prefix, "weight"), weight),
        bias: bias.map(|b| f.grad(&join(prefix, "bias"), b)),
    }
}
