//! What `fit` is told: `FitConfig` (epochs, batch size, the loss, the
//! optimizer's schedule, checkpoints, precision, what to do with a
//! non-finite step) and its checks, `EarlyStopping` and `NonFinite`.

use super::*;

/// How to train: the loss `L` and everything else. `FitConfig::default()`
/// trains a classifier with cross-entropy; another loss goes in with
/// [`FitConfig::new`] (`FitConfig { epochs: 30, ..FitConfig::new(Mse) }`)
/// or [`FitConfig::with_loss`].
///
/// The loss is the last field so that `fit`'s loop, compiled once, reads
/// any configuration as a `&FitConfig<dyn Sync>`.
#[derive(Debug)]
pub struct FitConfig<L: ?Sized = CrossEntropy> {
    /// Number of epochs to reach (a resumed run continues to this count).
    pub epochs: usize,
    /// Folder for `best.safetensors`, `last.safetensors` and, with the
    /// `plot` feature, the curves (`curve.svg` after every epoch,
    /// `curve.png` at the end); `None` keeps nothing on disk.
    pub out_dir: Option<PathBuf>,
    /// Continue from `out_dir/last.safetensors` when it exists.
    pub resume: bool,
    /// A TensorBoard log folder: each run adds an event file there with
    /// the loss and learning rate of every step (`step/loss`, `step/lr`),
    /// every epoch's metrics (`train/...`, `val/...`) and the model's
    /// summary, so `tensorboard --logdir DIR` follows the run.
    pub tensorboard: Option<PathBuf>,
    /// Clip gradients to this global norm.
    pub clip_grad_norm: Option<f64>,
    /// Learning rate per optimizer step; `None` keeps the optimizer's.
    pub schedule: Option<Box<dyn LrSchedule>>,
    /// The validation metric that picks the best weights and drives early
    /// stopping (`accuracy`, `loss`, `f1`, `r2`, `top5_accuracy`, ...);
    /// `None` takes the task's ([`Task::default_monitor`]).
    pub monitor: Option<String>,
    /// Stop when the monitored metric has not improved for a while.
    pub early_stopping: Option<EarlyStopping>,
    /// Stop after this many optimizer steps in all (Lightning's
    /// `max_steps`), validating the epoch they end in; `None` runs every
    /// epoch to its end.
    pub max_steps: Option<u64>,
    /// Batches whose gradients are summed before each optimizer step
    /// (Lightning's `accumulate_grad_batches`): a step sees the mean
    /// gradient of all of them, as one batch that many times larger would
    /// give. 1 steps after every batch.
    pub accumulate_grad_batches: usize,
    /// The k of classifiers' top-k validation accuracy.
    pub top_k: usize,
    /// What a step whose loss or gradient norm is NaN or infinite does.
    /// (Under [`Precision::F16`](blaze_runtime::Precision::F16) a gradient that
    /// overflows only under loss scaling is not one: that step is
    /// skipped and the scale backs off.)
    pub on_non_finite: NonFinite,
    /// The precision of the model's products, forward and backward
    /// (`torch.autocast`'s dtype; see [`blaze_runtime::precision`]): the weights,
    /// the optimizer's state and the checkpoints stay f32 whatever it is.
    /// [`Precision::F16`](blaze_runtime::Precision::F16) trains with dynamic loss
    /// scaling ([`GradScaler`], whose state the checkpoint keeps for a
    /// resumed run). A `#[model(precision = ..)]` keeps its own.
    pub precision: blaze_runtime::Precision,
    /// Seed of the dropout masks.
    pub seed: u64,
    /// Show a progress bar (on a terminal) and print a line per epoch
    /// and a classifier's confusion matrix at the end (on rank 0 alone
    /// when data-parallel).
    pub verbose: bool,
    /// Train data-parallel over the ranks of an MPI job (feature `mpi`):
    /// parameters start as rank 0's, the training loader gives each rank
    /// its shard of every epoch (unless it was sharded already), gradients
    /// are averaged every step, the epoch's metrics are summed over the
    /// ranks, and rank 0 alone prints and writes to `out_dir` (which every
    /// rank reads to resume, so it must be on a file system they share).
    /// An error on any rank ends the whole job with that rank's message.
    #[cfg(feature = "mpi")]
    pub data_parallel: Option<blaze_distributed::DataParallel>,
    /// The loss, which also decides the task and its metrics.
    pub loss: L,
}

/// When to stop before `FitConfig::epochs` (Keras's and Lightning's
/// `EarlyStopping`), and which weights the model holds when `fit` ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyStopping {
    /// Epochs without improvement of the monitored metric after which
    /// training stops.
    pub patience: usize,
    /// The least change that counts as an improvement.
    pub min_delta: f64,
    /// Put the weights of the best epoch ([`History::best`], the one
    /// `best.safetensors` holds) back into the model when `fit` ends,
    /// and record it in [`History::restored_epoch`]. On by default.
    ///
    /// Unlike Keras's `restore_best_weights`, which restores only when
    /// its own patience runs out, this restores however the run ends
    /// without an error: patience spent, `FitConfig::epochs` reached, or
    /// `FitConfig::max_steps` reached, so the model `fit` hands back is
    /// the one its history calls best either way. `fit` keeps the best
    /// weights in memory on the model's device (no `out_dir` needed); a
    /// resumed run reads the earlier best from `out_dir/best.safetensors`.
    /// A run that ends with an error leaves the model as the error found
    /// it.
    pub restore_best: bool,
}

impl EarlyStopping {
    /// Stops after `patience` epochs without any improvement, and
    /// restores the best epoch's weights.
    pub fn patience(patience: usize) -> Self {
        EarlyStopping { patience, min_delta: 0.0, restore_best: true }
    }

    /// This rule with [`EarlyStopping::restore_best`] set to `restore`
    /// (`false` leaves the last epoch's weights in the model).
    pub fn restore_best(self, restore: bool) -> Self {
        EarlyStopping { restore_best: restore, ..self }
    }
}

impl Default for FitConfig<CrossEntropy> {
    fn default() -> Self {
        FitConfig::new(CrossEntropy::default())
    }
}

impl<L> FitConfig<L> {
    /// Trains with `loss`, and the defaults for everything else: 10 epochs,
    /// nothing on disk, no clipping, no schedule, the task's monitor, no
    /// early stopping or accumulation, top-5, stop on non-finite values.
    pub fn new(loss: L) -> Self {
        FitConfig {
            loss,
            epochs: 10,
            out_dir: None,
            resume: false,
            tensorboard: None,
            clip_grad_norm: None,
            schedule: None,
            monitor: None,
            early_stopping: None,
            max_steps: None,
            accumulate_grad_batches: 1,
            top_k: 5,
            on_non_finite: NonFinite::Stop,
            precision: blaze_runtime::Precision::F32,
            seed: 0,
            verbose: true,
            #[cfg(feature = "mpi")]
            data_parallel: None,
        }
    }

    /// This configuration with another loss.
    pub fn with_loss<L2>(self, loss: L2) -> FitConfig<L2> {
        FitConfig {
            loss,
            epochs: self.epochs,
            out_dir: self.out_dir,
            resume: self.resume,
            tensorboard: self.tensorboard,
            clip_grad_norm: self.clip_grad_norm,
            schedule: self.schedule,
            monitor: self.monitor,
            early_stopping: self.early_stopping,
            max_steps: self.max_steps,
            accumulate_grad_batches: self.accumulate_grad_batches,
            top_k: self.top_k,
            on_non_finite: self.on_non_finite,
            precision: self.precision,
            seed: self.seed,
            verbose: self.verbose,
            #[cfg(feature = "mpi")]
            data_parallel: self.data_parallel,
        }
    }
}

/// What [`fit`] does with a step whose loss or gradient norm is NaN or
/// infinite. Either way the step changes neither the weights nor the
/// optimizer's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NonFinite {
    /// Stop with [`TrainError::NonFinite`], naming the step and the last
    /// good checkpoint.
    #[default]
    Stop,
    /// Skip the step and go on, as mixed-precision loss scalers skip an
    /// overflowing step; counted in [`EpochMetrics::skipped_steps`]. An
    /// epoch whose every step is skipped stops training.
    SkipStep,
}

impl<L: ?Sized> FitConfig<L> {
    /// This process's rank and the number of ranks: `(0, 1)` unless
    /// data-parallel.
    pub(super) fn ranks(&self) -> (usize, usize) {
        #[cfg(feature = "mpi")]
        if let Some(dp) = &self.data_parallel {
            return (dp.world.rank(), dp.world.size());
        }
        (0, 1)
    }

    /// Whether this process prints and writes files.
    pub(super) fn is_main(&self) -> bool {
        self.ranks().0 == 0
    }

    /// Sums `values` over the ranks, in place.
    pub(crate) fn sum_over_ranks(&self, values: &mut [f64]) {
        #[cfg(feature = "mpi")]
        if let Some(dp) = &self.data_parallel {
            dp.world.all_reduce_sum(values);
        }
        let _ = values;
    }

    /// Gives every rank rank 0's parameters and buffers.
    pub(super) fn broadcast_model<B: Backend, M: Module<B>>(&self, model: &mut M) {
        #[cfg(feature = "mpi")]
        if let Some(dp) = &self.data_parallel {
            dp.world.broadcast_module::<B, M>(model);
        }
        let _ = model;
    }

    /// Replaces each gradient by its mean over the ranks.
    pub(crate) fn average_grads<B: Backend, M: Module<B>>(&self, grads: &mut M::Grads) {
        #[cfg(feature = "mpi")]
        if let Some(dp) = &self.data_parallel {
            dp.world.average_grads::<B, M>(grads, dp.bucket_bytes);
        }
        let _ = grads;
    }

    /// In a job of several ranks, ends every rank with this one's error;
    /// alone, hands the error back.
    pub(super) fn end_job_on(&self, error: TrainError) -> TrainError {
        #[cfg(feature = "mpi")]
        if let Some(dp) = self.data_parallel.as_ref().filter(|dp| dp.world.size() > 1) {
            dp.world.abort(&format!("fit: {error}"));
        }
        error
    }

    /// The validation metric that picks the best epoch, checked against
    /// what `task` reports.
    pub(super) fn monitor(&self, task: Task) -> Result<Monitor, TrainError> {
        let name = self.monitor.as_deref().unwrap_or(task.default_monitor());
        let names = task.metric_names(self.top_k);
        match Monitor::new(name).filter(|_| names.iter().any(|n| n == name)) {
            Some(m) => Ok(m),
            None => Err(TrainError::Config(format!(
                "monitor `{name}` is not a metric of {task:?} (there are: {})",
                names.join(", ")
            ))),
        }
    }
}
