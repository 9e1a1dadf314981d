//! The Blaze runtime: the [`Backend`] trait, [`Tensor`] and everything that
//! is written once above the backends.
//!
//! The main design choice: a backend implements a small set of primitives
//! (elementwise ops as value enums, reductions, matmul, movement, indexing,
//! conv and pooling), and every other op is composed here. A new backend is
//! then a few hundred lines, and proves itself by passing the conformance
//! suite (`conformance` feature) that every backend runs.
#![deny(missing_docs)]

pub mod adjoint;
pub mod autodiff;
pub mod backend;
pub mod binary;
pub mod compare;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod data;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod dtype;
pub mod error;
pub mod fallback;
pub mod kernel;
pub mod loss;
pub mod math;
pub mod nn;
pub mod optim;
pub mod precision;
pub mod quant;
pub mod record;
pub mod reduction;
pub mod tune_cache;
pub mod rng;
pub mod rows;
mod safetensors;
pub mod shape;
mod tensor;
pub mod train;
pub mod unary;

pub use backend::{
    AdamStep, Backend, BinaryOp, CmpOp, Compiled, Composites, Conv2dOptions, Device, Kernels, Pool2dOptions,
    Precompiled, Primitives, ReduceOp, RowNorm, SoftmaxOptions, UnaryOp,
};
pub use dtype::{DType, DataVec, Element, TensorData};
pub use error::{DeviceError, Error};
pub use precision::{Precision, autocast};
pub use half::{bf16, f16};
pub use rng::{Rng, manual_seed};
pub use shape::Dim;
pub use tensor::{Scalar, ShapeArg, Tensor};
