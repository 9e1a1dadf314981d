//! The parameter plumbing shared by layers with a `weight` and a `bias`
//! (Linear, Conv2d, BatchNorm2d, LayerNorm): their gradient type and one
//! `Module` implementation for all of them.

use crate::{Backend, Tensor};

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
/// `$d`) and `bias`, and optionally buffers, visited under their field names.
macro_rules! weight_bias_module {
    ($g:tt $t:ty, $d:literal $(, buffers: [$($buf:ident),*])?) => {
        weight_bias_module!(@impl $g $t, $d, [$($($buf),*)?]);
    };
    (@impl [$($g:tt)*] $t:ty, $d:literal, [$($buf:ident),*]) => {
        impl<B: Backend, $($g)*> $crate::nn::Module<B> for $t {
            type Grads = $crate::nn::WeightGrads<B, $d>;

            fn visit_params<V: $crate::nn::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                v.visit(&$crate::nn::join(prefix, "weight"), &self.weight);
                if let Some(b) = $crate::nn::params::BiasSlot::get(&self.bias) {
                    v.visit(&$crate::nn::join(prefix, "bias"), b);
                }
            }

            fn visit_buffers<V: $crate::nn::ParamVisitor<B>>(&self, _prefix: &str, _v: &mut V) {
                $(_v.visit(&$crate::nn::join(_prefix, stringify!($buf)), &self.$buf);)*
            }

            fn map_tensors<M: $crate::nn::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
                self.weight = m.map(&$crate::nn::join(prefix, "weight"), self.weight.clone());
                if let Some(b) = $crate::nn::params::BiasSlot::get_mut(&mut self.bias) {
                    *b = m.map(&$crate::nn::join(prefix, "bias"), b.clone());
                }
                $(self.$buf = m.map(&$crate::nn::join(prefix, stringify!($buf)), self.$buf.clone());)*
            }

            fn visit_grads<V: $crate::nn::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
                v.visit(&$crate::nn::join(prefix, "weight"), &mut self.weight, &g.weight);
                if let (Some(b), Some(gb)) = ($crate::nn::params::BiasSlot::get_mut(&mut self.bias), &g.bias) {
                    v.visit(&$crate::nn::join(prefix, "bias"), b, gb);
                }
            }

            fn visit_grad_tensors<V: $crate::nn::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
                v.visit(&$crate::nn::join(prefix, "weight"), &g.weight);
                if let Some(b) = &g.bias {
                    v.visit(&$crate::nn::join(prefix, "bias"), b);
                }
            }

            fn make_grads<F: $crate::nn::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
                $crate::nn::WeightGrads {
                    weight: f.grad(&$crate::nn::join(prefix, "weight"), &self.weight),
                    bias: $crate::nn::params::BiasSlot::get(&self.bias).map(|b| f.grad(&$crate::nn::join(prefix, "bias"), b)),
                }
            }

            fn map_grad_tensors<M: $crate::nn::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
                g.weight = m.map(&$crate::nn::join(prefix, "weight"), g.weight.clone());
                if let Some(b) = g.bias.take() {
                    g.bias = Some(m.map(&$crate::nn::join(prefix, "bias"), b));
                }
            }
        }
    };
}
pub(crate) use weight_bias_module;
