//! Every op's gradient, written once. Given the gradient `g` of an op's
//! output and what the op kept (its inputs, its output, or only their
//! shapes), each function returns the gradient of each input. Three
//! readers call them: the tape's rules (`autodiff/rules.rs`), the backward
//! code `#[model]` generates for forward bodies, and the layers' own
//! `backward` (`nn`). So a formula is fixed in one place, and the tape
//! and the generated backward agree by construction (the oracle tests
//! check it, and finite differences check the formulas).
//!
//! They work on backend storages of any rank, which is what the tape
//! holds; typed callers wrap the result (`Tensor::from_storage`). None
//! allocates on the heap beyond the ops it runs, so a generated training
//! step stays allocation-free.

use std::ops::Range;

use crate::backend::{Backend, BinaryOp, CmpOp, Primitives, ReduceOp, SoftmaxOptions, UnaryOp};
use crate::kernel_def::{Elementwise, KernelArg, KernelFn};
use crate::shape::Dims;
use crate::unary::{UnaryKernel, UnaryVisitor};
use crate::{Conv2dOptions, Pool2dOptions};
use blaze_spec::ops::MAX_UNARY_PARAMS;

type S<B> = <B as Primitives>::Storage;

fn mul<B: Backend>(a: &S<B>, b: &S<B>) -> S<B> {
    B::binary(BinaryOp::Mul, a, b)
}

fn div<B: Backend>(a: &S<B>, b: &S<B>) -> S<B> {
    B::binary(BinaryOp::Div, a, b)
}

fn scale<B: Backend>(a: &S<B>, s: f64) -> S<B> {
    B::binary_scalar(BinaryOp::Mul, a, s)
}

/// Zeros of `like`'s dtype and device, of `shape`.
fn zeros<B: Backend>(like: &S<B>, shape: &[usize]) -> S<B> {
    B::full(shape, 0.0, B::dtype(like), &B::device(like))
}

/// A one-element zero of `like`'s rank, which broadcasts.
fn zero<B: Backend>(like: &S<B>) -> S<B> {
    scratch(B::shape(like).len(), |ones: &mut [usize]| {
        ones.fill(1);
        zeros::<B>(like, ones)
    })
}

/// A mask as 0/1 of `like`'s dtype.
fn as_float<B: Backend>(mask: &S<B>, like: &S<B>) -> S<B> {
    B::cast(mask, B::dtype(like))
}

/// Runs `f` on `n` default values: on the stack up to rank 8 (every
/// training step's case, so it stays allocation-free), else on the heap.
fn scratch<T: Clone + Default, R>(n: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    if n <= 8 {
        let mut a: [T; 8] = Default::default();
        f(&mut a[..n])
    } else {
        f(&mut vec![T::default(); n])
    }
}

// ---- broadcasting and movement --------------------------------------------

/// The gradient of an operand of shape `shape` broadcast to `g`'s shape:
/// `g` summed over the dims where `shape` has 1 and `g` does not.
pub fn sum_to<B: Backend>(g: S<B>, shape: &[usize]) -> S<B> {
    let mut out = g;
    for (d, &want) in shape.iter().enumerate() {
        if want == 1 && B::shape(&out)[d] != 1 {
            out = B::reduce(ReduceOp::Sum, &out, d);
        }
    }
    out
}

/// `permute(axes)`: `g` permuted back by the inverse.
pub fn permute<B: Backend>(g: &S<B>, axes: &[usize]) -> S<B> {
    scratch(axes.len(), |inverse: &mut [usize]| {
        for (i, &a) in axes.iter().enumerate() {
            inverse[a] = i;
        }
        B::permute(g, inverse)
    })
}

/// `reshape` of an input of shape `from`.
pub fn reshape<B: Backend>(g: &S<B>, from: &[usize]) -> S<B> {
    B::reshape(g, from)
}

/// `slice(ranges)` of an input of shape `from`: `g` padded with zeros.
pub fn slice<B: Backend>(g: &S<B>, from: &[usize], ranges: &[Range<usize>]) -> S<B> {
    scratch(from.len(), |pads: &mut [(usize, usize)]| {
        for (d, (r, &n)) in ranges.iter().zip(from).enumerate() {
            pads[d] = (r.start, n - r.end);
        }
        B::pad(g, pads, 0.0)
    })
}

/// `narrow(dim, start, len)` of an input of size `size` along `dim`.
pub fn narrow<B: Backend>(g: &S<B>, dim: usize, start: usize, size: usize) -> S<B> {
    let shape = B::shape(g);
    scratch(shape.len(), |pads: &mut [(usize, usize)]| {
        pads[dim] = (start, size - start - shape[dim]);
        B::pad(g, pads, 0.0)
    })
}

/// `pad(pads)` of an input of shape `from`: the unpadded part of `g`.
pub fn pad<B: Backend>(g: &S<B>, from: &[usize], pads: &[(usize, usize)]) -> S<B> {
    scratch(from.len(), |ranges: &mut [Range<usize>]| {
        for (d, (&(before, _), &n)) in pads.iter().zip(from).enumerate() {
            ranges[d] = before..before + n;
        }
        B::slice(g, ranges)
    })
}

/// The gradient of the `cat` input that sits at `start..start + len`
/// along `dim`.
pub fn cat_piece<B: Backend>(g: &S<B>, dim: usize, start: usize, len: usize) -> S<B> {
    let shape = B::shape(g);
    scratch(shape.len(), |ranges: &mut [Range<usize>]| {
        for (d, &n) in shape.iter().enumerate() {
            ranges[d] = if d == dim { start..start + len } else { 0..n };
        }
        B::slice(g, ranges)
    })
}

// ---- elementwise ------------------------------------------------------------

/// `-x`.
pub fn neg<B: Backend>(g: &S<B>) -> S<B> {
    B::unary(UnaryOp::Neg, g)
}

/// The gradient of unary `op` at input `x` with output `y`: the op's
/// adjoint kernel from the op table (`crate::unary`), `g * ∂f/∂x` in one
/// pass, from `y` where the table writes the derivative in the output
/// ([`UnaryOp::grad_of_output`]), else from `x`.
pub fn unary<B: Backend>(op: UnaryOp, x: &S<B>, y: &S<B>, g: &S<B>) -> S<B> {
    let from = if op.grad_of_output() { y } else { x };
    (AdjointTable::<B>::of().unary_grad)(op, from, g)
}

crate::precompiled_table! {
    /// The op table's gradients, compiled once per backend
    /// ([`Precompiled`](crate::Precompiled)).
    pub struct AdjointTable<B> {
        unary_grad: fn(UnaryOp, &S<B>, &S<B>) -> S<B> = unary_grad::<B>,
    }
}

/// [`unary`] from what the op's adjoint reads, compiled once per backend
/// in its [`AdjointTable`]: a user's crate does not
/// compile a kernel per op.
pub(crate) fn unary_grad<B: Backend>(op: UnaryOp, from: &S<B>, g: &S<B>) -> S<B> {
    /// The op's adjoint on `from` and `g`.
    struct Adjoint<'a, B: Backend> {
        from: &'a S<B>,
        g: &'a S<B>,
    }
    impl<B: Backend> UnaryVisitor for Adjoint<'_, B> {
        type Out = S<B>;
        fn visit<K: UnaryKernel>(self, params: &[f64]) -> S<B> {
            // On the stack: the input (or output), the parameters, `g`.
            let mut args: [KernelArg<S<B>>; MAX_UNARY_PARAMS + 2] = std::array::from_fn(|_| KernelArg::Number(0.0));
            args[0] = KernelArg::Tensor(self.from.clone());
            for (a, &p) in args[1..].iter_mut().zip(params) {
                *a = KernelArg::Number(p);
            }
            let n = params.len() + 2;
            args[n - 1] = KernelArg::Tensor(self.g.clone());
            let shape = Dims::from(B::shape(self.g));
            B::elementwise::<K::Adjoint>(KernelFn::Value, &args[..n], &shape, B::dtype(self.g))
        }
    }
    // No float body (`logical_not`): not differentiable.
    op.visit(Adjoint::<B> { from, g }).unwrap_or_else(|| zeros::<B>(g, B::shape(g)))
}

// Each operand's gradient of a broadcasting binary op has its own
// function, so a caller computes only the ones it needs; each is summed
// to its operand's shape.

/// Either operand of `a + b`, and `a` of `a - b`: `g`.
pub fn add<B: Backend>(g: &S<B>, shape: &[usize]) -> S<B> {
    sum_to::<B>(g.clone(), shape)
}

/// `b` of `a - b`: `-g`.
pub fn sub_rhs<B: Backend>(g: &S<B>, shape: &[usize]) -> S<B> {
    sum_to::<B>(neg::<B>(g), shape)
}

/// An operand of `a * b`: `g` times the other operand.
pub fn mul_operand<B: Backend>(g: &S<B>, other: &S<B>, shape: &[usize]) -> S<B> {
    sum_to::<B>(mul::<B>(g, other), shape)
}

/// `a` of `y = a / b`: `g / b`.
pub fn div_lhs<B: Backend>(g: &S<B>, b: &S<B>, shape: &[usize]) -> S<B> {
    sum_to::<B>(div::<B>(g, b), shape)
}

/// `b` of `y = a / b`: `-g y / b`.
pub fn div_rhs<B: Backend>(g: &S<B>, b: &S<B>, y: &S<B>) -> S<B> {
    sum_to::<B>(neg::<B>(&div::<B>(&mul::<B>(g, y), b)), B::shape(b))
}

/// `g ∂K/∂a` and `g ∂K/∂b` for the kernel `K` of a binary op of the op
/// table, each summed to its input's shape: the derivative the op's
/// table entry gives, which the fused op shares.
fn by_table<B: Backend, K: Elementwise>(a: &S<B>, b: &S<B>, g: &S<B>) -> [S<B>; 2] {
    let (shape, dtype) = (B::shape(g), B::dtype(g));
    let args = [KernelArg::Tensor(B::kernel_operand(a, shape)), KernelArg::Tensor(B::kernel_operand(b, shape))];
    let by = |i| mul::<B>(g, &B::elementwise::<K>(KernelFn::Partial(i), &args, shape, dtype));
    [sum_to::<B>(by(0), B::shape(a)), sum_to::<B>(by(1), B::shape(b))]
}

/// The gradients of binary `op`'s inputs `a` and `b`.
pub fn binary<B: Backend>(op: BinaryOp, a: &S<B>, b: &S<B>, g: &S<B>) -> [S<B>; 2] {
    let (sa, sb) = (B::shape(a), B::shape(b));
    match op {
        BinaryOp::Add => [add::<B>(g, sa), add::<B>(g, sb)],
        BinaryOp::Sub => [add::<B>(g, sa), sub_rhs::<B>(g, sb)],
        BinaryOp::Mul => [mul_operand::<B>(g, b, sa), mul_operand::<B>(g, a, sb)],
        BinaryOp::Div => [div_lhs::<B>(g, b, sa), div_rhs::<B>(g, b, &div::<B>(a, b))],
        // The op table's partials, which a fused group's backward reads:
        // PyTorch's `b a^(b-1)` and `a^b ln a`, 0 where these are NaN.
        BinaryOp::Pow => by_table::<B, crate::binary::pow::Kernel>(a, b, g),
        // PyTorch's: ties split the gradient (the table writes it).
        BinaryOp::Maximum => by_table::<B, crate::binary::maximum::Kernel>(a, b, g),
        BinaryOp::Minimum => by_table::<B, crate::binary::minimum::Kernel>(a, b, g),
        // Boolean ops are not differentiable (the tape records none).
        BinaryOp::And | BinaryOp::Or => [zeros::<B>(a, sa), zeros::<B>(b, sb)],
    }
}

/// `x * s` for a number `s` (and `x / s` with `1 / s`): `g s`.
pub fn scale_by<B: Backend>(g: &S<B>, s: f64) -> S<B> {
    scale::<B>(g, s)
}

/// A transposition of dims `d0` and `d1`, its own inverse.
pub fn transpose_dims<B: Backend>(g: &S<B>, d0: usize, d1: usize) -> S<B> {
    scratch(B::shape(g).len(), |axes: &mut [usize]| {
        for (i, a) in axes.iter_mut().enumerate() {
            *a = i;
        }
        axes.swap(d0, d1);
        B::permute(g, axes)
    })
}

/// `y = s / x`: `-g y / x`.
pub fn rdiv_scalar<B: Backend>(g: &S<B>, x: &S<B>, y: &S<B>) -> S<B> {
    neg::<B>(&div::<B>(&mul::<B>(g, y), x))
}

/// The gradient of `x op s`, a scalar `s` on the right.
pub fn binary_scalar<B: Backend>(op: BinaryOp, x: &S<B>, s: f64, g: &S<B>) -> S<B> {
    match op {
        BinaryOp::Add | BinaryOp::Sub => g.clone(),
        BinaryOp::Mul => scale::<B>(g, s),
        BinaryOp::Div => scale::<B>(g, 1.0 / s),
        // PyTorch's: `s x^(s-1)`, and 0 for `s = 0` (not `0 x^-1`, NaN at 0).
        BinaryOp::Pow if s == 0.0 => zeros::<B>(x, B::shape(x)),
        BinaryOp::Pow => mul::<B>(g, &scale::<B>(&B::binary_scalar(BinaryOp::Pow, x, s - 1.0), s)),
        // `clamp_min` and `clamp_max`, as PyTorch's clamp: the gradient
        // passes where `x` is inside, its bound included.
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let inside = if op == BinaryOp::Maximum { CmpOp::Ge } else { CmpOp::Le };
            mul::<B>(g, &as_float::<B>(&B::compare_scalar(inside, x, s), x))
        }
        BinaryOp::And | BinaryOp::Or => zeros::<B>(x, B::shape(x)),
    }
}

/// `where(cond, a, b)`: `g` where `cond` to `a`, elsewhere to `b`.
pub fn where_cond<B: Backend>(g: &S<B>, cond: &S<B>, a_shape: &[usize], b_shape: &[usize]) -> [S<B>; 2] {
    let zero = zero::<B>(g);
    [sum_to::<B>(B::where_cond(cond, g, &zero), a_shape), sum_to::<B>(B::where_cond(cond, &zero, g), b_shape)]
}

/// `masked_fill(mask, v)`: the filled places get no gradient.
pub fn masked_fill<B: Backend>(g: &S<B>, mask: &S<B>) -> S<B> {
    B::where_cond(mask, &zero::<B>(g), g)
}

/// The bias of `bias_act` along `dim`: `g` summed over every other dim.
pub fn bias<B: Backend>(g: &S<B>, dim: usize) -> S<B> {
    let shape = Dims::from(B::shape(g));
    let mut s = g.clone();
    for d in (0..shape.len()).rev().filter(|&d| d != dim) {
        s = B::reduce(ReduceOp::Sum, &s, d);
    }
    B::reshape(&s, &[shape[dim]])
}

/// `x * f` for a factor `f` that does not depend on `x` (a dropout mask,
/// a `kernel!` kernel's partial derivative for that input): `g f`.
pub fn times<B: Backend>(g: &S<B>, factor: &S<B>) -> S<B> {
    mul::<B>(g, factor)
}

// ---- reductions and softmax -----------------------------------------------

/// `sum_dim` over an input of shape `x_shape` (the dim kept with size 1).
pub fn sum<B: Backend>(g: &S<B>, x_shape: &[usize]) -> S<B> {
    B::expand(g, x_shape)
}

/// A mean of `count` elements each (over one dim or several, kept with
/// size 1) of an input of shape `x_shape`: `g / count` spread back.
pub fn mean<B: Backend>(g: &S<B>, x_shape: &[usize], count: usize) -> S<B> {
    scale::<B>(&B::expand(g, x_shape), 1.0 / count as f64)
}

/// `y = x Wᵀ + b` of rows `x: [n, i]` and `W: [o, i]`: the input's
/// gradient, `g W`.
pub fn linear_input<B: Backend>(g: &S<B>, w: &S<B>) -> S<B> {
    crate::precision::matmul::<B>(g, w)
}

/// `y = x Wᵀ + b`: the weight's gradient, `gᵀ x`, and the bias's (when
/// there is one), the column sums of `g`.
pub fn linear_params<B: Backend>(g: &S<B>, x: &S<B>, bias: bool) -> (S<B>, Option<S<B>>) {
    (crate::precision::matmul::<B>(&B::permute(g, &[1, 0]), x), bias.then(|| self::bias::<B>(g, 1)))
}

/// `y = max_dim(x, dim)` (or min): the extreme elements get `g`, split
/// evenly between ties (as `torch.amax`).
pub fn extreme<B: Backend>(g: &S<B>, x: &S<B>, y: &S<B>, dim: usize) -> S<B> {
    let xs = B::shape(x);
    let hits = as_float::<B>(&B::compare(CmpOp::Eq, x, &B::expand(y, xs)), x);
    let count = B::expand(&B::reduce(ReduceOp::Sum, &hits, dim), xs);
    div::<B>(&mul::<B>(&B::expand(g, xs), &hits), &count)
}

/// `y = softmax(x, dim)` in the form `o` says: `scale y (g - sum(g y))`,
/// for the log form `scale (g - exp(y) sum(g))`, masked entries 0 (see
/// [`Composites::softmax_backward`](crate::backend::Composites::softmax_backward)).
pub fn softmax<B: Backend>(g: &S<B>, y: &S<B>, dim: usize, o: SoftmaxOptions) -> S<B> {
    B::softmax_backward(g, y, dim, o)
}

// ---- linear algebra, convolution, pooling, indexing -------------------------

/// Swaps the last two dims.
fn transpose<B: Backend>(x: &S<B>) -> S<B> {
    let r = B::shape(x).len();
    transpose_dims::<B>(x, r - 2, r - 1)
}

/// `a @ b` (batch dims broadcast) for an `a` of shape `a_shape`: `g bᵀ`.
pub fn matmul_lhs<B: Backend>(g: &S<B>, b: &S<B>, a_shape: &[usize]) -> S<B> {
    sum_to::<B>(crate::precision::matmul::<B>(g, &transpose::<B>(b)), a_shape)
}

/// `a @ b` for a `b` of shape `b_shape`: `aᵀ g`.
pub fn matmul_rhs<B: Backend>(g: &S<B>, a: &S<B>, b_shape: &[usize]) -> S<B> {
    sum_to::<B>(crate::precision::matmul::<B>(&transpose::<B>(a), g), b_shape)
}

/// `conv2d(x, w)` of an input of shape `x_shape`: its gradient.
pub fn conv2d_input<B: Backend>(g: &S<B>, w: &S<B>, x_shape: [usize; 4], o: &Conv2dOptions) -> S<B> {
    crate::precision::conv2d_input_grad::<B>(g, w, x_shape, o)
}

/// `conv2d(x, w)` with a weight of shape `w_shape`: its gradient.
pub fn conv2d_weight<B: Backend>(g: &S<B>, x: &S<B>, w_shape: [usize; 4], o: &Conv2dOptions) -> S<B> {
    crate::precision::conv2d_weight_grad::<B>(x, g, w_shape, o)
}

/// A transposed convolution, `y = conv2d_input_grad(x, w)` (the adjoint of
/// `conv2d(., w)`): the input's gradient is the convolution of `g`.
pub fn conv_transpose2d_input<B: Backend>(g: &S<B>, w: &S<B>, o: &Conv2dOptions) -> S<B> {
    crate::precision::conv2d::<B>(g, w, None, o)
}

/// A transposed convolution with a weight of shape `w_shape`: the weight's
/// gradient, that of the convolution of `g` whose output gradient is `x`.
pub fn conv_transpose2d_weight<B: Backend>(g: &S<B>, x: &S<B>, w_shape: [usize; 4], o: &Conv2dOptions) -> S<B> {
    crate::precision::conv2d_weight_grad::<B>(g, x, w_shape, o)
}

/// `max_pool2d` of an input of shape `from` whose maxima sat at `idx`
/// (per plane): `g` scattered back there.
pub fn max_pool2d<B: Backend>(g: &S<B>, from: &[usize], idx: &S<B>) -> S<B> {
    let from: [usize; 4] = from.try_into().unwrap_or_else(|_| panic!("max_pool2d: input of rank {}", from.len()));
    B::max_pool2d_input_grad(g, idx, from)
}

/// `avg_pool2d` of an input of shape `from`; in `ceil_mode`, the adjoint
/// of [`avg_pool2d_ceil`]'s steps: `g` over the windows' share of the
/// padded input, pooled back over the extended input, cut to `from`.
pub fn avg_pool2d<B: Backend>(g: &S<B>, from: &[usize], o: &Pool2dOptions) -> S<B> {
    let xs: [usize; 4] = from.try_into().unwrap_or_else(|_| panic!("avg_pool2d: input of rank {}", from.len()));
    if !o.ceil_mode {
        return B::avg_pool2d_input_grad(g, xs, o);
    }
    let (floor, extended, share) = ceil_windows::<B>(xs, o, B::dtype(g), &B::device(g));
    let scaled = B::binary(BinaryOp::Div, g, &share);
    let gx = B::avg_pool2d_input_grad(&scaled, extended, &floor);
    B::slice(&gx, &[0..xs[0], 0..xs[1], 0..xs[2], 0..xs[3]])
}

/// Average pooling in `ceil_mode` (PyTorch's rule: a window that runs
/// past the padded input divides by the part of it inside), composed of
/// the primitives: the input extended with zeros at the bottom and right
/// until the last window fits, pooled as usual (every window dividing by
/// its full size), then each output divided by the share of its window
/// that lies inside the padded input.
pub fn avg_pool2d_ceil<B: Backend>(x: &S<B>, o: &Pool2dOptions) -> S<B> {
    let shape: [usize; 4] =
        B::shape(x).try_into().unwrap_or_else(|_| panic!("avg_pool2d: input of rank {}", B::shape(x).len()));
    let (floor, extended, share) = ceil_windows::<B>(shape, o, B::dtype(x), &B::device(x));
    let pads = [(0, 0), (0, 0), (0, extended[2] - shape[2]), (0, extended[3] - shape[3])];
    let y = B::avg_pool2d(&B::pad(x, &pads, 0.0), &floor);
    B::binary(BinaryOp::Div, &y, &share)
}

/// For a `ceil_mode` pooling of an input of `shape`: the same pooling
/// rounding down, the input's shape extended so that it gives the
/// rounded-up size, and `[1, 1, oh, ow]` holding each window's share
/// inside the padded input (1 but for the windows the rounding added).
fn ceil_windows<B: Backend>(
    shape: [usize; 4],
    o: &Pool2dOptions,
    dtype: crate::DType,
    device: &B::Device,
) -> (Pool2dOptions, [usize; 4], S<B>) {
    let [_, _, h, w] = shape;
    let [oh, ow] = o.output_plane(h, w).unwrap_or_else(|| panic!("avg_pool2d: the window does not fit {shape:?}"));
    let floor = Pool2dOptions { ceil_mode: false, ..*o };
    let reach = |out: usize, i: usize| (out - 1) * o.stride[i] + o.kernel[i];
    // The input plus its padding on both sides, as the windows see it.
    let padded = [h + 2 * o.padding[0], w + 2 * o.padding[1]];
    let extended = [shape[0], shape[1], h.max(reach(oh, 0) - 2 * o.padding[0]), w.max(reach(ow, 1) - 2 * o.padding[1])];
    // Pooling ones over the padded plane, zeros past it, by the floor
    // windows without padding: each window's share inside.
    let ones = B::full(&[1, 1, padded[0], padded[1]], 1.0, dtype, device);
    let past =
        [(0, 0), (0, 0), (0, reach(oh, 0).max(padded[0]) - padded[0]), (0, reach(ow, 1).max(padded[1]) - padded[1])];
    let share = B::avg_pool2d(&B::pad(&ones, &past, 0.0), &Pool2dOptions { padding: [0, 0], ..floor });
    (floor, extended, share)
}

/// `gather(dim, idx)` of an input of shape `from`.
pub fn gather<B: Backend>(g: &S<B>, from: &[usize], dim: usize, idx: &S<B>) -> S<B> {
    B::scatter_add(&zeros::<B>(g, from), dim, idx, g)
}

/// `index_select(dim, idx)` of an input of shape `from`.
pub fn index_select<B: Backend>(g: &S<B>, from: &[usize], dim: usize, idx: &S<B>) -> S<B> {
    B::index_add(&zeros::<B>(g, from), dim, idx, g)
}

/// `scatter_add(dim, idx, src)`: `g` to the input, `g` gathered to `src`.
pub fn scatter_add<B: Backend>(g: &S<B>, dim: usize, idx: &S<B>) -> [S<B>; 2] {
    [g.clone(), B::gather(g, dim, idx)]
}

/// `index_add(dim, idx, src)`: `g` to the input, `g` selected to `src`.
pub fn index_add<B: Backend>(g: &S<B>, dim: usize, idx: &S<B>) -> [S<B>; 2] {
    [g.clone(), B::index_select(g, dim, idx)]
}
