//! What a model is trained to do: the [`Criterion`] that compares its
//! output with the targets, and the [`Task`] that decides what the targets
//! are and which metrics `fit` reports.

pub use blaze_data::Targets;
use blaze_nn::loss::{
    CrossEntropyOptions, Loss, TargetError, binary_cross_entropy_with_logits, check_class_targets, cross_entropy_with,
    huber, l1, mse,
};
use blaze_runtime::{Backend, Tensor};

/// What a model learns. It decides whether targets are class indices or
/// real values, and the metrics (see [`Task::metric_names`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// One class per sample: logits `[n, classes]`, class indices `[n]`.
    /// Loss, accuracy, top-k accuracy (validation), and precision, recall
    /// and F1 averaged over the classes (`average="macro"`), with a
    /// confusion matrix at the end.
    Classification,
    /// Independent yes/no labels, one per output (binary or multi-label):
    /// logits and targets of 0 or 1 in one shape. Loss, accuracy, and
    /// precision, recall and F1 of the positive label.
    Binary,
    /// Real values shaped like the output. Loss, MAE, RMSE and R² (each
    /// output column's R², averaged, as scikit-learn's `r2_score`).
    Regression,
    /// A class per position (next-token prediction): logits
    /// `[n, steps, vocabulary]`, class indices `[n, steps]`. Loss per
    /// token, perplexity and token accuracy.
    LanguageModel,
}

impl Task {
    /// What the targets hold.
    pub fn targets(self) -> Targets {
        match self {
            Task::Classification | Task::LanguageModel => Targets::Classes,
            Task::Binary | Task::Regression => Targets::Real,
        }
    }

    /// The validation metrics `fit` reports for this task, `loss` first;
    /// `top_k` names the top-k accuracy of classifiers (reported for
    /// models of more than k classes).
    pub fn metric_names(self, top_k: usize) -> Vec<String> {
        let names: &[&str] = match self {
            Task::Classification => &["loss", "accuracy", "", "precision", "recall", "f1"],
            Task::Binary => &["loss", "accuracy", "precision", "recall", "f1"],
            Task::Regression => &["loss", "mae", "rmse", "r2"],
            Task::LanguageModel => &["loss", "perplexity", "accuracy"],
        };
        names.iter().map(|&n| if n.is_empty() { top_k_name(top_k) } else { n.to_owned() }).collect()
    }

    /// The metric that picks the best epoch unless `FitConfig::monitor`
    /// names another: accuracy for classifiers, the loss otherwise.
    pub fn default_monitor(self) -> &'static str {
        match self {
            Task::Classification | Task::Binary => "accuracy",
            Task::Regression | Task::LanguageModel => "loss",
        }
    }

    /// The metric drawn next to the loss in the training curves.
    pub fn headline(self) -> &'static str {
        match self {
            Task::Classification | Task::Binary => "accuracy",
            Task::Regression => "r2",
            Task::LanguageModel => "perplexity",
        }
    }
}

/// The name of the top-k accuracy: `top5_accuracy` for k = 5.
pub(crate) fn top_k_name(k: usize) -> String {
    format!("top{k}_accuracy")
}

/// Whether a larger value of the metric `name` is better: `Some(true)` for
/// accuracies, precision, recall, F1 and R², `Some(false)` for the loss,
/// MAE, RMSE and perplexity, `None` for a name `fit` does not report.
pub fn higher_is_better(name: &str) -> Option<bool> {
    match name {
        "accuracy" | "precision" | "recall" | "f1" | "r2" => Some(true),
        "loss" | "mae" | "rmse" | "perplexity" => Some(false),
        _ => name.strip_prefix("top").and_then(|r| r.strip_suffix("_accuracy"))?.parse::<usize>().ok().map(|_| true),
    }
}

/// Why a loss cannot compare a batch's output with its targets.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LossError {
    /// A target that is not a class of the model.
    #[error(transparent)]
    Class(#[from] TargetError),
    /// Targets whose shape does not go with the output's.
    #[error("{loss}: the model's output {output:?} needs targets of shape {expected:?}, got {target:?}")]
    Shape {
        /// The loss.
        loss: &'static str,
        /// The output's shape.
        output: Box<[usize]>,
        /// The targets' shape.
        target: Box<[usize]>,
        /// The shape the targets need.
        expected: Box<[usize]>,
    },
    /// A target outside the range the loss is defined on.
    #[error("{loss}: target {value} is outside [{lo}, {hi}]")]
    Range {
        /// The loss.
        loss: &'static str,
        /// The smallest or largest target.
        value: f64,
        /// The lower end of the range.
        lo: f64,
        /// The upper end.
        hi: f64,
    },
}

/// A loss `fit` trains with: it compares a batch's output `[n, ...]`
/// (rank `DO`) with its targets (rank `DT`), giving the mean loss and its
/// gradient with respect to the output, and names its [`Task`].
pub trait Criterion<B: Backend, const DO: usize, const DT: usize> {
    /// The task, which decides the targets and the metrics.
    fn task(&self) -> Task;
    /// The loss and its gradient, or why the targets do not fit.
    fn loss(&self, output: &Tensor<B, DO>, target: &Tensor<B, DT>) -> Result<Loss<B, DO>, LossError>;
    /// Class targets equal to this are left out of the loss and the
    /// metrics.
    fn ignore_index(&self) -> Option<i64> {
        None
    }
}

/// Cross-entropy of logits against class indices, as
/// `torch.nn.CrossEntropyLoss`: `[n, classes]` against `[n]` (a
/// classifier) or `[n, steps, vocabulary]` against `[n, steps]` (a
/// language model, averaged over the positions). Its options are
/// [`cross_entropy_with`]'s: label smoothing and the ignored target.
pub type CrossEntropy = CrossEntropyOptions;

/// Cross-entropy of logits `[rows, classes]` against class rows `[rows]`.
pub(crate) type CrossEntropyRows<B> =
    fn(CrossEntropyOptions, &Tensor<B, 2>, &Tensor<B, 1>) -> Result<Loss<B, 2>, LossError>;

/// The loss of logits `[rows, classes]` against `[rows]` targets, each a
/// class or ignored.
pub(crate) fn class_rows<B: Backend>(
    options: CrossEntropyOptions,
    logits: &Tensor<B, 2>,
    targets: &Tensor<B, 1>,
) -> Result<Loss<B, 2>, LossError> {
    check_class_targets(targets, logits.size(1), options.ignore_index)?;
    Ok(cross_entropy_with(logits, targets, options))
}

/// The error for targets that do not match `expected`.
fn shape_error(loss: &'static str, output: &[usize], target: &[usize], expected: &[usize]) -> LossError {
    LossError::Shape { loss, output: output.into(), target: target.into(), expected: expected.into() }
}

impl<B: Backend> Criterion<B, 2, 1> for CrossEntropy {
    fn task(&self) -> Task {
        Task::Classification
    }

    fn loss(&self, output: &Tensor<B, 2>, target: &Tensor<B, 1>) -> Result<Loss<B, 2>, LossError> {
        if target.shape()[0] != output.shape()[0] {
            return Err(shape_error("cross_entropy", &output.shape(), &target.shape(), &output.shape()[..1]));
        }
        (crate::Table::<B>::of().class_rows)(*self, output, target)
    }

    fn ignore_index(&self) -> Option<i64> {
        Some(self.ignore_index)
    }
}

impl<B: Backend> Criterion<B, 3, 2> for CrossEntropy {
    fn task(&self) -> Task {
        Task::LanguageModel
    }

    fn loss(&self, output: &Tensor<B, 3>, target: &Tensor<B, 2>) -> Result<Loss<B, 3>, LossError> {
        let [n, steps, vocabulary] = output.shape();
        if target.shape() != [n, steps] {
            return Err(shape_error("cross_entropy", &output.shape(), &target.shape(), &[n, steps]));
        }
        let rows = (crate::Table::<B>::of().class_rows)(
            *self,
            &output.reshape([-1, vocabulary as i64]),
            &target.reshape([-1]),
        )?;
        Ok(Loss { value: rows.value, grad: rows.grad.reshape([n, steps, vocabulary]) })
    }

    fn ignore_index(&self) -> Option<i64> {
        Some(self.ignore_index)
    }
}

/// Checks that real targets have the output's shape and returns them in
/// the output's dtype.
fn real_targets<B: Backend, const D: usize>(
    loss: &'static str,
    output: &Tensor<B, D>,
    target: &Tensor<B, D>,
) -> Result<Tensor<B, D>, LossError> {
    if target.shape() != output.shape() {
        return Err(shape_error(loss, &output.shape(), &target.shape(), &output.shape()));
    }
    Ok(target.to_dtype(output.dtype()))
}

/// Mean squared error (`torch.nn.MSELoss`), for regression.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mse;

/// Mean absolute error (`torch.nn.L1Loss`), for regression.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct L1;

/// Huber loss (`torch.nn.HuberLoss`), for regression: quadratic within
/// `delta` of the target, linear beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Huber {
    /// Where the loss turns from quadratic to linear (1 by default).
    pub delta: f64,
}

impl Default for Huber {
    fn default() -> Self {
        Huber { delta: 1.0 }
    }
}

/// Binary cross-entropy of logits (`torch.nn.BCEWithLogitsLoss`), for
/// yes/no and multi-label targets in `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BceWithLogits;

impl<B: Backend, const D: usize> Criterion<B, D, D> for Mse {
    fn task(&self) -> Task {
        Task::Regression
    }

    fn loss(&self, output: &Tensor<B, D>, target: &Tensor<B, D>) -> Result<Loss<B, D>, LossError> {
        Ok(mse(output, &real_targets("mse", output, target)?))
    }
}

impl<B: Backend, const D: usize> Criterion<B, D, D> for L1 {
    fn task(&self) -> Task {
        Task::Regression
    }

    fn loss(&self, output: &Tensor<B, D>, target: &Tensor<B, D>) -> Result<Loss<B, D>, LossError> {
        Ok(l1(output, &real_targets("l1", output, target)?))
    }
}

impl<B: Backend, const D: usize> Criterion<B, D, D> for Huber {
    fn task(&self) -> Task {
        Task::Regression
    }

    fn loss(&self, output: &Tensor<B, D>, target: &Tensor<B, D>) -> Result<Loss<B, D>, LossError> {
        Ok(huber(output, &real_targets("huber", output, target)?, self.delta))
    }
}

impl<B: Backend, const D: usize> Criterion<B, D, D> for BceWithLogits {
    fn task(&self) -> Task {
        Task::Binary
    }

    fn loss(&self, output: &Tensor<B, D>, target: &Tensor<B, D>) -> Result<Loss<B, D>, LossError> {
        let target = real_targets("binary_cross_entropy_with_logits", output, target)?;
        if target.numel() > 0 {
            for value in [target.min().item(), target.max().item()] {
                if !(0.0..=1.0).contains(&value) {
                    return Err(LossError::Range { loss: "binary_cross_entropy_with_logits", value, lo: 0.0, hi: 1.0 });
                }
            }
        }
        Ok(binary_cross_entropy_with_logits(output, &target))
    }
}

/// A loss of your own for `fit`: a closure from the output and the
/// targets to the mean loss and its gradient (for example one of
/// [`blaze_nn::loss`]'s functions, or a weighted sum of them), with the task
/// that decides the targets and the metrics.
///
/// ```
/// use blaze_nn::loss::{Loss, huber, l1};
/// use blaze_train::{LossFn, Task};
/// use blaze_runtime::{Backend, Tensor};
///
/// /// Huber with a small band, plus a touch of L1.
/// fn robust<B: Backend>() -> LossFn<impl Fn(&Tensor<B, 2>, &Tensor<B, 2>) -> Loss<B, 2>> {
///     LossFn::new(Task::Regression, |out: &Tensor<B, 2>, t: &Tensor<B, 2>| {
///         let (h, a) = (huber(out, t, 0.1), l1(out, t));
///         Loss { value: h.value.add(&a.value.mul_scalar(0.1)), grad: h.grad.add(&a.grad.mul_scalar(0.1)) }
///     })
/// }
/// ```
#[derive(Clone, Copy)]
pub struct LossFn<F> {
    task: Task,
    f: F,
}

impl<F> LossFn<F> {
    /// A loss computed by `f` for `task`.
    pub fn new(task: Task, f: F) -> Self {
        LossFn { task, f }
    }
}

impl<F> std::fmt::Debug for LossFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LossFn").field("task", &self.task).finish_non_exhaustive()
    }
}

impl<B, F, const DO: usize, const DT: usize> Criterion<B, DO, DT> for LossFn<F>
where
    B: Backend,
    F: Fn(&Tensor<B, DO>, &Tensor<B, DT>) -> Loss<B, DO>,
{
    fn task(&self) -> Task {
        self.task
    }

    fn loss(&self, output: &Tensor<B, DO>, target: &Tensor<B, DT>) -> Result<Loss<B, DO>, LossError> {
        let target = match self.task.targets() {
            Targets::Real => target.to_dtype(output.dtype()),
            Targets::Classes => target.clone(),
        };
        Ok((self.f)(output, &target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_cover_every_reported_metric() {
        for task in [Task::Classification, Task::Binary, Task::Regression, Task::LanguageModel] {
            for name in task.metric_names(3) {
                assert!(higher_is_better(&name).is_some(), "{task:?}: {name}");
            }
            assert!(task.metric_names(3).iter().any(|n| n == task.headline()));
            assert!(task.metric_names(3).iter().any(|n| n == task.default_monitor()));
        }
        assert_eq!(higher_is_better("top3_accuracy"), Some(true));
        assert_eq!(higher_is_better("topx_accuracy"), None);
        assert_eq!(higher_is_better("speed"), None);
    }
}
