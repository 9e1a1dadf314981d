//! `CpuStorage`: one ndarray per dtype, and the element traits the kernels
//! are generic over.

use crate::pool;
use blaze_runtime::{DType, DataVec, TensorData, bf16, f16};
use ndarray::{ArcArray, IxDyn};

/// A shared, possibly strided n-d array.
pub type Array<T> = ArcArray<T, IxDyn>;

/// A tensor on the CPU: an ndarray of the tensor's dtype. Views (permute,
/// slice) share the values and only change the strides.
#[derive(Debug)]
pub enum CpuStorage {
    /// 32-bit floats.
    F32(Array<f32>),
    /// 64-bit floats.
    F64(Array<f64>),
    /// 16-bit IEEE floats; ops on them compute in f32 and round once.
    F16(Array<f16>),
    /// 16-bit brain floats, computed in f32.
    BF16(Array<bf16>),
    /// 64-bit integers.
    I64(Array<i64>),
    /// Booleans.
    Bool(Array<bool>),
}

/// Shares the values. Written out rather than derived: the derive is
/// `#[inline]`, which compiled a copy of this (its four variants' shapes
/// and strides) into every crate that clones a tensor.
impl Clone for CpuStorage {
    fn clone(&self) -> Self {
        match self {
            CpuStorage::F32(a) => CpuStorage::F32(a.clone()),
            CpuStorage::F64(a) => CpuStorage::F64(a.clone()),
            CpuStorage::F16(a) => CpuStorage::F16(a.clone()),
            CpuStorage::BF16(a) => CpuStorage::BF16(a.clone()),
            CpuStorage::I64(a) => CpuStorage::I64(a.clone()),
            CpuStorage::Bool(a) => CpuStorage::Bool(a.clone()),
        }
    }
}

/// Applies `$body` to the array inside any variant and rewraps the result in
/// the same variant.
macro_rules! map_storage {
    ($s:expr, $a:ident => $body:expr) => {
        match $s {
            $crate::storage::CpuStorage::F32($a) => $crate::storage::CpuStorage::F32($body),
            $crate::storage::CpuStorage::F64($a) => $crate::storage::CpuStorage::F64($body),
            $crate::storage::CpuStorage::F16($a) => $crate::storage::CpuStorage::F16($body),
            $crate::storage::CpuStorage::BF16($a) => $crate::storage::CpuStorage::BF16($body),
            $crate::storage::CpuStorage::I64($a) => $crate::storage::CpuStorage::I64($body),
            $crate::storage::CpuStorage::Bool($a) => $crate::storage::CpuStorage::Bool($body),
        }
    };
}
pub(crate) use map_storage;

impl CpuStorage {
    /// The f32 values, if that is the dtype.
    pub(crate) fn f32s(&self) -> Option<&Array<f32>> {
        match self {
            CpuStorage::F32(a) => Some(a),
            _ => None,
        }
    }

    /// The f64 values, if that is the dtype.
    pub(crate) fn f64s(&self) -> Option<&Array<f64>> {
        match self {
            CpuStorage::F64(a) => Some(a),
            _ => None,
        }
    }

    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::Bool(_) => DType::Bool,
        }
    }

    /// The dims.
    pub fn shape(&self) -> &[usize] {
        match self {
            CpuStorage::F32(a) => a.shape(),
            CpuStorage::F64(a) => a.shape(),
            CpuStorage::F16(a) => a.shape(),
            CpuStorage::BF16(a) => a.shape(),
            CpuStorage::I64(a) => a.shape(),
            CpuStorage::Bool(a) => a.shape(),
        }
    }

    /// Wraps host data: without copying it when its values start on a
    /// 64-byte cache line (or are too few for vector code to care), else
    /// copied once into an aligned pool buffer, so no op over it loads
    /// vectors that straddle two lines.
    pub fn from_data(data: TensorData) -> Self {
        fn wrap<T: pool::Pooled>(shape: &[usize], v: Vec<T>) -> Array<T> {
            if v.len() * size_of::<T>() < pool::ALIGN || (v.as_ptr() as usize).is_multiple_of(pool::ALIGN) {
                // `TensorData` guarantees that the values fill the shape.
                Array::from_shape_vec(IxDyn(shape), v)
                    .unwrap_or_else(|e| panic!("CpuStorage::from_data: inconsistent tensor data: {e}"))
            } else {
                assert_eq!(v.len(), shape.iter().product::<usize>(), "CpuStorage::from_data: inconsistent tensor data");
                pool::output(shape, |out| out.copy_from_slice(&v))
            }
        }
        let shape = &data.shape;
        match data.values {
            DataVec::F32(v) => CpuStorage::F32(wrap(shape, v)),
            DataVec::F64(v) => CpuStorage::F64(wrap(shape, v)),
            DataVec::F16(v) => CpuStorage::F16(wrap(shape, v)),
            DataVec::BF16(v) => CpuStorage::BF16(wrap(shape, v)),
            DataVec::I64(v) => CpuStorage::I64(wrap(shape, v)),
            DataVec::Bool(v) => CpuStorage::Bool(wrap(shape, v)),
        }
    }

    /// Copies the values out, row-major.
    pub fn to_data(&self) -> TensorData {
        fn values<T: Clone>(a: &Array<T>) -> Vec<T> {
            match a.as_slice() {
                Some(s) => s.to_vec(),
                None => a.iter().cloned().collect(),
            }
        }
        let values = match self {
            CpuStorage::F32(a) => DataVec::F32(values(a)),
            CpuStorage::F64(a) => DataVec::F64(values(a)),
            CpuStorage::F16(a) => DataVec::F16(values(a)),
            CpuStorage::BF16(a) => DataVec::BF16(values(a)),
            CpuStorage::I64(a) => DataVec::I64(values(a)),
            CpuStorage::Bool(a) => DataVec::Bool(values(a)),
        };
        TensorData { shape: self.shape().to_vec(), values }
    }

    /// Whether the values are 16-bit floats.
    pub(crate) fn is_half(&self) -> bool {
        self.dtype().is_half()
    }

    /// A half-precision tensor as f32, exactly: the CPU computes f16 and
    /// bf16 in f32, as PyTorch's CPU kernels do, rounding each result once
    /// ([`CpuStorage::narrow`]). Other dtypes are returned as they are.
    pub(crate) fn widen(&self) -> CpuStorage {
        use crate::{elementwise::map_baseline, parallel::CHEAP_OP_MIN};
        match self {
            CpuStorage::F16(a) => CpuStorage::F32(map_baseline(a, CHEAP_OP_MIN, f16::to_f32)),
            CpuStorage::BF16(a) => CpuStorage::F32(map_baseline(a, CHEAP_OP_MIN, bf16::to_f32)),
            other => other.clone(),
        }
    }

    /// An f32 result of a widened op rounded to `dtype` (f16 or bf16, to
    /// nearest even); results of other dtypes (bool comparisons, i64
    /// indices) and other targets are returned as they are.
    pub(crate) fn narrow(self, dtype: DType) -> CpuStorage {
        use crate::{elementwise::map, parallel::CHEAP_OP_MIN};
        match (self, dtype) {
            (CpuStorage::F32(a), DType::F16) => CpuStorage::F16(map(&a, CHEAP_OP_MIN, f16::from_f32)),
            (CpuStorage::F32(a), DType::BF16) => CpuStorage::BF16(map(&a, CHEAP_OP_MIN, bf16::from_f32)),
            (other, _) => other,
        }
    }

    /// The i64 array inside; the runtime has checked the dtype.
    pub(crate) fn as_i64(&self, op: &str) -> &Array<i64> {
        match self {
            CpuStorage::I64(a) => a,
            other => panic!("{op}: expected i64 indices, got {}", other.dtype()),
        }
    }

    /// The bool array inside; the runtime has checked the dtype.
    pub(crate) fn as_bool(&self, op: &str) -> &Array<bool> {
        match self {
            CpuStorage::Bool(a) => a,
            other => panic!("{op}: expected a bool tensor, got {}", other.dtype()),
        }
    }
}

/// Element types with arithmetic: f32, f64 and i64.
pub trait Num:
    crate::pool::Pooled
    + Send
    + Sync
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
    + 'static
{
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Converts as `as` does.
    fn from_f64(v: f64) -> Self;
}

impl Num for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Num for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Num for i64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    fn from_f64(v: f64) -> Self {
        v as i64
    }
}

/// Float element types: f32 and f64.
pub trait Float: Num + num_traits::Float + crate::pool::AnyBits {
    /// `e^x`, vectorisable where the type allows.
    fn fast_exp(self) -> Self;
}

impl Float for f32 {
    #[inline(always)]
    fn fast_exp(self) -> Self {
        blaze_runtime::math::exp_f32(self)
    }
}

impl Float for f64 {
    #[inline(always)]
    fn fast_exp(self) -> Self {
        self.exp()
    }
}
