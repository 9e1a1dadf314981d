//! `fit`: the training loop. Epochs over a [`DataLoader`] with any loss
//! ([`Criterion`]: cross-entropy, MSE, L1, Huber, BCE with logits, or your
//! own), the metrics of the task (accuracy, top-k, precision/recall/F1 and
//! a confusion matrix for classifiers; MAE, RMSE and R² for regression;
//! perplexity for language models), a progress bar, validation after each
//! epoch, early stopping, gradient accumulation, the best weights and a
//! resumable checkpoint on disk, the curves as SVG and PNG next to them
//! (feature `plot`), and TensorBoard event files.
#![deny(missing_docs)]

mod config;
mod error;
mod history;
mod metrics;
#[cfg(feature = "plot")]
mod plot;
mod progress;
mod scaler;
pub(crate) mod task;
pub mod tensorboard;
mod trainable;

pub use config::{EarlyStopping, FitConfig, NonFinite};
pub use error::{StepError, TrainError};
pub use history::{EpochMetrics, History, Monitor};
pub use metrics::{Confusion, Scores};
pub use scaler::GradScaler;
pub use task::{
    BceWithLogits, Criterion, CrossEntropy, Huber, L1, LossError, LossFn, Mse, Targets, Task, higher_is_better,
};
pub use tensorboard::SummaryWriter;
pub use trainable::{BatchError, Computed, Evaluator, Observed, Session, Taped, TapedForward, Trainable};

use std::path::{Path, PathBuf};
use std::time::Instant;

use blaze_data::{Batch, DataLoader, Dataset, Loader, ShardTail};
use blaze_nn::optim::LrSchedule;
use blaze_nn::{Ctx, device_of};
use blaze_record as record;
use blaze_runtime::backend::Device;
use blaze_runtime::module::{Module, ModuleTensors, Optimizer};
use blaze_runtime::{Backend, DType, Tensor};
use metrics::Tally;
use task::CrossEntropyRows;
use trainable::{Bound, Eval};

/// Compiles every table of the runtime for backend `$backend`, once, in
/// the crate that invokes it (the backend's): `fit`'s, the layers' and
/// optimizers', saving's and the core's. It implements
/// [`Precompiled`](blaze_runtime::Precompiled) with `AHEAD`, so a user's
/// crate calls these functions and never compiles them.
///
/// ```ignore
/// blaze_train::precompile!(MyBackend);
/// ```
#[macro_export]
macro_rules! precompile {
    ($backend:ty) => {
        impl $crate::__private::Precompiled for $backend {
            const AHEAD: bool = true;

            fn tables() -> &'static [&'static $crate::__private::AnyTable] {
                static TABLES: [&$crate::__private::AnyTable; 5] = [
                    &$crate::__private::AdjointTable::<$backend>::new(),
                    &$crate::__private::ModuleTable::<$backend>::new(),
                    &$crate::__private::RecordTable::<$backend>::new(),
                    &$crate::__private::NnTable::<$backend>::new(),
                    &$crate::Table::<$backend>::new(),
                ];
                &TABLES
            }
        }
    };
}

/// What [`precompile!`] names.
#[doc(hidden)]
pub mod __private {
    pub use blaze_nn::Table as NnTable;
    pub use blaze_record::Table as RecordTable;
    pub use blaze_runtime::adjoint::AdjointTable;
    pub use blaze_runtime::module::ModuleTable;
    pub use blaze_runtime::{AnyTable, Precompiled};
}

/// A tensor of backend `B`.
type Storage<B> = <B as blaze_runtime::Primitives>::Storage;
/// `fit`'s loop, once it has bound the model, optimizer and loss.
type FitLoop<B> = for<'a> fn(FitRun<'a, B>) -> Result<History, TrainError>;
/// A batch's inputs and targets uploaded, the targets as the task wants
/// them, after checking their ranks.
type BatchToDevice<B> = fn(
    Batch,
    &<B as blaze_runtime::Primitives>::Device,
    Targets,
    [usize; 2],
) -> Result<(Storage<B>, Storage<B>), TrainError>;

blaze_runtime::precompiled_table! {
    /// `fit`'s functions that depend on the backend alone, compiled once
    /// per backend ([`blaze_runtime::Precompiled`]): its loop, the
    /// finiteness check, moving batches to the device and cross-entropy
    /// over class rows.
    pub struct Table<B> {
        fit_loop: FitLoop<B> = run_fit::<B>,
        finite: fn(&dyn ModuleTensors<B>) -> bool = finite::<B>,
        batch_to_device: BatchToDevice<B> = batch_to_device::<B>,
        class_rows: CrossEntropyRows<B> = task::class_rows::<B>,
    }
}

/// Moves a host batch to the device as model input and targets: class
/// indices (i64; float targets must hold whole numbers, else
/// `TrainError::Label` with epoch 0 and batch 0 for the caller to fill in)
/// or real values.
pub fn to_device<B: Backend, const DI: usize, const DT: usize>(
    batch: Batch,
    device: &B::Device,
    targets: Targets,
) -> Result<(Tensor<B, DI>, Tensor<B, DT>), TrainError> {
    let (x, y) = (Table::<B>::of().batch_to_device)(batch, device, targets, [DI, DT])?;
    Ok((Tensor::wrap(x), Tensor::wrap(y)))
}

/// [`to_device`] with the ranks of the inputs and the targets as numbers.
pub(crate) fn batch_to_device<B: Backend>(
    batch: Batch,
    device: &B::Device,
    targets: Targets,
    [input_rank, target_rank]: [usize; 2],
) -> Result<(B::Storage, B::Storage), TrainError> {
    if batch.inputs.shape.len() != input_rank {
        return Err(TrainError::Batch { what: "inputs", shape: batch.inputs.shape, rank: input_rank });
    }
    let mut t = batch.targets;
    let dtype = t.values.dtype();
    match targets {
        Targets::Classes if dtype != DType::I64 => {
            let values = t.values.to_f64_vec();
            if let Some(position) = values.iter().position(|v| !(v.is_finite() && v.fract() == 0.0)) {
                return Err(TrainError::Label {
                    epoch: 0,
                    split: "training",
                    batch: 0,
                    position,
                    value: values[position],
                });
            }
            t.values = t.values.convert(DType::I64);
        }
        Targets::Real if !dtype.is_float() => t.values = t.values.convert(DType::F32),
        _ => {}
    }
    if t.shape.len() != target_rank {
        return Err(TrainError::Batch { what: "targets", shape: t.shape, rank: target_rank });
    }
    Ok((B::from_data(batch.inputs, device), B::from_data(t, device)))
}

/// Where a batch sits, for errors.
struct At<'a> {
    /// `fit`'s 1-based epoch.
    epoch: usize,
    split: &'static str,
    batch: usize,
    loader: &'a dyn Loader,
    /// The loader's epoch, which fixed the sample order.
    order: u64,
}

impl At<'_> {
    fn target(&self, source: LossError) -> TrainError {
        let sample = match &source {
            LossError::Class(t) => self.loader.sample_index(self.order, self.batch, t.position),
            _ => None,
        };
        TrainError::Target { epoch: self.epoch, split: self.split, batch: self.batch, sample, source }
    }

    /// Fills in where a batch that failed sits.
    fn batch(&self, e: BatchError) -> TrainError {
        match e {
            BatchError::Data(TrainError::Label { position, value, .. }) => {
                TrainError::Label { epoch: self.epoch, split: self.split, batch: self.batch, position, value }
            }
            BatchError::Data(other) => other,
            BatchError::Step(StepError::Loss(t)) => self.target(t),
            BatchError::Step(StepError::Device(d)) => TrainError::Device(d),
        }
    }
}

/// The error for a loader that yields no batch.
fn empty(split: &'static str, loader: &dyn Loader) -> TrainError {
    TrainError::EmptyData {
        split,
        samples: loader.dataset_len(),
        batch_size: loader.batch_size(),
        drop_last: loader.drops_last(),
    }
}

/// The device a model's parameters are on.
fn model_device<B: Backend, M: Module<B>>(model: &M) -> Result<B::Device, TrainError> {
    device_of::<B, M>(model).ok_or_else(|| TrainError::Config("the model has no parameters to train".into()))
}

/// The metrics of `model` (evaluation mode) on `data`, with `config`'s
/// loss: its task's validation metrics, in the order `fit` reports them.
pub fn evaluate<B, M, D, L, const DI: usize, const DO: usize, const DT: usize>(
    model: &M,
    data: &mut DataLoader<D>,
    config: &FitConfig<L>,
) -> Result<Scores, TrainError>
where
    B: Backend,
    M: Trainable<B, DI, DO>,
    D: Dataset,
    L: Criterion<B, DO, DT>,
{
    let device = model_device::<B, M>(model)?;
    let mut eval = Eval::<&M, &FitConfig<L>, DI, DO, DT> { model, config };
    Ok(validate::<B>(&mut eval, data, config.top_k, 1, &device)?.scores())
}

/// [`evaluate`] after `epoch`, keeping the running sums.
fn validate<B: Backend>(
    model: &mut dyn Evaluator<B>,
    data: &mut dyn Loader,
    top_k: usize,
    epoch: usize,
    device: &B::Device,
) -> Result<Tally, TrainError> {
    if data.is_empty() {
        return Err(empty("validation", data));
    }
    let mut tally = Tally::new(model.task(), Some(top_k));
    let order = data.next_epoch();
    for (batch, b) in data.epoch().enumerate() {
        let observed = model.eval_batch(b, device);
        let at = At { epoch, split: "validation", batch, loader: data, order };
        let observed = observed.map_err(|e| at.batch(e))?;
        device.synchronize()?;
        tally.add(&observed, observed.loss.item(), model.ignore_index());
    }
    Ok(tally)
}

/// Whether every parameter and buffer of `model` is finite (one read-back).
pub fn all_finite<B: Backend, M: Module<B>>(model: &M) -> bool {
    (Table::<B>::of().finite)(model)
}

pub(crate) fn finite<B: Backend>(model: &dyn ModuleTensors<B>) -> bool {
    // x * 0 is 0 for finite x and NaN for NaN or ±inf.
    let mut probe: Option<Tensor<B, 0>> = None;
    model.visit(true, &mut |_, t| {
        if !B::dtype(t).is_float() {
            return;
        }
        let z = Tensor::flat(t).mul_scalar(0.0).sum();
        probe = Some(match probe.take() {
            Some(acc) => acc.add(&z.to_dtype(acc.dtype())),
            None => z,
        });
    });
    probe.is_none_or(|z| z.item() == 0.0)
}

/// Trains `model` with `config.loss` on `train`, validating on `val`
/// after every epoch; returns the history of every epoch (those of a
/// resumed run included). The backend, the device and the ranks of inputs,
/// outputs and targets come from the model's and the loss's types, so a
/// call reads `fit(&mut model, &mut optimizer, &mut train, &mut val,
/// &config)` (the README trains a regressor this way).
///
/// A `#[model]` trains with its generated backward; a hand-written model
/// through the tape as [`Taped`].
///
/// Nothing goes wrong silently: an empty split, a target the loss does not
/// take (a class the model lacks, a wrong shape or range), a non-finite
/// loss, gradient or weight, and a device fault each stop training with a
/// [`TrainError`] that says where; no checkpoint is written with
/// non-finite weights.
///
/// `fit` itself only binds the model, the optimizer and the loss as a
/// [`Session`]; the loop is [`run_fit`], which the backend's crate compiles
/// once ([`Precompiled`](blaze_runtime::Precompiled)).
pub fn fit<B, M, O, D, V, L, const DI: usize, const DO: usize, const DT: usize>(
    model: &mut M,
    optimizer: &mut O,
    train: &mut DataLoader<D>,
    val: &mut DataLoader<V>,
    config: &FitConfig<L>,
) -> Result<History, TrainError>
where
    B: Backend,
    M: Trainable<B, DI, DO>,
    O: Optimizer<B>,
    D: Dataset,
    V: Dataset,
    L: Criterion<B, DO, DT> + Sync,
{
    let mut session = Bound::<B, M, O, L, DI, DO, DT> {
        eval: Eval { model, config },
        optimizer,
        summed: None,
        step: None,
        _backend: std::marker::PhantomData,
    };
    (Table::<B>::of().fit_loop)(FitRun { session: &mut session, train, val, config })
}

/// What [`fit`] hands its loop ([`run_fit`]): everything behind trait
/// objects, so the loop does not depend on the model, the loss, the
/// optimizer or the data.
pub struct FitRun<'a, B: Backend> {
    /// The model, optimizer and loss.
    pub session: &'a mut (dyn Session<B> + Send),
    /// The training split.
    pub train: &'a mut dyn Loader,
    /// The validation split.
    pub val: &'a mut dyn Loader,
    /// Everything else `fit` is told.
    pub config: &'a FitConfig<dyn Sync + 'a>,
}

impl<B: Backend> std::fmt::Debug for FitRun<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FitRun").field("epochs", &self.config.epochs).finish_non_exhaustive()
    }
}

/// [`fit`]'s loop, for any model: what a backend's
/// [`Table`] calls.
pub fn run_fit<B: Backend>(run: FitRun<'_, B>) -> Result<History, TrainError> {
    let FitRun { session, train, val, config } = run;
    // In a job of several ranks, an error on this one ends them all.
    let mut on_this_rank = || -> Result<History, TrainError> {
        let device = session.device()?;
        if config.accumulate_grad_batches == 0 {
            return Err(TrainError::Config("accumulate_grad_batches must be at least 1".into()));
        }
        if config.top_k == 0 {
            return Err(TrainError::Config("top_k must be at least 1".into()));
        }
        let monitor = config.monitor(session.evaluator().task())?;
        let (rank, ranks) = config.ranks();
        if ranks > 1 && train.shard_of().is_none() {
            train.set_shard(rank, ranks, ShardTail::Pad);
        }
        if train.is_empty() {
            return Err(empty("training", train));
        }
        if val.is_empty() {
            return Err(empty("validation", val));
        }
        let mut history = History::default();
        let mut scaler = None;
        let last = config.out_dir.as_ref().map(|d| d.join("last.safetensors"));
        if let Some(dir) = &config.out_dir {
            std::fs::create_dir_all(dir).map_err(|source| TrainError::Io { path: dir.clone(), source })?;
        }
        if let Some(last) = last.as_ref().filter(|p| config.resume && p.exists()) {
            let meta = session.load_checkpoint(last, &device)?;
            history = meta.get("history").and_then(|h| History::decode(h)).ok_or_else(|| TrainError::Checkpoint {
                path: last.clone(),
                message: "no readable `history` in the metadata".into(),
            })?;
            // An f16 run's loss scale goes on where it was.
            scaler = meta.get("loss_scale").and_then(|s| GradScaler::decode(s));
            if config.verbose && config.is_main() {
                println!("resumed from {} after epoch {}", last.display(), history.epochs.len());
            }
        }
        history.monitor = monitor;
        session.broadcast();
        let run = Run { session, config, device: device.clone(), last, scaler };
        device.run(|| blaze_runtime::autocast(config.precision, || run.epochs(train, val, history)))
    };
    on_this_rank().map_err(|e| config.end_job_on(e))
}

/// What every epoch of [`fit`] works with.
struct Run<'a, B: Backend> {
    session: &'a mut (dyn Session<B> + Send),
    config: &'a FitConfig<dyn Sync + 'a>,
    device: B::Device,
    /// `out_dir/last.safetensors`, when files are kept.
    last: Option<PathBuf>,
    /// The loss scale a resumed run's checkpoint kept.
    scaler: Option<GradScaler>,
}

impl<B: Backend> Run<'_, B> {
    /// The epochs after resuming: `history` holds those done.
    fn epochs(self, train: &mut dyn Loader, val: &mut dyn Loader, mut history: History) -> Result<History, TrainError> {
        let Run { session, config, device, last, scaler: resumed_scale } = self;
        let task = session.evaluator().task();
        let restore_best = config.early_stopping.is_some_and(|rule| rule.restore_best);
        let mut best = match restore_best {
            true => resumed_best(session, config, &history)?,
            false => None,
        };
        let per_step = config.accumulate_grad_batches;
        // Checkpoints from before step counts held an epoch of steps each.
        let mut step =
            history.epochs.iter().map(|e| if e.steps > 0 { e.steps } else { train.len() } as u64).sum::<u64>();
        let mut ctx = Ctx::train(config.seed);
        // f16 products train with dynamic loss scaling.
        let mut scaler = (config.precision == blaze_runtime::Precision::F16).then(|| resumed_scale.unwrap_or_default());
        let shown = config.verbose && config.is_main();
        let mut confusion = None;
        let mut board = match config.tensorboard.as_ref().filter(|_| config.is_main()) {
            Some(dir) => Some(Board::open(dir, &session.summary())?),
            None => None,
        };
        for epoch in history.epochs.len() + 1..=config.epochs {
            if let Some(reason) = stop_early(&history, config.early_stopping) {
                history.stopped_early = Some(reason);
                break;
            }
            if config.max_steps.is_some_and(|max| step >= max) {
                break;
            }
            let non_finite = |step: usize, what: String| TrainError::NonFinite {
                epoch,
                step,
                what,
                checkpoint: last.clone(),
                last_good_epoch: history.epochs.last().filter(|_| last.is_some()).map(|e| e.epoch),
            };
            train.set_epoch(epoch as u64 - 1);
            let mut bar = progress::Progress::new(shown, format!("{epoch}/{}", config.epochs), train.len());
            let start = Instant::now();
            let mut tally = Tally::new(task, None);
            let (mut skipped, mut steps) = (0usize, 0usize);
            let batches = train.len();
            let mut pending: Vec<Observed<B>> = Vec::new();
            let mut step_seconds = Vec::with_capacity(batches.div_ceil(per_step));
            let mut step_began = Instant::now();
            for (batch, b) in train.epoch().enumerate() {
                if batch % per_step == 0 {
                    step_began = Instant::now();
                }
                // The optimizer step this batch belongs to, and its batches.
                let first = batch / per_step * per_step;
                let window = per_step.min(batches - first);
                if batch == first
                    && let Some(s) = &config.schedule
                {
                    session.set_lr(s.lr_at(step));
                }
                let scale = scaler.map_or(1.0, |s| s.scale()) / window as f64;
                let observed = session.train_batch(b, &device, &mut ctx, scale, window == 1);
                let at = At { epoch, split: "training", batch, loader: train, order: epoch as u64 - 1 };
                pending.push(observed.map_err(|e| at.batch(e))?);
                if batch + 1 < first + window {
                    bar.inc();
                    continue;
                }
                let applied = finish(session, config, &device, window > 1, &pending, scaler.as_mut())?;
                step += 1;
                steps += 1;
                step_seconds.push(step_began.elapsed().as_secs_f64());
                let observed = std::mem::take(&mut pending);
                match applied {
                    Stepped::Applied(losses) => {
                        if let Some(b) = &mut board {
                            let mean = losses.iter().sum::<f64>() / losses.len() as f64;
                            b.scalars(step, &[("step/loss", mean), ("step/lr", session.lr())])?;
                            if let Some(s) = scaler {
                                b.scalars(step, &[("step/loss_scale", s.scale())])?;
                            }
                        }
                        for (o, loss) in observed.iter().zip(losses) {
                            tally.add(o, loss, session.evaluator().ignore_index());
                        }
                    }
                    // The scale backed off; the step is redone by the next.
                    Stepped::Overflowed => {}
                    Stepped::NonFinite(what) => match config.on_non_finite {
                        NonFinite::Stop => return Err(non_finite(batch + 1, what)),
                        NonFinite::SkipStep => skipped += 1,
                    },
                }
                let secs = start.elapsed().as_secs_f64().max(1e-9);
                bar.set_message(format!("{} {:.0} samples/s", tally.brief(), tally.samples() / secs));
                bar.inc();
                if config.max_steps.is_some_and(|max| step >= max) {
                    break;
                }
            }
            bar.finish_and_clear();
            // The whole job's metrics: every rank's sums. (Every rank takes
            // and skips the same steps.)
            let mut sums = tally.to_sums();
            config.sum_over_ranks(&mut sums);
            tally.load_sums(&sums);
            let seconds = start.elapsed().as_secs_f64();
            if skipped == steps {
                return Err(non_finite(
                    0,
                    format!("every one of the epoch's {steps} steps had a non-finite loss or gradient"),
                ));
            }
            // An update can overflow the weights while its gradient was finite.
            device.synchronize()?;
            if !session.all_finite() {
                return Err(non_finite(0, "the weights are no longer finite".into()));
            }
            let checked = validate::<B>(session.evaluator(), val, config.top_k, epoch, &device)?;
            let val_scores = checked.scores();
            if val_scores.get(&history.monitor.metric).is_none() {
                return Err(TrainError::Config(format!(
                    "monitor `{}` was not recorded (the validation metrics are: {}); top-k accuracy needs more than k classes",
                    history.monitor.metric,
                    val_scores.names().join(", ")
                )));
            }
            if !val_scores.loss().is_finite() {
                return Err(non_finite(0, format!("the validation loss is {} with finite weights", val_scores.loss())));
            }
            confusion = checked.confusion().cloned();
            let m = EpochMetrics {
                epoch,
                train: tally.scores(),
                val: val_scores,
                seconds,
                samples_per_second: tally.samples() / seconds.max(1e-9),
                steps,
                step_seconds: median(&mut step_seconds),
                skipped_steps: skipped,
            };
            if shown {
                let skips = if skipped > 0 { format!(" | {skipped} steps skipped") } else { String::new() };
                let headline = task.headline();
                println!(
                    "epoch {epoch:>3}: train loss {:.4} {headline} {:.4} | val {} | {:.2} s, {:.0} samples/s{skips}",
                    m.train.loss(),
                    m.train.get(headline).unwrap_or(f64::NAN),
                    m.val,
                    m.seconds,
                    m.samples_per_second
                );
            }
            if let Some(b) = &mut board {
                b.epoch(&m)?;
            }
            history.epochs.push(m);
            let improved = history.best().is_some_and(|b| b.epoch == epoch);
            if improved && restore_best {
                best = Some(Best { epoch, weights: session.snapshot() });
            }
            if let (Some(dir), Some(last)) = (&config.out_dir, &last)
                && config.is_main()
            {
                if improved {
                    // The epoch goes in the file, so that a resumed run
                    // can tell it holds the best epoch of its history.
                    session.save_model(&dir.join("best.safetensors"), &[("epoch", epoch.to_string())])?;
                }
                let mut meta = vec![("epoch", epoch.to_string()), ("history", history.encode())];
                meta.extend(scaler.map(|s| ("loss_scale", s.encode())));
                session.save_checkpoint(last, &meta)?;
                history.write_curves(dir, task.headline(), false)?;
            }
        }
        history.confusion = confusion;
        if restore_best {
            if let Some(b) = best.filter(|b| history.epochs.last().is_some_and(|e| e.epoch != b.epoch)) {
                session.restore(&b.weights);
                history.restored_epoch = Some(b.epoch);
                if let Some(reason) = &mut history.stopped_early {
                    reason.push_str(&format!("; restored the weights of epoch {}", b.epoch));
                }
            }
            // Every rank restores the same epoch, as every rank keeps the
            // same history; the broadcast makes the replicas equal even
            // so (the call is collective, so no rank may skip it).
            session.broadcast();
        }
        // The PNG once, at the end (the SVG follows every epoch).
        if let Some(dir) = config.out_dir.as_ref().filter(|_| config.is_main() && !history.epochs.is_empty()) {
            history.write_curves(dir, task.headline(), true)?;
        }
        if shown {
            match (&history.stopped_early, history.restored_epoch) {
                (Some(reason), _) => {
                    let after = history.epochs.last().map_or(0, |e| e.epoch);
                    println!("stopped early after epoch {after}: {reason}");
                }
                (None, Some(epoch)) => println!(
                    "restored the weights of epoch {epoch}, the best by validation {} ({:.4})",
                    history.monitor.metric,
                    history.best().map_or(f64::NAN, |b| history.monitored(b))
                ),
                (None, None) => {}
            }
            if let Some(m) = history.confusion.as_ref().filter(|m| m.classes() <= 32) {
                println!("validation after the last epoch:\n{m}");
            }
        }
        Ok(history)
    }
}

/// The best epoch's weights, kept to put back when `fit` ends
/// ([`EarlyStopping::restore_best`]).
struct Best<B: Backend> {
    epoch: usize,
    weights: Vec<(String, B::Storage)>,
}

/// The weights of the best epoch of a resumed `history`, taken before
/// any epoch of this run: the model's own when that epoch is the last
/// one (the checkpoint just loaded), else `out_dir/best.safetensors`,
/// which must hold that epoch. The model keeps the checkpoint's weights.
fn resumed_best<B: Backend>(
    session: &mut (dyn Session<B> + Send),
    config: &FitConfig<dyn Sync + '_>,
    history: &History,
) -> Result<Option<Best<B>>, TrainError> {
    let Some(epoch) = history.best().map(|b| b.epoch) else { return Ok(None) };
    if history.epochs.last().is_some_and(|e| e.epoch == epoch) {
        return Ok(Some(Best { epoch, weights: session.snapshot() }));
    }
    let dir = config.out_dir.as_deref().ok_or_else(|| TrainError::Config("resuming needs out_dir".into()))?;
    let path = dir.join("best.safetensors");
    let mismatch = |message: String| TrainError::Checkpoint { path: path.clone(), message };
    if !path.exists() {
        return Err(mismatch(format!(
            "missing; it holds epoch {epoch}, the best of the resumed history, whose weights \
             EarlyStopping::restore_best puts back at the end (turn that off with .restore_best(false))"
        )));
    }
    // Files written before the epoch was recorded are taken as they are.
    let (_, meta) = record::load_tensors(&path)?;
    if let Some(saved) = meta.get("epoch").filter(|&e| *e != epoch.to_string()) {
        return Err(mismatch(format!(
            "holds epoch {saved}, but the best epoch of the history in the checkpoint is {epoch} \
             (was the run stopped between writing the two?); EarlyStopping::restore_best needs that \
             epoch's weights: turn it off with .restore_best(false), or start afresh"
        )));
    }
    let now = session.snapshot();
    session.load_model(&path)?;
    let weights = session.snapshot();
    session.restore(&now);
    Ok(Some(Best { epoch, weights }))
}

/// Takes the optimizer step with the gradients of the batches in
/// `pending` (averaged over the ranks with `average`) once their losses
/// and norm are read: clipped, unless a loss or the norm is not finite on
/// any rank, which leaves the model as it was. Under loss scaling the
/// gradients are unscaled first, and scaled gradients that overflowed
/// while the losses are finite back the scale off instead.
fn finish<B: Backend>(
    session: &mut (dyn Session<B> + Send),
    config: &FitConfig<dyn Sync + '_>,
    device: &B::Device,
    average: bool,
    pending: &[Observed<B>],
    scaler: Option<&mut GradScaler>,
) -> Result<Stepped, TrainError> {
    let sq_sum = session.close_step(average);
    device.synchronize()?;
    let losses: Vec<f64> = pending.iter().map(|p| p.loss.item()).collect();
    // The gradients came scaled by the loss scale: their true norm.
    let unscale = scaler.as_ref().map_or(1.0, |s| 1.0 / s.scale());
    let norm = sq_sum.map_or(0.0, |s| s.item().sqrt()) * unscale;
    let bad = losses.iter().copied().find(|l| !l.is_finite());
    // A non-finite loss on any rank makes every rank skip the step, so
    // the replicas stay equal (their gradient norms already agree).
    let mut non_finite = [f64::from(u8::from(bad.is_some()))];
    config.sum_over_ranks(&mut non_finite);
    if non_finite[0] == 0.0 && norm.is_finite() {
        session.apply(unscale, config.clip_grad_norm.map(|max| (norm, max)));
        if let Some(s) = scaler {
            s.update(true);
        }
        return Ok(Stepped::Applied(losses));
    }
    session.discard();
    if non_finite[0] == 0.0
        && let Some(s) = scaler
    {
        // Finite losses, scaled gradients that overflowed: a smaller scale.
        s.update(false);
        return Ok(Stepped::Overflowed);
    }
    Ok(Stepped::NonFinite(match bad {
        Some(loss) => format!("the loss is {loss}"),
        None if non_finite[0] > 0.0 => "the loss is not finite on another rank".into(),
        None => format!("the gradient norm is {norm}"),
    }))
}

/// What became of an optimizer step.
enum Stepped {
    /// Taken, with each batch's loss.
    Applied(Vec<f64>),
    /// Skipped: the loss-scaled gradients overflowed, and the scale backed off.
    Overflowed,
    /// Skipped: the loss or the gradient norm is not finite (what is).
    NonFinite(String),
}

/// A run's TensorBoard events, with errors as [`TrainError`]s naming the
/// file, flushed at least every few seconds so the board follows the run.
struct Board(SummaryWriter, Instant);

impl Board {
    /// A new event file in `dir`, starting with the model's summary.
    fn open(dir: &Path, summary: &str) -> Result<Self, TrainError> {
        let mut w = SummaryWriter::create(dir).map_err(|source| TrainError::Io { path: dir.to_owned(), source })?;
        if !summary.is_empty() {
            // Indented four spaces: Markdown shows it as it is.
            let text: String = summary.lines().map(|l| format!("    {l}\n")).collect();
            w.add_text("model/summary", &text, 0).map_err(|e| Board::error(&w, e))?;
        }
        Ok(Board(w, Instant::now()))
    }

    fn error(w: &SummaryWriter, source: std::io::Error) -> TrainError {
        TrainError::Io { path: w.path().to_owned(), source }
    }

    /// A step's scalars; written out when the last flush is five seconds
    /// old.
    fn scalars(&mut self, step: u64, values: &[(&str, f64)]) -> Result<(), TrainError> {
        for &(tag, v) in values {
            self.0.add_scalar(tag, v, step).map_err(|e| Board::error(&self.0, e))?;
        }
        if self.1.elapsed().as_secs() >= 5 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TrainError> {
        self.1 = Instant::now();
        self.0.flush().map_err(|e| Board::error(&self.0, e))
    }

    /// An epoch's metrics of both splits, then a flush so the board
    /// shows them.
    fn epoch(&mut self, m: &EpochMetrics) -> Result<(), TrainError> {
        let step = m.epoch as u64;
        for (split, scores) in [("train", &m.train), ("val", &m.val)] {
            for (name, v) in scores.iter() {
                self.0.add_scalar(&format!("{split}/{name}"), v, step).map_err(|e| Board::error(&self.0, e))?;
            }
        }
        self.flush()
    }
}

/// The median of `values` (NaN for none).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Why training should stop now, if it should: the monitored metric has
/// gone `patience` epochs in a row without beating the best value before
/// it by more than `min_delta` (Keras's and Lightning's rule).
fn stop_early(history: &History, rule: Option<EarlyStopping>) -> Option<String> {
    let rule = rule?;
    let (mut reference, mut wait) = (None, 0);
    for e in &history.epochs {
        let v = history.monitored(e);
        if v.is_finite() && reference.is_none_or(|r| history.monitor.improves(v, r, rule.min_delta)) {
            (reference, wait) = (Some(v), 0);
        } else {
            wait += 1;
        }
    }
    (wait > 0 && wait >= rule.patience).then(|| {
        let best = history
            .best()
            .map_or(String::new(), |b| format!(" (best {:.4} at epoch {})", history.monitored(b), b.epoch));
        format!(
            "validation {} has not improved by more than {} for {wait} epochs{best}",
            history.monitor.metric, rule.min_delta
        )
    })
}
