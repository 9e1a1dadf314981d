//! Softmax, the norms, cross-entropy and their gradients in one launch
//! each (two for a norm's gradients): the runtime's row kernels (`blaze_runtime::rows`),
//! whose `#[cube]` code this crate prints from the source the wgpu
//! backend's WGSL comes from (`__private::rows`). A cube per row shares
//! the row's sums and max through trees in shared memory; a softmax's
//! scale, causal mask and log form are applied as the row is read and
//! written. (The composed forms take six passes or more and, for a causal
//! mask, an index tensor the device does not hold; cubek has no softmax
//! outside its attention.)

use blaze_runtime::kernel::ScalarArg;
use blaze_runtime::rows::{cross_entropy_args, norm_args, norm_backward_args, softmax_args, softmax_backward_args};
use blaze_runtime::{DType, Primitives, SoftmaxOptions};

use super::ew::{CubeWorkgroups, buffer_arg};
use super::{CubeStorage, u32_of};
use crate::__private::rows;

/// The largest grid dimension every device has; the kernels stride over
/// the rows past it.
const MAX_CUBES: u32 = 65_535;

/// Row kernel `table` over `rows` rows of `buffers` (in the kernel's order).
fn run(table: &CubeWorkgroups, rows: usize, buffers: &[&CubeStorage], scalars: &[ScalarArg]) {
    let client = buffers[0].client();
    let args = buffers.iter().map(|t| buffer_arg("row kernel", t)).collect();
    (table.launch)(client, u32_of(rows).min(MAX_CUBES), args, scalars);
}

pub(super) fn softmax(x: &CubeStorage, dim: usize, o: SoftmaxOptions) -> CubeStorage {
    let out = CubeStorage::empty(&x.device, &x.shape, DType::F32);
    let (rows, scalars) = softmax_args(&x.shape, dim, o);
    if rows > 0 && x.numel() > 0 {
        run(&rows::softmax::__cube::TABLE, rows, &[x, &out], &scalars);
    }
    out
}

pub(super) fn softmax_backward(g: &CubeStorage, y: &CubeStorage, dim: usize, o: SoftmaxOptions) -> CubeStorage {
    let out = CubeStorage::empty(&g.device, &g.shape, DType::F32);
    let (rows, scalars) = softmax_backward_args(&g.shape, dim, o);
    if rows > 0 && g.numel() > 0 {
        run(&rows::softmax_backward::__cube::TABLE, rows, &[g, y, &out], &scalars);
    }
    out
}

/// LayerNorm (`centre`) or RMSNorm over the last dim of f32 `x`, and each
/// row's `(mean, rstd)`.
pub(super) fn norm(
    x: &CubeStorage,
    weight: Option<&CubeStorage>,
    bias: Option<&CubeStorage>,
    eps: f64,
    centre: bool,
) -> [CubeStorage; 2] {
    let (rows, n, scalars) = norm_args(&x.shape, eps, centre, weight.is_some(), bias.is_some());
    let mut stats_shape = x.shape.clone();
    *stats_shape.last_mut().expect("the runtime checked the rank") = 2;
    let out = CubeStorage::empty(&x.device, &x.shape, DType::F32);
    let stats = CubeStorage::empty(&x.device, &stats_shape, DType::F32);
    if rows > 0 && n > 0 {
        // An absent parameter passes the input in its place; the flags say not to read it.
        let buffers = [x, weight.unwrap_or(x), bias.unwrap_or(x), &out, &stats];
        run(&rows::norm::__cube::TABLE, rows, &buffers, &scalars);
    }
    [out, stats]
}

/// The gradients of [`norm`]'s input, weight and bias.
pub(super) fn norm_backward(
    g: &CubeStorage,
    x: &CubeStorage,
    stats: &CubeStorage,
    weight: Option<&CubeStorage>,
    centre: bool,
) -> [CubeStorage; 3] {
    let (rows, n, input_grad, param_grads) = norm_backward_args(&x.shape, centre, weight.is_some());
    let dx = CubeStorage::empty(&x.device, &x.shape, DType::F32);
    let (dw, db) = (CubeStorage::empty(&x.device, &[n], DType::F32), CubeStorage::empty(&x.device, &[n], DType::F32));
    if rows == 0 || n == 0 {
        let zeros = |t: &CubeStorage| <super::CubeNative as Primitives>::full(&t.shape, 0.0, DType::F32, &x.device);
        return [dx, zeros(&dw), zeros(&db)];
    }
    run(&rows::norm_backward::__cube::TABLE, rows, &[g, x, stats, weight.unwrap_or(x), &dx], &input_grad);
    run(&rows::norm_params::__cube::TABLE, n, &[g, x, stats, &dw, &db], &param_grads);
    [dx, dw, db]
}

/// Cross-entropy's loss per row and its gradient, for f32 logits `[n, c]`
/// and f32 class indices; `None` (the loss composes ops) otherwise.
pub(super) fn cross_entropy(
    z: &CubeStorage,
    t: &CubeStorage,
    smoothing: f64,
    ignore_index: i64,
    grad_scale: f64,
) -> Option<(CubeStorage, CubeStorage)> {
    let (&[n, c], DType::F32, DType::F32) = (z.shape.as_slice(), z.dtype, t.dtype) else { return None };
    let scalars = cross_entropy_args(n, c, smoothing, ignore_index, grad_scale)?;
    let loss = CubeStorage::empty(&z.device, &[n], DType::F32);
    let grad = CubeStorage::empty(&z.device, &[n, c], DType::F32);
    if n > 0 && c > 0 {
        run(&rows::cross_entropy::__cube::TABLE, n, &[z, t, &loss, &grad], &scalars);
    }
    Some((loss, grad))
}
