//! The runtime's code that depends on the backend alone, as one table of
//! functions per backend: [`Compiled`].

use std::path::Path;

use crate::Tensor;
use crate::backend::{AdamStep, Backend, Primitives};
use crate::data::Batch;
use crate::dtype::TensorData;
use crate::kernel::KernelFn;
use crate::loss::{CrossEntropyOptions, Loss};
use crate::nn::own_kernels::OwnKernel;
use crate::nn::{FusionPlan, ModuleTensors};
use crate::optim::{SgdRule, States, Update, UpdateRule};
use crate::record::{Checkpoint, RecordError};
use crate::train::{FitRun, History, LossError, Targets, TrainError};

/// `fit`'s loop, once it has bound the model, optimizer and loss.
type FitLoop<B> = for<'a> fn(FitRun<'a, B>) -> Result<History, TrainError>;
/// A summary's table from the model, its name and input, its layers'
/// `(name, type, output)` rows and the fusion plan.
type Summarize<B> = fn(&dyn ModuleTensors<B>, &str, &str, &[(&str, &str, &str)], &FusionPlan) -> String;
/// A batch's inputs and targets uploaded, the targets as the task wants
/// them, after checking their ranks.
type BatchToDevice<B> =
    fn(Batch, &<B as Primitives>::Device, Targets, [usize; 2]) -> Result<(Storage<B>, Storage<B>), TrainError>;
/// Cross-entropy of logits `[rows, classes]` against class rows `[rows]`.
type ClassRows<B> = fn(CrossEntropyOptions, &Tensor<B, 2>, &Tensor<B, 1>) -> Result<Loss<B, 2>, LossError>;
/// An optimizer's update of one parameter in place, by its rule.
type UpdateParam<B> = for<'a> fn(&mut UpdateRule<'a, B>, &str, &mut Storage<B>, &Storage<B>);
/// A gradient plus `more`, the values to add to parameter `name`'s.
type Added<B> = fn(&str, &Storage<B>, Option<Storage<B>>) -> Storage<B>;
/// SGD's update of one parameter from its flat values and gradient.
type SgdUpdate<B> = fn(&SgdRule, &mut States<B>, &str, &Tensor<B, 1>, &Tensor<B, 1>) -> Update<B>;
/// Tensors on the host, by name.
type NamedTensors = Vec<(String, TensorData)>;
/// A tensor of backend `B`.
type Storage<B> = <B as Primitives>::Storage;

/// The runtime's functions that depend on the backend and on nothing the
/// user writes: `fit`'s loop, saving and loading, checkpoints, summaries,
/// the finiteness check, moving batches to the device, cross-entropy over
/// class rows, the layers' own kernels (dropout), the op
/// table's gradients, the optimizers' update of one parameter and the gradient passes'
/// work on one gradient, optimizer state. The generic entry points (`fit`,
/// `save_model`, ...) call through [`Precompiled::compiled`](crate::Precompiled::compiled).
///
/// Why a table: a release build shares no generic code between crates, so
/// what a user's crate calls generically is compiled and optimised there,
/// again after every edit. A backend crate that keeps its table in a
/// `static` compiles these functions once, itself; a user's crate only
/// calls through the pointers, and its rebuild compiles what depends on
/// its models. The model-dependent halves reach these functions as trait
/// objects (the model's storage traversals) or as plain storages.
pub struct Compiled<B: Backend> {
    pub(crate) fit_loop: FitLoop<B>,
    pub(crate) save_module: fn(&dyn ModuleTensors<B>, &Path) -> Result<(), RecordError>,
    pub(crate) load_module: fn(&mut dyn ModuleTensors<B>, &Path) -> Result<(), RecordError>,
    pub(crate) restore: fn(&mut dyn ModuleTensors<B>, &Path) -> Result<Checkpoint, RecordError>,
    pub(crate) host_tensors: fn(&dyn ModuleTensors<B>) -> NamedTensors,
    pub(crate) summarize: Summarize<B>,
    pub(crate) count_params: fn(&dyn ModuleTensors<B>, &[&str]) -> Vec<usize>,
    pub(crate) first_device: fn(&dyn ModuleTensors<B>) -> Option<B::Device>,
    pub(crate) finite: fn(&dyn ModuleTensors<B>) -> bool,
    pub(crate) batch_to_device: BatchToDevice<B>,
    pub(crate) class_rows: ClassRows<B>,
    pub(crate) own_kernel: fn(OwnKernel, KernelFn, &Storage<B>) -> Storage<B>,
    pub(crate) unary_grad: fn(crate::UnaryOp, &Storage<B>, &Storage<B>) -> Storage<B>,
    pub(crate) update_param: UpdateParam<B>,
    pub(crate) sgd_update: SgdUpdate<B>,
    pub(crate) adam_update: fn(AdamStep, &mut States<B>, &str, &mut Storage<B>, &Storage<B>),
    pub(crate) add_sum_squares: fn(&mut Option<Tensor<B, 0>>, &Storage<B>),
    pub(crate) scaled: fn(&Storage<B>, f64) -> Storage<B>,
    pub(crate) added: Added<B>,
    pub(crate) export_states: fn(&States<B>) -> NamedTensors,
    pub(crate) import_states: fn(NamedTensors, &B::Device) -> States<B>,
}

impl<B: Backend> Compiled<B> {
    /// The table of the runtime's functions for `B`.
    pub const fn new() -> Self {
        Compiled {
            fit_loop: crate::train::run_fit::<B>,
            save_module: crate::record::save_module::<B>,
            load_module: crate::record::load_module::<B>,
            restore: crate::record::restore::<B>,
            host_tensors: crate::nn::host_tensors::<B>,
            summarize: crate::nn::summarize::<B>,
            count_params: crate::nn::count_params::<B>,
            first_device: crate::nn::first_device::<B>,
            finite: crate::train::finite::<B>,
            batch_to_device: crate::train::batch_to_device::<B>,
            class_rows: crate::train::task::class_rows::<B>,
            own_kernel: crate::nn::own_kernels::own_kernel::<B>,
            unary_grad: crate::adjoint::unary_grad::<B>,
            update_param: crate::optim::update_param::<B>,
            sgd_update: crate::optim::sgd_update::<B>,
            adam_update: crate::optim::adam_update::<B>,
            add_sum_squares: crate::optim::add_sum_squares::<B>,
            scaled: crate::optim::scaled::<B>,
            added: crate::optim::added::<B>,
            export_states: States::<B>::export,
            import_states: States::<B>::import,
        }
    }

    /// [`Compiled::new`] as a constant, which a generic backend's
    /// [`Precompiled::compiled`](crate::Precompiled::compiled) borrows for
    /// `'static`.
    pub(crate) const TABLE: Self = Self::new();
}

impl<B: Backend> Default for Compiled<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> std::fmt::Debug for Compiled<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Compiled<{}>", B::name())
    }
}
