//! Layers with a forward pass, a training forward that keeps what the
//! backward pass needs, and a backward pass that returns the input gradient
//! and the parameter gradients. `#[model]` chains these calls into
//! straight-line code; hand-written models can call them directly.
//!
//! Parameters are visited with PyTorch-style names (`weight`, `bias`,
//! prefixed by the field path: `conv1.weight`), which optimizers and
//! checkpoints use.
//!
//! This crate also holds the losses ([`loss`]), the optimizers ([`optim`])
//! and int8 inference ([`quant`]); the [`Module`] trait and its visitors
//! are the core's (`blaze_runtime::module`), re-exported here.
#![deny(missing_docs)]

mod activation;
mod attention;
mod block;
mod conv;
pub mod decode;
mod dropout;
pub mod gradcheck;
pub mod graph;
mod linear;
pub mod loss;
mod norm;
pub mod optim;
pub(crate) mod own_kernels;
pub(crate) mod params;
mod pool;
pub mod quant;
mod recurrent;
mod sparse;
mod spec;
pub mod unary_layers;

// Each layer file exports its layers (and their configs and gradients).
pub use activation::*;
pub(crate) use attention::Projections;
pub use attention::*;
pub(crate) use block::columns;
pub use block::{BackendDevice, Block, Differentiable, StaticShape, SummaryRow, shape_rules, summary_table};
pub(crate) use conv::conv_epilogue;
pub use conv::*;
pub use decode::{Decode, GenerateConfig, generate};
pub use dropout::*;
pub use graph::{FusedGroup, FusionPlan, Graph, Signature};
pub(crate) use linear::rows_through;
pub use linear::*;
pub use norm::*;
pub use params::WeightGrads;
pub use pool::*;
pub(crate) use recurrent::GateProjections;
pub use recurrent::*;
pub(crate) use sparse::check_ids;
pub use sparse::*;
pub use spec::FromSpec;
pub use unary_layers::*;

pub use blaze_runtime::module::{
    GradSource, GradVisitor, Module, Name, ParamMapper, ParamVisitor, Source, join, set_source,
};

use blaze_runtime::backend::Device;
use blaze_runtime::kernel::KernelFn;
use blaze_runtime::module::{ModuleTensors, host_tensors, visit_grad_storages};
use blaze_runtime::rng::Rng;
use blaze_runtime::{AdamStep, Backend, DType, Tensor, TensorData};

use crate::optim::{SgdRule, States, Update, UpdateRule};
use crate::own_kernels::OwnKernel;

/// A tensor of backend `B`.
type Storage<B> = <B as blaze_runtime::Primitives>::Storage;
/// A summary's table from the model, its name and input, its layers'
/// `(name, type, output)` rows and the fusion plan.
type Summarize<B> = fn(&dyn ModuleTensors<B>, &str, &str, &[(&str, &str, &str)], &FusionPlan) -> String;
/// An optimizer's update of one parameter in place, by its rule.
type UpdateParam<B> = for<'a> fn(&mut UpdateRule<'a, B>, &str, &mut Storage<B>, &Storage<B>);
/// SGD's update of one parameter from its flat values and gradient.
type SgdUpdate<B> = fn(&SgdRule, &mut States<B>, &str, &Tensor<B, 1>, &Tensor<B, 1>) -> Update<B>;
/// A gradient plus `more`, the values to add to parameter `name`'s.
type Added<B> = fn(&str, &Storage<B>, Option<Storage<B>>) -> Storage<B>;

blaze_runtime::precompiled_table! {
    /// The layers' and optimizers' functions that depend on the backend
    /// alone, compiled once per backend ([`blaze_runtime::Precompiled`]):
    /// summaries, parameter counts, the layers' own kernels (dropout), the
    /// optimizers' update of one parameter, work on one gradient, and
    /// optimizer state.
    pub struct Table<B> {
        first_device: fn(&dyn ModuleTensors<B>) -> Option<B::Device> = first_device::<B>,
        summarize: Summarize<B> = summarize::<B>,
        count_params: fn(&dyn ModuleTensors<B>, &[&str]) -> Vec<usize> = count_params::<B>,
        own_kernel: fn(OwnKernel, KernelFn, &Storage<B>) -> Storage<B> = own_kernels::own_kernel::<B>,
        update_param: UpdateParam<B> = optim::update_param::<B>,
        sgd_update: SgdUpdate<B> = optim::sgd_update::<B>,
        adam_update: fn(AdamStep, &mut States<B>, &str, &mut Storage<B>, &Storage<B>) = optim::adam_update::<B>,
        add_sum_squares: fn(&mut Option<Tensor<B, 0>>, &Storage<B>) = optim::add_sum_squares::<B>,
        scaled: fn(&Storage<B>, f64) -> Storage<B> = optim::scaled::<B>,
        added: Added<B> = optim::added::<B>,
        export_states: fn(&States<B>) -> Vec<(String, TensorData)> = States::<B>::export,
        import_states: fn(Vec<(String, TensorData)>, &B::Device) -> States<B> = States::<B>::import,
    }
}

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

/// The device of the module's first parameter (or buffer); `None` for a
/// module that holds no tensor.
pub fn device_of<B: Backend, M: Module<B>>(m: &M) -> Option<B::Device> {
    (Table::<B>::of().first_device)(m)
}

pub(crate) fn first_device<B: Backend>(m: &dyn ModuleTensors<B>) -> Option<B::Device> {
    let mut first = None;
    m.visit(true, &mut |_, t| {
        if first.is_none() {
            first = Some(B::device(t));
        }
    });
    first
}

/// Moves every parameter and buffer to `device`, or returns the device's
/// fault (an allocation beyond its limits, a lost device) and leaves the
/// module where it was.
pub fn to_device<B: Backend, M: Module<B>>(m: &mut M, device: &B::Device) -> Result<(), blaze_runtime::DeviceError> {
    // Copies first, swapped in only once the device has taken them all.
    struct Copy<'a, B: Backend>(&'a B::Device, std::collections::HashMap<String, B::Storage>);
    impl<B: Backend> ParamVisitor<B> for Copy<'_, B> {
        #[inline(never)]
        fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
            self.1.insert(name.to_owned(), t.to_device(self.0).storage().clone());
        }
    }
    let mut copies = Copy::<B>(device, Default::default());
    m.visit_params("", &mut copies);
    m.visit_buffers("", &mut copies);
    device.synchronize()?;
    struct Swap<B: Backend>(std::collections::HashMap<String, B::Storage>);
    impl<B: Backend> ParamMapper<B> for Swap<B> {
        #[inline(never)]
        fn map<const D: usize>(&mut self, name: &str, t: Tensor<B, D>) -> Tensor<B, D> {
            self.0.remove(name).map_or(t, Tensor::wrap)
        }
    }
    m.map_tensors("", &mut Swap::<B>(copies.1));
    Ok(())
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
    /// The parameter gradients alone, for the first layers of a model, whose
    /// input gradient nobody reads. Layers where the input gradient costs
    /// real work (a matmul, a transposed convolution) skip it.
    fn backward_params(&self, cache: &Self::Cache, grad: &Tensor<B, DO>) -> Self::Grads {
        self.backward(cache, grad).1
    }
}

/// A layer whose output the backward can rebuild from its cache in one
/// cheap pass: an activation from its input, a normalisation from its
/// input. `#[model]` uses it so that a [`Linear`] reading such a layer's
/// output does not keep that output for its weight gradient: the backward
/// recomputes it (the spec's `recomputes_output`).
pub trait Recompute<B: Backend, const D: usize>: Layer<B, D, D> {
    /// The output `forward_train` returned with `cache`, bit for bit.
    fn recompute(&self, cache: &Self::Cache) -> Tensor<B, D>;
}

/// A layer whose cache is its input alone, in some form, so that the
/// backward can build it from a recomputed input (the spec's
/// `caches_input`).
pub trait CachesInput<B: Backend, const D: usize>: Layer<B, D, D> {
    /// The cache `forward_train` would keep for input `x`.
    fn cache_input(&self, x: &Tensor<B, D>) -> Self::Cache;
}

/// Number of trainable scalars.
pub fn num_params<B: Backend, M: Module<B>>(m: &M) -> usize {
    (Table::<B>::of().count_params)(m, &[""])[0]
}

/// The table a `#[model]`'s `summary()` returns: a row per field of
/// `layers` (name, type as written, per-sample output shape) with its
/// parameters counted from `model`, then the model's fusion plan.
pub fn model_summary<B: Backend, M: Module<B>>(
    model: &M,
    name: &str,
    input: &str,
    layers: &[(&str, &str, &str)],
    fusion: &FusionPlan,
) -> String {
    (Table::<B>::of().summarize)(model, name, input, layers, fusion)
}

pub(crate) fn summarize<B: Backend>(
    model: &dyn ModuleTensors<B>,
    name: &str,
    input: &str,
    layers: &[(&str, &str, &str)],
    fusion: &FusionPlan,
) -> String {
    let fields: Vec<&str> = layers.iter().map(|l| l.0).collect();
    let rows: Vec<SummaryRow> = layers
        .iter()
        .zip(count_params(model, &fields))
        .map(|(&(name, kind, output), params)| SummaryRow {
            name: name.to_owned(),
            kind: kind.to_owned(),
            output: output.to_owned(),
            params,
        })
        .collect();
    let mut out = summary_table(name, input, &rows);
    out.push_str(&fusion.to_string());
    out
}

/// Trainable scalars under each of `fields` (top-level names; `""` counts
/// them all), from one traversal of the module.
pub(crate) fn count_params<B: Backend>(m: &dyn ModuleTensors<B>, fields: &[&str]) -> Vec<usize> {
    let mut counts = vec![0; fields.len()];
    m.visit(false, &mut |name, t| {
        let field = name.split('.').next().unwrap_or(name);
        if let Some(i) = fields.iter().position(|f| f.is_empty() || *f == field) {
            counts[i] += B::shape(t).iter().product::<usize>();
        }
    });
    counts
}

/// Every parameter and buffer by name, copied to the host, in visiting order.
pub fn state_dict<B: Backend, M: Module<B>>(m: &M) -> Vec<(String, TensorData)> {
    host_tensors(m)
}

/// Every gradient by name, copied to the host.
pub fn grads_dict<B: Backend, M: Module<B>>(grads: &M::Grads) -> Vec<(String, TensorData)> {
    let mut all = Vec::new();
    visit_grad_storages::<B, M>(grads, &mut |name, t| all.push((name.to_owned(), B::to_data(t))));
    all
}

/// Converts every parameter and buffer to `dtype` (f64 for gradient checks).
pub fn to_dtype<B: Backend, M: Module<B>>(m: &mut M, dtype: DType) {
    struct Cast(DType);
    impl<B: Backend> ParamMapper<B> for Cast {
        #[inline(never)]
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
        #[inline(never)]
        fn visit<const D: usize>(&mut self, _: &str, p: &mut Tensor<B, D>, g: &Tensor<B, D>) {
            *p = p.sub(&g.mul_scalar(self.0));
        }
    }
    m.visit_grads(grads, "", &mut Step(lr));
}

/// Implements [`Module`] for a layer without parameters.
macro_rules! stateless_module {
    (@one [$($g:tt)*] $t:ty) => {
        impl<B: ::blaze_runtime::Backend, $($g)*> $crate::Module<B> for $t {
            type Grads = ();
            fn visit_params<V: $crate::ParamVisitor<B>>(&self, _: &str, _: &mut V) {}
            fn map_tensors<M: $crate::ParamMapper<B>>(&mut self, _: &str, _: &mut M) {}
            fn visit_grads<V: $crate::GradVisitor<B>>(&mut self, _: &(), _: &str, _: &mut V) {}
            fn visit_grad_tensors<V: $crate::ParamVisitor<B>>(_: &(), _: &str, _: &mut V) {}
            fn map_grad_tensors<M: $crate::ParamMapper<B>>(_: &mut (), _: &str, _: &mut M) {}
            fn make_grads<F: $crate::GradSource<B>>(&self, _: &str, _: &mut F) {}
        }
        impl<$($g)*> $crate::quant::KeepsFloat for $t {}
    };
    (generics $g:tt $($t:ty),*) => {
        $($crate::stateless_module!(@one $g $t);)*
    };
    ($($t:ty),*) => {
        $($crate::stateless_module!(@one [] $t);)*
    };
}
pub(crate) use stateless_module;
