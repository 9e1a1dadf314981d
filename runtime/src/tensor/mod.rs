//! `Tensor<B, D>`: a tensor on backend `B` whose rank `D` is part of its type.
//!
//! Dims are known at run time, the rank at compile time, so passing a matrix
//! where a 4-D image batch is expected is a type error, while batch and
//! sequence sizes stay free. Ops take `&self` and return new tensors; cloning a
//! tensor is cheap (it shares the values).

mod arith;
mod movement;
mod nn;
mod reduce;

use std::fmt;

use crate::backend::Backend;
use crate::dtype::Error;
use crate::dtype::{DType, Element, TensorData};
use crate::rng::{Rng, with_global_rng};
use crate::shape::Dim;

pub use arith::Scalar;
#[doc(hidden)]
pub use arith::{adam_storage, axpby_storage};
pub use movement::ShapeArg;

/// A tensor of rank `D` on backend `B`.
pub struct Tensor<B: Backend, const D: usize> {
    storage: B::Storage,
}

impl<B: Backend, const D: usize> Clone for Tensor<B, D> {
    fn clone(&self) -> Self {
        Tensor { storage: self.storage.clone() }
    }
}

/// Formats a shape as `[2, 3]` for messages.
/// Panics unless every tensor of op `op` lives on one device, naming the
/// op and the devices. Ops never move data between devices behind the
/// caller's back (as PyTorch refuses `cuda:0` with `cpu`): the caller
/// moves one with `to_device`.
#[doc(hidden)]
pub fn check_same_device<B: Backend>(op: &str, storages: &[&B::Storage]) {
    let Some((first, rest)) = storages.split_first() else { return };
    let device = B::device(first);
    for other in rest.iter().map(|s| B::device(s)) {
        assert!(
            other == device,
            "{op}: tensors on different devices, {device:?} and {other:?}; ops do not move data between \
             devices: move one with .to_device(&device)"
        );
    }
}

pub(crate) fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}

impl<B: Backend> Tensor<B, 1> {
    /// The values of a storage of any rank as a flat tensor (a reshape,
    /// which views the values where the backend can).
    #[doc(hidden)]
    pub fn flat(s: &B::Storage) -> Self {
        let n = B::shape(s).iter().product();
        Tensor::wrap(B::reshape(s, &[n]))
    }
}

impl<B: Backend, const D: usize> Tensor<B, D> {
    /// Wraps a backend storage; panics if its rank is not `D`.
    pub fn from_storage(storage: B::Storage) -> Self {
        let shape = B::shape(&storage);
        assert_eq!(shape.len(), D, "Tensor<_, {D}>: a storage of shape {} has rank {}", fmt_shape(shape), shape.len());
        Tensor { storage }
    }

    /// Wraps a storage whose rank the caller has checked.
    #[doc(hidden)]
    pub fn wrap(storage: B::Storage) -> Self {
        debug_assert_eq!(B::shape(&storage).len(), D);
        Tensor { storage }
    }

    /// The backend storage.
    pub fn storage(&self) -> &B::Storage {
        &self.storage
    }

    /// The backend storage, to update in place (what a kernel launch
    /// writes through). Its shape and dtype must stay as they are.
    pub fn storage_mut(&mut self) -> &mut B::Storage {
        &mut self.storage
    }

    /// Unwraps the backend storage.
    pub fn into_storage(self) -> B::Storage {
        self.storage
    }

    /// The dims, outermost first.
    pub fn shape(&self) -> [usize; D] {
        let s = B::shape(&self.storage);
        let mut out = [0; D];
        out.copy_from_slice(s);
        out
    }

    /// The size of one dim (`-1` is the last), as `torch.Tensor.size(dim)`.
    pub fn size(&self, dim: impl Dim) -> usize {
        self.shape()[dim.index(D, "size")]
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        B::dtype(&self.storage)
    }

    /// The device holding the values.
    pub fn device(&self) -> B::Device {
        B::device(&self.storage)
    }

    // ---- creation --------------------------------------------------------

    /// A tensor of `value` in the given dtype.
    pub fn full_dtype(shape: [usize; D], value: f64, dtype: DType, device: &B::Device) -> Self {
        Self::wrap(B::full(&shape, value, dtype, device))
    }

    /// An f32 tensor of `value`.
    pub fn full(shape: [usize; D], value: f64, device: &B::Device) -> Self {
        Self::full_dtype(shape, value, DType::F32, device)
    }

    /// An f32 tensor of zeros.
    pub fn zeros(shape: [usize; D], device: &B::Device) -> Self {
        Self::full(shape, 0.0, device)
    }

    /// An f32 tensor of ones.
    pub fn ones(shape: [usize; D], device: &B::Device) -> Self {
        Self::full(shape, 1.0, device)
    }

    /// A tensor of `value` with this tensor's shape, dtype and device.
    pub fn full_like(&self, value: f64) -> Self {
        Self::full_dtype(self.shape(), value, self.dtype(), &self.device())
    }

    /// Zeros shaped like this tensor.
    pub fn zeros_like(&self) -> Self {
        self.full_like(0.0)
    }

    /// Ones shaped like this tensor.
    pub fn ones_like(&self) -> Self {
        self.full_like(1.0)
    }

    /// A tensor from row-major values; panics if they do not fill `shape`.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: [usize; D], device: &B::Device) -> Self {
        let len = values.len();
        match TensorData::new(values, shape) {
            Ok(data) => Self::wrap(B::from_data(data, device)),
            Err(_) => panic!(
                "from_vec: shape {} needs {} values, got {len}",
                fmt_shape(&shape),
                shape.iter().product::<usize>()
            ),
        }
    }

    /// A tensor from host data; an error if the data's rank is not `D`.
    pub fn from_data(data: TensorData, device: &B::Device) -> Result<Self, Error> {
        if data.shape.len() != D {
            return Err(Error::Rank { expected: D, shape: data.shape });
        }
        Ok(Self::wrap(B::from_data(data, device)))
    }

    /// f32 values uniform in `[low, high)` from `rng`.
    pub fn uniform_with(shape: [usize; D], low: f64, high: f64, rng: &mut Rng, device: &B::Device) -> Self {
        let n = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| rng.uniform(low, high) as f32).collect();
        Self::from_vec(v, shape, device)
    }

    /// f32 values from a normal distribution, drawn from `rng`.
    pub fn normal_with(shape: [usize; D], mean: f64, std: f64, rng: &mut Rng, device: &B::Device) -> Self {
        let n = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| (mean + std * rng.normal()) as f32).collect();
        Self::from_vec(v, shape, device)
    }

    /// f32 values uniform in `[low, high)` from the global generator
    /// (see [`crate::manual_seed`]).
    pub fn uniform(shape: [usize; D], low: f64, high: f64, device: &B::Device) -> Self {
        with_global_rng(|rng| Self::uniform_with(shape, low, high, rng, device))
    }

    /// f32 values from `N(mean, std²)` from the global generator.
    pub fn normal(shape: [usize; D], mean: f64, std: f64, device: &B::Device) -> Self {
        with_global_rng(|rng| Self::normal_with(shape, mean, std, rng, device))
    }

    /// f32 values uniform in `[0, 1)`, as `torch.rand`.
    pub fn rand_uniform(shape: [usize; D], device: &B::Device) -> Self {
        Self::uniform(shape, 0.0, 1.0, device)
    }

    /// f32 values from the standard normal, as `torch.randn`.
    pub fn rand_normal(shape: [usize; D], device: &B::Device) -> Self {
        Self::normal(shape, 0.0, 1.0, device)
    }

    // ---- reading back ------------------------------------------------------

    /// Copies the values to the host, row-major.
    pub fn to_data(&self) -> TensorData {
        B::to_data(&self.storage)
    }

    /// Copies the values to the host, row-major.
    pub fn into_data(self) -> TensorData {
        self.to_data()
    }

    /// The values as a `Vec<T>`; panics if the dtype is not `T`'s.
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        let data = self.to_data();
        match data.to_vec::<T>() {
            Ok(v) => v,
            Err(_) => panic!(
                "to_vec: the tensor holds {}, not {} (use .to_dtype(DType::{:?}) first)",
                data.dtype(),
                T::DTYPE,
                T::DTYPE
            ),
        }
    }

    /// The single value of a one-element tensor, as f64.
    pub fn item(&self) -> f64 {
        let n = self.numel();
        assert!(n == 1, "item: the tensor has shape {} ({n} elements), not one element", fmt_shape(&self.shape()));
        B::item(&self.storage)
    }

    /// The values converted to `dtype`, as `torch.Tensor.to(dtype)`.
    pub fn to_dtype(&self, dtype: DType) -> Self {
        if self.dtype() == dtype {
            return self.clone();
        }
        Self::wrap(B::cast(&self.storage, dtype))
    }

    /// The same values, cut from any recorded graph, as
    /// `torch.Tensor.detach` (a cheap clone on backends without one).
    pub fn detach(&self) -> Self {
        Self::wrap(B::detach(&self.storage))
    }

    /// The tensor on another device of the same backend.
    pub fn to_device(&self, device: &B::Device) -> Self {
        if &self.device() == device {
            return self.clone();
        }
        Self::wrap(B::from_data(self.to_data(), device))
    }
}

impl<B: Backend> Tensor<B, 1> {
    /// The i64 values `start, start + 1, ..., end - 1`, as `torch.arange`.
    pub fn arange(range: std::ops::Range<i64>, device: &B::Device) -> Self {
        let range = range.start..range.end.max(range.start);
        Self::wrap(B::arange(range, device))
    }
}

impl<B: Backend> Tensor<B, 2> {
    /// The `n x n` f32 identity matrix.
    pub fn eye(n: usize, device: &B::Device) -> Self {
        let mut v = vec![0f32; n * n];
        for i in 0..n {
            v[i * n + i] = 1.0;
        }
        Self::from_vec(v, [n, n], device)
    }
}

impl<B: Backend, const D: usize> fmt::Debug for Tensor<B, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor<{}, {D}>(shape={:?}, dtype={}, {self})", B::name(), self.shape(), self.dtype())
    }
}

/// Prints the values nested by dim, as PyTorch does, eliding the middle of
/// long dims.
impl<B: Backend, const D: usize> fmt::Display for Tensor<B, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let data = self.to_data();
        let strings: Vec<String> = match &data.values {
            crate::dtype::DataVec::F32(v) => v.iter().map(|x| format!("{x:.4}")).collect(),
            crate::dtype::DataVec::F64(v) => v.iter().map(|x| format!("{x:.4}")).collect(),
            crate::dtype::DataVec::F16(v) => v.iter().map(|x| format!("{:.4}", x.to_f32())).collect(),
            crate::dtype::DataVec::BF16(v) => v.iter().map(|x| format!("{:.4}", x.to_f32())).collect(),
            crate::dtype::DataVec::I64(v) => v.iter().map(|x| x.to_string()).collect(),
            crate::dtype::DataVec::Bool(v) => v.iter().map(|x| x.to_string()).collect(),
        };
        write_nested(f, &data.shape, &strings, 0)
    }
}

fn write_nested(f: &mut fmt::Formatter<'_>, shape: &[usize], values: &[String], offset: usize) -> fmt::Result {
    const EDGE: usize = 3;
    let Some((&n, rest)) = shape.split_first() else {
        return f.write_str(&values[offset]);
    };
    let inner: usize = rest.iter().product();
    f.write_str("[")?;
    let mut i = 0;
    while i < n {
        if i > 0 {
            f.write_str(", ")?;
        }
        if n > 2 * EDGE && i == EDGE {
            f.write_str("...")?;
            i = n - EDGE;
            continue;
        }
        write_nested(f, rest, values, offset + i * inner)?;
        i += 1;
    }
    f.write_str("]")
}
