//! Losses with their gradients, as PyTorch defines them (mean reduction).
//!
//! Each returns the scalar loss and the gradient of that loss with respect
//! to the prediction, ready for a model's `backward`. The value is computed
//! from tensor ops only, so it also differentiates by composition.

use blaze_runtime::{Backend, DType, Tensor};

/// A loss value and its gradient with respect to the prediction.
#[derive(Clone, Debug)]
pub struct Loss<B: Backend, const D: usize> {
    /// The mean loss, a rank-0 tensor.
    pub value: Tensor<B, 0>,
    /// `d value / d prediction`, shaped like the prediction.
    pub grad: Tensor<B, D>,
}

impl<B: Backend, const D: usize> Loss<B, D> {
    /// The loss as a number (reads it back from the device).
    pub fn item(&self) -> f64 {
        self.value.item()
    }
}

/// The target PyTorch's losses skip by default (`ignore_index=-100`).
pub const IGNORE_INDEX: i64 = -100;

/// A class index outside `0..classes` (and not the ignored value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "target {value} at position {position} is out of bounds for {classes} classes (valid: 0 to {}, or the ignore_index {ignore_index})",
    classes.saturating_sub(1)
)]
pub struct TargetError {
    /// The offending value.
    pub value: i64,
    /// Its position in the targets.
    pub position: usize,
    /// The number of classes.
    pub classes: usize,
    /// The value that marks a target to skip.
    pub ignore_index: i64,
}

/// Checks class indices against `classes`: each is in `0..classes` or
/// equals `ignore_index`. Two reductions in the common case; the targets
/// are read back only when some are out of range or ignored.
pub fn check_class_targets<B: Backend>(
    targets: &Tensor<B, 1>,
    classes: usize,
    ignore_index: i64,
) -> Result<(), TargetError> {
    if targets.numel() == 0 || in_range(targets, classes) {
        return Ok(());
    }
    class_error(&targets.to_vec::<i64>(), classes, ignore_index)
}

/// The first of `values` neither in `0..classes` nor `ignore_index`.
fn class_error(values: &[i64], classes: usize, ignore_index: i64) -> Result<(), TargetError> {
    match values.iter().position(|&v| v != ignore_index && !(0..classes as i64).contains(&v)) {
        Some(position) => Err(TargetError { value: values[position], position, classes, ignore_index }),
        None => Ok(()),
    }
}

/// Whether every target is in `0..classes` (none ignored): two
/// reductions on the device and two numbers read back. Also how
/// `Embedding` checks its ids against its vocabulary.
pub(crate) fn in_range<B: Backend, const D: usize>(targets: &Tensor<B, D>, classes: usize) -> bool {
    targets.min().item() >= 0.0 && targets.max().item() < classes as f64
}

/// Checks the shapes and dtype of class `targets` for `logits`, then
/// their values; panics naming `op` on any problem. Returns how many rows
/// count (those whose target is not `ignore_index`): two reductions when
/// every target is a class and none can be ignored, else the targets
/// read back once.
fn check_targets<B: Backend>(op: &str, logits: &Tensor<B, 2>, targets: &Tensor<B, 1>, ignore_index: i64) -> f64 {
    let [n, classes] = logits.shape();
    assert!(targets.dtype() == DType::I64, "{op}: targets must be i64 class indices, got {}", targets.dtype());
    assert!(targets.shape() == [n], "{op}: logits {:?} need {n} targets, got {:?}", logits.shape(), targets.shape());
    let ignore_is_a_class = (0..classes as i64).contains(&ignore_index);
    if n == 0 || !ignore_is_a_class && in_range(targets, classes) {
        return n as f64;
    }
    let values = targets.to_vec::<i64>();
    if let Err(e) = class_error(&values, classes, ignore_index) {
        panic!("{op}: {e}");
    }
    values.iter().filter(|&&v| v != ignore_index).count() as f64
}

/// The rows that count when some targets are ignored (`count` of them,
/// fewer than all): the targets with ignored ones replaced by class 0, and
/// a `[n, 1]` weight of 1 for rows that count and 0 for the others.
fn kept_rows<B: Backend>(targets: &Tensor<B, 1>, ignore_index: i64, dtype: DType, count: f64) -> Kept<B> {
    let keep = targets.ne_scalar(ignore_index as f64);
    let n = targets.numel();
    Kept {
        targets: targets.masked_fill(&keep.logical_not(), 0.0),
        weights: keep.to_dtype(dtype).reshape([n, 1]),
        count,
    }
}

struct Kept<B: Backend> {
    targets: Tensor<B, 1>,
    weights: Tensor<B, 2>,
    count: f64,
}

/// One-hot rows for `targets` over `classes`, in `dtype`.
pub fn one_hot<B: Backend>(targets: &Tensor<B, 1>, classes: usize, dtype: DType) -> Tensor<B, 2> {
    let n = targets.numel();
    let ids = Tensor::<B, 1>::arange(0..classes as i64, &targets.device()).reshape([1, classes]);
    let t: Tensor<B, 2> = targets.reshape([n, 1]);
    t.eq(&ids.expand([n, classes])).to_dtype(dtype)
}

/// Options of [`cross_entropy_with`], as `torch.nn.CrossEntropyLoss`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropyOptions {
    /// The target distribution is `(1 - ε) onehot + ε / classes`; 0 for none.
    pub label_smoothing: f64,
    /// Rows whose target is this value do not count (mean over the others).
    pub ignore_index: i64,
}

impl Default for CrossEntropyOptions {
    fn default() -> Self {
        CrossEntropyOptions { label_smoothing: 0.0, ignore_index: IGNORE_INDEX }
    }
}

/// Cross-entropy of `logits: [n, classes]` against class indices
/// `targets: [n]`, as `torch.nn.functional.cross_entropy` with
/// `label_smoothing` (0 for none) and the default `ignore_index` of -100.
/// A target outside `0..classes` panics with its value and position.
pub fn cross_entropy<B: Backend>(logits: &Tensor<B, 2>, targets: &Tensor<B, 1>, label_smoothing: f64) -> Loss<B, 2> {
    cross_entropy_with(logits, targets, CrossEntropyOptions { label_smoothing, ..Default::default() })
}

/// [`cross_entropy`] with every option: the target distribution is
/// `(1 - ε) onehot + ε / classes`, and rows whose target is
/// `ignore_index` are left out of the mean (all left out: NaN, as PyTorch).
/// Computed through `log_softmax`, so large logits neither overflow nor
/// lose the gradient.
pub fn cross_entropy_with<B: Backend>(
    logits: &Tensor<B, 2>,
    targets: &Tensor<B, 1>,
    options: CrossEntropyOptions,
) -> Loss<B, 2> {
    let CrossEntropyOptions { label_smoothing, ignore_index } = options;
    let count = check_targets("cross_entropy", logits, targets, ignore_index);
    assert!(
        (0.0..=1.0).contains(&label_smoothing),
        "cross_entropy: label_smoothing {label_smoothing} is outside [0, 1]"
    );
    let [n, c] = logits.shape();
    let dtype = logits.dtype();
    // One pass per row where the backend has it.
    let fused =
        B::cross_entropy(logits.storage(), targets.storage(), label_smoothing, ignore_index, 1.0 / count.max(1.0));
    if let Some((rows, grad)) = fused {
        let rows = Tensor::<B, 1>::from_storage(rows);
        return Loss { value: rows.sum().div_scalar(count), grad: Tensor::from_storage(grad) };
    }
    let target_dist = |t: &Tensor<B, 1>| {
        one_hot(t, c, dtype).mul_scalar(1.0 - label_smoothing).add_scalar(label_smoothing / c as f64)
    };
    let logp = logits.log_softmax(1);
    match (count < n as f64).then(|| kept_rows(targets, ignore_index, dtype, count)) {
        None => {
            let q = target_dist(targets);
            let value = logp.mul(&q).sum().neg().div_scalar(n as f64);
            // d/dz of -Σ q log softmax(z) is softmax(z) - q (q sums to 1 per row).
            let grad = logp.exp().sub(&q).div_scalar(n as f64);
            Loss { value, grad }
        }
        Some(Kept { targets, weights, count }) => {
            let q = target_dist(&targets);
            let value = logp.mul(&q).mul(&weights).sum().neg().div_scalar(count);
            let grad = logp.exp().sub(&q).mul(&weights).div_scalar(count.max(1.0));
            Loss { value, grad }
        }
    }
}

/// Negative log-likelihood of log-probabilities `logp: [n, classes]`, as
/// `torch.nn.functional.nll_loss` (targets of -100 are left out).
pub fn nll<B: Backend>(logp: &Tensor<B, 2>, targets: &Tensor<B, 1>) -> Loss<B, 2> {
    nll_with(logp, targets, IGNORE_INDEX)
}

/// [`nll`] with rows whose target is `ignore_index` left out of the mean.
pub fn nll_with<B: Backend>(logp: &Tensor<B, 2>, targets: &Tensor<B, 1>, ignore_index: i64) -> Loss<B, 2> {
    let count = check_targets("nll", logp, targets, ignore_index);
    let [n, c] = logp.shape();
    let dtype = logp.dtype();
    let (targets, weights) = if count < n as f64 {
        let Kept { targets, weights, .. } = kept_rows(targets, ignore_index, dtype, count);
        (targets, Some(weights))
    } else {
        (targets.clone(), None)
    };
    let mut picked: Tensor<B, 2> = logp.gather(1, &targets.reshape([n, 1]));
    let mut grad = one_hot(&targets, c, dtype).neg();
    if let Some(w) = &weights {
        picked = picked.mul(w);
        grad = grad.mul(w);
    }
    let value = picked.sum().neg().div_scalar(count);
    Loss { value, grad: grad.div_scalar(count.max(1.0)) }
}

/// Mean squared error, as `torch.nn.functional.mse_loss`.
pub fn mse<B: Backend, const D: usize>(pred: &Tensor<B, D>, target: &Tensor<B, D>) -> Loss<B, D> {
    same_shape("mse", pred, target);
    let n = pred.numel() as f64;
    let diff = pred.sub(target);
    Loss { value: diff.square().sum().div_scalar(n), grad: diff.mul_scalar(2.0 / n) }
}

/// Panics naming `op` unless prediction and target have one shape.
fn same_shape<B: Backend, const D: usize>(op: &str, pred: &Tensor<B, D>, target: &Tensor<B, D>) {
    assert!(
        pred.shape() == target.shape(),
        "{op}: prediction {:?} and target {:?} differ in shape",
        pred.shape(),
        target.shape()
    );
}

/// Mean absolute error, as `torch.nn.functional.l1_loss`; its gradient at
/// a zero difference is 0, as PyTorch's.
pub fn l1<B: Backend, const D: usize>(pred: &Tensor<B, D>, target: &Tensor<B, D>) -> Loss<B, D> {
    same_shape("l1", pred, target);
    let n = pred.numel() as f64;
    let diff = pred.sub(target);
    Loss { value: diff.abs().sum().div_scalar(n), grad: diff.sign().div_scalar(n) }
}

/// Huber loss, as `torch.nn.functional.huber_loss`: `d²/2` where
/// `|d| <= delta`, `delta (|d| - delta/2)` beyond, averaged.
pub fn huber<B: Backend, const D: usize>(pred: &Tensor<B, D>, target: &Tensor<B, D>, delta: f64) -> Loss<B, D> {
    same_shape("huber", pred, target);
    assert!(delta > 0.0, "huber: delta must be positive, got {delta}");
    let n = pred.numel() as f64;
    let diff = pred.sub(target);
    // Inside the band the loss is d²/2 and its slope d; outside, the slope
    // is delta·sign(d), which is d clamped to [-delta, delta] either way.
    let clipped = diff.clamp(-delta, delta);
    let value = clipped.mul(&diff.sub(&clipped.mul_scalar(0.5))).sum().div_scalar(n);
    Loss { value, grad: clipped.div_scalar(n) }
}

/// Binary cross-entropy of logits against targets in `[0, 1]`, as
/// `torch.nn.functional.binary_cross_entropy_with_logits`, in the stable
/// form `max(x, 0) - x t + log(1 + e^-|x|)`.
pub fn binary_cross_entropy_with_logits<B: Backend, const D: usize>(
    logits: &Tensor<B, D>,
    targets: &Tensor<B, D>,
) -> Loss<B, D> {
    assert!(
        logits.shape() == targets.shape(),
        "binary_cross_entropy_with_logits: logits {:?} and targets {:?} differ in shape",
        logits.shape(),
        targets.shape()
    );
    assert!(
        targets.dtype() == logits.dtype(),
        "binary_cross_entropy_with_logits: needs real targets (0 or 1) in the logits' dtype {}, got {}{}",
        logits.dtype(),
        targets.dtype(),
        if targets.dtype() == DType::I64 { " class indices: convert them with .to_dtype(logits.dtype())" } else { "" }
    );
    let n = logits.numel() as f64;
    let value = logits
        .relu()
        .sub(&logits.mul(targets))
        .add(&logits.abs().neg().exp().add_scalar(1.0).log())
        .sum()
        .div_scalar(n);
    // d/dx = sigmoid(x) - t.
    let grad = logits.sigmoid().sub(targets).div_scalar(n);
    Loss { value, grad }
}
