//! Layers with a forward pass, a training forward that keeps what the
//! backward pass needs, and a backward pass that returns the input gradient
//! and the parameter gradients. `#[model]` chains these calls into
//! straight-line code; hand-written models can call them directly.
//!
//! Parameters are visited with PyTorch-style names (`weight`, `bias`,
//! prefixed by the field path: `conv1.weight`), which optimizers and
//! checkpoints use.

mod activation;
mod block;
mod conv;
mod dropout;
pub mod gradcheck;
mod linear;
mod norm;
pub(crate) mod params;
mod pool;
mod sparse;

pub use activation::{Gelu, LeakyRelu, LeakyReluConfig, Relu, Sigmoid, Tanh};
pub use block::{BackendDevice, Block, StaticShape, SummaryRow, per_sample, shape_rules, summary_table};
pub use conv::{Conv2d, Conv2dConfig, Conv2dGrads};
pub use dropout::{Dropout, DropoutConfig};
pub use linear::{Linear, LinearConfig, LinearGrads};
pub use norm::{BatchNorm2d, BatchNormCache, LayerNorm, NormConfig, NormGrads};
pub use params::WeightGrads;
pub use pool::{AvgPool2d, Flatten, GlobalAvgPool, MaxPool2d, PoolConfig};
pub use sparse::{Embedding, EmbeddingGrads};

use crate::rng::Rng;
use crate::{Backend, DType, Tensor, TensorData};

/// Training-time state shared by the layers of one step: whether the model
/// trains (dropout active, batch statistics in normalisation) and the
/// generator dropout draws its masks from.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// True in training mode (PyTorch's `model.train()`).
    pub train: bool,
    /// Randomness for dropout masks.
    pub rng: Rng,
}

impl Ctx {
    /// Training mode with masks drawn from `seed`.
    pub fn train(seed: u64) -> Self {
        Ctx { train: true, rng: Rng::seed_from_u64(seed) }
    }

    /// Evaluation mode: dropout is the identity, normalisation uses its
    /// running statistics.
    pub fn eval() -> Self {
        Ctx { train: false, rng: Rng::seed_from_u64(0) }
    }
}

/// Sees each parameter (or buffer) with its full name.
pub trait ParamVisitor<B: Backend> {
    /// Called once per tensor.
    fn visit<const D: usize>(&mut self, name: &str, tensor: &Tensor<B, D>);
}

/// Replaces each parameter (or buffer) by a new tensor of the same rank.
pub trait ParamMapper<B: Backend> {
    /// Returns the tensor that replaces `tensor`.
    fn map<const D: usize>(&mut self, name: &str, tensor: Tensor<B, D>) -> Tensor<B, D>;
}

/// Sees each trainable parameter together with its gradient, to update it.
pub trait GradVisitor<B: Backend> {
    /// Called once per parameter.
    fn visit<const D: usize>(&mut self, name: &str, param: &mut Tensor<B, D>, grad: &Tensor<B, D>);
}

/// `prefix.name`, or `name` at the top level.
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") }
}

/// Something that holds parameters: a layer or a whole model.
pub trait Module<B: Backend> {
    /// The gradients of every parameter, shaped like the parameters.
    type Grads: Clone + std::fmt::Debug;

    /// Visits every trainable parameter.
    fn visit_params<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V);
    /// Visits the buffers (running statistics): saved and loaded, not trained.
    fn visit_buffers<V: ParamVisitor<B>>(&self, _prefix: &str, _v: &mut V) {}
    /// Replaces every parameter and buffer.
    fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M);
    /// Visits every parameter with its gradient.
    fn visit_grads<V: GradVisitor<B>>(&mut self, grads: &Self::Grads, prefix: &str, v: &mut V);
    /// Visits the gradients alone, named like their parameters.
    fn visit_grad_tensors<V: ParamVisitor<B>>(grads: &Self::Grads, prefix: &str, v: &mut V);
    /// Replaces every gradient (gradient clipping scales them all).
    fn map_grad_tensors<M: ParamMapper<B>>(grads: &mut Self::Grads, prefix: &str, m: &mut M);
}

/// A step of a model, from a rank-`DI` batch to a rank-`DO` batch (the
/// batch dim first).
pub trait Layer<B: Backend, const DI: usize, const DO: usize>: Module<B> {
    /// What the training forward keeps for the backward pass.
    type Cache;

    /// Inference: dropout off, normalisation on running statistics.
    fn forward(&self, x: &Tensor<B, DI>) -> Tensor<B, DO>;
    /// The training forward: the output and what `backward` needs.
    fn forward_train(&mut self, x: &Tensor<B, DI>, ctx: &mut Ctx) -> (Tensor<B, DO>, Self::Cache);
    /// The gradient of the input and of every parameter, given the gradient
    /// of the output.
    fn backward(&self, cache: &Self::Cache, grad: &Tensor<B, DO>) -> (Tensor<B, DI>, Self::Grads);
}

/// Number of trainable scalars.
pub fn num_params<B: Backend, M: Module<B>>(m: &M) -> usize {
    struct Count(usize);
    impl<B: Backend> ParamVisitor<B> for Count {
        fn visit<const D: usize>(&mut self, _: &str, t: &Tensor<B, D>) {
            self.0 += t.numel();
        }
    }
    let mut c = Count(0);
    m.visit_params("", &mut c);
    c.0
}

/// Every parameter and buffer by name, copied to the host, in visiting order.
pub fn state_dict<B: Backend, M: Module<B>>(m: &M) -> Vec<(String, TensorData)> {
    struct Collect(Vec<(String, TensorData)>);
    impl<B: Backend> ParamVisitor<B> for Collect {
        fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
            self.0.push((name.to_owned(), t.to_data()));
        }
    }
    let mut c = Collect(Vec::new());
    m.visit_params("", &mut c);
    m.visit_buffers("", &mut c);
    c.0
}

/// Every gradient by name, copied to the host.
pub fn grads_dict<B: Backend, M: Module<B>>(grads: &M::Grads) -> Vec<(String, TensorData)> {
    struct Collect(Vec<(String, TensorData)>);
    impl<B: Backend> ParamVisitor<B> for Collect {
        fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
            self.0.push((name.to_owned(), t.to_data()));
        }
    }
    let mut c = Collect(Vec::new());
    M::visit_grad_tensors(grads, "", &mut c);
    c.0
}

/// Converts every parameter and buffer to `dtype` (f64 for gradient checks).
pub fn to_dtype<B: Backend, M: Module<B>>(m: &mut M, dtype: DType) {
    struct Cast(DType);
    impl<B: Backend> ParamMapper<B> for Cast {
        fn map<const D: usize>(&mut self, _: &str, t: Tensor<B, D>) -> Tensor<B, D> {
            t.to_dtype(self.0)
        }
    }
    m.map_tensors("", &mut Cast(dtype));
}

/// Plain SGD, `p -= lr * grad`: the smallest optimizer, for hand-written
/// training loops and tests.
pub fn sgd_step<B: Backend, M: Module<B>>(m: &mut M, grads: &M::Grads, lr: f64) {
    struct Step(f64);
    impl<B: Backend> GradVisitor<B> for Step {
        fn visit<const D: usize>(&mut self, _: &str, p: &mut Tensor<B, D>, g: &Tensor<B, D>) {
            *p = p.sub(&g.mul_scalar(self.0));
        }
    }
    m.visit_grads(grads, "", &mut Step(lr));
}

/// Implements [`Module`] for a layer without parameters.
macro_rules! stateless_module {
    (@one [$($g:tt)*] $t:ty) => {
        impl<B: Backend, $($g)*> Module<B> for $t {
            type Grads = ();
            fn visit_params<V: ParamVisitor<B>>(&self, _: &str, _: &mut V) {}
            fn map_tensors<M: ParamMapper<B>>(&mut self, _: &str, _: &mut M) {}
            fn visit_grads<V: GradVisitor<B>>(&mut self, _: &(), _: &str, _: &mut V) {}
            fn visit_grad_tensors<V: ParamVisitor<B>>(_: &(), _: &str, _: &mut V) {}
            fn map_grad_tensors<M: ParamMapper<B>>(_: &mut (), _: &str, _: &mut M) {}
        }
    };
    (generics $g:tt $($t:ty),*) => {
        $(stateless_module!(@one $g $t);)*
    };
    ($($t:ty),*) => {
        $(stateless_module!(@one [] $t);)*
    };
}
pub(crate) use stateless_module;

/// Uniform in `±1/sqrt(fan_in)`: PyTorch's default for both the weights
/// (Kaiming-uniform with `a = sqrt(5)` reduces to this bound) and the biases
/// of `Linear` and `Conv2d`.
pub(crate) fn fan_in_uniform<B: Backend, const D: usize>(
    shape: [usize; D],
    fan_in: usize,
    rng: &mut Rng,
    device: &B::Device,
) -> Tensor<B, D> {
    let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
    Tensor::uniform_with(shape, -bound, bound, rng, device)
}
