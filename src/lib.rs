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
/// Datasets, loaders and readers (`blaze-data`).
pub use blaze_data as data;
/// Data-parallel training over MPI (`blaze-distributed`, feature `mpi`).
#[cfg(feature = "mpi")]
pub use blaze_distributed as distributed;
/// Layers (`blaze-nn`).
pub use blaze_nn as nn;
pub use blaze_nn::{loss, optim, quant};
/// Saved models and checkpoints in safetensors files (`blaze-record`).
pub use blaze_record as record;
pub use blaze_runtime::{autodiff, precision, rng};
/// `fit` and what it reports (`blaze-train`).
pub use blaze_train as train;

/// The runtime: the core crate (`blaze-runtime`: tensors, the backend
/// traits, autodiff, modules) and, under their names, the crates above it.
pub mod runtime {
    pub use blaze_data as data;
    #[cfg(feature = "mpi")]
    pub use blaze_distributed as distributed;
    pub use blaze_fallback as fallback;
    pub use blaze_nn as nn;
    pub use blaze_nn::{loss, optim, quant};
    pub use blaze_record as record;
    pub use blaze_runtime::*;
    pub use blaze_train as train;
}
/// ONNX export of any `#[model]`: [`export::save_onnx`].
pub use blaze_export as export;
/// What Blaze knows about each built-in layer: options, shape rules, parameters.
pub use blaze_spec as spec;
/// GPU devices through wgpu, and `kernel!` kernels run on them (feature
/// `wgpu`): everything of `blaze_wgpu`, and [`wgpu::Wgpu`], the backend.
#[cfg(feature = "wgpu")]
pub mod wgpu {
    pub use blaze_wgpu::*;

    /// The wgpu backend: f32 and bool tensors on the GPU, f64 and i64 ones
    /// on the CPU ([`WgpuNative`] completed by [`crate::Cpu`]).
    pub type Wgpu = blaze_fallback::HostFallback<WgpuNative, blaze_cpu::Cpu>;
}

/// GPU devices through CubeCL's wgpu runtime (feature `cubecl`): cubek's
/// tuned matmul and sums, `#[cube]` kernels for the other ops, and the
/// `#[cube]` code `kernel!` writes for its kernels.
#[cfg(feature = "cubecl")]
pub mod cubecl {
    pub use blaze_cubecl::*;

    /// The CubeCL backend: f32 and bool tensors on the GPU through
    /// CubeCL's wgpu runtime, f64 and i64 ones on the CPU ([`CubeNative`]
    /// completed by [`crate::Cpu`]).
    pub type CubeCl = blaze_fallback::HostFallback<CubeNative, blaze_cpu::Cpu>;
}

/// `kernel!`'s `#[cube]` items: kept with the `cubecl` feature, dropped
/// without it, so a crate using `kernel!` needs CubeCL only when Blaze
/// runs on it.
#[cfg(feature = "cubecl")]
#[doc(hidden)]
#[macro_export]
macro_rules! __cube {
    ($($items:tt)*) => { $($items)* };
}

/// `kernel!`'s `#[cube]` items, dropped: this build has no CubeCL backend.
#[cfg(not(feature = "cubecl"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __cube {
    ($($items:tt)*) => {};
}

/// A kernel's `DEVICE` table for the CubeCL backend, when there is one.
#[cfg(feature = "cubecl")]
#[doc(hidden)]
#[macro_export]
macro_rules! __cube_device {
    ($table:path) => {
        ::core::option::Option::Some(&$table)
    };
}

/// No CubeCL backend in this build: no table.
#[cfg(not(feature = "cubecl"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __cube_device {
    ($table:path) => {
        ::core::option::Option::None
    };
}

#[doc(hidden)]
pub use blaze_macros::__model_graph;
pub use blaze_macros::{Module, kernel, model};

pub use blaze_cpu::{Cpu, CpuDevice, CpuStorage, CpuTensor};
pub use blaze_runtime::{
    Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, DType, DataVec, Device, DeviceError, Dim, Element, Error,
    Kernels, Pool2dOptions, Precision, Primitives, ReduceOp, Rng, ShapeArg, SoftmaxOptions, Tensor, TensorData,
    UnaryOp, autocast, bf16, f16, manual_seed,
};

/// The names most programs use. The backend traits are left out on
/// purpose: their primitives share names with tensor methods (`conv2d`,
/// `matmul`), and in scope they would turn a method misuse into a
/// confusing hint. Generic code imports `blaze::Backend` by name. The
/// [`Device`] trait is in: `device.run(..)` and `device.synchronize()`.
pub mod prelude {
    pub use blaze_cpu::{Cpu, CpuDevice};
    pub use blaze_macros::{Module, kernel, model};
    /// The op table's activation layers (`Relu`, `Gelu`, ...).
    pub use blaze_nn::unary_layers::*;
    pub use blaze_nn::{
        AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Block, Conv1d, Conv2d, ConvTranspose2d, Ctx,
        Differentiable, Dropout, Elu, Embedding, Flatten, GlobalAvgPool, GroupNorm, Gru, Identity, LayerNorm,
        LeakyRelu, Linear, LogSoftmax, Lstm, Map, MaxPool2d, Module, MultiHeadAttention, RMSNorm, Silu, Softmax,
        Softplus, Upsample,
    };
    pub use blaze_runtime::{
        Conv2dOptions, DType, Device, Pool2dOptions, Precision, SoftmaxOptions, Tensor, TensorData, autocast,
        manual_seed,
    };
}

/// The user guide in `docs/src`, one module per chapter, so that the test
/// command compiles and runs every code block in it (`tests/integration/guide.rs`
/// checks that every chapter of `SUMMARY.md` is listed here).
#[cfg(doctest)]
mod guide {
    macro_rules! chapters {
        ($($name:ident = $file:literal),* $(,)?) => {
            $(
                #[doc = include_str!(concat!("../docs/src/", $file))]
                mod $name {}
            )*
        };
    }

    chapters! {
        introduction = "introduction.md",
        getting_started = "getting-started.md",
        models = "models.md",
        forward_bodies = "forward-bodies.md",
        training = "training.md",
        data = "data.md",
        kernels = "kernels.md",
        backends = "backends.md",
        precision = "precision.md",
        inference = "inference.md",
        onnx = "onnx.md",
        performance = "performance.md",
        troubleshooting = "troubleshooting.md",
    }

    // Its blocks use `blaze::distributed` (feature `mpi`, off in the test
    // command); `.ci/run`'s MPI stage runs them with
    // `cargo test --features mpi --doc -- guide::distributed`.
    #[cfg(feature = "mpi")]
    chapters! {
        distributed = "distributed.md",
    }
}
