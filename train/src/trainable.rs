//! What `fit` trains: a model whose output a [`Criterion`] compares with
//! the targets, as a `#[model]` (its generated backward) or a hand-written
//! model through the tape ([`Taped`]).

use std::collections::HashMap;
use std::path::Path;

use super::task::{Criterion, Targets, Task};
use super::{FitConfig, StepError, TrainError, model_device, to_device};
use blaze_data::Batch;
use blaze_nn::optim::{add_grads, clip_factor, grad_sq_sum, scale_grads};
use blaze_nn::{Ctx, Differentiable};
use blaze_record::{self as record, RecordError};
use blaze_runtime::autodiff::{Autodiff, no_grad, track};
use blaze_runtime::module::{Module, ModuleTensors, Optimizer};
use blaze_runtime::{Backend, DType, Tensor};

/// What one forward and backward pass gave.
#[derive(Debug)]
pub struct Computed<B: Backend, const DO: usize, G> {
    /// The training-mode output, for metrics.
    pub output: Tensor<B, DO>,
    /// The mean loss of the batch (unscaled).
    pub loss: Tensor<B, 0>,
    /// The parameter gradients of the loss times the step's scale.
    pub grads: G,
}

/// What [`fit`](super::fit) trains: an output `[n, ...]` (rank `DO`) for
/// inputs `[n, ...]` (rank `DI`), gradients of a loss, and an optimizer
/// update. Every `#[model]` of one input tensor (any [`Differentiable`]:
/// sequential models and forward bodies, fixed or symbolic dims) is
/// trainable as it is; a hand-written model trains through the tape as
/// [`Taped`].
pub trait Trainable<B: Backend, const DI: usize, const DO: usize>: Module<B> {
    /// The output in evaluation mode.
    fn predict(&self, x: &Tensor<B, DI>) -> Tensor<B, DO>;

    /// The training forward, the loss against `y`, and the gradients of
    /// `scale` times the loss (a share of an accumulated step). With
    /// `average` the gradients are averaged over the ranks of a
    /// data-parallel run (while the backward runs, where it can).
    fn compute<L: Criterion<B, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, DT>,
        config: &FitConfig<L>,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<B, DO, Self::Grads>, StepError>;

    /// Updates the parameters with `grads`.
    fn apply<O: Optimizer<B>>(&mut self, optimizer: &mut O, grads: &Self::Grads);

    /// The model's summary table, for logs (empty if it has none).
    fn summary(&self) -> String {
        String::new()
    }
}

/// A `#[model]` trains with its generated backward.
impl<B, M, const DI: usize, const DO: usize> Trainable<B, DI, DO> for M
where
    B: Backend,
    M: Differentiable<B, Input = Tensor<B, DI>, Output = Tensor<B, DO>>,
{
    fn predict(&self, x: &Tensor<B, DI>) -> Tensor<B, DO> {
        self.forward(x)
    }

    fn compute<L: Criterion<B, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, DT>,
        config: &FitConfig<L>,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<B, DO, M::Grads>, StepError> {
        let (output, cache) = self.forward_train(x, ctx);
        let loss = config.loss.loss(&output, y)?;
        let grad = if scale == 1.0 { loss.grad } else { loss.grad.mul_scalar(scale) };
        #[cfg(feature = "mpi")]
        if let Some(dp) = config.data_parallel.as_ref().filter(|dp| average && dp.overlap && dp.world.size() > 1) {
            let grads = dp.world.average_grads_during::<B, M>(self, dp.bucket_bytes, |ready| {
                self.backward_params_each(&cache, &grad, ready)
            });
            return Ok(Computed { output, loss: loss.value, grads });
        }
        let mut grads = self.backward_params(&cache, &grad);
        if average {
            config.average_grads::<B, M>(&mut grads);
        }
        Ok(Computed { output, loss: loss.value, grads })
    }

    fn apply<O: Optimizer<B>>(&mut self, optimizer: &mut O, grads: &M::Grads) {
        optimizer.step(self, grads);
    }

    fn summary(&self) -> String {
        Differentiable::summary(self)
    }
}

/// A hand-written model's forward, for training through the tape.
pub trait TapedForward<B: Backend, const DI: usize, const DO: usize>: Module<Autodiff<B>> {
    /// The output; `train` is true during training steps.
    fn forward(&self, x: &Tensor<Autodiff<B>, DI>, train: bool) -> Tensor<Autodiff<B>, DO>;
}

/// Trains a hand-written model (`#[derive(Module)]` plus a
/// [`TapedForward`]) with [`fit`](super::fit), differentiating through `Autodiff<B>`.
#[derive(Clone, Debug)]
pub struct Taped<M>(pub M);

impl<B: Backend, M: Module<Autodiff<B>>> Module<Autodiff<B>> for Taped<M> {
    type Grads = M::Grads;

    fn visit_params<V: blaze_nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_params(prefix, v);
    }

    fn visit_buffers<V: blaze_nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_buffers(prefix, v);
    }

    fn map_tensors<P: blaze_nn::ParamMapper<Autodiff<B>>>(&mut self, prefix: &str, m: &mut P) {
        self.0.map_tensors(prefix, m);
    }

    fn visit_grads<V: blaze_nn::GradVisitor<Autodiff<B>>>(&mut self, g: &M::Grads, prefix: &str, v: &mut V) {
        self.0.visit_grads(g, prefix, v);
    }

    fn visit_grad_tensors<V: blaze_nn::ParamVisitor<Autodiff<B>>>(g: &M::Grads, prefix: &str, v: &mut V) {
        M::visit_grad_tensors(g, prefix, v);
    }

    fn map_grad_tensors<P: blaze_nn::ParamMapper<Autodiff<B>>>(g: &mut M::Grads, prefix: &str, m: &mut P) {
        M::map_grad_tensors(g, prefix, m);
    }

    fn make_grads<F: blaze_nn::GradSource<Autodiff<B>>>(&self, prefix: &str, f: &mut F) -> M::Grads {
        self.0.make_grads(prefix, f)
    }
}

impl<B, M, const DI: usize, const DO: usize> Trainable<Autodiff<B>, DI, DO> for Taped<M>
where
    B: Backend,
    M: TapedForward<B, DI, DO>,
{
    fn predict(&self, x: &Tensor<Autodiff<B>, DI>) -> Tensor<Autodiff<B>, DO> {
        no_grad(|| self.0.forward(x, false))
    }

    fn compute<L: Criterion<Autodiff<B>, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<Autodiff<B>, DI>,
        y: &Tensor<Autodiff<B>, DT>,
        config: &FitConfig<L>,
        _ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<Autodiff<B>, DO, M::Grads>, StepError> {
        // Parameters replaced by a load or an update are leaves again.
        track(&mut self.0);
        let output = self.0.forward(x, true);
        let loss = config.loss.loss(&output, y)?.value;
        let scaled = if scale == 1.0 { loss.clone() } else { loss.mul_scalar(scale) };
        let mut grads = scaled.backward().for_module(&self.0);
        if average {
            config.average_grads::<Autodiff<B>, M>(&mut grads);
        }
        Ok(Computed { output: output.detach(), loss: loss.detach(), grads })
    }

    fn apply<O: Optimizer<Autodiff<B>>>(&mut self, optimizer: &mut O, grads: &M::Grads) {
        let model = &mut self.0;
        no_grad(|| optimizer.step(model, grads));
    }
}

/// A batch's output and targets as the metrics read them, whatever the
/// model's ranks: rows of `[rows, k]` (a classifier's logits against
/// `[rows, 1]` class indices; a binary classifier's or a regressor's
/// outputs against targets of the same shape), with the batch's mean loss.
#[derive(Debug)]
pub struct Observed<B: Backend> {
    pub(crate) output: Tensor<B, 2>,
    pub(crate) target: Tensor<B, 2>,
    /// The batch's samples (the output's first dim).
    pub(crate) samples: usize,
    pub(crate) loss: Tensor<B, 0>,
}

impl<B: Backend> Observed<B> {
    /// `output` and `target` of a batch, as `task`'s metrics read them.
    #[inline(never)]
    fn new<const DO: usize, const DT: usize>(
        task: Task,
        output: &Tensor<B, DO>,
        target: &Tensor<B, DT>,
        loss: Tensor<B, 0>,
    ) -> Self {
        let shape = output.shape();
        let samples = shape.first().copied().unwrap_or(1);
        let (output, target) = match task {
            Task::Classification | Task::LanguageModel => {
                let classes = shape[DO - 1] as i64;
                (output.reshape([-1, classes]), target.reshape([-1, 1]))
            }
            Task::Binary | Task::Regression => {
                let n = samples as i64;
                let target = target.to_dtype(output.dtype()).reshape(shape);
                (output.reshape([n, -1]), target.reshape([n, -1]))
            }
        };
        Observed { output, target, samples, loss }
    }
}

/// Why a batch gave no step: its data does not fit the model (a
/// [`TrainError`] that does not know where the batch sits yet), or the
/// step failed.
#[derive(Debug)]
pub enum BatchError {
    /// From [`to_device`].
    Data(TrainError),
    /// From the forward, the loss or the device.
    Step(StepError),
}

/// [`to_device`] for `task`'s loss: targets of the wrong rank for a loss
/// of real targets become [`TrainError::RealTargets`], which says how to
/// read them.
fn upload<B: Backend, const DI: usize, const DT: usize>(
    batch: Batch,
    device: &B::Device,
    task: Task,
) -> Result<(Tensor<B, DI>, Tensor<B, DT>), BatchError> {
    let dtype = batch.targets.values.dtype();
    to_device::<B, DI, DT>(batch, device, task.targets()).map_err(|e| BatchError::Data(real_targets(task, dtype, e)))
}

/// `e`, or [`TrainError::RealTargets`] when it is a rank error of the
/// targets of a task of real targets (held `dtype` before the upload).
fn real_targets(task: Task, dtype: DType, e: TrainError) -> TrainError {
    match e {
        TrainError::Batch { what: "targets", shape, rank } if task.targets() == Targets::Real => {
            TrainError::RealTargets { task, shape, dtype, rank }
        }
        other => other,
    }
}

/// A model and a loss as validation drives them, behind a trait object.
pub trait Evaluator<B: Backend> {
    /// The loss's task.
    fn task(&self) -> Task;
    /// The loss's ignored class, if any.
    fn ignore_index(&self) -> Option<i64>;
    /// The evaluation-mode output of `batch` on `device`, and its loss.
    fn eval_batch(&mut self, batch: Batch, device: &B::Device) -> Result<Observed<B>, BatchError>;
}

/// A model, its optimizer and its loss as `fit`'s loop drives them,
/// behind a trait object: the loop ([`run_fit`](super::run_fit)) is
/// compiled once per backend, and each model adds only these methods.
pub trait Session<B: Backend> {
    /// The model and loss as validation reads them.
    fn evaluator(&mut self) -> &mut dyn Evaluator<B>;
    /// The device of the model's parameters.
    fn device(&self) -> Result<B::Device, TrainError>;
    /// The model's summary table (empty if it has none).
    fn summary(&self) -> String;
    /// The training forward and backward of `batch`, its gradients times
    /// `scale` added to the step's; `average` averages them over the ranks
    /// (a step of one batch).
    fn train_batch(
        &mut self,
        batch: Batch,
        device: &B::Device,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Observed<B>, BatchError>;
    /// Ends the step's batches: their summed gradients (averaged over the
    /// ranks with `average`) become the step's; returns their squared norm.
    fn close_step(&mut self, average: bool) -> Option<Tensor<B, 0>>;
    /// Takes the optimizer step with the step's gradients times `unscale`
    /// (the inverse of a loss scale, else 1), scaled to `clip.1` first
    /// when their norm so unscaled, `clip.0`, is above it.
    fn apply(&mut self, unscale: f64, clip: Option<(f64, f64)>);
    /// Drops the step's gradients, leaving the model as it was.
    fn discard(&mut self);
    /// The optimizer's learning rate.
    fn lr(&self) -> f64;
    /// Sets the optimizer's learning rate.
    fn set_lr(&mut self, lr: f64);
    /// Whether every parameter and buffer is finite.
    fn all_finite(&self) -> bool;
    /// [`record::save_model`], with `metadata` in the file beside
    /// PyTorch's `format`.
    fn save_model(&self, path: &Path, metadata: &[(&str, String)]) -> Result<(), RecordError>;
    /// [`record::load_model`].
    fn load_model(&mut self, path: &Path) -> Result<(), RecordError>;
    /// The model's parameters and buffers as they are now, by name, to
    /// put back with [`Session::restore`]. The storages share
    /// the values, which stay as they are: an update writes a buffer in
    /// place only when nothing else holds it
    /// ([`Composites::axpby`](blaze_runtime::backend::Composites::axpby)), so the
    /// next step copies what the snapshot holds, and nothing is copied
    /// before it.
    fn snapshot(&self) -> Vec<(String, B::Storage)>;
    /// Puts back the parameters and buffers of a [`Session::snapshot`].
    fn restore(&mut self, snapshot: &[(String, B::Storage)]);
    /// [`record::save_checkpoint`].
    fn save_checkpoint(&self, path: &Path, metadata: &[(&str, String)]) -> Result<(), RecordError>;
    /// [`record::load_checkpoint`].
    fn load_checkpoint(&mut self, path: &Path, device: &B::Device) -> Result<HashMap<String, String>, RecordError>;
    /// Gives every rank rank 0's parameters and buffers.
    fn broadcast(&mut self);
}

/// What [`fit`](super::fit) binds: a model, its optimizer and the
/// configuration with the loss; the gradients of the step being summed
/// and of the step being taken.
pub(crate) struct Bound<'a, B: Backend, M: Module<B>, O, L, const DI: usize, const DO: usize, const DT: usize> {
    pub(crate) eval: Eval<&'a mut M, &'a FitConfig<L>, DI, DO, DT>,
    pub(crate) optimizer: &'a mut O,
    pub(crate) summed: Option<M::Grads>,
    pub(crate) step: Option<M::Grads>,
    pub(crate) _backend: std::marker::PhantomData<B>,
}

/// A model (`&M` for [`evaluate`](super::evaluate), `&mut M` for `fit`)
/// and the configuration with the loss, as validation reads them.
pub(crate) struct Eval<P, C, const DI: usize, const DO: usize, const DT: usize> {
    pub(crate) model: P,
    pub(crate) config: C,
}

impl<B, P, M, C, L, const DI: usize, const DO: usize, const DT: usize> Evaluator<B> for Eval<P, C, DI, DO, DT>
where
    B: Backend,
    P: std::ops::Deref<Target = M>,
    M: Trainable<B, DI, DO>,
    C: std::ops::Deref<Target = FitConfig<L>>,
    L: Criterion<B, DO, DT>,
{
    fn task(&self) -> Task {
        self.config.loss.task()
    }
    fn ignore_index(&self) -> Option<i64> {
        self.config.loss.ignore_index()
    }
    fn eval_batch(&mut self, batch: Batch, device: &B::Device) -> Result<Observed<B>, BatchError> {
        let task = self.task();
        let (x, y) = upload::<B, DI, DT>(batch, device, task)?;
        let output = self.model.predict(&x);
        let loss = self.config.loss.loss(&output, &y).map_err(|e| BatchError::Step(e.into()))?;
        Ok(Observed::new(task, &output, &y, loss.value))
    }
}

impl<B, M, O, L, const DI: usize, const DO: usize, const DT: usize> Session<B> for Bound<'_, B, M, O, L, DI, DO, DT>
where
    B: Backend,
    M: Trainable<B, DI, DO>,
    O: Optimizer<B>,
    L: Criterion<B, DO, DT>,
{
    fn evaluator(&mut self) -> &mut dyn Evaluator<B> {
        &mut self.eval
    }
    fn device(&self) -> Result<B::Device, TrainError> {
        model_device::<B, M>(self.eval.model)
    }
    fn summary(&self) -> String {
        self.eval.model.summary()
    }
    fn train_batch(
        &mut self,
        batch: Batch,
        device: &B::Device,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Observed<B>, BatchError> {
        let task = self.eval.config.loss.task();
        let (x, y) = upload::<B, DI, DT>(batch, device, task)?;
        let c = self.eval.model.compute(&x, &y, self.eval.config, ctx, scale, average).map_err(BatchError::Step)?;
        match &mut self.summed {
            Some(sum) => add_grads::<B, M>(sum, &c.grads),
            None => self.summed = Some(c.grads),
        }
        Ok(Observed::new(task, &c.output, &y, c.loss))
    }
    fn close_step(&mut self, average: bool) -> Option<Tensor<B, 0>> {
        let mut grads = self.summed.take().expect("the step's batches gave gradients");
        if average {
            self.eval.config.average_grads::<B, M>(&mut grads);
        }
        let sq_sum = grad_sq_sum::<B, M>(&grads);
        self.step = Some(grads);
        sq_sum
    }
    fn apply(&mut self, unscale: f64, clip: Option<(f64, f64)>) {
        let mut grads = self.step.take().expect("close_step came first");
        let factor = unscale * clip.map_or(1.0, |(norm, max)| clip_factor(norm, max));
        if factor != 1.0 {
            scale_grads::<B, M>(&mut grads, factor);
        }
        self.eval.model.apply(self.optimizer, &grads);
    }
    fn discard(&mut self) {
        self.step = None;
    }
    fn lr(&self) -> f64 {
        self.optimizer.lr()
    }
    fn set_lr(&mut self, lr: f64) {
        self.optimizer.set_lr(lr);
    }
    fn all_finite(&self) -> bool {
        super::all_finite::<B, M>(self.eval.model)
    }
    fn save_model(&self, path: &Path, metadata: &[(&str, String)]) -> Result<(), RecordError> {
        record::save_host_module(path, &blaze_runtime::module::host_tensors(&*self.eval.model), metadata)
    }
    fn load_model(&mut self, path: &Path) -> Result<(), RecordError> {
        record::load_model(&mut *self.eval.model, path)
    }
    fn snapshot(&self) -> Vec<(String, B::Storage)> {
        snapshot::<B>(&*self.eval.model)
    }
    fn restore(&mut self, snapshot: &[(String, B::Storage)]) {
        restore::<B>(&mut *self.eval.model, snapshot);
    }
    fn save_checkpoint(&self, path: &Path, metadata: &[(&str, String)]) -> Result<(), RecordError> {
        record::save_checkpoint(path, &*self.eval.model, &*self.optimizer, metadata)
    }
    fn load_checkpoint(&mut self, path: &Path, device: &B::Device) -> Result<HashMap<String, String>, RecordError> {
        record::load_checkpoint(path, self.eval.model, self.optimizer, device)
    }
    fn broadcast(&mut self) {
        self.eval.config.broadcast_model::<B, M>(self.eval.model);
    }
}

/// [`Session::snapshot`] of any model (compiled once per backend, not per
/// model).
fn snapshot<B: Backend>(model: &dyn ModuleTensors<B>) -> Vec<(String, B::Storage)> {
    let mut kept = Vec::new();
    model.visit(true, &mut |name, t| kept.push((name.to_owned(), t.clone())));
    kept
}

/// [`Session::restore`] of any model. By name: a model maps its tensors
/// in field order, but visits its parameters before its buffers.
fn restore<B: Backend>(model: &mut dyn ModuleTensors<B>, snapshot: &[(String, B::Storage)]) {
    let kept: HashMap<&str, &B::Storage> = snapshot.iter().map(|(n, s)| (n.as_str(), s)).collect();
    let mut put = 0;
    model.map(&mut |name, t| {
        let s = kept.get(name).unwrap_or_else(|| panic!("restore: the snapshot has no `{name}`"));
        assert!(
            B::shape(s) == B::shape(&t) && B::dtype(s) == B::dtype(&t),
            "restore: `{name}` is {:?} {} in the model and {:?} {} in the snapshot",
            B::shape(&t),
            B::dtype(&t),
            B::shape(s),
            B::dtype(s)
        );
        put += 1;
        (*s).clone()
    });
    assert_eq!(put, kept.len(), "restore: the snapshot holds tensors the model does not");
}
