//! Losses with their gradients, as PyTorch defines them (mean reduction).
//!
//! Each returns the scalar loss and the gradient of that loss with respect
//! to the prediction, ready for a model's `backward`. The value is computed
//! from tensor ops only, so it also differentiates by composition.

use crate::{Backend, DType, Tensor};

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

fn check_targets<B: Backend>(op: &str, logits: &Tensor<B, 2>, targets: &Tensor<B, 1>) {
    let [n, _] = logits.shape();
    assert!(targets.dtype() == DType::I64, "{op}: targets must be i64 class indices, got {}", targets.dtype());
    assert!(targets.shape() == [n], "{op}: logits {:?} need {n} targets, got {:?}", logits.shape(), targets.shape());
}

/// One-hot rows for `targets` over `classes`, in `dtype`.
pub fn one_hot<B: Backend>(targets: &Tensor<B, 1>, classes: usize, dtype: DType) -> Tensor<B, 2> {
    let n = targets.numel();
    let ids = Tensor::<B, 1>::arange(0..classes as i64, &targets.device()).reshape([1, classes]);
    let t: Tensor<B, 2> = targets.reshape([n, 1]);
    t.eq(&ids.expand([n, classes])).to_dtype(dtype)
}

/// Cross-entropy of `logits: [n, classes]` against class indices
/// `targets: [n]`, as `torch.nn.functional.cross_entropy` with
/// `label_smoothing` (0 for none): the target distribution is
/// `(1 - ε) onehot + ε / classes`. Computed through `log_softmax`, so large
/// logits neither overflow nor lose the gradient.
pub fn cross_entropy<B: Backend>(logits: &Tensor<B, 2>, targets: &Tensor<B, 1>, label_smoothing: f64) -> Loss<B, 2> {
    check_targets("cross_entropy", logits, targets);
    assert!(
        (0.0..=1.0).contains(&label_smoothing),
        "cross_entropy: label_smoothing {label_smoothing} is outside [0, 1]"
    );
    let [n, c] = logits.shape();
    let logp = logits.log_softmax(1);
    let q =
        one_hot(targets, c, logits.dtype()).mul_scalar(1.0 - label_smoothing).add_scalar(label_smoothing / c as f64);
    let value = logp.mul(&q).sum().neg().div_scalar(n as f64);
    // d/dz of -Σ q log softmax(z) is softmax(z) - q (q sums to 1 per row).
    let grad = logp.exp().sub(&q).div_scalar(n as f64);
    Loss { value, grad }
}

/// Negative log-likelihood of log-probabilities `logp: [n, classes]`, as
/// `torch.nn.functional.nll_loss`.
pub fn nll<B: Backend>(logp: &Tensor<B, 2>, targets: &Tensor<B, 1>) -> Loss<B, 2> {
    check_targets("nll", logp, targets);
    let [n, c] = logp.shape();
    let picked: Tensor<B, 2> = logp.gather(1, &targets.reshape([n, 1]));
    let value = picked.sum().neg().div_scalar(n as f64);
    let grad = one_hot(targets, c, logp.dtype()).neg().div_scalar(n as f64);
    Loss { value, grad }
}

/// Mean squared error, as `torch.nn.functional.mse_loss`.
pub fn mse<B: Backend, const D: usize>(pred: &Tensor<B, D>, target: &Tensor<B, D>) -> Loss<B, D> {
    assert!(
        pred.shape() == target.shape(),
        "mse: prediction {:?} and target {:?} differ in shape",
        pred.shape(),
        target.shape()
    );
    let n = pred.numel() as f64;
    let diff = pred.sub(target);
    Loss { value: diff.square().sum().div_scalar(n), grad: diff.mul_scalar(2.0 / n) }
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
