//! Layers with a forward pass, a training forward that keeps what the
//! backward pass needs, and a backward pass that returns the input gradient
//! and the parameter gradients. `#[model]` chains these calls into
//! straight-line code; hand-written models can call them directly.
//!
//! Parameters are visited with PyTorch-style names (`weight`, `bias`,
//! prefixed by the field path: `conv1.weight`), which optimizers and
//! checkpoints use.

mod activation;
mod attention;
mod block;
mod conv;
pub mod decode;
mod dropout;
pub mod gradcheck;
pub mod graph;
mod linear;
mod norm;
pub(crate) mod own_kernels;
pub(crate) mod params;
mod pool;
mod recurrent;
mod sparse;
mod spec;
pub mod unary_layers;

// Each layer file exports its layers (and their configs and gradients).
pub use activation::*;
pub use attention::*;
pub(crate) use attention::Projections;
pub(crate) use block::columns;
pub(crate) use conv::conv_epilogue;
pub(crate) use linear::rows_through;
pub(crate) use recurrent::GateProjections;
pub(crate) use sparse::check_ids;
pub use block::{BackendDevice, Block, Differentiable, StaticShape, SummaryRow, shape_rules, summary_table};
pub use conv::*;
pub use decode::{Decode, GenerateConfig, generate};
pub use dropout::*;
pub use graph::{FusedGroup, FusionPlan, Graph, Signature};
pub use linear::*;
pub use norm::*;
pub use params::WeightGrads;
pub use pool::*;
pub use recurrent::*;
pub use sparse::*;
pub use spec::FromSpec;
pub use unary_layers::*;

use crate::backend::Device;
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
///
/// The runtime's passes over a model go through the storage traversals
/// (`visit_storages` and its siblings, one traversal per kind and
/// model); its other visitors mark `visit` (and `map`) `#[inline(never)]`:
/// compiled once per rank, called from each model's visiting code instead
/// of copied into it (one call per tensor costs nothing next to the
/// tensor's work).
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

/// The runtime's passes over a model's tensors (finding its device,
/// saving and loading, gradient sums, optimizer steps) see each tensor as
/// its storage, whatever its rank, through one of these functions: a
/// model then compiles one traversal of each kind, which every pass
/// shares, instead of one per pass and rank (release builds compile
/// generic code in the user's crate, again after every edit).
struct Storages<F>(F);

/// What [`visit_storages`] calls with each tensor.
pub(crate) type VisitFn<'a, B> = dyn FnMut(&str, &<B as crate::Primitives>::Storage) + 'a;
/// What [`map_storages`] replaces each tensor with.
pub(crate) type MapFn<'a, B> =
    dyn FnMut(&str, <B as crate::Primitives>::Storage) -> <B as crate::Primitives>::Storage + 'a;
/// What [`update_storages`] calls with each parameter and its gradient.
pub(crate) type UpdateFn<'a, B> =
    dyn FnMut(&str, &mut <B as crate::Primitives>::Storage, &<B as crate::Primitives>::Storage) + 'a;

impl<B: Backend> ParamVisitor<B> for Storages<&mut VisitFn<'_, B>> {
    fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
        (self.0)(name, t.storage());
    }
}

impl<B: Backend> ParamMapper<B> for Storages<&mut MapFn<'_, B>> {
    fn map<const D: usize>(&mut self, name: &str, t: Tensor<B, D>) -> Tensor<B, D> {
        Tensor::from_storage((self.0)(name, t.into_storage()))
    }
}

impl<B: Backend> GradVisitor<B> for Storages<&mut UpdateFn<'_, B>> {
    fn visit<const D: usize>(&mut self, name: &str, p: &mut Tensor<B, D>, g: &Tensor<B, D>) {
        (self.0)(name, p.storage_mut(), g.storage());
    }
}

/// Calls `f` with every parameter of `m` and, with `buffers`, then every
/// buffer.
pub(crate) fn visit_storages<B: Backend, M: Module<B>>(m: &M, buffers: bool, f: &mut VisitFn<'_, B>) {
    m.visit_params("", &mut Storages(&mut *f));
    if buffers {
        m.visit_buffers("", &mut Storages(f));
    }
}

/// Replaces every parameter and buffer of `m` by what `f` returns (of the
/// same rank).
pub(crate) fn map_storages<B: Backend, M: Module<B>>(m: &mut M, f: &mut MapFn<'_, B>) {
    m.map_tensors("", &mut Storages(f));
}

/// Calls `f` with every gradient of `grads`, named like its parameter.
pub(crate) fn visit_grad_storages<B: Backend, M: Module<B>>(grads: &M::Grads, f: &mut VisitFn<'_, B>) {
    M::visit_grad_tensors(grads, "", &mut Storages(f));
}

/// Replaces every gradient of `grads` by what `f` returns.
pub(crate) fn map_grad_storages<B: Backend, M: Module<B>>(grads: &mut M::Grads, f: &mut MapFn<'_, B>) {
    M::map_grad_tensors(grads, "", &mut Storages(f));
}

/// Calls `f` with every parameter of `m`, to update in place, and its
/// gradient.
pub(crate) fn update_storages<B: Backend, M: Module<B>>(m: &mut M, grads: &M::Grads, f: &mut UpdateFn<'_, B>) {
    m.visit_grads(grads, "", &mut Storages(f));
}

/// A module seen through its tensors' storages alone, as a trait object.
/// The runtime's cold passes over a model (its device, parameter counts,
/// saving, loading, checks) take one: they are compiled once per backend
/// (in its [`Compiled`](crate::Compiled) table) rather than once per
/// model, and each model brings only the two traversals behind this
/// trait, which its other passes share.
pub(crate) trait ModuleTensors<B: Backend> {
    /// [`visit_storages`].
    fn visit(&self, buffers: bool, f: &mut VisitFn<'_, B>);
    /// [`map_storages`].
    fn map(&mut self, f: &mut MapFn<'_, B>);
}

impl<B: Backend, M: Module<B>> ModuleTensors<B> for M {
    fn visit(&self, buffers: bool, f: &mut VisitFn<'_, B>) {
        visit_storages::<B, M>(self, buffers, f);
    }
    fn map(&mut self, f: &mut MapFn<'_, B>) {
        map_storages::<B, M>(self, f);
    }
}

/// `prefix.name`, or `name` at the top level. Held inline up to
/// [`Name::INLINE`] bytes, so visiting a model's parameters (every
/// optimizer step does) allocates nothing.
pub fn join(prefix: &str, name: &str) -> Name {
    let mut out = Name { len: 0, inline: [0; Name::INLINE], spill: String::new() };
    if !prefix.is_empty() {
        out.push(prefix);
        out.push(".");
    }
    out.push(name);
    out
}

/// A dotted parameter name built by [`join`]; derefs to `str`.
#[derive(Clone)]
pub struct Name {
    len: usize,
    inline: [u8; Name::INLINE],
    /// The whole name once it outgrows `inline`.
    spill: String,
}

impl Name {
    /// Bytes held without allocating.
    pub const INLINE: usize = 120;

    fn push(&mut self, s: &str) {
        if self.spill.is_empty() && self.len + s.len() <= Self::INLINE {
            self.inline[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        } else {
            if self.spill.is_empty() {
                let head = std::str::from_utf8(&self.inline[..self.len]).expect("whole UTF-8 strings were copied in");
                self.spill = head.to_owned();
            }
            self.spill.push_str(s);
        }
        self.len += s.len();
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        if self.spill.is_empty() {
            std::str::from_utf8(&self.inline[..self.len]).expect("whole UTF-8 strings were copied in")
        } else {
            &self.spill
        }
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// Something that holds parameters: a layer or a whole model. Modules are
/// `Send`, so a training loop may run on a backend's own thread
/// ([`crate::Device::run`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a module: it is not a layer, a tensor, or a struct, `Vec`, array or `Option` of them",
    label = "not a module",
    note = "`#[derive(Module)]` it, or mark the field `#[module(skip)]` if it holds no parameters"
)]
pub trait Module<B: Backend>: Send {
    /// The gradients of every parameter, shaped like the parameters.
    type Grads: Clone + std::fmt::Debug + Send;

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
    /// Builds gradients shaped like this module's, one per parameter from
    /// `f` (how a tape's gradients become the `Grads` optimizers take).
    fn make_grads<F: GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads;

    /// Where each of its tensors comes from in a checkpoint that names
    /// them its own way (a Hugging Face `model.safetensors`): for every
    /// parameter and buffer under `prefix`, its name in that file under
    /// `source`, and whether the file stores it transposed. By default a
    /// tensor's name there is its own; a `#[model]` field says otherwise
    /// with `#[load(..)]`. [`crate::record::load_model_from`] reads by it.
    fn sources(&self, prefix: &str, source: &str, out: &mut Vec<Source>)
    where
        Self: Sized,
    {
        struct Named<'a>(&'a str, &'a str, &'a mut Vec<Source>);
        impl<B: Backend> ParamVisitor<B> for Named<'_> {
            fn visit<const D: usize>(&mut self, name: &str, _: &Tensor<B, D>) {
                let rest = name.strip_prefix(self.0).unwrap_or(name).trim_start_matches('.');
                let from = if rest.is_empty() { self.1.to_owned() } else { join(self.1, rest).to_string() };
                self.2.push(Source { name: name.to_owned(), from, transposed: false });
            }
        }
        let mut named = Named(prefix, source, out);
        self.visit_params(prefix, &mut named);
        self.visit_buffers(prefix, &mut named);
    }
}

/// Where one tensor of a module comes from in a checkpoint that names
/// tensors its own way ([`Module::sources`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The tensor's name in the module (`h.0.attn.in_proj_weight`).
    pub name: String,
    /// Its name in the file (`transformer.h.0.attn.c_attn.weight`).
    pub from: String,
    /// The file holds it transposed (a 2-D tensor stored `[in, out]`).
    pub transposed: bool,
}

/// Points the source of tensor `name` (listed in `out` already) at
/// `from`, transposed or not: what a `#[load(param = "..")]` entry does.
/// A name the module has no tensor of is listed as it is, and
/// [`crate::record::load_model_from`] refuses it, naming both.
pub fn set_source(out: &mut Vec<Source>, name: &str, from: &str, transposed: bool) {
    match out.iter_mut().find(|s| s.name == name) {
        Some(s) => {
            s.from = from.to_owned();
            s.transposed = transposed;
        }
        None => out.push(Source { name: name.to_owned(), from: from.to_owned(), transposed }),
    }
}

/// Supplies the gradient of each parameter by name, for [`Module::make_grads`].
pub trait GradSource<B: Backend> {
    /// The gradient of `param` (zeros when it got none).
    fn grad<const D: usize>(&mut self, name: &str, param: &Tensor<B, D>) -> Tensor<B, D>;
}

/// A raw tensor field is a parameter named by the field itself (PyTorch's
/// `nn.Parameter`).
impl<B: Backend, const D: usize> Module<B> for Tensor<B, D> {
    type Grads = Tensor<B, D>;

    fn visit_params<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        v.visit(prefix, self);
    }

    fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        *self = m.map(prefix, self.clone());
    }

    fn visit_grads<V: GradVisitor<B>>(&mut self, g: &Tensor<B, D>, prefix: &str, v: &mut V) {
        v.visit(prefix, self, g);
    }

    fn visit_grad_tensors<V: ParamVisitor<B>>(g: &Tensor<B, D>, prefix: &str, v: &mut V) {
        v.visit(prefix, g);
    }

    fn map_grad_tensors<M: ParamMapper<B>>(g: &mut Tensor<B, D>, prefix: &str, m: &mut M) {
        *g = m.map(prefix, g.clone());
    }

    fn make_grads<F: GradSource<B>>(&self, prefix: &str, f: &mut F) -> Tensor<B, D> {
        f.grad(prefix, self)
    }
}

/// Implements [`Module`] for a sequence of modules (`Vec`, arrays): entries
/// are named `prefix.0`, `prefix.1`, ... as in `nn.ModuleList`.
macro_rules! sequence_module {
    ([$($g:tt)*] $t:ty) => {
        impl<B: Backend, T: Module<B>, $($g)*> Module<B> for $t {
            type Grads = Vec<T::Grads>;

            fn visit_params<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                self.iter().enumerate().for_each(|(i, m)| m.visit_params(&join(prefix, &i.to_string()), v));
            }

            fn visit_buffers<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                self.iter().enumerate().for_each(|(i, m)| m.visit_buffers(&join(prefix, &i.to_string()), v));
            }

            fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
                self.iter_mut().enumerate().for_each(|(i, x)| x.map_tensors(&join(prefix, &i.to_string()), m));
            }

            fn visit_grads<V: GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
                for (i, (m, g)) in self.iter_mut().zip(g).enumerate() {
                    m.visit_grads(g, &join(prefix, &i.to_string()), v);
                }
            }

            fn visit_grad_tensors<V: ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
                g.iter().enumerate().for_each(|(i, g)| T::visit_grad_tensors(g, &join(prefix, &i.to_string()), v));
            }

            fn map_grad_tensors<M: ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
                g.iter_mut().enumerate().for_each(|(i, g)| T::map_grad_tensors(g, &join(prefix, &i.to_string()), m));
            }

            fn sources(&self, prefix: &str, source: &str, out: &mut Vec<Source>) {
                for (i, m) in self.iter().enumerate() {
                    let i = i.to_string();
                    m.sources(&join(prefix, &i), &join(source, &i), out);
                }
            }

            fn make_grads<F: GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
                self.iter().enumerate().map(|(i, m)| m.make_grads(&join(prefix, &i.to_string()), f)).collect()
            }
        }
    };
}

sequence_module!([] Vec<T>);
sequence_module!([const N: usize] [T; N]);

/// An optional module: nothing is visited when it is `None`.
impl<B: Backend, T: Module<B>> Module<B> for Option<T> {
    type Grads = Option<T::Grads>;

    fn visit_params<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        if let Some(m) = self {
            m.visit_params(prefix, v);
        }
    }

    fn visit_buffers<V: ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        if let Some(m) = self {
            m.visit_buffers(prefix, v);
        }
    }

    fn sources(&self, prefix: &str, source: &str, out: &mut Vec<Source>) {
        if let Some(m) = self {
            m.sources(prefix, source, out);
        }
    }

    fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        if let Some(x) = self {
            x.map_tensors(prefix, m);
        }
    }

    fn visit_grads<V: GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
        if let (Some(m), Some(g)) = (self, g) {
            m.visit_grads(g, prefix, v);
        }
    }

    fn visit_grad_tensors<V: ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
        if let Some(g) = g {
            T::visit_grad_tensors(g, prefix, v);
        }
    }

    fn map_grad_tensors<M: ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
        if let Some(g) = g {
            T::map_grad_tensors(g, prefix, m);
        }
    }

    fn make_grads<F: GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
        self.as_ref().map(|m| m.make_grads(prefix, f))
    }
}

/// The device of the module's first parameter (or buffer); `None` for a
/// module that holds no tensor.
pub fn device_of<B: Backend, M: Module<B>>(m: &M) -> Option<B::Device> {
    (B::compiled().first_device)(m)
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
pub fn to_device<B: Backend, M: Module<B>>(m: &mut M, device: &B::Device) -> Result<(), crate::DeviceError> {
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
    (B::compiled().count_params)(m, &[""])[0]
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
    (B::compiled().summarize)(model, name, input, layers, fusion)
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
    (B::compiled().host_tensors)(m)
}

pub(crate) fn host_tensors<B: Backend>(m: &dyn ModuleTensors<B>) -> Vec<(String, TensorData)> {
    let mut all = Vec::new();
    m.visit(true, &mut |name, t| all.push((name.to_owned(), B::to_data(t))));
    all
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
        impl<B: $crate::Backend, $($g)*> $crate::nn::Module<B> for $t {
            type Grads = ();
            fn visit_params<V: $crate::nn::ParamVisitor<B>>(&self, _: &str, _: &mut V) {}
            fn map_tensors<M: $crate::nn::ParamMapper<B>>(&mut self, _: &str, _: &mut M) {}
            fn visit_grads<V: $crate::nn::GradVisitor<B>>(&mut self, _: &(), _: &str, _: &mut V) {}
            fn visit_grad_tensors<V: $crate::nn::ParamVisitor<B>>(_: &(), _: &str, _: &mut V) {}
            fn map_grad_tensors<M: $crate::nn::ParamMapper<B>>(_: &mut (), _: &str, _: &mut M) {}
            fn make_grads<F: $crate::nn::GradSource<B>>(&self, _: &str, _: &mut F) {}
        }
        impl<$($g)*> $crate::quant::KeepsFloat for $t {}
    };
    (generics $g:tt $($t:ty),*) => {
        $($crate::nn::stateless_module!(@one $g $t);)*
    };
    ($($t:ty),*) => {
        $($crate::nn::stateless_module!(@one [] $t);)*
    };
}
pub(crate) use stateless_module;
