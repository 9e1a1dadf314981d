//! The runtime's error type, for fallible work such as building tensor data.

use crate::dtype::DType;

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

/// A device that can no longer compute: an allocation beyond its limits,
/// an out-of-memory report from the driver, a lost device. Faults are
/// sticky: every tensor on the device is suspect afterwards, so the device
/// keeps reporting the first fault ([`crate::Device::synchronize`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{device}: {message}")]
pub struct DeviceError {
    /// The device, as its backend names it (adapter and API for a GPU).
    pub device: String,
    /// What went wrong.
    pub message: String,
}
