//! `fit`: the training loop for classifiers. Epochs over a [`DataLoader`],
//! a progress bar with loss, accuracy and samples/s, validation after each
//! epoch, the best weights and a resumable checkpoint on disk, and the
//! loss/accuracy curves as an SVG next to them.

mod plot;

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::autodiff::{Autodiff, no_grad, track};
use crate::data::{Batch, DataLoader, Dataset};
use crate::loss::{CrossEntropyOptions, IGNORE_INDEX, TargetError, check_class_targets, cross_entropy_with};
use crate::nn::{Block, Ctx, Module, ParamVisitor};
use crate::optim::{LrSchedule, Optimizer, clip_to, grad_sq_sum};
use crate::record::{self, RecordError};
use crate::{Backend, DType, DeviceError, Tensor};

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
    /// Show a progress bar (on a terminal) and print a line per epoch.
    pub verbose: bool,
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
}

/// Metrics of one epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss.
    pub train_loss: f64,
    /// Training accuracy (with dropout active, as measured while training).
    pub train_accuracy: f64,
    /// Validation loss.
    pub val_loss: f64,
    /// Validation accuracy.
    pub val_accuracy: f64,
    /// Wall time of the training part of the epoch.
    pub seconds: f64,
    /// Training samples per second.
    pub samples_per_second: f64,
    /// Steps skipped for a non-finite loss or gradient ([`NonFinite::SkipStep`]).
    pub skipped_steps: usize,
}

/// Every epoch's metrics so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// One entry per epoch, in order.
    pub epochs: Vec<EpochMetrics>,
}

impl History {
    /// The epoch with the best validation accuracy among those whose
    /// losses are finite.
    pub fn best(&self) -> Option<&EpochMetrics> {
        self.epochs
            .iter()
            .filter(|e| e.train_loss.is_finite() && e.val_loss.is_finite())
            .max_by(|a, b| a.val_accuracy.total_cmp(&b.val_accuracy))
    }

    fn encode(&self) -> String {
        self.epochs
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {} {} {}",
                    e.epoch,
                    e.train_loss,
                    e.train_accuracy,
                    e.val_loss,
                    e.val_accuracy,
                    e.seconds,
                    e.samples_per_second,
                    e.skipped_steps
                )
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads what [`History::encode`] wrote (7 fields per epoch in
    /// checkpoints from before `skipped_steps`); `None` for anything else,
    /// epochs out of order or counts that are not counts included.
    fn decode(s: &str) -> Option<History> {
        let mut epochs: Vec<EpochMetrics> = Vec::new();
        for row in s.split(';').filter(|r| !r.is_empty()) {
            let v: Vec<f64> = row.split(' ').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            if v.len() != 7 && v.len() != 8 {
                return None;
            }
            let count = |x: f64| (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as usize);
            let epoch = count(v[0]).filter(|&e| e == epochs.len() + 1)?;
            epochs.push(EpochMetrics {
                epoch,
                train_loss: v[1],
                train_accuracy: v[2],
                val_loss: v[3],
                val_accuracy: v[4],
                seconds: v[5],
                samples_per_second: v[6],
                skipped_steps: v.get(7).map_or(Some(0), |&x| count(x))?,
            });
        }
        Some(History { epochs })
    }

    /// The curves as an SVG: loss on the left, accuracy on the right.
    pub fn svg(&self) -> String {
        use plot::Series;
        let pts = |f: fn(&EpochMetrics) -> f64| self.epochs.iter().map(|e| (e.epoch as f64, f(e))).collect();
        let loss = [
            Series { name: "train", color: "#1f77b4", points: pts(|e| e.train_loss) },
            Series { name: "validation", color: "#d62728", points: pts(|e| e.val_loss) },
        ];
        let acc = [
            Series { name: "train", color: "#1f77b4", points: pts(|e| e.train_accuracy) },
            Series { name: "validation", color: "#d62728", points: pts(|e| e.val_accuracy) },
        ];
        plot::two_panel_svg("epoch", ("loss", &loss), ("accuracy", &acc))
    }
}

/// What stops training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The curve could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A batch does not fit the model.
    #[error("batch inputs of shape {shape:?} do not fit a model whose input is rank {rank} (with the batch dim)")]
    Batch {
        /// The batch's input shape.
        shape: Vec<usize>,
        /// The model's input rank.
        rank: usize,
    },
    /// The checkpoint's metadata is unreadable.
    #[error("{path}: {message}")]
    Checkpoint {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A split yields no batch, so there is nothing to train or validate on.
    #[error(
        "the {split} set yields no batch: {samples} samples with batch_size {batch_size}{}",
        if *drop_last { " and drop_last" } else { "" }
    )]
    EmptyData {
        /// `training` or `validation`.
        split: &'static str,
        /// Samples in the dataset.
        samples: usize,
        /// The loader's batch size.
        batch_size: usize,
        /// Whether the loader drops a last partial batch.
        drop_last: bool,
    },
    /// A target that is not a class of the model.
    #[error("epoch {epoch}, {split} batch {batch}: {}sample {}: {source}",
        sample.map_or(String::new(), |s| format!("dataset index {s}, ")), source.position)]
    Target {
        /// 1-based epoch.
        epoch: usize,
        /// `training` or `validation`.
        split: &'static str,
        /// 0-based batch within the epoch.
        batch: usize,
        /// The sample's index in the dataset, when the loader can tell.
        sample: Option<usize>,
        /// The value, its position in the batch and the class count.
        source: TargetError,
    },
    /// Targets that are not class indices (fractional, or not finite).
    #[error("epoch {epoch}, {split} batch {batch}: target {value} at position {position} is not a class index")]
    Label {
        /// 1-based epoch.
        epoch: usize,
        /// `training` or `validation`.
        split: &'static str,
        /// 0-based batch within the epoch.
        batch: usize,
        /// Its position in the batch.
        position: usize,
        /// The value.
        value: f64,
    },
    /// The loss, the gradient norm or the weights stopped being finite.
    #[error(
        "epoch {epoch}, step {step}: {what}; training stopped. {}. \
         Lower the learning rate, clip gradients (`FitConfig::clip_grad_norm`), check the data for NaN, \
         or skip such steps (`NonFinite::SkipStep`)",
        match (checkpoint, last_good_epoch) {
            (Some(p), Some(e)) => format!("The last good checkpoint is {} (after epoch {e})", p.display()),
            (Some(p), None) => format!("No epoch finished, so {} was not written", p.display()),
            (None, _) => "No checkpoint was kept (`FitConfig::out_dir` is None)".to_owned(),
        }
    )]
    NonFinite {
        /// 1-based epoch.
        epoch: usize,
        /// 1-based step within the epoch, or 0 after its last step.
        step: usize,
        /// What was not finite, with its value.
        what: String,
        /// The resumable checkpoint (`last.safetensors`), if `out_dir` is set.
        checkpoint: Option<PathBuf>,
        /// The epoch that checkpoint holds, if one was written.
        last_good_epoch: Option<usize>,
    },
    /// The device failed (an allocation beyond its limits, a lost device).
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Why a training step did not run.
#[derive(Debug)]
pub enum StepError {
    /// A target is not a class of the model.
    Target(TargetError),
    /// The device failed.
    Device(DeviceError),
}

impl From<TargetError> for StepError {
    fn from(e: TargetError) -> Self {
        StepError::Target(e)
    }
}

impl From<DeviceError> for StepError {
    fn from(e: DeviceError) -> Self {
        StepError::Device(e)
    }
}

/// What one training step did.
#[derive(Debug)]
pub struct Step<B: Backend> {
    /// The training-mode logits, for metrics.
    pub logits: Tensor<B, 2>,
    /// The loss.
    pub loss: f64,
    /// The global gradient norm before clipping.
    pub grad_norm: f64,
    /// False when the loss or the norm was not finite: nothing changed.
    pub applied: bool,
}

impl<B: Backend> Step<B> {
    /// Finishes a step once the loss and gradients are known: waits for the
    /// device, reads loss and norm, and, when both are finite, clips and
    /// calls `update`.
    fn finish<M: Module<B>>(
        logits: Tensor<B, 2>,
        loss: &Tensor<B, 0>,
        mut grads: M::Grads,
        config: &FitConfig,
        update: impl FnOnce(&M::Grads),
    ) -> Result<Self, StepError> {
        let sq_sum = grad_sq_sum::<B, M>(&grads);
        B::synchronize(&logits.device())?;
        let (loss, grad_norm) = (loss.item(), sq_sum.map_or(0.0, |s| s.item().sqrt()));
        let applied = loss.is_finite() && grad_norm.is_finite();
        if applied {
            if let Some(max) = config.clip_grad_norm {
                clip_to::<B, M>(&mut grads, grad_norm, max);
            }
            update(&grads);
        }
        Ok(Step { logits, loss, grad_norm, applied })
    }
}

/// What [`fit`] trains: logits for a batch, and one optimizer step with
/// cross-entropy.
pub trait Classifier<B: Backend, const DI: usize>: Module<B> {
    /// Logits `[n, classes]` in evaluation mode.
    fn logits(&self, x: &Tensor<B, DI>) -> Tensor<B, 2>;
    /// One training step on `(x, y)`: checks the targets against the
    /// logits' classes, computes loss and gradients, and updates the
    /// parameters unless the loss or the gradient norm is not finite.
    fn train_step<O: Optimizer<B>>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, 1>,
        optimizer: &mut O,
        ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<B>, StepError>;
}

/// A `#[model]` (any [`Block`] from a batch to logits) trains with its
/// generated backward.
impl<B, M, const DI: usize> Classifier<B, DI> for M
where
    B: Backend,
    M: Block<B, Input = Tensor<B, DI>, Output = Tensor<B, 2>>,
{
    fn logits(&self, x: &Tensor<B, DI>) -> Tensor<B, 2> {
        self.forward(x)
    }

    fn train_step<O: Optimizer<B>>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, 1>,
        optimizer: &mut O,
        ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<B>, StepError> {
        let (logits, cache) = self.forward_train(x, ctx);
        check_class_targets(y, logits.size(1), config.ignore_index)?;
        let loss = cross_entropy_with(&logits, y, config.loss_options());
        let grads = self.backward_params(&cache, &loss.grad);
        Step::finish::<M>(logits, &loss.value, grads, config, |g| optimizer.step(self, g))
    }
}

/// A hand-written model's forward, for training through the tape.
pub trait TapedForward<B: Backend, const DI: usize>: Module<Autodiff<B>> {
    /// Logits `[n, classes]`; `train` is true during training steps.
    fn forward(&self, x: &Tensor<Autodiff<B>, DI>, train: bool) -> Tensor<Autodiff<B>, 2>;
}

/// Trains a hand-written model (`#[derive(Module)]` plus a
/// [`TapedForward`]) with [`fit`], differentiating through `Autodiff<B>`.
#[derive(Clone, Debug)]
pub struct Taped<M>(pub M);

impl<B: Backend, M: Module<Autodiff<B>>> Module<Autodiff<B>> for Taped<M> {
    type Grads = M::Grads;

    fn visit_params<V: crate::nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_params(prefix, v);
    }

    fn visit_buffers<V: crate::nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_buffers(prefix, v);
    }

    fn map_tensors<P: crate::nn::ParamMapper<Autodiff<B>>>(&mut self, prefix: &str, m: &mut P) {
        self.0.map_tensors(prefix, m);
    }

    fn visit_grads<V: crate::nn::GradVisitor<Autodiff<B>>>(&mut self, g: &M::Grads, prefix: &str, v: &mut V) {
        self.0.visit_grads(g, prefix, v);
    }

    fn visit_grad_tensors<V: crate::nn::ParamVisitor<Autodiff<B>>>(g: &M::Grads, prefix: &str, v: &mut V) {
        M::visit_grad_tensors(g, prefix, v);
    }

    fn map_grad_tensors<P: crate::nn::ParamMapper<Autodiff<B>>>(g: &mut M::Grads, prefix: &str, m: &mut P) {
        M::map_grad_tensors(g, prefix, m);
    }

    fn make_grads<F: crate::nn::GradSource<Autodiff<B>>>(&self, prefix: &str, f: &mut F) -> M::Grads {
        self.0.make_grads(prefix, f)
    }
}

impl<B: Backend, M: TapedForward<B, DI>, const DI: usize> Classifier<Autodiff<B>, DI> for Taped<M> {
    fn logits(&self, x: &Tensor<Autodiff<B>, DI>) -> Tensor<Autodiff<B>, 2> {
        no_grad(|| self.0.forward(x, false))
    }

    fn train_step<O: Optimizer<Autodiff<B>>>(
        &mut self,
        x: &Tensor<Autodiff<B>, DI>,
        y: &Tensor<Autodiff<B>, 1>,
        optimizer: &mut O,
        _ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<Autodiff<B>>, StepError> {
        // Parameters replaced by a load or an update are leaves again.
        track(&mut self.0);
        let logits = self.0.forward(x, true);
        check_class_targets(y, logits.size(1), config.ignore_index)?;
        let loss = cross_entropy_with(&logits, y, config.loss_options()).value;
        let grads = loss.backward().for_module(&self.0);
        let model = &mut self.0;
        Step::finish::<M>(logits.detach(), &loss, grads, config, |g| no_grad(|| optimizer.step(model, g)))
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
        B::synchronize(device)?;
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
        if config.verbose {
            println!("resumed from {} after epoch {}", last.display(), history.epochs.len());
        }
    }
    B::run(|| train_epochs::<B, M, O, D, V, DI>(model, optimizer, train, val, config, device, history, last))
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
        let bar = if config.verbose { ProgressBar::new(train.len() as u64) } else { ProgressBar::hidden() };
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
        let seconds = start.elapsed().as_secs_f64();
        bar.finish_and_clear();
        if skipped == steps {
            return Err(non_finite(
                0,
                format!("every one of the epoch's {steps} steps had a non-finite loss or gradient"),
            ));
        }
        // An update can overflow the weights while its gradient was finite.
        B::synchronize(device)?;
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
        if config.verbose {
            let skips = if skipped > 0 { format!(" | {skipped} steps skipped") } else { String::new() };
            println!(
                "epoch {epoch:>3}: train loss {:.4} acc {:.4} | val loss {:.4} acc {:.4} | {:.2} s, {:.0} samples/s{skips}",
                m.train_loss, m.train_accuracy, m.val_loss, m.val_accuracy, m.seconds, m.samples_per_second
            );
        }
        let improved = history.best().is_none_or(|b| m.val_accuracy > b.val_accuracy);
        history.epochs.push(m);
        if let (Some(dir), Some(last)) = (&config.out_dir, &last) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(epoch: usize, val_loss: f64, val_accuracy: f64) -> EpochMetrics {
        EpochMetrics {
            epoch,
            train_loss: 0.5,
            train_accuracy: 0.5,
            val_loss,
            val_accuracy,
            seconds: 1.0,
            samples_per_second: 10.0,
            skipped_steps: 0,
        }
    }

    #[test]
    fn the_best_epoch_is_a_finite_one() {
        let h = History { epochs: vec![epoch(1, 1.0, 0.6), epoch(2, f64::NAN, 0.9), epoch(3, 0.8, 0.7)] };
        assert_eq!(h.best().map(|e| e.epoch), Some(3));
        let none = History { epochs: vec![epoch(1, f64::INFINITY, 0.9)] };
        assert!(none.best().is_none());
    }

    #[test]
    fn history_round_trips_and_rejects_what_it_did_not_write() {
        let h = History { epochs: vec![epoch(1, 1.0, 0.6), epoch(2, 0.9, 0.7)] };
        assert_eq!(History::decode(&h.encode()), Some(h));
        // Older checkpoints wrote seven fields.
        assert_eq!(History::decode("1 0.5 0.5 1 0.6 1 10").map(|h| h.epochs[0].skipped_steps), Some(0));
        for bad in [
            "1 2",
            "2 0.5 0.5 1 0.6 1 10",
            "1 0.5 0.5 1 0.6 1 10 -3",
            "1.5 0.5 0.5 1 0.6 1 10",
            "x",
            "1e300 1 1 1 1 1 1",
        ] {
            assert_eq!(History::decode(bad), None, "{bad}");
        }
    }
}
