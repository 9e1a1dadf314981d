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
use crate::loss::cross_entropy;
use crate::nn::{Block, Ctx, Module};
use crate::optim::{LrSchedule, Optimizer, clip_grad_norm};
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
            seed: 0,
            verbose: true,
        }
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
}

/// Every epoch's metrics so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// One entry per epoch, in order.
    pub epochs: Vec<EpochMetrics>,
}

impl History {
    /// The epoch with the best validation accuracy.
    pub fn best(&self) -> Option<&EpochMetrics> {
        self.epochs.iter().max_by(|a, b| a.val_accuracy.total_cmp(&b.val_accuracy))
    }

    fn encode(&self) -> String {
        self.epochs
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {} {}",
                    e.epoch,
                    e.train_loss,
                    e.train_accuracy,
                    e.val_loss,
                    e.val_accuracy,
                    e.seconds,
                    e.samples_per_second
                )
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    fn decode(s: &str) -> Option<History> {
        let mut epochs = Vec::new();
        for row in s.split(';').filter(|r| !r.is_empty()) {
            let v: Vec<f64> = row.split(' ').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            if v.len() != 7 {
                return None;
            }
            epochs.push(EpochMetrics {
                epoch: v[0] as usize,
                train_loss: v[1],
                train_accuracy: v[2],
                val_loss: v[3],
                val_accuracy: v[4],
                seconds: v[5],
                samples_per_second: v[6],
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
}

/// What [`fit`] trains: logits for a batch, and one optimizer step with
/// cross-entropy.
pub trait Classifier<B: Backend, const DI: usize>: Module<B> {
    /// Logits `[n, classes]` in evaluation mode.
    fn logits(&self, x: &Tensor<B, DI>) -> Tensor<B, 2>;
    /// One training step on `(x, y)`: returns the training-mode logits
    /// (for metrics) and the loss, and updates the parameters.
    fn train_step<O: Optimizer<B>>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, 1>,
        optimizer: &mut O,
        ctx: &mut Ctx,
        config: &FitConfig,
    ) -> (Tensor<B, 2>, f64);
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
    ) -> (Tensor<B, 2>, f64) {
        let (logits, cache) = self.forward_train(x, ctx);
        let loss = cross_entropy(&logits, y, config.label_smoothing);
        let mut grads = self.backward_params(&cache, &loss.grad);
        if let Some(max) = config.clip_grad_norm {
            clip_grad_norm::<B, M>(&mut grads, max);
        }
        optimizer.step(self, &grads);
        (logits, loss.item())
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
    ) -> (Tensor<Autodiff<B>, 2>, f64) {
        // Parameters replaced by a load or an update are leaves again.
        track(&mut self.0);
        let logits = self.0.forward(x, true);
        let loss = cross_entropy(&logits, y, config.label_smoothing).value;
        let mut grads = loss.backward().for_module(&self.0);
        if let Some(max) = config.clip_grad_norm {
            clip_grad_norm::<Autodiff<B>, M>(&mut grads, max);
        }
        no_grad(|| optimizer.step(&mut self.0, &grads));
        (logits.detach(), loss.item())
    }
}

/// Moves a host batch to the device as model input and class targets.
pub fn to_device<B: Backend, const DI: usize>(
    batch: Batch,
    device: &B::Device,
) -> Result<(Tensor<B, DI>, Tensor<B, 1>), TrainError> {
    let shape = batch.inputs.shape.clone();
    let x = Tensor::<B, DI>::from_data(batch.inputs, device).map_err(|_| TrainError::Batch { shape, rank: DI })?;
    let n = batch.targets.numel();
    let t = crate::TensorData { shape: vec![n], values: batch.targets.values.convert(DType::I64) };
    let y = Tensor::<B, 1>::from_data(t, device).map_err(|_| TrainError::Batch { shape: vec![n], rank: 1 })?;
    Ok((x, y))
}

/// Number of rows whose largest logit is at the target.
pub fn correct<B: Backend>(logits: &Tensor<B, 2>, targets: &Tensor<B, 1>) -> usize {
    let pred: Tensor<B, 1> = logits.argmax(1).squeeze(1);
    pred.eq(targets).to_dtype(DType::I64).sum().item() as usize
}

/// Mean loss and accuracy of `model` (evaluation mode) over `data`.
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
    let (mut loss, mut right, mut n) = (0.0, 0, 0);
    for batch in data.epoch() {
        let (x, y) = to_device::<B, DI>(batch, device)?;
        let logits = model.logits(&x);
        let b = y.numel();
        loss += cross_entropy(&logits, &y, 0.0).item() * b as f64;
        right += correct(&logits, &y);
        n += b;
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

/// Trains a classifier with cross-entropy: `model` maps a batch to logits
/// `[n, classes]`, targets are class indices. A `#[model]` is a classifier
/// as it is; a hand-written model trains through the tape as [`Taped`]. Returns the history of every
/// epoch (those of a resumed run included).
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
        train.set_epoch(epoch as u64 - 1);
        let bar = if config.verbose { ProgressBar::new(train.len() as u64) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(format!("{epoch}/{}", config.epochs));
        let start = Instant::now();
        let (mut loss_sum, mut right, mut seen) = (0.0, 0usize, 0usize);
        for batch in train.epoch() {
            if let Some(s) = &config.schedule {
                optimizer.set_lr(s.lr_at(step));
            }
            let (x, y) = to_device::<B, DI>(batch, device)?;
            let (logits, loss) = model.train_step(&x, &y, optimizer, &mut ctx, config);
            step += 1;
            let b = y.numel();
            loss_sum += loss * b as f64;
            right += correct(&logits, &y);
            seen += b;
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "loss {:.4} acc {:.4} {:.0} samples/s",
                loss_sum / seen as f64,
                right as f64 / seen as f64,
                seen as f64 / secs
            ));
            bar.inc(1);
        }
        let seconds = start.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let (val_loss, val_accuracy) = evaluate::<B, M, V, DI>(model, val, device)?;
        let m = EpochMetrics {
            epoch,
            train_loss: loss_sum / seen.max(1) as f64,
            train_accuracy: right as f64 / seen.max(1) as f64,
            val_loss,
            val_accuracy,
            seconds,
            samples_per_second: seen as f64 / seconds.max(1e-9),
        };
        if config.verbose {
            println!(
                "epoch {epoch:>3}: train loss {:.4} acc {:.4} | val loss {:.4} acc {:.4} | {:.2} s, {:.0} samples/s",
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
