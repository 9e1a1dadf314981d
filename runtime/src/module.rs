//! Modules: what holds parameters (a layer, a model, a `Vec` or array of
//! them), how their tensors are visited by name, and the optimizer's trait.
//!
//! The core keeps these because the tape ([`crate::autodiff`]) and the
//! passes compiled once per backend ([`crate::Precompiled`]) walk modules;
//! the layers themselves are `blaze-nn`'s.

use crate::{Backend, Tensor, TensorData};

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
pub type VisitFn<'a, B> = dyn FnMut(&str, &<B as crate::Primitives>::Storage) + 'a;
/// What [`map_storages`] replaces each tensor with.
pub type MapFn<'a, B> = dyn FnMut(&str, <B as crate::Primitives>::Storage) -> <B as crate::Primitives>::Storage + 'a;
/// What [`update_storages`] calls with each parameter and its gradient.
pub type UpdateFn<'a, B> =
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
pub fn visit_storages<B: Backend, M: Module<B>>(m: &M, buffers: bool, f: &mut VisitFn<'_, B>) {
    m.visit_params("", &mut Storages(&mut *f));
    if buffers {
        m.visit_buffers("", &mut Storages(f));
    }
}

/// Replaces every parameter and buffer of `m` by what `f` returns (of the
/// same rank).
pub fn map_storages<B: Backend, M: Module<B>>(m: &mut M, f: &mut MapFn<'_, B>) {
    m.map_tensors("", &mut Storages(f));
}

/// Calls `f` with every gradient of `grads`, named like its parameter.
pub fn visit_grad_storages<B: Backend, M: Module<B>>(grads: &M::Grads, f: &mut VisitFn<'_, B>) {
    M::visit_grad_tensors(grads, "", &mut Storages(f));
}

/// Replaces every gradient of `grads` by what `f` returns.
pub fn map_grad_storages<B: Backend, M: Module<B>>(grads: &mut M::Grads, f: &mut MapFn<'_, B>) {
    M::map_grad_tensors(grads, "", &mut Storages(f));
}

/// Calls `f` with every parameter of `m`, to update in place, and its
/// gradient.
pub fn update_storages<B: Backend, M: Module<B>>(m: &mut M, grads: &M::Grads, f: &mut UpdateFn<'_, B>) {
    m.visit_grads(grads, "", &mut Storages(f));
}

/// A module seen through its tensors' storages alone, as a trait object.
/// The runtime's cold passes over a model (its device, parameter counts,
/// saving, loading, checks) take one: they are compiled once per backend
/// (in the tables of [`Precompiled`](crate::Precompiled)) rather than once per
/// model, and each model brings only the two traversals behind this
/// trait, which its other passes share.
pub trait ModuleTensors<B: Backend> {
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
    /// with `#[load(..)]`. `blaze::record::load_model_from` reads by it.
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
/// `blaze::record::load_model_from` refuses it, naming both.
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

/// Every parameter and buffer of `m` by name, copied to the host, in
/// visiting order (the pass behind `state_dict` and saving), compiled once
/// per backend ([`ModuleTable`]).
pub fn host_tensors<B: Backend>(m: &dyn ModuleTensors<B>) -> Vec<(String, TensorData)> {
    (ModuleTable::<B>::of().host_tensors)(m)
}

crate::precompiled_table! {
    /// The module passes of the core compiled once per backend
    /// ([`Precompiled`](crate::Precompiled)).
    pub struct ModuleTable<B> {
        host_tensors: fn(&dyn ModuleTensors<B>) -> Vec<(String, TensorData)> = copy_to_host::<B>,
    }
}

fn copy_to_host<B: Backend>(m: &dyn ModuleTensors<B>) -> Vec<(String, TensorData)> {
    let mut all = Vec::new();
    m.visit(true, &mut |name, t| all.push((name.to_owned(), B::to_data(t))));
    all
}

/// Updates parameters from their gradients.
pub trait Optimizer<B: Backend>: Send {
    /// One update of every parameter of `model`.
    fn step<M: Module<B>>(&mut self, model: &mut M, grads: &M::Grads);
    /// The current learning rate.
    fn lr(&self) -> f64;
    /// Sets the learning rate (schedulers call this each step).
    fn set_lr(&mut self, lr: f64);
    /// The state to save: named tensors and the step count.
    fn state(&self) -> (Vec<(String, TensorData)>, u64);
    /// Restores saved state; tensors are moved to `device`.
    fn load_state(&mut self, tensors: Vec<(String, TensorData)>, steps: u64, device: &B::Device);
}
