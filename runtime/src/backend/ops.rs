//! The op enums the primitives take, and the options of convolution and
//! pooling (PyTorch's names and defaults).

pub use crate::binary::BinaryOp;
pub use crate::compare::CmpOp;
pub use crate::reduction::ReduceOp;
pub use crate::unary::UnaryOp;

/// What a softmax computes over its dim: `softmax(scale * x)` (or its log
/// with `log`), and with `causal` the entries past the diagonal of the last
/// two dims masked out (`x[.., i, j]` with `j > i` weighs 0), as a
/// decoder's attention does. One pass on backends that fuse it: the scaled
/// and masked scores are never materialised.
///
/// A row that sees no finite score (every entry `-inf`: a query whose
/// keys are all masked, such as the first position of a left-padded
/// sequence under a causal mask) weighs nothing: its softmax is 0 (its
/// log-softmax `-inf`) rather than NaN, and its gradient is finite, as
/// PyTorch's attention gives. A NaN or `+inf` score still makes its row
/// NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxOptions {
    /// Log-softmax instead of softmax.
    pub log: bool,
    /// The input is multiplied by this first (positive and finite).
    pub scale: f64,
    /// Query `i` (dim -2) sees keys `0..=i` (dim -1) only; the softmax is
    /// then over the last dim.
    pub causal: bool,
}

impl Default for SoftmaxOptions {
    fn default() -> Self {
        SoftmaxOptions { log: false, scale: 1.0, causal: false }
    }
}

impl SoftmaxOptions {
    /// Log-softmax.
    pub fn log(mut self) -> Self {
        self.log = true;
        self
    }
    /// Multiplies the input by `s` first.
    pub fn scale(mut self, s: f64) -> Self {
        self.scale = s;
        self
    }
    /// Masks keys after each query's position.
    pub fn causal(mut self) -> Self {
        self.causal = true;
        self
    }
}

/// One Adam or AdamW update of a parameter at step `t` (counted from 1),
/// as `torch.optim.Adam` and `torch.optim.AdamW` compute it: the moments
/// `m = β1 m + (1 - β1) g` and `v = β2 v + (1 - β2) g²`, then
/// `p = keep p - lr / (1 - β1^t) · m / (sqrt(v / (1 - β2^t)) + eps)`, where
/// AdamW (`decoupled`) decays the weight (`keep = 1 - lr · weight_decay`)
/// and Adam adds `weight_decay · p` to the gradient instead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// The learning rate.
    pub lr: f64,
    /// `β1`, the first moment's decay.
    pub beta1: f64,
    /// `β2`, the second moment's decay.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty (Adam) or weight decay (AdamW).
    pub weight_decay: f64,
    /// AdamW's decoupled weight decay.
    pub decoupled: bool,
    /// The step, from 1.
    pub t: i32,
}

impl AdamStep {
    /// `1 - β1^t` and `1 - β2^t`, the moments' bias corrections.
    pub fn corrections(&self) -> (f64, f64) {
        (1.0 - self.beta1.powi(self.t), 1.0 - self.beta2.powi(self.t))
    }

    /// What the parameter is multiplied by before the step.
    pub fn keep(&self) -> f64 {
        if self.decoupled { 1.0 - self.lr * self.weight_decay } else { 1.0 }
    }
}

/// Options of a 2-D convolution, as in `torch.nn.functional.conv2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dOptions {
    /// Step between windows, `[height, width]`.
    pub stride: [usize; 2],
    /// Zeros added on both sides, `[height, width]`.
    pub padding: [usize; 2],
    /// Spacing between kernel taps, `[height, width]`.
    pub dilation: [usize; 2],
    /// Input and output channels are split into this many groups.
    pub groups: usize,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 }
    }
}

impl Conv2dOptions {
    /// Sets the stride in both directions.
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = [s, s];
        self
    }
    /// Sets the padding in both directions.
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = [p, p];
        self
    }
    /// Sets the dilation in both directions.
    pub fn dilation(mut self, d: usize) -> Self {
        self.dilation = [d, d];
        self
    }
    /// Sets the number of groups.
    pub fn groups(mut self, g: usize) -> Self {
        self.groups = g;
        self
    }
}

/// Options of a 2-D pooling window, as in `torch.nn.functional.max_pool2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pool2dOptions {
    /// Window size, `[height, width]`.
    pub kernel: [usize; 2],
    /// Step between windows; PyTorch's default is the kernel size.
    pub stride: [usize; 2],
    /// Implicit padding on both sides (`-inf` for max, zeros for average).
    pub padding: [usize; 2],
    /// The output size rounded up (PyTorch's `ceil_mode`): a last window
    /// that starts inside the input or its left padding counts even where
    /// it runs past the input (average pooling then divides by its part
    /// inside the padded input). Backends' pooling primitives are given
    /// `false` for average pooling: `Tensor::avg_pool2d` composes the
    /// rounded-up form from them.
    pub ceil_mode: bool,
}

impl Pool2dOptions {
    /// A square window with stride equal to its size and no padding.
    pub fn new(kernel: usize) -> Self {
        Pool2dOptions { kernel: [kernel, kernel], stride: [kernel, kernel], padding: [0, 0], ceil_mode: false }
    }
    /// Sets the stride in both directions.
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = [s, s];
        self
    }
    /// Sets the padding in both directions.
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = [p, p];
        self
    }
    /// Rounds the output size up (PyTorch's `ceil_mode`).
    pub fn ceil_mode(mut self, ceil: bool) -> Self {
        self.ceil_mode = ceil;
        self
    }
    /// The output plane `[oh, ow]` of pooling an `[h, w]` plane, if the
    /// window fits: the spec's rule (`blaze_spec::pool_window`), which
    /// every backend sizes its output by.
    pub fn output_plane(&self, h: usize, w: usize) -> Option<[usize; 2]> {
        let dim = |i: usize, n: usize| {
            blaze_spec::pool_window(n, self.kernel[i], self.stride[i], self.padding[i], self.ceil_mode)
        };
        Some([dim(0, h)?, dim(1, w)?])
    }
}
