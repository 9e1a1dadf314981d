//! The runtime's errors: [`Error`] for tensor data (defined with the
//! data, in [`crate::dtype`]) and [`DeviceError`] for a device's faults.

pub use crate::dtype::Error;

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
