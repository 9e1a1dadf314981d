//! Blaze on CubeCL: tensors on CubeCL's wgpu runtime ([`CubeNative`],
//! which tensors use as `HostFallback<CubeNative, Cpu>`,
//! `blaze::cubecl::CubeCl`), the matmul, the sums, the convolution and
//! average pooling autotuned per shape class and device among cubek's
//! kernels and this crate's ([`autotune_cache_path`]), the other ops as
//! `#[cube]` kernels, and `kernel!` kernels through the
//! `#[cube]` code `kernel!` writes for them.
//!
//! `BLAZE_CUBECL_ADAPTER=name` picks the first adapter whose name contains
//! `name` (case-insensitively), `WGPU_BACKEND=vulkan|gl|metal|dx12` the
//! APIs searched. Every device checks on opening that it computes as the
//! CPU does (see [`CubeDevice::new`]).
//!
//! CubeCL's CUDA and HIP runtimes are not built: their compilers download
//! LLVM while they build (ARCHITECTURE.md says what a CUDA build takes).
#![deny(missing_docs)]

pub(crate) mod backend;
mod device;
mod self_check;
mod tune;

pub use backend::ew::{CubeElementwise, CubeWorkgroups};
pub use backend::{CubeNative, CubeStorage};
pub use blaze_gpu_host::OpenError;
pub use device::{CubeDevice, CubeOptions};
pub use tune::cache_path as autotune_cache_path;

/// The kernels' building blocks that `kernel!`'s `#[cube]` code calls.
#[doc(hidden)]
pub mod __private {
    pub use crate::backend::dsl;
    pub use cubecl;

    /// The op table's kernels (`blaze_runtime::unary`) as `#[cube]`
    /// functions and launchers, printed from the same table; a fused
    /// group's `#[cube]` code calls these functions.
    #[allow(missing_docs, non_snake_case, unused_parens, unused_mut, unused_variables, clippy::all)]
    pub mod unary {
        blaze_macros::__cube_unary_ops!();
    }

    /// The op table's binary ops (`blaze_runtime::binary`) as `#[cube]`
    /// functions, and `op`, which picks one by its code.
    #[allow(missing_docs, non_snake_case, unused_parens, unused_mut, unused_variables, clippy::all)]
    pub mod binary {
        blaze_macros::__cube_binary_ops!();
    }

    /// The op table's comparisons (`blaze_runtime::compare`) as `#[cube]`
    /// functions that pick one by its code.
    #[allow(missing_docs, unused_mut)]
    pub mod compare {
        blaze_macros::__cube_compare_ops!();
    }

    /// The op table's reductions (`blaze_runtime::reduction`) as
    /// `#[cube]` steps that pick one by its code.
    #[allow(missing_docs, unused_mut)]
    pub mod reduce {
        blaze_macros::__cube_reduce_ops!();
    }

    /// The runtime's row kernels (`blaze_runtime::rows`) as `#[cube]`
    /// code and launchers, printed from the same source as their WGSL.
    #[allow(missing_docs, non_snake_case, unused_parens, unused_mut, unused_variables, clippy::all)]
    pub mod rows {
        blaze_macros::__cube_row_kernels!();
    }
}

/// The first line of a CubeCL error (its later lines hold a backtrace).
pub(crate) fn first_line(message: &str) -> String {
    message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("unknown error").to_owned()
}
