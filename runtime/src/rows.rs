//! The row ops the GPU backends run, one module per kernel of
//! `blaze_spec::rows` (printed from the op's one definition, which the CPU
//! backend runs over slices): the kernel's type (`Workgroups`), its WGSL,
//! which the wgpu backend runs, and its `launch` on any backend (the CPU
//! runs its workgroups in lockstep). The CubeCL backend prints its
//! `#[cube]` code from the same kernel, so every backend computes each
//! row op from one definition.
//!
//! - [`softmax`]: softmax or log-softmax of `scale * x` along rows, with
//!   an optional causal mask.
//! - [`softmax_backward`]: its adjoint.
//! - [`norm`]: LayerNorm or RMSNorm over the last dim, with each row's
//!   statistics; [`norm_backward`] and [`norm_params`]: the gradients of
//!   its input and of its weight and bias.
//! - [`cross_entropy`]: cross-entropy's loss per row and its gradient.
//!
//! A softmax's rows are the middle dim of `[outer, n, inner]`, a norm's
//! the last dim; [`softmax_args`], [`norm_args`], [`cross_entropy_args`]
//! and their backward forms give the scalars, as `blaze_spec::rows`
//! documents them.

use crate::backend::SoftmaxOptions;
use crate::kernel::ScalarArg;

blaze_macros::__row_kernels!();

/// A softmax of a tensor of `shape` along `dim` as [`softmax`]'s kernel
/// takes it: the number of rows and the scalars, `rows, n, inner,
/// queries, causal, scale, take_log, masked`. Panics, naming the op, past
/// the kernels' 32-bit sizes.
pub fn softmax_args(shape: &[usize], dim: usize, o: SoftmaxOptions) -> (usize, [ScalarArg; 8]) {
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let rows = shape[..dim].iter().product::<usize>() * inner;
    let queries = if o.causal { shape[shape.len() - 2] } else { 1 };
    let word = |x: usize| {
        u32::try_from(x).unwrap_or_else(|_| panic!("softmax: {shape:?} has {x} rows or entries, past 32-bit sizes"))
    };
    let masked = if o.log { f32::NEG_INFINITY } else { 0.0 };
    let scalars = [
        word(rows).into(),
        word(n).into(),
        word(inner).into(),
        word(queries).into(),
        u32::from(o.causal).into(),
        (o.scale as f32).into(),
        u32::from(o.log).into(),
        masked.into(),
    ];
    (rows, scalars)
}

/// The adjoint of a softmax as [`softmax_backward`]'s kernel takes it:
/// [`softmax_args`] without the forward's `masked` value.
pub fn softmax_backward_args(shape: &[usize], dim: usize, o: SoftmaxOptions) -> (usize, [ScalarArg; 7]) {
    let (rows, s) = softmax_args(shape, dim, o);
    (rows, [s[0], s[1], s[2], s[3], s[4], s[5], s[6]])
}

/// A norm of a tensor of `shape` over its last dim as [`norm`]'s kernel
/// takes it: the rows, the row's length, and the scalars `rows, n, centre,
/// eps, has_w, has_b`.
pub fn norm_args(shape: &[usize], eps: f64, centre: bool, has_w: bool, has_b: bool) -> (usize, usize, [ScalarArg; 6]) {
    let n = shape.last().copied().unwrap_or(1);
    let rows = shape.iter().product::<usize>() / n.max(1);
    let word = |x: usize| {
        u32::try_from(x).unwrap_or_else(|_| panic!("norm: {shape:?} has {x} rows or entries, past 32-bit sizes"))
    };
    let scalars = [
        word(rows).into(),
        word(n).into(),
        u32::from(centre).into(),
        (eps as f32).into(),
        u32::from(has_w).into(),
        u32::from(has_b).into(),
    ];
    (rows, n, scalars)
}

/// The gradients of a norm as its kernels take them: the rows, the row's
/// length, [`norm_backward`]'s scalars `rows, n, centre, has_w` and
/// [`norm_params`]'s `rows, n` (a workgroup per column of the `n`).
pub fn norm_backward_args(
    shape: &[usize],
    centre: bool,
    has_w: bool,
) -> (usize, usize, [ScalarArg; 4], [ScalarArg; 2]) {
    let (rows, n, [r, len, centre, _, has_w, _]) = norm_args(shape, 0.0, centre, has_w, false);
    (rows, n, [r, len, centre, has_w], [r, len])
}

/// Cross-entropy of `[n, c]` logits as [`cross_entropy`]'s kernel takes it:
/// the scalars `rows, c, keep, spread, scale, ignore, nan`, or `None` for
/// an `ignore_index` past i32 (the kernel compares targets as i32).
pub fn cross_entropy_args(
    n: usize,
    c: usize,
    smoothing: f64,
    ignore_index: i64,
    grad_scale: f64,
) -> Option<[ScalarArg; 7]> {
    let ignore = i32::try_from(ignore_index).ok()?;
    let word =
        |x: usize| u32::try_from(x).unwrap_or_else(|_| panic!("cross_entropy: [{n}, {c}] logits, past 32-bit sizes"));
    let f = |v: f64| ScalarArg::from(v as f32);
    Some([
        word(n).into(),
        word(c).into(),
        f(1.0 - smoothing),
        f(smoothing / c as f64),
        f(grad_scale),
        ignore.into(),
        f32::NAN.into(),
    ])
}

/// What a backend gives to run the row ops through [`launch`]: f32
/// storage and a launch of a row kernel. The host side of each op (its
/// outputs, scalars, bindings and empty cases) is then written once, in
/// [`launch`], for every backend that runs the kernels.
pub trait RowLaunch: crate::Primitives {
    /// An f32 tensor of `shape` on `device`, its values not yet written.
    fn empty_f32(shape: &[usize], device: &Self::Device) -> Self::Storage;

    /// Runs row kernel `K` (one of this module's) with a workgroup for
    /// each of `rows` rows (striding over the rows past the device's
    /// grid), `buffers` bound in the kernel's order.
    fn launch_rows<K: crate::kernel::Workgroups>(rows: usize, buffers: &[&Self::Storage], scalars: &[ScalarArg]);
}

/// The row ops on a backend that launches the row kernels, for f32
/// storage the device holds (the backend widens halves and refuses what
/// lives on the host before it calls these).
pub mod launch {
    use super::RowLaunch;
    use crate::backend::SoftmaxOptions;

    /// [`super::softmax`] of `x` along `dim`.
    pub fn softmax<L: RowLaunch>(x: &L::Storage, dim: usize, o: SoftmaxOptions) -> L::Storage {
        let shape = L::shape(x);
        let out = L::empty_f32(shape, &L::device(x));
        let (rows, scalars) = super::softmax_args(shape, dim, o);
        if rows > 0 && shape.iter().product::<usize>() > 0 {
            L::launch_rows::<super::softmax::Kernel>(rows, &[x, &out], &scalars);
        }
        out
    }

    /// [`super::softmax_backward`]: the adjoint `g` through the softmax's
    /// output `y`.
    pub fn softmax_backward<L: RowLaunch>(g: &L::Storage, y: &L::Storage, dim: usize, o: SoftmaxOptions) -> L::Storage {
        let shape = L::shape(g);
        let out = L::empty_f32(shape, &L::device(g));
        let (rows, scalars) = super::softmax_backward_args(shape, dim, o);
        if rows > 0 && shape.iter().product::<usize>() > 0 {
            L::launch_rows::<super::softmax_backward::Kernel>(rows, &[g, y, &out], &scalars);
        }
        out
    }

    /// [`super::norm`]: LayerNorm (`centre`) or RMSNorm of `x` over its
    /// last dim, and each row's `(mean, rstd)`.
    pub fn norm<L: RowLaunch>(
        x: &L::Storage,
        weight: Option<&L::Storage>,
        bias: Option<&L::Storage>,
        eps: f64,
        centre: bool,
    ) -> [L::Storage; 2] {
        let (shape, device) = (L::shape(x), L::device(x));
        let (rows, n, scalars) = super::norm_args(shape, eps, centre, weight.is_some(), bias.is_some());
        let mut stats_shape = shape.to_vec();
        *stats_shape.last_mut().expect("the runtime checked the rank") = 2;
        let (out, stats) = (L::empty_f32(shape, &device), L::empty_f32(&stats_shape, &device));
        if rows > 0 && n > 0 {
            // An absent parameter binds the input in its place; the flags say not to read it.
            let buffers = [x, weight.unwrap_or(x), bias.unwrap_or(x), &out, &stats];
            L::launch_rows::<super::norm::Kernel>(rows, &buffers, &scalars);
        }
        [out, stats]
    }

    /// The gradients of [`norm`]'s input, weight and bias, from the
    /// output's `g` and the forward's `stats`.
    pub fn norm_backward<L: RowLaunch>(
        g: &L::Storage,
        x: &L::Storage,
        stats: &L::Storage,
        weight: Option<&L::Storage>,
        centre: bool,
    ) -> [L::Storage; 3] {
        let (shape, device) = (L::shape(x), L::device(x));
        let (rows, n, input_grad, param_grads) = super::norm_backward_args(shape, centre, weight.is_some());
        let dx = L::empty_f32(shape, &device);
        if rows == 0 || n == 0 {
            let zeros = || L::full(&[n], 0.0, crate::DType::F32, &device);
            return [dx, zeros(), zeros()];
        }
        let (dw, db) = (L::empty_f32(&[n], &device), L::empty_f32(&[n], &device));
        L::launch_rows::<super::norm_backward::Kernel>(rows, &[g, x, stats, weight.unwrap_or(x), &dx], &input_grad);
        L::launch_rows::<super::norm_params::Kernel>(n, &[g, x, stats, &dw, &db], &param_grads);
        [dx, dw, db]
    }

    /// Cross-entropy's loss per row and its gradient for f32 logits
    /// `[n, c]` and f32 class indices; `None` (the loss composes ops)
    /// for other operands.
    pub fn cross_entropy<L: RowLaunch>(
        z: &L::Storage,
        t: &L::Storage,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(L::Storage, L::Storage)> {
        use crate::DType::F32;
        let (&[n, c], F32, F32) = (L::shape(z), L::dtype(z), L::dtype(t)) else { return None };
        let scalars = super::cross_entropy_args(n, c, smoothing, ignore_index, grad_scale)?;
        let device = L::device(z);
        let (loss, grad) = (L::empty_f32(&[n], &device), L::empty_f32(&[n, c], &device));
        if n > 0 && c > 0 {
            L::launch_rows::<super::cross_entropy::Kernel>(n, &[z, t, &loss, &grad], &scalars);
        }
        Some((loss, grad))
    }
}
