//! Blaze's core: [`Tensor`], dtypes and shapes, the [`Backend`] traits,
//! modules ([`module`]), the tape ([`autodiff`]) and the op table's
//! run-time side. The layers, data, saving and training are crates above
//! it (`blaze-nn`, `blaze-data`, `blaze-record`, `blaze-train`); this one
//! names none of them.
//!
//! The main design choice: a backend implements a small set of primitives
//! (elementwise ops as value enums, reductions, matmul, movement, indexing,
//! conv and pooling), and every other op is composed here. A new backend is
//! then a few hundred lines, and proves itself by passing the conformance
//! suite (`blaze-conformance`) that every backend runs.
#![deny(missing_docs)]

pub mod adjoint;
pub mod autodiff;
pub mod backend;
pub mod binary;
pub mod compare;
pub mod dtype;
pub mod error;
pub mod kernel;
pub mod kernel_def;
pub mod math;
pub mod module;
pub mod precision;
pub mod reduction;
pub mod rng;
pub mod rows;
pub mod shape;
#[doc(hidden)]
pub mod tensor;
pub mod tune_cache;
pub mod unary;

pub use backend::int8;
pub use backend::{
    AdamStep, AnyTable, Backend, BackendDevice, BinaryOp, CmpOp, Composites, Conv2dOptions, Device, Kernels,
    Pool2dOptions, Precompiled, Primitives, ReduceOp, RowNorm, SoftmaxOptions, UnaryOp, precompiled,
};
pub use dtype::{DType, DataVec, Element, TensorData};
pub use error::{DeviceError, Error};
pub use half::{bf16, f16};
pub use precision::{Precision, autocast};
pub use rng::{Rng, manual_seed};
pub use shape::Dim;
pub use tensor::{Scalar, ShapeArg, Tensor};
