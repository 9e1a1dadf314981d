//! What stops training, and what stops a step.

use std::path::PathBuf;

use super::task::{LossError, Task};
use blaze_record::RecordError;
use blaze_runtime::{DType, DeviceError};

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
    #[error("batch {what} of shape {shape:?} do not fit a model whose {what} are rank {rank} (with the batch dim)")]
    Batch {
        /// `inputs` or `targets`.
        what: &'static str,
        /// The batch's shape.
        shape: Vec<usize>,
        /// The rank the model needs.
        rank: usize,
    },
    /// Targets whose rank a loss of real targets (yes/no labels,
    /// regression) cannot take: most often class labels
    /// (`CsvOptions::classes`), one index a sample, where the loss wants a
    /// value per output.
    #[error("{}", real_targets_message(*task, shape, *dtype, *rank))]
    RealTargets {
        /// The loss's task: [`Task::Binary`] or [`Task::Regression`].
        task: Task,
        /// The batch's targets' shape.
        shape: Vec<usize>,
        /// Their dtype as the dataset holds them (i64 for class indices).
        dtype: DType,
        /// The rank the loss needs, with the batch dim.
        rank: usize,
    },
    /// `FitConfig` asks for something `fit` cannot do.
    #[error("FitConfig: {0}")]
    Config(String),
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
    /// Targets the loss cannot compare with the model's output: a class
    /// the model does not have, a shape or a value the loss does not take.
    #[error("epoch {epoch}, {split} batch {batch}: {}{source}", match (source, sample) {
        (LossError::Class(t), Some(s)) => format!("dataset index {s}, sample {}: ", t.position),
        (LossError::Class(t), None) => format!("sample {}: ", t.position),
        _ => String::new(),
    })]
    Target {
        /// 1-based epoch.
        epoch: usize,
        /// `training` or `validation`.
        split: &'static str,
        /// 0-based batch within the epoch.
        batch: usize,
        /// The sample's index in the dataset, when the loader can tell
        /// (for a class outside the model's).
        sample: Option<usize>,
        /// What is wrong.
        source: LossError,
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

/// What [`TrainError::RealTargets`] says: what the loss needs, what it
/// got, and how to read the labels so that they fit.
fn real_targets_message(task: Task, shape: &[usize], dtype: DType, rank: usize) -> String {
    let binary = task == Task::Binary;
    let (loss, like, one) = if binary {
        ("binary cross-entropy", "the logits", "label")
    } else {
        ("a regression loss", "the output", "output")
    };
    let wanted = if rank == 2 { format!("[n, 1] for one {one}") } else { format!("rank {rank} with the batch dim") };
    let found = if dtype == DType::I64 { "class indices".to_owned() } else { format!("{dtype} targets") };
    let hint = match (dtype == DType::I64, binary) {
        (true, true) => {
            "read the label with CsvOptions::real(..) (its values 0 or 1), or give the model one \
                         output per class and train with CrossEntropy on the classes"
        }
        (true, false) => "read the label with CsvOptions::real(..)",
        (false, _) => {
            "give the dataset's targets one value per output (target shape [1] for one, as \
                       CsvOptions::real(..) reads a label)"
        }
    };
    format!("{loss} needs real targets shaped like {like} ({wanted}); got {found} of shape {shape:?}: {hint}")
}

/// Why a training step did not run.
#[derive(Debug)]
pub enum StepError {
    /// The loss cannot compare the targets with the output.
    Loss(LossError),
    /// The device failed.
    Device(DeviceError),
}

impl From<LossError> for StepError {
    fn from(e: LossError) -> Self {
        StepError::Loss(e)
    }
}

impl From<DeviceError> for StepError {
    fn from(e: DeviceError) -> Self {
        StepError::Device(e)
    }
}
