//! Softmax, the norms, cross-entropy and their gradients in one launch
//! each (two for a norm's gradients): the runtime's row kernels (`blaze_runtime::rows`),
//! whose `#[cube]` code this crate prints from the source the wgpu
//! backend's WGSL comes from (`__private::rows`), launched through the
//! host code both backends share (`blaze_runtime::rows::launch`). A cube
//! per row shares the row's sums and max through trees in shared memory;
//! a softmax's scale, causal mask and log form are applied as the row is
//! read and written. (The composed forms take six passes or more and, for
//! a causal mask, an index tensor the device does not hold; cubek has no
//! softmax outside its attention.)

use blaze_runtime::DType;
use blaze_runtime::kernel::{ScalarArg, Workgroups};
use blaze_runtime::rows::RowLaunch;

use super::ew::buffer_arg;
use super::{CubeNative, CubeStorage, u32_of};
use crate::__private::rows;
use crate::CubeDevice;

/// The largest grid dimension every device has; the kernels stride over
/// the rows past it.
const MAX_CUBES: u32 = 65_535;

impl RowLaunch for CubeNative {
    fn empty_f32(shape: &[usize], device: &CubeDevice) -> CubeStorage {
        CubeStorage::empty(device, shape, DType::F32)
    }

    fn launch_rows<K: Workgroups>(n: usize, buffers: &[&CubeStorage], scalars: &[ScalarArg]) {
        let table = rows::launcher::<K>().unwrap_or_else(|| panic!("cubecl: `{}` is no row kernel", K::NAME));
        let args = buffers.iter().map(|t| buffer_arg("row kernel", t)).collect();
        (table.launch)(buffers[0].client(), u32_of(n).min(MAX_CUBES), args, scalars);
    }
}
