//! What a device implements, in four tiers, and what a device is.
//!
//! - [`Primitives`]: the small set of ops every backend writes, and its
//!   storage. Everything else (softmax, losses, layers, optimizers) is
//!   written once in the runtime on top of these.
//! - [`Composites`]: ops with a default body made of primitives, which a
//!   backend may override with one fused pass that must agree with it.
//! - [`Kernels`]: `kernel!` kernels, elementwise and general.
//! - [`Precompiled`]: the runtime's code that depends on the backend alone
//!   (`fit`'s loop, saving and loading, ...), which a backend's crate
//!   compiles once for its type (each crate's table, [`precompiled`]).
//!
//! [`Backend`] is all four; code generic over a backend bounds on it.
//! Where work runs and how a device reports faults belong to the device
//! ([`Device`]), not to the backend. The runtime checks shapes and dtypes
//! before it calls a primitive, so backends may assume valid arguments;
//! each method says what it may assume.

mod compiled;
mod composed;
pub mod int8;
mod ops;

use std::fmt::Debug;
use std::ops::Range;

pub use self::compiled::{AnyTable, Precompiled, precompiled};
pub use self::composed::*;
pub use self::ops::{AdamStep, BinaryOp, CmpOp, Conv2dOptions, Pool2dOptions, ReduceOp, SoftmaxOptions, UnaryOp};
use crate::dtype::{DType, TensorData};
use crate::kernel_def::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups};
use crate::shape::Dims;

/// Where tensors live: a unit struct for the CPU, an adapter for a GPU.
pub trait Device: Clone + Debug + Default + PartialEq + Send + Sync + 'static {
    /// Waits for the work queued on this device and reports the first
    /// fault it has had (an allocation beyond its limits, a driver's
    /// out-of-memory, a lost device), as `torch.cuda.synchronize` would
    /// raise it. Ops cannot fail (they return tensors), so a device that
    /// can fail records the fault, stops running work, and answers here;
    /// the fallible entry points (`fit`, `nn::to_device`, a kernel launch
    /// on host data) call this and return the error. The default, for
    /// devices that cannot fail, is `Ok`.
    fn synchronize(&self) -> Result<(), crate::DeviceError> {
        Ok(())
    }

    /// Runs `f`, a training loop or other long stretch of work, where this
    /// device's ops run best. The CPU runs it on a thread of its pool, so a
    /// parallel op splits its work with that thread instead of parking it
    /// until the other threads are done. The default calls `f`.
    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        f()
    }
}

/// A backend: its [`Primitives`], [`Composites`], [`Kernels`] and
/// [`Precompiled`] loops. Every type that implements the four is one.
pub trait Backend: Primitives + Composites + Kernels + Precompiled {}

impl<B: Primitives + Composites + Kernels + Precompiled> Backend for B {}

/// A device of backend `B`. A device with one backend (`CpuDevice`) lets
/// `Model::new(&device)` infer the backend; others name it
/// (`Model::<Wgpu>::new(&device)`).
pub trait BackendDevice<B: Backend>: Clone {
    /// This device, typed as the backend's device.
    fn as_device(&self) -> &<B as Primitives>::Device;
}

/// The primitive ops: what every backend implements.
///
/// A backend's `Storage` is a tensor: a handle to its values on the device
/// together with its shape (and whatever layout the backend keeps). Cloning a
/// storage is cheap and shares the values; no primitive mutates its inputs.
///
/// Shapes and dtypes are validated by [`crate::Tensor`] before a primitive is
/// called; the "may assume" notes say what a backend can rely on.
pub trait Primitives: Clone + Copy + Debug + Default + Send + Sync + 'static {
    /// Where tensors live.
    type Device: Device;
    /// A tensor on the device.
    type Storage: Clone + Debug + Send + Sync;

    /// A short name for messages and benchmark tables.
    fn name() -> &'static str;

    // ---- storage -------------------------------------------------------

    /// Uploads host data. May assume the data is consistent (values fill the shape).
    fn from_data(data: TensorData, device: &Self::Device) -> Self::Storage;
    /// Downloads a tensor, row-major. This is the only point that waits for
    /// the device.
    fn to_data(x: &Self::Storage) -> TensorData;
    /// A tensor filled with one value (converted to `dtype` as `as` does).
    fn full(shape: &[usize], value: f64, dtype: DType, device: &Self::Device) -> Self::Storage;
    /// The dims of `x`.
    fn shape(x: &Self::Storage) -> &[usize];
    /// The dtype of `x`.
    fn dtype(x: &Self::Storage) -> DType;
    /// The device that holds `x`.
    fn device(x: &Self::Storage) -> Self::Device;
    /// The same values, cut from any recorded graph. Only a differentiating
    /// backend (`Autodiff`) has a graph; for the others this is a cheap clone.
    fn detach(x: &Self::Storage) -> Self::Storage {
        x.clone()
    }
    /// Converts every element to `dtype` (floats to i64 round toward zero;
    /// to bool: non-zero is true).
    fn cast(x: &Self::Storage, dtype: DType) -> Self::Storage;

    // ---- elementwise ---------------------------------------------------

    /// Applies `op` to every element. May assume `op.supports(dtype)`.
    fn unary(op: UnaryOp, x: &Self::Storage) -> Self::Storage;
    /// `a op b` with NumPy broadcasting. May assume equal dtypes supported by
    /// `op` and broadcastable shapes of equal rank.
    fn binary(op: BinaryOp, a: &Self::Storage, b: &Self::Storage) -> Self::Storage;
    /// `x op scalar`, the scalar converted to `x`'s dtype. May assume `op.supports(dtype)`.
    fn binary_scalar(op: BinaryOp, x: &Self::Storage, scalar: f64) -> Self::Storage;
    /// `a op b` with broadcasting, as a bool tensor. May assume equal dtypes
    /// and broadcastable shapes of equal rank.
    fn compare(op: CmpOp, a: &Self::Storage, b: &Self::Storage) -> Self::Storage;
    /// `x op scalar` as a bool tensor.
    fn compare_scalar(op: CmpOp, x: &Self::Storage, scalar: f64) -> Self::Storage;
    /// `cond ? a : b` elementwise with broadcasting over all three. May assume
    /// `cond` is bool, `a` and `b` share a dtype, and all have equal rank.
    fn where_cond(cond: &Self::Storage, a: &Self::Storage, b: &Self::Storage) -> Self::Storage;

    // ---- reductions ----------------------------------------------------

    /// Reduces `dim`, keeping it with size 1. May assume `dim < rank` and,
    /// for max/min/argmax/argmin, that the dim is not empty.
    fn reduce(op: ReduceOp, x: &Self::Storage, dim: usize) -> Self::Storage;

    // ---- linear algebra ------------------------------------------------

    /// Batched matrix product of `[..., m, k]` and `[..., k, n]`; the batch
    /// dims broadcast. May assume equal ranks >= 2, a float dtype shared by
    /// both, matching `k`, and broadcastable batch dims.
    fn matmul(a: &Self::Storage, b: &Self::Storage) -> Self::Storage;

    // ---- views and movement ----------------------------------------------

    /// The same values with another shape of equal element count.
    fn reshape(x: &Self::Storage, shape: &[usize]) -> Self::Storage;
    /// Reorders dims: output dim `i` is input dim `axes[i]`. May assume a permutation.
    fn permute(x: &Self::Storage, axes: &[usize]) -> Self::Storage;
    /// Broadcasts size-1 dims to `shape` (of equal rank).
    fn expand(x: &Self::Storage, shape: &[usize]) -> Self::Storage;
    /// Takes `ranges[d]` of every dim `d`. May assume in-bounds ranges, one per dim.
    fn slice(x: &Self::Storage, ranges: &[Range<usize>]) -> Self::Storage;
    /// Pads every dim `d` with `pads[d].0` values before and `pads[d].1` after.
    fn pad(x: &Self::Storage, pads: &[(usize, usize)], value: f64) -> Self::Storage;
    /// Joins tensors along `dim`. May assume at least one input, one dtype,
    /// and equal dims except `dim`.
    fn cat(xs: &[Self::Storage], dim: usize) -> Self::Storage;

    // ---- indexing --------------------------------------------------------

    /// `out[i][j][k] = x[i][index[i][j][k]][k]` for `dim = 1`, and so on.
    /// May assume an i64 `index` of `x`'s rank whose dims are at most `x`'s
    /// except at `dim`, with values in bounds.
    fn gather(x: &Self::Storage, dim: usize, index: &Self::Storage) -> Self::Storage;
    /// A copy of `x` with `out[i][index[i][j][k]][k] += src[i][j][k]` for
    /// `dim = 1`, and so on. May assume `index` and `src` of one shape, as for `gather`.
    fn scatter_add(x: &Self::Storage, dim: usize, index: &Self::Storage, src: &Self::Storage) -> Self::Storage;
    /// Picks the entries `index` (1-D, i64) of `dim`.
    fn index_select(x: &Self::Storage, dim: usize, index: &Self::Storage) -> Self::Storage;
    /// A copy of `x` with `src`'s slice `i` of `dim` added to slice `index[i]`.
    fn index_add(x: &Self::Storage, dim: usize, index: &Self::Storage, src: &Self::Storage) -> Self::Storage;

    // ---- convolution and pooling -------------------------------------------

    /// 2-D cross-correlation of `x: [n, c, h, w]` with `weight: [o, c / groups,
    /// kh, kw]`, plus `bias: [o]`. May assume consistent shapes, a float dtype
    /// and a non-empty output.
    fn conv2d(
        x: &Self::Storage,
        weight: &Self::Storage,
        bias: Option<&Self::Storage>,
        options: &Conv2dOptions,
    ) -> Self::Storage;
    /// Max pooling of `[n, c, h, w]`; with `with_indices`, also the i64 index
    /// of each maximum within its `h * w` plane (as PyTorch returns them).
    fn max_pool2d(
        x: &Self::Storage,
        options: &Pool2dOptions,
        with_indices: bool,
    ) -> (Self::Storage, Option<Self::Storage>);
    /// Average pooling of `[n, c, h, w]`; padded zeros count in the average
    /// (PyTorch's `count_include_pad=True`).
    fn avg_pool2d(x: &Self::Storage, options: &Pool2dOptions) -> Self::Storage;

    /// The gradient of [`Primitives::conv2d`] with respect to its input, given
    /// the gradient of its output (`torch.nn.grad.conv2d_input`): a
    /// transposed convolution back onto `input_shape`.
    fn conv2d_input_grad(
        grad_out: &Self::Storage,
        weight: &Self::Storage,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> Self::Storage;
    /// The gradient of [`Primitives::conv2d`] with respect to its weight
    /// (`torch.nn.grad.conv2d_weight`).
    fn conv2d_weight_grad(
        x: &Self::Storage,
        grad_out: &Self::Storage,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> Self::Storage;
    /// The gradient of [`Primitives::avg_pool2d`] with respect to its input.
    fn avg_pool2d_input_grad(
        grad_out: &Self::Storage,
        input_shape: [usize; 4],
        options: &Pool2dOptions,
    ) -> Self::Storage;
}

/// Ops with a default body made of primitives. A backend may override
/// one with a fused pass that must compute the same; the conformance
/// suite checks each against reference values on every backend.
pub trait Composites: Primitives {
    /// The i64 values of `range`, one dim (`torch.arange`); the runtime
    /// has checked that it is not reversed. The default uploads them from
    /// the host; a backend may write them in place.
    fn arange(range: Range<i64>, device: &Self::Device) -> Self::Storage {
        let values: Vec<i64> = range.collect();
        Self::from_data(TensorData { shape: vec![values.len()], values: crate::DataVec::I64(values) }, device)
    }

    /// The one value of a one-element tensor, as f64. The default reads
    /// the tensor back whole; a backend may read the value directly.
    fn item(x: &Self::Storage) -> f64 {
        Self::to_data(x).values.to_f64_vec()[0]
    }

    /// Softmax over `dim` in the form `o` says (log, scaled, causal). May
    /// assume a float dtype, a positive finite scale, and with `causal` a
    /// rank of at least 2 and `dim` the last. The default composes
    /// primitives; a backend may override it with a fused kernel that must
    /// agree.
    fn softmax(x: &Self::Storage, dim: usize, o: SoftmaxOptions) -> Self::Storage {
        composed_softmax::<Self>(x, dim, o)
    }

    /// `x`'s f32 values rounded to `dtype` (bf16 or f16) and kept in f32:
    /// what the rounded products' defaults multiply. The default rounds by
    /// two casts; a backend that rounds on its own side (wgpu, whose
    /// device holds neither 16-bit dtype) overrides it.
    fn round_to(x: &Self::Storage, dtype: DType) -> Self::Storage {
        rounded::<Self>(x, dtype)
    }

    /// `a @ b` (as [`Primitives::matmul`]) of f32 operands rounded to
    /// `dtype` (bf16 or f16), their products summed in f32, an f32 result:
    /// a product under a 16-bit [`crate::Precision`]. The default rounds
    /// with [`Composites::round_to`] and multiplies in f32, which gives the same products
    /// (each exact in f32); a backend with 16-bit units overrides it.
    fn matmul_rounded(a: &Self::Storage, b: &Self::Storage, dtype: DType) -> Self::Storage {
        composed_matmul_rounded::<Self>(a, b, dtype)
    }

    /// [`Primitives::conv2d`] of f32 `x` and `weight` rounded to `dtype`
    /// (bf16 or f16), the products summed in f32, the f32 `bias` added
    /// as it is: a convolution under a 16-bit [`crate::Precision`]. The
    /// default rounds each operand with [`Composites::round_to`].
    fn conv2d_rounded(
        x: &Self::Storage,
        weight: &Self::Storage,
        bias: Option<&Self::Storage>,
        options: &Conv2dOptions,
        dtype: DType,
    ) -> Self::Storage {
        Self::conv2d(&Self::round_to(x, dtype), &Self::round_to(weight, dtype), bias, options)
    }

    /// [`Primitives::conv2d_input_grad`] of f32 operands rounded to `dtype`,
    /// summed in f32.
    fn conv2d_input_grad_rounded(
        grad_out: &Self::Storage,
        weight: &Self::Storage,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
        dtype: DType,
    ) -> Self::Storage {
        Self::conv2d_input_grad(&Self::round_to(grad_out, dtype), &Self::round_to(weight, dtype), input_shape, options)
    }

    /// [`Primitives::conv2d_weight_grad`] of f32 operands rounded to
    /// `dtype`, summed in f32.
    fn conv2d_weight_grad_rounded(
        x: &Self::Storage,
        grad_out: &Self::Storage,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
        dtype: DType,
    ) -> Self::Storage {
        Self::conv2d_weight_grad(&Self::round_to(x, dtype), &Self::round_to(grad_out, dtype), weight_shape, options)
    }

    /// The gradient of a softmax's input from its output `y` and the
    /// output's gradient `g` (same shapes, same options as the forward):
    /// `scale * y * (g - sum(g * y))`, or for the log form
    /// `scale * (g - exp(y) * sum(g))`, sums over `dim`; masked entries get
    /// 0. The default composes primitives; a backend may make one pass.
    fn softmax_backward(g: &Self::Storage, y: &Self::Storage, dim: usize, o: SoftmaxOptions) -> Self::Storage {
        composed_softmax_backward::<Self>(g, y, dim, o)
    }

    /// `act(x + bias)` with `bias` (`[x.shape[dim]]`) added along `dim`: how a
    /// layer finishes, its bias and the activation after it. May assume a
    /// float dtype shared by both and that `act`, if any, is a float op.
    /// The default composes primitives; a backend may reuse `x`'s buffer
    /// and make one pass instead of two.
    fn bias_act(x: Self::Storage, bias: Option<&Self::Storage>, dim: usize, act: Option<UnaryOp>) -> Self::Storage {
        composed_bias_act::<Self>(x, bias, dim, act)
    }

    /// `act(x + bias) + residual`: [`Composites::bias_act`] with a residual
    /// connection (`residual` of `x`'s shape and dtype) added after the
    /// activation, how a block's last layer finishes. The default makes
    /// the add a pass of its own; a backend may fold it into the bias pass.
    fn bias_act_add(
        x: Self::Storage,
        bias: Option<&Self::Storage>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: &Self::Storage,
    ) -> Self::Storage {
        Self::binary(BinaryOp::Add, &Self::bias_act(x, bias, dim, act), residual)
    }

    /// The gradient of [`Primitives::max_pool2d`]'s input of shape `from`
    /// (`[n, c, h, w]`) from its output's gradient `g` (`[n, c, oh, ow]`)
    /// and the indices the forward returned: each gradient added at its
    /// maximum's place in its plane, zeros elsewhere. May assume a float
    /// `g`, i64 `indices` of `g`'s shape, each within its plane. The default
    /// scatters into a tensor of zeros; a backend may write each plane once.
    fn max_pool2d_input_grad(g: &Self::Storage, indices: &Self::Storage, from: [usize; 4]) -> Self::Storage {
        composed_max_pool2d_input_grad::<Self>(g, indices, from)
    }

    /// The sum of the squares of all of `x`'s elements, a rank-0 tensor of
    /// its dtype: the reduction a gradient norm makes every training step.
    /// May assume a float dtype. The default squares, then sums; a backend
    /// may make one pass without the temporary.
    fn sum_squares(x: &Self::Storage) -> Self::Storage {
        composed_sum_squares::<Self>(x)
    }

    /// Cross-entropy in one pass per row, if the backend has one: for
    /// `logits` `[n, c]` and class `targets` `[n]` (each in `0..c`, or
    /// `ignore_index` to leave its row out; i64, or f32 on a device that
    /// holds no i64, which `HostFallback` converts them to), with the target distribution
    /// `q = (1 - smoothing) onehot + smoothing / c`, each row's loss
    /// `logsumexp(z) - Σ q z` (`[n]`) and the gradient `(softmax(z) - q)
    /// grad_scale` (`[n, c]`), both 0 in rows left out. May assume a float
    /// dtype, those shapes and valid targets. The default returns `None`,
    /// and the loss composes ops (which the tape differentiates).
    fn cross_entropy(
        logits: &Self::Storage,
        targets: &Self::Storage,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(Self::Storage, Self::Storage)> {
        let _ = (logits, targets, smoothing, ignore_index, grad_scale);
        None
    }

    /// Attention for inference: `softmax(q kᵀ · o.scale) v`, causal when
    /// `o` says, for `q [.., T, d]`, `k [.., S, d]`, `v [.., S, e]` of equal
    /// batch dims, giving `[.., T, e]`. May assume a float dtype shared by
    /// all, those shapes, and `o.log` false. The default composes a
    /// product, the softmax and a product (the `[.., T, S]` weights in
    /// memory); a backend may tile it so that no thread holds more than a
    /// block of one query's scores.
    fn attention(q: &Self::Storage, k: &Self::Storage, v: &Self::Storage, o: SoftmaxOptions) -> Self::Storage {
        composed_attention::<Self>(q, k, v, o)
    }

    /// Normalises the last dim of `x`: `y = (x - mean) / sqrt(var + eps)`
    /// times `weight` plus `bias` (both `[n]`, optional), the statistics
    /// per row, the variance biased (LayerNorm); without `centre` the mean
    /// is taken as 0 and the variance is the mean square (RMSNorm).
    /// Returns `y` and each row's statistics `[.., 2]` (the mean, 0 without
    /// `centre`, and `1 / sqrt(var + eps)`), what
    /// [`Composites::norm_backward`] reads instead of a normalised copy.
    /// May assume a float dtype shared by all, a non-empty last dim, and
    /// parameters of its size. The default composes primitives; a backend
    /// may make one pass per row.
    fn norm(
        x: &Self::Storage,
        weight: Option<&Self::Storage>,
        bias: Option<&Self::Storage>,
        eps: f64,
        centre: bool,
    ) -> [Self::Storage; 2] {
        composed_norm::<Self>(x, weight, bias, eps, centre)
    }

    /// The gradients of [`Composites::norm`]'s input, weight and bias from
    /// the output's gradient `g`, the input and the statistics it returned
    /// (the weight's and bias's gradients are `[n]`, computed even where the
    /// layer has none). With `x̂ = (x - mean) rstd` and `gx = g weight`:
    /// `dx = rstd (gx - mean(gx) - x̂ mean(gx x̂))` (without `centre`, no
    /// `mean(gx)` term), `dweight = Σ g x̂` and `dbias = Σ g` over the rows.
    /// The default composes primitives; a backend may make one pass.
    fn norm_backward(
        g: &Self::Storage,
        x: &Self::Storage,
        stats: &Self::Storage,
        weight: Option<&Self::Storage>,
        centre: bool,
    ) -> [Self::Storage; 3] {
        composed_norm_backward::<Self>(g, x, stats, weight, centre)
    }

    /// One Adam or AdamW update (`o` says which, and the step): the
    /// parameter `p` and its moments `m` and `v` updated from the gradient
    /// `g`. May assume one float dtype for all four, `g` of `p`'s shape, and
    /// the moments flat (`[n]`) with as many values. The
    /// default composes primitives (about eight passes); a backend may
    /// update all three in one pass, in place.
    fn adam(p: &mut Self::Storage, m: &mut Self::Storage, v: &mut Self::Storage, g: &Self::Storage, o: AdamStep) {
        composed_adam::<Self>(p, m, v, g, o);
    }

    /// `x w^T` of f32 rows `x` (`[m, k]`) and an int8 weight `w` (`[n, k]`,
    /// [`crate::int8::QWeight`]): each row quantized to `u8` as `input`
    /// says, the products summed exactly in `i32` and scaled back to an
    /// f32 `[m, n]` ([`crate::int8`] defines every rounding). The
    /// default runs the portable kernel on the host; a backend with int8
    /// units overrides it and must give the same values.
    fn linear_int8(x: &Self::Storage, w: &crate::int8::QWeight, input: crate::int8::InputQuant) -> Self::Storage {
        composed_linear_int8::<Self>(x, w, input)
    }

    /// An int8 convolution of f32 `x` (`[n, c, h, w]`) with one weight per
    /// group: each image quantized to `u8` as `input` says, windows read
    /// from the quantized image, an f32 `[n, out, oh, ow]` without bias
    /// ([`crate::int8::conv2d_int8`] defines every rounding).
    /// The default runs that loop on the host; a backend with int8 units
    /// overrides it and must give the same values.
    fn conv2d_int8(
        x: &Self::Storage,
        weights: &[&crate::int8::QWeight],
        shape: &crate::int8::ConvShape,
        input: crate::int8::InputQuant,
    ) -> Self::Storage {
        composed_conv2d_int8::<Self>(x, weights, shape, input)
    }

    /// `y = a * y + b * x` (BLAS `axpby`), the update every optimizer makes.
    /// May assume a float dtype shared by both and equal shapes. The default
    /// composes primitives; a backend may update `y`'s buffer in place when
    /// nothing else shares it, in one pass instead of three.
    fn axpby(y: &mut Self::Storage, a: f64, x: &Self::Storage, b: f64) {
        composed_axpby::<Self>(y, a, x, b);
    }
}

/// `kernel!` kernels: what a backend runs for `#[kernel]` functions and
/// their generated partials.
pub trait Kernels: Composites {
    /// A tensor argument of a kernel call whose output has `shape`, as the
    /// kernel entry points below receive it. The default broadcasts it to
    /// `shape` ([`Primitives::expand`], a copy where it repeats values); a
    /// backend whose kernels read broadcast operands in place may return
    /// it unchanged, and then its entry points get tensors whose shapes
    /// broadcast to theirs.
    fn kernel_operand(x: &Self::Storage, shape: &[usize]) -> Self::Storage {
        Self::expand(x, shape)
    }

    /// Kernel `K` (or one of its partial derivatives) at every element of
    /// `shape`. May assume every tensor input is what
    /// [`Kernels::kernel_operand`] made of it (by default, of `shape`) and
    /// has the float `dtype`, and that there are as many inputs as `K` has
    /// arguments.
    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Self::Storage>],
        shape: &[usize],
        dtype: DType,
    ) -> Self::Storage;

    /// `scale` times the sum over the last dim of kernel `K` (or a partial)
    /// at every element of `shape`, that dim kept with size 1: a fused
    /// group with a sum or mean after it. Same assumptions as
    /// [`Kernels::elementwise`]. The default evaluates `K` over the whole
    /// shape, then sums; a backend may sum each row as it evaluates it,
    /// never holding the whole.
    fn elementwise_sum<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Self::Storage>],
        shape: &[usize],
        dtype: DType,
        scale: f64,
    ) -> Self::Storage {
        let full = Self::elementwise::<K>(f, inputs, shape, dtype);
        let sum = Self::reduce(ReduceOp::Sum, &full, shape.len() - 1);
        if scale == 1.0 { sum } else { Self::binary_scalar(BinaryOp::Mul, &sum, scale) }
    }

    /// The softmax (with `log`, the log-softmax) over the last dim of
    /// kernel `K` (or a partial) at every element of `shape`: a fused group
    /// with a softmax after it. Same assumptions as
    /// [`Kernels::elementwise`]. The default evaluates `K` over the whole
    /// shape, then the softmax; a backend may evaluate each row into the
    /// output and run its softmax there, holding nothing else.
    fn elementwise_softmax<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Self::Storage>],
        shape: &[usize],
        dtype: DType,
        log: bool,
    ) -> Self::Storage {
        let full = Self::elementwise::<K>(f, inputs, shape, dtype);
        let o = if log { SoftmaxOptions::default().log() } else { SoftmaxOptions::default() };
        Self::softmax(&full, shape.len() - 1, o)
    }

    /// The normalisation over the last dim ([`Composites::norm`]) of
    /// kernel `K` (or a partial) at every element of `shape`: a fused group
    /// with a LayerNorm or RMSNorm after it. Returns the output, the
    /// statistics and, with `keep`, the kernel's values (what the norm's
    /// backward reads). Same assumptions as [`Kernels::elementwise`] and
    /// [`Composites::norm`]. The default evaluates `K` over the whole
    /// shape, then normalises; a backend may normalise each row as it
    /// evaluates it, writing the values only when they are kept.
    fn elementwise_norm<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Self::Storage>],
        shape: &[usize],
        dtype: DType,
        norm: RowNorm<'_, Self::Storage>,
        keep: bool,
    ) -> (Self::Storage, Self::Storage, Option<Self::Storage>) {
        composed_elementwise_norm::<Self, K>(f, inputs, shape, dtype, norm, keep)
    }

    /// Runs general kernel `K` over `groups` workgroups. Buffers are `f32`
    /// tensors read (and, for outputs, written in place) as flat arrays in
    /// row-major order. May assume the arguments match `K`'s parameters.
    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, Self::Storage>], scalars: &[ScalarArg]);
}

/// A LayerNorm's or RMSNorm's parameters as [`Composites::norm`] takes
/// them: the optional `[n]` weight and bias, `eps`, and whether it
/// centres (LayerNorm) or not (RMSNorm).
#[derive(Debug)]
pub struct RowNorm<'a, S> {
    /// The per-feature scale, if any.
    pub weight: Option<&'a S>,
    /// The per-feature shift, if any.
    pub bias: Option<&'a S>,
    /// Added to the variance (or mean square).
    pub eps: f64,
    /// LayerNorm (subtract the mean) rather than RMSNorm.
    pub centre: bool,
}
