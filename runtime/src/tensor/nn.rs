//! Neural-network functions composed from the primitives (softmax,
//! log-softmax) and the convolution and pooling primitives, with their checks.

use super::arith::check_same_dtype;
use super::{Tensor, check_same_device, fmt_shape};
use crate::backend::{Backend, Conv2dOptions, Pool2dOptions, SoftmaxOptions};
use crate::shape::{Dim, window_output_size};

impl<B: Backend, const D: usize> Tensor<B, D> {
    /// `exp(x) / sum(exp(x))` over `dim`. The max is subtracted first so no
    /// exponent overflows; that shift cancels in the ratio (see
    /// [`crate::backend::composed_softmax`]; backends may fuse it).
    pub fn softmax(&self, dim: impl Dim) -> Self {
        self.assert_float("softmax");
        let d = dim.index(D, "softmax");
        Self::wrap(B::softmax(&self.storage, d, SoftmaxOptions::default()))
    }

    /// Softmax over `dim` in the form `o` says: of `o.scale * x`, in log
    /// space with `o.log`, and with `o.causal` each query (dim -2) seeing
    /// only the keys (dim -1) up to its position, the rest weighing 0, as
    /// `torch.softmax(x * scale + causal_mask, dim)` computes, in one pass
    /// on backends that fuse it. Attention's weights are
    /// `scores.softmax_with(-1, SoftmaxOptions::default().scale(1.0 / d.sqrt()).causal())`.
    /// Panics unless the scale is positive and finite, and with `causal`
    /// unless `dim` is the last of at least two.
    pub fn softmax_with(&self, dim: impl Dim, o: SoftmaxOptions) -> Self {
        self.assert_float("softmax_with");
        let d = dim.index(D, "softmax_with");
        assert!(o.scale > 0.0 && o.scale.is_finite(), "softmax_with: scale {} is not positive and finite", o.scale);
        assert!(
            !o.causal || (D >= 2 && d == D - 1),
            "softmax_with: a causal softmax runs over the last dim of a rank-2 or higher tensor, got dim {d} of {:?}",
            self.shape()
        );
        Self::wrap(B::softmax(&self.storage, d, o))
    }

    /// `x - log(sum(exp(x)))` over `dim`, computed as
    /// `(x - m) - log(sum(exp(x - m)))` with `m` the max, so it stays finite
    /// where `log(softmax(x))` would underflow to `-inf`.
    pub fn log_softmax(&self, dim: impl Dim) -> Self {
        self.assert_float("log_softmax");
        let d = dim.index(D, "log_softmax");
        Self::wrap(B::softmax(&self.storage, d, SoftmaxOptions::default().log()))
    }

    /// Attention weights applied to values, for inference, as
    /// `torch.nn.functional.scaled_dot_product_attention(q, k, v,
    /// is_causal=causal, scale=scale)`: `softmax(q kᵀ · scale) v` for this
    /// query `[.., T, d]`, keys `[.., S, d]` and values `[.., S, e]` (equal
    /// batch dims), the scale `1 / sqrt(d)` unless given, and with `causal`
    /// query `i` seeing keys `0..=i`. Backends that tile it (the CPU) never
    /// hold the `[.., T, S]` weights, only a block of one query's scores per
    /// thread; under `Autodiff` it is differentiable (composed of ops).
    /// Panics on shapes that do not fit, naming them.
    pub fn scaled_dot_product_attention(&self, k: &Self, v: &Self, causal: bool, scale: Option<f64>) -> Self {
        let op = "scaled_dot_product_attention";
        self.assert_float(op);
        let (qs, ks, vs) = (self.shape(), k.shape(), v.shape());
        let fits = D >= 2
            && qs[..D - 2] == ks[..D - 2]
            && ks[..D - 2] == vs[..D - 2]
            && qs[D - 1] == ks[D - 1]
            && ks[D - 2] == vs[D - 2];
        assert!(
            fits,
            "{op}: expects a query [.., T, d], keys [.., S, d] and values [.., S, e] with the same batch dims, got \
             {qs:?}, {ks:?} and {vs:?}"
        );
        check_same_dtype(op, self.dtype(), k.dtype());
        check_same_dtype(op, self.dtype(), v.dtype());
        check_same_device::<B>(op, &[&self.storage, &k.storage, &v.storage]);
        let scale = scale.unwrap_or_else(|| 1.0 / (qs[D - 1] as f64).sqrt());
        let mut o = SoftmaxOptions::default().scale(scale);
        if causal {
            o = o.causal();
        }
        assert!(scale > 0.0 && scale.is_finite(), "{op}: scale {scale} is not positive and finite");
        Self::wrap(B::attention(&self.storage, &k.storage, &v.storage, o))
    }

    /// Layer normalisation over the last dim, as
    /// `torch.nn.functional.layer_norm(x, [n], weight, bias, eps)`: each row
    /// less its mean, over `sqrt(var + eps)` (the biased variance), times
    /// `weight` plus `bias` (`[n]` each, optional). One pass per row on
    /// backends that fuse it. Panics on a non-float or empty last dim, or
    /// parameters of another size, dtype or device.
    pub fn layer_norm(&self, weight: Option<&Tensor<B, 1>>, bias: Option<&Tensor<B, 1>>, eps: f64) -> Self {
        self.norm_with_stats(weight, bias, eps, true).0
    }

    /// Root-mean-square normalisation over the last dim, as
    /// `torch.nn.functional.rms_norm(x, [n], weight, eps)`: each row over
    /// `sqrt(mean(x²) + eps)`, times `weight` (`[n]`, optional).
    pub fn rms_norm(&self, weight: Option<&Tensor<B, 1>>, eps: f64) -> Self {
        self.norm_with_stats(weight, None, eps, false).0
    }

    /// [`layer_norm`](Self::layer_norm) (`centre`) or
    /// [`rms_norm`](Self::rms_norm), with each row's statistics `[.., 2]`
    /// (its mean, 0 without `centre`, and `1 / sqrt(var + eps)`): what
    /// [`norm_backward`](Self::norm_backward) reads, so that a training
    /// forward keeps the input and these instead of a normalised copy.
    pub fn norm_with_stats(
        &self,
        weight: Option<&Tensor<B, 1>>,
        bias: Option<&Tensor<B, 1>>,
        eps: f64,
        centre: bool,
    ) -> (Self, Self) {
        let op = if centre { "layer_norm" } else { "rms_norm" };
        self.check_norm(op, weight, bias);
        let [y, stats] = B::norm(&self.storage, weight.map(|w| &w.storage), bias.map(|b| &b.storage), eps, centre);
        (Self::wrap(y), Self::wrap(stats))
    }

    /// The gradients of a normalisation's input, weight and bias (`[n]`
    /// each), where `self` is the output's gradient and `x` and `stats`
    /// the input and what [`norm_with_stats`](Self::norm_with_stats)
    /// returned with the same `weight` and `centre`.
    pub fn norm_backward(
        &self,
        x: &Self,
        stats: &Self,
        weight: Option<&Tensor<B, 1>>,
        centre: bool,
    ) -> (Self, Tensor<B, 1>, Tensor<B, 1>) {
        let op = "norm_backward";
        x.check_norm(op, weight, None);
        let mut rows = x.shape();
        rows[D - 1] = 2;
        assert!(
            self.shape() == x.shape()
                && stats.shape() == rows
                && self.dtype() == x.dtype()
                && stats.dtype() == x.dtype(),
            "{op}: expects a gradient shaped like the input {:?} and statistics {rows:?} of {}, got {:?} and {:?}",
            x.shape(),
            x.dtype(),
            self.shape(),
            stats.shape()
        );
        check_same_device::<B>(op, &[&self.storage, &x.storage, &stats.storage]);
        let [dx, dw, db] =
            B::norm_backward(&self.storage, &x.storage, &stats.storage, weight.map(|w| &w.storage), centre);
        (Self::wrap(dx), Tensor::wrap(dw), Tensor::wrap(db))
    }

    fn check_norm(&self, op: &str, weight: Option<&Tensor<B, 1>>, bias: Option<&Tensor<B, 1>>) {
        self.assert_float(op);
        let shape = self.shape();
        let n = shape.last().copied().unwrap_or(0);
        assert!(D >= 1 && n > 0, "{op}: normalises the last dim, which {shape:?} does not have");
        for (what, p) in [("weight", weight), ("bias", bias)] {
            if let Some(p) = p {
                assert!(
                    p.shape() == [n] && p.dtype() == self.dtype(),
                    "{op}: {what} must be [{n}] of {}, got {:?} of {}",
                    self.dtype(),
                    p.shape(),
                    p.dtype()
                );
                check_same_device::<B>(op, &[&self.storage, &p.storage]);
            }
        }
    }

    /// `log(sum(exp(x)))` over `dim`, kept with size 1, computed stably.
    pub fn logsumexp_dim(&self, dim: impl Dim) -> Self {
        self.assert_float("logsumexp_dim");
        let d = dim.index(D, "logsumexp_dim");
        let m = self.max_dim(d);
        self.sub(&m).exp().sum_dim(d).log().add(&m)
    }
}

impl<B: Backend> Tensor<B, 4> {
    /// 2-D convolution of `[n, c, h, w]` with `weight: [o, c / groups, kh,
    /// kw]` and an optional `bias: [o]`, as `torch.nn.functional.conv2d`.
    pub fn conv2d(&self, weight: &Tensor<B, 4>, bias: Option<&Tensor<B, 1>>, options: Conv2dOptions) -> Self {
        let [n, c, h, w] = self.shape();
        let [o, cg, kh, kw] = weight.shape();
        let g = options.groups;
        let msg = || format!("conv2d: input {} and weight {}", fmt_shape(&[n, c, h, w]), fmt_shape(&[o, cg, kh, kw]));
        self.assert_float("conv2d");
        assert!(weight.dtype() == self.dtype(), "{}: dtypes {} and {} differ", msg(), self.dtype(), weight.dtype());
        assert!(g > 0, "{}: groups must be positive", msg());
        assert!(c % g == 0 && o % g == 0, "{}: {g} groups do not divide {c} input and {o} output channels", msg());
        assert!(cg * g == c, "{}: the weight expects {} input channels, the input has {c}", msg(), cg * g);
        assert!(
            options.stride.iter().chain(&options.dilation).all(|&s| s > 0),
            "{}: stride and dilation must be positive, got {options:?}",
            msg()
        );
        let oh = window_output_size(h, kh, options.stride[0], options.padding[0], options.dilation[0]);
        let ow = window_output_size(w, kw, options.stride[1], options.padding[1], options.dilation[1]);
        assert!(
            oh.is_some() && ow.is_some() && kh > 0 && kw > 0,
            "{}: the {kh}x{kw} kernel (dilation {:?}) is larger than the padded {}x{} input",
            msg(),
            options.dilation,
            h + 2 * options.padding[0],
            w + 2 * options.padding[1]
        );
        if let Some(b) = bias {
            assert!(
                b.shape() == [o] && b.dtype() == self.dtype(),
                "{}: bias {} ({}) must be [{o}] ({})",
                msg(),
                fmt_shape(&b.shape()),
                b.dtype(),
                self.dtype()
            );
        }
        check_same_device::<B>("conv2d", &[&self.storage, &weight.storage]);
        if let Some(b) = bias {
            check_same_device::<B>("conv2d", &[&self.storage, &b.storage]);
        }
        Self::wrap(crate::precision::conv2d::<B>(&self.storage, &weight.storage, bias.map(|b| &b.storage), &options))
    }

    /// The gradient of [`Tensor::conv2d`] with respect to its input, given
    /// the gradient `self` of its output, as `torch.nn.grad.conv2d_input`.
    pub fn conv2d_input_grad(&self, weight: &Tensor<B, 4>, input_shape: [usize; 4], options: Conv2dOptions) -> Self {
        self.check_conv_grad("conv2d_input_grad", input_shape, weight.shape(), &options);
        check_same_device::<B>("conv2d_input_grad", &[&self.storage, &weight.storage]);
        Self::wrap(crate::precision::conv2d_input_grad::<B>(&self.storage, &weight.storage, input_shape, &options))
    }

    /// The gradient of `self.conv2d(w, ..)` with respect to `w`, given the
    /// gradient of its output, as `torch.nn.grad.conv2d_weight`.
    pub fn conv2d_weight_grad(
        &self,
        grad_out: &Tensor<B, 4>,
        weight_shape: [usize; 4],
        options: Conv2dOptions,
    ) -> Self {
        grad_out.check_conv_grad("conv2d_weight_grad", self.shape(), weight_shape, &options);
        check_same_device::<B>("conv2d_weight_grad", &[&self.storage, &grad_out.storage]);
        Self::wrap(crate::precision::conv2d_weight_grad::<B>(&self.storage, &grad_out.storage, weight_shape, &options))
    }

    /// Checks that `self` is the output gradient of a convolution of an
    /// `input` by a `weight` of the given shapes.
    fn check_conv_grad(&self, op: &str, input: [usize; 4], weight: [usize; 4], options: &Conv2dOptions) {
        self.assert_float(op);
        let [n, c, h, w] = input;
        let [o, cg, kh, kw] = weight;
        let g = options.groups;
        let oh = window_output_size(h, kh, options.stride[0], options.padding[0], options.dilation[0]);
        let ow = window_output_size(w, kw, options.stride[1], options.padding[1], options.dilation[1]);
        let valid = g > 0 && cg * g == c && o % g == 0 && oh.is_some() && ow.is_some();
        assert!(
            valid && self.shape() == [n, o, oh.unwrap_or(0), ow.unwrap_or(0)],
            "{op}: output gradient {} does not match a convolution of {} by {} with {options:?}",
            fmt_shape(&self.shape()),
            fmt_shape(&input),
            fmt_shape(&weight)
        );
    }

    /// The gradient of [`Tensor::avg_pool2d`] with respect to its input,
    /// given the gradient `self` of its output.
    pub fn avg_pool2d_input_grad(&self, input_shape: [usize; 4], options: Pool2dOptions) -> Self {
        self.assert_float("avg_pool2d_input_grad");
        let [n, c, h, w] = input_shape;
        let plane = options.output_plane(h, w);
        assert!(
            plane.is_some_and(|[oh, ow]| self.shape() == [n, c, oh, ow]),
            "avg_pool2d_input_grad: output gradient {} does not match pooling {} with {options:?}",
            fmt_shape(&self.shape()),
            fmt_shape(&input_shape)
        );
        Self::wrap(crate::adjoint::avg_pool2d::<B>(&self.storage, &input_shape, &options))
    }

    fn check_pool(&self, op: &str, options: &Pool2dOptions) {
        let shape = self.shape();
        let [kh, kw] = options.kernel;
        self.assert_float(op);
        assert!(
            kh > 0 && kw > 0 && options.stride.iter().all(|&s| s > 0),
            "{op}: kernel and stride must be positive, got {options:?}"
        );
        assert!(
            options.padding[0] * 2 <= kh && options.padding[1] * 2 <= kw,
            "{op}: padding {:?} must be at most half the kernel {:?}",
            options.padding,
            options.kernel
        );
        let fits = options.output_plane(shape[2], shape[3]).is_some();
        assert!(fits, "{op}: the {kh}x{kw} window is larger than the input {}", fmt_shape(&shape));
    }

    /// Max pooling, as `torch.nn.functional.max_pool2d`.
    pub fn max_pool2d(&self, options: Pool2dOptions) -> Self {
        self.check_pool("max_pool2d", &options);
        Self::wrap(B::max_pool2d(&self.storage, &options, false).0)
    }

    /// Max pooling and the i64 index of each maximum within its `h * w`
    /// input plane, as `max_pool2d(..., return_indices=True)`.
    pub fn max_pool2d_with_indices(&self, options: Pool2dOptions) -> (Self, Self) {
        self.check_pool("max_pool2d", &options);
        let (out, idx) = B::max_pool2d(&self.storage, &options, true);
        let idx = idx.unwrap_or_else(|| panic!("max_pool2d: the {} backend returned no indices", B::name()));
        (Self::wrap(out), Self::wrap(idx))
    }

    /// Average pooling, as `torch.nn.functional.avg_pool2d` (padded zeros
    /// count); in `ceil_mode` a window the rounding adds divides by its
    /// part inside the padded input, as PyTorch's does.
    pub fn avg_pool2d(&self, options: Pool2dOptions) -> Self {
        self.check_pool("avg_pool2d", &options);
        if options.ceil_mode {
            return Self::wrap(crate::adjoint::avg_pool2d_ceil::<B>(&self.storage, &options));
        }
        Self::wrap(B::avg_pool2d(&self.storage, &options))
    }
}
