//! Element types, and host-side tensor data that moves between backends.

use std::fmt;

use half::{bf16, f16};

/// The element type of a tensor, known at run time.
///
/// `F32` is what models train in; `F64` exists for gradient checks; `F16`
/// and `BF16` halve the memory and bandwidth of a tensor; `I64` holds
/// indices and class labels; `Bool` holds masks.
///
/// The half-precision dtypes are storage types, as in PyTorch: an op on
/// them computes in f32 (sums and products accumulate in f32) and rounds
/// its result once, to nearest even. A backend without 16-bit floats on
/// its device keeps them on the host (`HostFallback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 16-bit IEEE float (`half::f16`: 10 mantissa bits, largest 65504).
    F16,
    /// 16-bit brain float (`half::bf16`: f32's range, 7 mantissa bits).
    BF16,
    /// 64-bit signed integer.
    I64,
    /// Boolean.
    Bool,
}

impl DType {
    /// True for the float dtypes: `F32`, `F64`, `F16` and `BF16`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// True for the 16-bit floats, which compute in f32.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// Bytes per element.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// The PyTorch-style name (`f32`, `i64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for i64 {}
    impl Sealed for bool {}
}

/// A Rust type that can be a tensor element: `f32`, `f64`, `f16`, `bf16`,
/// `i64` or `bool`.
pub trait Element: Copy + Send + Sync + fmt::Debug + PartialEq + 'static + sealed::Sealed {
    /// The matching run-time dtype.
    const DTYPE: DType;
    /// Wraps a vector of this type.
    fn wrap(values: Vec<Self>) -> DataVec;
    /// Borrows the values if `data` holds this type.
    fn slice(data: &DataVec) -> Option<&[Self]>;
    /// Converts to f64 (`true` is 1).
    fn to_f64(self) -> f64;
    /// Converts from f64 as `as` does (`bool`: non-zero is true).
    fn from_f64(v: f64) -> Self;
}

macro_rules! impl_element {
    ($t:ty, $variant:ident, |$v:ident| $to:expr, |$f:ident| $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn wrap(values: Vec<Self>) -> DataVec {
                DataVec::$variant(values)
            }
            fn slice(data: &DataVec) -> Option<&[Self]> {
                match data {
                    DataVec::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn to_f64(self) -> f64 {
                let $v = self;
                $to
            }
            fn from_f64($f: f64) -> Self {
                $from
            }
        }
    };
}

impl_element!(f32, F32, |v| v as f64, |f| f as f32);
impl_element!(f64, F64, |v| v, |f| f);
impl_element!(f16, F16, |v| v.to_f64(), |f| f16::from_f32(odd_f32(f)));
impl_element!(bf16, BF16, |v| v.to_f64(), |f| bf16::from_f32(odd_f32(f)));

/// `x` as f32 rounded to odd: toward zero, then the lowest bit set when
/// that dropped anything. f32 keeps 13 more bits than f16 and 16 more
/// than bf16, so rounding this to either (nearest, ties to even) rounds
/// `x` once, as converting it directly would. (`half`'s own
/// `bf16::from_f64` rounds some values just above a tie down: it misses
/// the low bits that break the tie.)
pub(crate) fn odd_f32(x: f64) -> f32 {
    let f = x as f32;
    if !f.is_finite() || f as f64 == x {
        return f;
    }
    let toward_zero = if (f as f64).abs() > x.abs() { f32::from_bits(f.to_bits() - 1) } else { f };
    f32::from_bits(toward_zero.to_bits() | 1)
}
impl_element!(i64, I64, |v| v as f64, |f| f as i64);
impl_element!(bool, Bool, |v| if v { 1.0 } else { 0.0 }, |f| f != 0.0);

/// The values of a tensor on the host, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum DataVec {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// 64-bit floats.
    F64(Vec<f64>),
    /// 16-bit IEEE floats.
    F16(Vec<f16>),
    /// 16-bit brain floats.
    BF16(Vec<bf16>),
    /// 64-bit integers.
    I64(Vec<i64>),
    /// Booleans.
    Bool(Vec<bool>),
}

impl DataVec {
    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        match self {
            DataVec::F32(_) => DType::F32,
            DataVec::F64(_) => DType::F64,
            DataVec::F16(_) => DType::F16,
            DataVec::BF16(_) => DType::BF16,
            DataVec::I64(_) => DType::I64,
            DataVec::Bool(_) => DType::Bool,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            DataVec::F32(v) => v.len(),
            DataVec::F64(v) => v.len(),
            DataVec::F16(v) => v.len(),
            DataVec::BF16(v) => v.len(),
            DataVec::I64(v) => v.len(),
            DataVec::Bool(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as f64, whatever the dtype.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            DataVec::F32(v) => v.iter().map(|&x| x as f64).collect(),
            DataVec::F64(v) => v.clone(),
            DataVec::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            DataVec::BF16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            DataVec::I64(v) => v.iter().map(|&x| x as f64).collect(),
            DataVec::Bool(v) => v.iter().map(|&x| x.to_f64()).collect(),
        }
    }

    /// Converts every value to `dtype` (as Rust's `as` does; bool: non-zero).
    pub fn convert(&self, dtype: DType) -> DataVec {
        if self.dtype() == dtype {
            return self.clone();
        }
        match (self, dtype) {
            (DataVec::I64(v), DType::F32) => DataVec::F32(v.iter().map(|&x| x as f32).collect()),
            (DataVec::F32(v), DType::I64) => DataVec::I64(v.iter().map(|&x| x as i64).collect()),
            (DataVec::I64(v), DType::F64) => DataVec::F64(v.iter().map(|&x| x as f64).collect()),
            (DataVec::F64(v), DType::I64) => DataVec::I64(v.iter().map(|&x| x as i64).collect()),
            // f32 <-> half without the detour through f64 (exact either way).
            (DataVec::F32(v), DType::F16) => DataVec::F16(v.iter().map(|&x| f16::from_f32(x)).collect()),
            (DataVec::F32(v), DType::BF16) => DataVec::BF16(v.iter().map(|&x| bf16::from_f32(x)).collect()),
            (DataVec::F16(v), DType::F32) => DataVec::F32(v.iter().map(|&x| x.to_f32()).collect()),
            (DataVec::BF16(v), DType::F32) => DataVec::F32(v.iter().map(|&x| x.to_f32()).collect()),
            _ => {
                let f = self.to_f64_vec();
                match dtype {
                    DType::F32 => DataVec::F32(f.into_iter().map(|x| x as f32).collect()),
                    DType::F64 => DataVec::F64(f),
                    DType::F16 => DataVec::F16(f.into_iter().map(Element::from_f64).collect()),
                    DType::BF16 => DataVec::BF16(f.into_iter().map(Element::from_f64).collect()),
                    DType::I64 => DataVec::I64(f.into_iter().map(|x| x as i64).collect()),
                    DType::Bool => DataVec::Bool(f.into_iter().map(|x| x != 0.0).collect()),
                }
            }
        }
    }
}

/// A tensor's shape and values on the host, in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// The dims, outermost first.
    pub shape: Vec<usize>,
    /// The values, row-major; `values.len()` equals the product of `shape`.
    pub values: DataVec,
}

impl TensorData {
    /// Builds tensor data, checking that `values` fills `shape` exactly.
    pub fn new<T: Element>(values: Vec<T>, shape: impl Into<Vec<usize>>) -> Result<Self, Error> {
        Self::from_values(T::wrap(values), shape)
    }

    /// Like [`TensorData::new`] for values whose type is known at run time.
    pub fn from_values(values: DataVec, shape: impl Into<Vec<usize>>) -> Result<Self, Error> {
        let shape = shape.into();
        let expected: usize = shape.iter().product();
        if values.len() != expected {
            return Err(Error::DataLength { shape, expected, actual: values.len() });
        }
        Ok(TensorData { shape, values })
    }

    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.values.len()
    }

    /// The values as a vector of `T`; an error if the dtype is not `T`'s.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, Error> {
        T::slice(&self.values).map(<[T]>::to_vec).ok_or(Error::DType { expected: T::DTYPE, actual: self.dtype() })
    }

    /// Borrows the values as `&[T]`; an error if the dtype is not `T`'s.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], Error> {
        T::slice(&self.values).ok_or(Error::DType { expected: T::DTYPE, actual: self.dtype() })
    }

    /// The same data converted to `dtype`.
    pub fn convert(&self, dtype: DType) -> TensorData {
        TensorData { shape: self.shape.clone(), values: self.values.convert(dtype) }
    }
}

/// What went wrong in the runtime. Misuse of tensor ops (wrong shapes) panics
/// instead, with the op and the shapes; this type is for data that comes from
/// outside the program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The number of values does not fill the shape.
    #[error("tensor data: shape {shape:?} needs {expected} values, got {actual}")]
    DataLength {
        /// The requested shape.
        shape: Vec<usize>,
        /// The product of the shape.
        expected: usize,
        /// The number of values given.
        actual: usize,
    },
    /// The data holds another dtype than the one asked for.
    #[error("tensor data: expected dtype {expected}, found {actual}")]
    DType {
        /// The dtype asked for.
        expected: DType,
        /// The dtype held.
        actual: DType,
    },
    /// The data's rank does not match the tensor's rank.
    #[error("tensor data: a rank-{expected} tensor cannot hold data of shape {shape:?}")]
    Rank {
        /// The tensor type's rank.
        expected: usize,
        /// The data's shape.
        shape: Vec<usize>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounding to 16 bits happens once: a value just above a tie
    /// between two bf16 or f16 values goes up, a tie goes to even.
    #[test]
    fn half_floats_round_once_to_nearest_even() {
        // 0x3d008006: bf16's round bit and two sticky bits set.
        let above_tie = f64::from(f32::from_bits(0x3d00_8006));
        assert_eq!(<bf16 as Element>::from_f64(above_tie).to_bits(), 0x3d01);
        assert_eq!(<bf16 as Element>::from_f64(f64::from(f32::from_bits(0x3d00_8000))).to_bits(), 0x3d00);
        assert_eq!(<bf16 as Element>::from_f64(f64::from(f32::from_bits(0x3d01_8000))).to_bits(), 0x3d02);
        // Just above a tie only in f64's low bits: f32 would round it to the tie.
        let f16_tie = 1.0 + 2f64.powi(-11);
        assert_eq!(<f16 as Element>::from_f64(f16_tie).to_f64(), 1.0);
        assert_eq!(<f16 as Element>::from_f64(f16_tie + 2f64.powi(-40)).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(<bf16 as Element>::from_f64(1.0 + 2f64.powi(-8) + 2f64.powi(-40)).to_f64(), 1.0 + 2f64.powi(-7));
        // Every f32 converts as `from_f32` does, through f64 or not.
        for bits in (0x0000_0001u32..0x7f80_0000).step_by(4093) {
            let x = f32::from_bits(bits);
            assert_eq!(<bf16 as Element>::from_f64(f64::from(x)), bf16::from_f32(x), "{x:e}");
            assert_eq!(<f16 as Element>::from_f64(f64::from(x)), f16::from_f32(x), "{x:e}");
        }
        assert!(<f16 as Element>::from_f64(65520.0).is_infinite());
        assert_eq!(<f16 as Element>::from_f64(65519.0).to_f64(), 65504.0);
    }
}
