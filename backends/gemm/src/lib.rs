//! Blaze's CPU GEMMs, below the CPU backend: the packed f32 and f64 GEMM
//! ([`gemm`]: AVX-512 and AVX2 register tiles, a portable one elsewhere),
//! bf16 products summed in f32 ([`gemm_bf16`]: AMX tiles or the
//! AVX512-BF16 dot product), int8 products ([`gemm_int8`]: AMX-INT8 or
//! AVX512-VNNI, bit-identical to the portable loop), each product's plan
//! (kernel and blocking) chosen by a rule from the CPU's facts
//! ([`cpuinfo`]) and tuned on the machine ([`gemm_tune`]), and what they
//! run on: one product split over threads ([`product`]), the parallel
//! loops ([`threads`]), packing and scratch memory ([`scratch`]) and the
//! ISA dispatch ([`simd`]).
//!
//! The CPU backend (`blaze-cpu`) multiplies its tensors through these; its
//! convolutions, attention and int8 layers call them directly.

pub mod cpuinfo;
pub mod gemm;
pub mod gemm_bf16;
pub mod gemm_int8;
pub mod gemm_tune;
pub mod product;
pub mod scratch;
pub mod simd;
pub mod threads;

pub use cpuinfo::{CpuInfo, FMA_CHAINS, Vendor, cpu_info, fma_chains, fma_ports_512};
pub use gemm::{GemmKernel, GemmPlan, gemm_plan};
pub use gemm_bf16::{
    Bf16Kernel, Bf16Plan, RoundedBf16, RoundsToBf16, amx_runs_here, bf16_kernel_runs_here, bf16_plan,
};
pub use gemm_int8::{Int8Kernel, amx_int8_runs_here, conv2d_int8_on, linear_int8_on, vnni_runs_here};
pub use gemm_tune::{clear_gemm_tuning, gemm_tune_cache_path};
pub use product::{Product, Reads, gemm_raw};

/// The float types the packed GEMM multiplies: f32 and f64.
pub trait Real: num_traits::Float + Default + Send + Sync + std::fmt::Debug + std::ops::AddAssign + scratch::AnyBits + 'static {}

impl Real for f32 {}
impl Real for f64 {}
