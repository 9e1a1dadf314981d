//! `fit`: the training loop for classifiers. Epochs over a [`DataLoader`],
//! a progress bar with loss, accuracy and samples/s, validation after each
//! epoch, the best weights and a resumable checkpoint on disk, and the
//! loss/accuracy curves as an SVG next to them.

mod classifier;
mod error;
mod history;
mod plot;

pub use classifier::{Classifier, Step, Taped, TapedForward};
pub use error::{StepError, TrainError};
pub use history::{EpochMetrics, History};

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::backend::Device;
use crate::data::{Batch, DataLoader, Dataset, ShardTail};
use crate::loss::{CrossEntropyOptions, IGNORE_INDEX, TargetError, check_class_targets, cross_entropy_with};
use crate::nn::{Ctx, Module, ParamVisitor};
use crate::optim::{LrSchedule, Optimizer};
use crate::record::{self, RecordError};
use crate::{Backend, DType, Tensor};

/// How to train.
#[derive(Debug)]
pub struct FitConfig {
    /// Number of epochs to reach (a resumed run continues to this count).
    pub epochs: usize,
    /// Folder for `best.safetensors`, `last.safetensors` and `curve.svg`;
    /// `None` keeps nothing on disk.
    pub out_dir: Option<PathBuf>,
    /// Continue from `out_dir/last.safetensors` when it exists.
    pub resume: bool,
    /// Clip gradients to this global norm.
    pub clip_grad_norm: Option<f64>,
    /// Learning rate per optimizer step; `None` keeps the optimizer's.
    pub schedule: Option<Box<dyn LrSchedule>>,
    /// Label smoothing of the cross-entropy.
    pub label_smoothing: f64,
    /// Samples whose target is this value are left out of the loss and
    /// the accuracy (PyTorch's `ignore_index`, -100 by default).
    pub ignore_index: i64,
    /// What a step whose loss or gradient norm is NaN or infinite does.
    pub on_non_finite: NonFinite,
    /// Seed of the dropout masks.
    pub seed: u64,
    /// Show a progress bar (on a terminal) and print a line per epoch
    /// (on rank 0 alone when data-parallel).
    pub verbose: bool,
    /// Train data-parallel over the ranks of an MPI job (feature `mpi`):
    /// parameters start as rank 0's, the training loader gives each rank
    /// its shard of every epoch (unless it was sharded already), gradients
    /// are averaged every step, the epoch's metrics are summed over the
    /// ranks, and rank 0 alone prints and writes to `out_dir` (which every
    /// rank reads to resume, so it must be on a file system they share).
    /// An error on any rank ends the whole job with that rank's message.
    #[cfg(feature = "mpi")]
    pub data_parallel: Option<crate::distributed::DataParallel>,
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig {
            epochs: 10,
            out_dir: None,
            resume: false,
            clip_grad_norm: None,
            schedule: None,
            label_smoothing: 0.0,
            ignore_index: IGNORE_INDEX,
            on_non_finite: NonFinite::Stop,
            seed: 0,
            verbose: true,
            #[cfg(feature = "mpi")]
            data_parallel: None,
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

impl FitConfig {
    fn loss_options(&self) -> CrossEntropyOptions {
        CrossEntropyOptions { label_smoothing: self.label_smoothing, ignore_index: self.ignore_index }
    }

    /// This process's rank and the number of ranks: `(0, 1)` unless
    /// data-parallel.
    fn ranks(&self) -> (usize, usize) {
        #[cfg(feature = "mpi")]
        if let Some(dp) = &self.data_parallel {
            return (dp.world.rank(), dp.world.size());
        }
        (0, 1)
    }

    /// Whether this process prints and writes files.
    fn is_main(&self) -> bool {
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
    fn broadcast_model<B: Backend, M: Module<B>>(&self, model: &mut M) {
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
    fn end_job_on(&self, error: TrainError) -> TrainError {
        #[cfg(feature = "mpi")]
        if let Some(dp) = self.data_parallel.as_ref().filter(|dp| dp.world.size() > 1) {
            dp.world.abort(&format!("fit: {error}"));
        }
        error
    }
}

/// Moves a host batch to the device as model input and class targets.
/// Float targets must hold whole numbers (`TrainError::Label` otherwise,
/// with epoch 0 and batch 0 for the caller to fill in).
pub fn to_device<B: Backend, const DI: usize>(
    batch: Batch,
    device: &B::Device,
) -> Result<(Tensor<B, DI>, Tensor<B, 1>), TrainError> {
    let shape = batch.inputs.shape.clone();
    let x = Tensor::<B, DI>::from_data(batch.inputs, device).map_err(|_| TrainError::Batch { shape, rank: DI })?;
    let n = batch.targets.numel();
    if batch.targets.values.dtype() != DType::I64 {
        let values = batch.targets.values.to_f64_vec();
        if let Some(position) = values.iter().position(|v| !(v.is_finite() && v.fract() == 0.0)) {
            return Err(TrainError::Label { epoch: 0, split: "training", batch: 0, position, value: values[position] });
        }
    }
    let t = crate::TensorData { shape: vec![n], values: batch.targets.values.convert(DType::I64) };
    let y = Tensor::<B, 1>::from_data(t, device).map_err(|_| TrainError::Batch { shape: vec![n], rank: 1 })?;
    Ok((x, y))
}

/// Number of rows whose largest logit is at the target (rows whose target
/// is [`IGNORE_INDEX`] never count).
pub fn correct<B: Backend>(logits: &Tensor<B, 2>, targets: &Tensor<B, 1>) -> usize {
    let pred: Tensor<B, 1> = logits.argmax(1).squeeze(1);
    pred.eq(targets).to_dtype(DType::I64).sum().item() as usize
}

/// Rows whose target is not `ignore_index`.
fn counted<B: Backend>(targets: &Tensor<B, 1>, ignore_index: i64) -> usize {
    targets.ne_scalar(ignore_index as f64).to_dtype(DType::I64).sum().item() as usize
}

/// Where a batch sits, for errors.
struct At<'a, D: Dataset> {
    /// `fit`'s 1-based epoch.
    epoch: usize,
    split: &'static str,
    batch: usize,
    loader: &'a DataLoader<D>,
    /// The loader's epoch, which fixed the sample order.
    order: u64,
}

impl<D: Dataset> At<'_, D> {
    fn target(&self, source: TargetError) -> TrainError {
        let sample = self.loader.sample_index(self.order, self.batch, source.position);
        TrainError::Target { epoch: self.epoch, split: self.split, batch: self.batch, sample, source }
    }

    fn step(&self, e: StepError) -> TrainError {
        match e {
            StepError::Target(t) => self.target(t),
            StepError::Device(d) => TrainError::Device(d),
        }
    }

    /// Fills in where a batch that failed [`to_device`] sits.
    fn place(&self, e: TrainError) -> TrainError {
        match e {
            TrainError::Label { position, value, .. } => {
                TrainError::Label { epoch: self.epoch, split: self.split, batch: self.batch, position, value }
            }
            other => other,
        }
    }
}

/// The error for a loader that yields no batch.
fn empty<D: Dataset>(split: &'static str, loader: &DataLoader<D>) -> TrainError {
    TrainError::EmptyData {
        split,
        samples: loader.dataset().len(),
        batch_size: loader.batch_size(),
        drop_last: loader.drops_last(),
    }
}

/// Mean loss and accuracy of `model` (evaluation mode) over `data`, with
/// the default cross-entropy (rows whose target is -100 left out).
pub fn evaluate<B, M, D, const DI: usize>(
    model: &M,
    data: &mut DataLoader<D>,
    device: &B::Device,
) -> Result<(f64, f64), TrainError>
where
    B: Backend,
    M: Classifier<B, DI>,
    D: Dataset,
{
    evaluate_with::<B, M, D, DI>(model, data, device, &FitConfig::default(), 1)
}

/// [`evaluate`] with `config`'s loss options, reporting errors in `epoch`.
fn evaluate_with<B, M, D, const DI: usize>(
    model: &M,
    data: &mut DataLoader<D>,
    device: &B::Device,
    config: &FitConfig,
    epoch: usize,
) -> Result<(f64, f64), TrainError>
where
    B: Backend,
    M: Classifier<B, DI>,
    D: Dataset,
{
    if data.is_empty() {
        return Err(empty("validation", data));
    }
    let order = data.next_epoch();
    let (mut loss, mut right, mut n) = (0.0, 0, 0);
    for (batch, b) in data.epoch().enumerate() {
        let at = At { epoch, split: "validation", batch, loader: data, order };
        let (x, y) = to_device::<B, DI>(b, device).map_err(|e| at.place(e))?;
        let logits = model.logits(&x);
        check_class_targets(&y, logits.size(1), config.ignore_index).map_err(|e| at.target(e))?;
        let l = cross_entropy_with(&logits, &y, CrossEntropyOptions { label_smoothing: 0.0, ..config.loss_options() });
        device.synchronize()?;
        let rows = counted(&y, config.ignore_index);
        if rows > 0 {
            loss += l.item() * rows as f64;
        }
        right += correct(&logits, &y);
        n += rows;
    }
    let n = n.max(1) as f64;
    Ok((loss / n, right as f64 / n))
}

fn write_file(path: &Path, text: &str) -> Result<(), TrainError> {
    record::write_atomic(path, text.as_bytes()).map_err(|e| match e {
        RecordError::Io { path, source } => TrainError::Io { path, source },
        other => TrainError::Record(other),
    })
}

/// Whether every parameter and buffer of `model` is finite (one read-back).
pub fn all_finite<B: Backend, M: Module<B>>(model: &M) -> bool {
    // x * 0 is 0 for finite x and NaN for NaN or ±inf.
    struct Probe<B: Backend>(Option<Tensor<B, 0>>);
    impl<B: Backend> ParamVisitor<B> for Probe<B> {
        fn visit<const D: usize>(&mut self, _: &str, t: &Tensor<B, D>) {
            if !t.dtype().is_float() {
                return;
            }
            let z = t.mul_scalar(0.0).sum();
            self.0 = Some(match self.0.take() {
                Some(acc) => acc.add(&z.to_dtype(acc.dtype())),
                None => z,
            });
        }
    }
    let mut p = Probe(None);
    model.visit_params("", &mut p);
    model.visit_buffers("", &mut p);
    p.0.is_none_or(|z| z.item() == 0.0)
}

/// Trains a classifier with cross-entropy: `model` maps a batch to logits
/// `[n, classes]`, targets are class indices. A `#[model]` is a classifier
/// as it is; a hand-written model trains through the tape as [`Taped`].
/// Returns the history of every epoch (those of a resumed run included).
///
/// Nothing goes wrong silently: an empty split, a target that is not a
/// class, a non-finite loss, gradient or weight, and a device fault each
/// stop training with a [`TrainError`] that says where; no checkpoint is
/// written with non-finite weights.
pub fn fit<B, M, O, D, V, const DI: usize>(
    model: &mut M,
    optimizer: &mut O,
    train: &mut DataLoader<D>,
    val: &mut DataLoader<V>,
    config: &FitConfig,
    device: &B::Device,
) -> Result<History, TrainError>
where
    B: Backend,
    M: Classifier<B, DI>,
    O: Optimizer<B>,
    D: Dataset,
    V: Dataset,
{
    // In a job of several ranks, an error on this one ends them all.
    let mut on_this_rank = || -> Result<History, TrainError> {
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
        let last = config.out_dir.as_ref().map(|d| d.join("last.safetensors"));
        if let Some(dir) = &config.out_dir {
            std::fs::create_dir_all(dir).map_err(|source| TrainError::Io { path: dir.clone(), source })?;
        }
        if let Some(last) = last.as_ref().filter(|p| config.resume && p.exists()) {
            let meta = record::load_checkpoint(last, model, optimizer, device)?;
            history = meta.get("history").and_then(|h| History::decode(h)).ok_or_else(|| TrainError::Checkpoint {
                path: last.clone(),
                message: "no readable `history` in the metadata".into(),
            })?;
            if config.verbose && config.is_main() {
                println!("resumed from {} after epoch {}", last.display(), history.epochs.len());
            }
        }
        config.broadcast_model::<B, M>(model);
        device.run(|| train_epochs::<B, M, O, D, V, DI>(model, optimizer, train, val, config, device, history, last))
    };
    on_this_rank().map_err(|e| config.end_job_on(e))
}

/// The epochs of [`fit`] after it has resumed: `history` holds those done.
#[allow(clippy::too_many_arguments, reason = "fit's arguments, handed over whole")]
fn train_epochs<B, M, O, D, V, const DI: usize>(
    model: &mut M,
    optimizer: &mut O,
    train: &mut DataLoader<D>,
    val: &mut DataLoader<V>,
    config: &FitConfig,
    device: &B::Device,
    mut history: History,
    last: Option<PathBuf>,
) -> Result<History, TrainError>
where
    B: Backend,
    M: Classifier<B, DI>,
    O: Optimizer<B>,
    D: Dataset,
    V: Dataset,
{
    let mut step = history.epochs.len() as u64 * train.len() as u64;
    let mut ctx = Ctx::train(config.seed);
    for epoch in history.epochs.len() + 1..=config.epochs {
        let non_finite = |step: usize, what: String| TrainError::NonFinite {
            epoch,
            step,
            what,
            checkpoint: last.clone(),
            last_good_epoch: history.epochs.last().filter(|_| last.is_some()).map(|e| e.epoch),
        };
        train.set_epoch(epoch as u64 - 1);
        let shown = config.verbose && config.is_main();
        let bar = if shown { ProgressBar::new(train.len() as u64) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(format!("{epoch}/{}", config.epochs));
        let start = Instant::now();
        let (mut loss_sum, mut right, mut seen, mut skipped, mut steps) = (0.0, 0usize, 0usize, 0usize, 0usize);
        for (batch, b) in train.epoch().enumerate() {
            let at = At { epoch, split: "training", batch, loader: train, order: epoch as u64 - 1 };
            if let Some(s) = &config.schedule {
                optimizer.set_lr(s.lr_at(step));
            }
            let (x, y) = to_device::<B, DI>(b, device).map_err(|e| at.place(e))?;
            let out = model.train_step(&x, &y, optimizer, &mut ctx, config).map_err(|e| at.step(e))?;
            step += 1;
            steps += 1;
            if !out.applied {
                let what = if out.loss.is_finite() {
                    format!("the gradient norm is {}", out.grad_norm)
                } else {
                    format!("the loss is {}", out.loss)
                };
                match config.on_non_finite {
                    NonFinite::Stop => return Err(non_finite(batch + 1, what)),
                    NonFinite::SkipStep => {
                        skipped += 1;
                        bar.inc(1);
                        continue;
                    }
                }
            }
            let b = counted(&y, config.ignore_index);
            loss_sum += out.loss * b as f64;
            right += correct(&out.logits, &y);
            seen += b;
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "loss {:.4} acc {:.4} {:.0} samples/s",
                loss_sum / seen.max(1) as f64,
                right as f64 / seen.max(1) as f64,
                seen as f64 / secs
            ));
            bar.inc(1);
        }
        bar.finish_and_clear();
        // The whole job's epoch: every rank's sums.
        let mut sums = [loss_sum, right as f64, seen as f64, skipped as f64, steps as f64];
        config.sum_over_ranks(&mut sums);
        let [loss_sum, right, seen, skipped, steps] = sums;
        let [right, seen, skipped, steps] = [right, seen, skipped, steps].map(|count| count as usize);
        let seconds = start.elapsed().as_secs_f64();
        if skipped == steps {
            return Err(non_finite(
                0,
                format!("every one of the epoch's {steps} steps had a non-finite loss or gradient"),
            ));
        }
        // An update can overflow the weights while its gradient was finite.
        device.synchronize()?;
        if !all_finite(model) {
            return Err(non_finite(0, "the weights are no longer finite".into()));
        }
        let (val_loss, val_accuracy) = evaluate_with::<B, M, V, DI>(model, val, device, config, epoch)?;
        if !val_loss.is_finite() {
            return Err(non_finite(0, format!("the validation loss is {val_loss} with finite weights")));
        }
        let m = EpochMetrics {
            epoch,
            train_loss: loss_sum / seen.max(1) as f64,
            train_accuracy: right as f64 / seen.max(1) as f64,
            val_loss,
            val_accuracy,
            seconds,
            samples_per_second: seen as f64 / seconds.max(1e-9),
            skipped_steps: skipped,
        };
        if shown {
            let skips = if skipped > 0 { format!(" | {skipped} steps skipped") } else { String::new() };
            println!(
                "epoch {epoch:>3}: train loss {:.4} acc {:.4} | val loss {:.4} acc {:.4} | {:.2} s, {:.0} samples/s{skips}",
                m.train_loss, m.train_accuracy, m.val_loss, m.val_accuracy, m.seconds, m.samples_per_second
            );
        }
        let improved = history.best().is_none_or(|b| m.val_accuracy > b.val_accuracy);
        history.epochs.push(m);
        if let (Some(dir), Some(last)) = (&config.out_dir, &last)
            && config.is_main()
        {
            if improved {
                record::save_model(model, &dir.join("best.safetensors"))?;
            }
            let meta = [("epoch", epoch.to_string()), ("history", history.encode())];
            record::save_checkpoint(last, model, optimizer, &meta)?;
            write_file(&dir.join("curve.svg"), &history.svg())?;
        }
    }
    Ok(history)
}
