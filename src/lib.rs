//! Blaze: statically shaped deep learning in Rust.
//!
//! This facade re-exports the runtime ([`Tensor`], the [`Backend`] traits and
//! the ops written once above it) and the CPU backend ([`Cpu`]). Most code
//! needs only `use blaze::prelude::*;`.
//!
//! The README follows; its examples run as doctests.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub use blaze_cpu as cpu;
pub use blaze_runtime as runtime;
#[cfg(feature = "mpi")]
pub use blaze_runtime::distributed;
pub use blaze_runtime::{autodiff, data, loss, nn, optim, record, rng, train};
/// What Blaze knows about each built-in layer: options, shape rules, parameters.
pub use blaze_spec as spec;
/// GPU devices through wgpu, and `kernel!` kernels run on them (feature
/// `wgpu`): everything of `blaze_wgpu`, and [`wgpu::Wgpu`], the backend.
#[cfg(feature = "wgpu")]
pub mod wgpu {
    pub use blaze_wgpu::*;

    /// The wgpu backend: f32 and bool tensors on the GPU, f64 and i64 ones
    /// on the CPU ([`WgpuNative`] completed by [`crate::Cpu`]).
    pub type Wgpu = blaze_runtime::fallback::HostFallback<WgpuNative, blaze_cpu::Cpu>;
}

#[doc(hidden)]
pub use blaze_macros::__model_graph;
pub use blaze_macros::{Module, kernel, model};

pub use blaze_cpu::{Cpu, CpuDevice, CpuStorage, CpuTensor};
pub use blaze_runtime::{
    Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, DType, DataVec, Device, DeviceError, Dim, Element, Error,
    Kernels, Pool2dOptions, Primitives, ReduceOp, Rng, ShapeArg, SoftmaxOptions, Tensor, TensorData, UnaryOp,
    manual_seed,
};

/// The names most programs use. The backend traits are left out on
/// purpose: their primitives share names with tensor methods (`conv2d`,
/// `matmul`), and in scope they would turn a method misuse into a
/// confusing hint. Generic code imports `blaze::Backend` by name. The
/// [`Device`] trait is in: `device.run(..)` and `device.synchronize()`.
pub mod prelude {
    pub use blaze_cpu::{Cpu, CpuDevice};
    pub use blaze_macros::{Module, kernel, model};
    pub use blaze_runtime::nn::{
        AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Block, Conv1d, Conv2d, ConvTranspose2d, Ctx,
        Differentiable, Dropout, Elu, Embedding, Flatten, Gelu, GlobalAvgPool, GroupNorm, Gru, Identity, LayerNorm,
        LeakyRelu, Linear, LogSoftmax, Lstm, Map, MaxPool2d, Module, MultiHeadAttention, RMSNorm, Relu, Sigmoid, Silu,
        Softmax, Softplus, Tanh, Upsample,
    };
    pub use blaze_runtime::{
        Conv2dOptions, DType, Device, Pool2dOptions, SoftmaxOptions, Tensor, TensorData, manual_seed,
    };
}
