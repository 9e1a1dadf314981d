//! Softmax and its gradient in one launch each: the runtime's row kernels
//! (`blaze_runtime::rows`), whose `#[cube]` code this crate prints from
//! the source the wgpu backend's WGSL comes from (`__private::rows`). A
//! cube per row shares the row's max and sum through a tree in shared
//! memory; the scale, the causal mask and the log form are applied as the
//! row is read and written. (The composed form takes six passes and, for
//! a causal mask, an index tensor the device does not hold; cubek has no
//! softmax outside its attention.)

use blaze_runtime::kernel::ScalarArg;
use blaze_runtime::rows::softmax_args;
use blaze_runtime::{DType, SoftmaxOptions};

use super::ew::{CubeWorkgroups, buffer_arg};
use super::{CubeStorage, u32_of};
use crate::__private::rows;

/// The largest grid dimension every device has; the kernels stride over
/// the rows past it.
const MAX_CUBES: u32 = 65_535;

/// Row kernel `table` over `rows` rows of `buffers` (in the kernel's order).
fn run(table: &CubeWorkgroups, rows: usize, buffers: &[&CubeStorage], scalars: &[ScalarArg]) {
    let client = buffers[0].client();
    let args = buffers.iter().map(|t| buffer_arg("softmax", t)).collect();
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
    let (rows, scalars) = softmax_args(&g.shape, dim, o);
    if rows > 0 && g.numel() > 0 {
        run(&rows::softmax_backward::__cube::TABLE, rows, &[g, y, &out], &scalars[..7]);
    }
    out
}
