//! What Blaze's GPU backends share on the host. Both the wgpu backend and
//! CubeCL's wgpu runtime run on a wgpu adapter, and both open a device the
//! same way: they pick the adapter alike and open it ([`open_device`]), refuse one
//! that computes differently from the CPU unless told otherwise
//! ([`GpuBackend::admit`]), share one device per process ([`SharedDevice`]),
//! let tests without an adapter skip ([`GpuBackend::probe`]), and say what
//! went wrong in the same words ([`OpenError`]); and both hold tensor
//! values in the same words ([`GpuBackend::pack`], [`unpack`]).
//!
//! Each backend reads its own environment variables, named after it:
//! `BLAZE_WGPU_ADAPTER` and `BLAZE_CUBECL_ADAPTER`, and so on.
#![deny(missing_docs)]

mod adapter;
mod data;

use std::fmt::Display;
use std::sync::OnceLock;

pub use adapter::{Identity, NoAdapter, Opened, choose_adapter, open_device, pick};
pub use data::unpack;

/// One of Blaze's GPU backends, as its environment variables and its
/// messages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuBackend {
    /// `blaze-wgpu`: WGSL shaders of Blaze's own.
    Wgpu,
    /// `blaze-cubecl`: CubeCL's wgpu runtime.
    CubeCl,
}

impl GpuBackend {
    /// The backend's environment variable for `what`: `BLAZE_WGPU_ADAPTER`.
    pub fn var(self, what: &str) -> String {
        let name = match self {
            GpuBackend::Wgpu => "WGPU",
            GpuBackend::CubeCl => "CUBECL",
        };
        format!("BLAZE_{name}_{what}")
    }

    /// Whether the backend's variable for `what` is set to `1`.
    pub fn flag(self, what: &str) -> bool {
        std::env::var(self.var(what)).is_ok_and(|v| v == "1")
    }

    /// The device that passed the self-check `check`, or, with
    /// `allow_divergent` or `BLAZE_<BACKEND>_ALLOW_DIVERGENT=1`, one that
    /// failed it; otherwise the check's error.
    pub fn admit<D>(self, device: D, allow_divergent: bool, check: Result<(), OpenError>) -> Result<D, OpenError> {
        match check {
            Err(e) if !(allow_divergent || self.flag("ALLOW_DIVERGENT")) => Err(e),
            _ => Ok(device),
        }
    }

    /// A device for tests and examples that can do without one: `None`
    /// (after printing why) when there is none, unless
    /// `BLAZE_REQUIRE_<BACKEND>=1` (CI), where a missing device panics.
    pub fn probe<D, E: Display>(self, device: Result<D, E>) -> Option<D> {
        match device {
            Ok(d) => Some(d),
            Err(e) if self.flag("REQUIRE") => panic!("{}=1 but {e}", self.var("REQUIRE")),
            Err(e) => {
                println!("skipping: {e}");
                None
            }
        }
    }
}

/// What can go wrong opening a device.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No adapter at all.
    #[error(
        "no wgpu adapter{}: install a GPU driver, or Mesa's software Vulkan \
         (`apt-get install mesa-vulkan-drivers libvulkan1` on Debian/Ubuntu)",
        if *.backend == GpuBackend::CubeCl { " for CubeCL" } else { "" }
    )]
    NoAdapter {
        /// The backend that looked.
        backend: GpuBackend,
    },
    /// The backend's `BLAZE_<BACKEND>_ADAPTER` (or its option) matched
    /// none of the adapters.
    #[error("{}={wanted}: no adapter's name contains it (found: {found})", .backend.var("ADAPTER"))]
    NoMatch {
        /// The backend that looked.
        backend: GpuBackend,
        /// The requested name.
        wanted: String,
        /// The adapters present.
        found: String,
    },
    /// The adapter would not give a device, or the runtime would not run
    /// on it.
    #[error("adapter {adapter}: {message}")]
    Device {
        /// The adapter's name.
        adapter: String,
        /// What went wrong.
        message: String,
    },
    /// The device computes some operation differently from the CPU.
    #[error(
        "adapter {adapter} computes {check} as {got}, the CPU as {want}: Blaze refuses devices whose results \
         differ from the CPU's; set {}=1 (or the options' `allow_divergent`) to use it anyway",
        .backend.var("ALLOW_DIVERGENT")
    )]
    Divergent {
        /// The backend whose self-check failed.
        backend: GpuBackend,
        /// The adapter.
        adapter: String,
        /// The operation and its operands.
        check: String,
        /// What the device computed.
        got: String,
        /// What the CPU computes.
        want: String,
    },
}

/// The device a backend's process shares (its `Default`), opened on first
/// use; a failure is kept as its message and said again at each use.
#[derive(Debug)]
pub struct SharedDevice<D>(OnceLock<Result<D, String>>);

impl<D: Clone> SharedDevice<D> {
    /// None opened yet.
    pub const fn new() -> Self {
        SharedDevice(OnceLock::new())
    }

    /// The shared device, opened with `open` the first time.
    pub fn get<E: Display>(&self, open: impl FnOnce() -> Result<D, E>) -> Result<D, &str> {
        match self.0.get_or_init(|| open().map_err(|e| e.to_string())) {
            Ok(d) => Ok(d.clone()),
            Err(e) => Err(e),
        }
    }

    /// The shared device, or a panic that says why there is none, naming
    /// `what` (`WgpuDevice::default()`).
    pub fn get_or_panic<E: Display>(&self, what: &str, open: impl FnOnce() -> Result<D, E>) -> D {
        self.get(open).unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}

impl<D: Clone> Default for SharedDevice<D> {
    fn default() -> Self {
        Self::new()
    }
}

/// What a GPU backend's device handle has in common with the other's:
/// `struct $ty { inner: Arc<Inner> }`, whose `Inner` has `id:`
/// [`Identity`], and whose `$ty::new()` opens a device with the default
/// options. It gives the handle
/// - `Debug` as `WgpuDevice(#0 llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan))`,
/// - `PartialEq`: the same device (a clone shares it),
/// - `Default`: the one device the process shares ([`SharedDevice`]),
///   which panics, saying how to get one, when there is no adapter,
/// - `probe()`, `adapter_name()` and `is_software()`.
#[macro_export]
macro_rules! device_handle {
    ($ty:ident, $backend:expr, $require:literal) => {
        #[doc = concat!("`", stringify!($ty), "(#0 llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan))`: the order in")]
        /// which the process opened it, and the adapter, as messages name it.
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}({})", stringify!($ty), self.inner.id)
            }
        }

        impl ::std::cmp::PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                ::std::sync::Arc::ptr_eq(&self.inner, &other.inner)
            }
        }

        /// The device the process shares, opened on first use.
        static SHARED: $crate::SharedDevice<$ty> = $crate::SharedDevice::new();

        impl ::std::default::Default for $ty {
            fn default() -> Self {
                SHARED.get_or_panic(concat!(stringify!($ty), "::default()"), $ty::new)
            }
        }

        impl $ty {
            /// The shared default device for tests and examples that can do
            /// without one: `None` (after printing why) when there is no adapter,
            #[doc = concat!("unless `", $require, "=1`, where a missing adapter panics.")]
            pub fn probe() -> Option<$ty> {
                $backend.probe(SHARED.get($ty::new))
            }

            /// The adapter's name and API, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)`.
            pub fn adapter_name(&self) -> String {
                self.inner.id.adapter_name()
            }

            /// Whether the adapter is a software one (a CPU rasteriser).
            pub fn is_software(&self) -> bool {
                self.inner.id.is_software()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_names_its_own_variables_in_its_messages() {
        assert_eq!(GpuBackend::Wgpu.var("ADAPTER"), "BLAZE_WGPU_ADAPTER");
        let e = OpenError::NoMatch { backend: GpuBackend::CubeCl, wanted: "rtx".into(), found: "llvmpipe".into() };
        assert_eq!(e.to_string(), "BLAZE_CUBECL_ADAPTER=rtx: no adapter's name contains it (found: llvmpipe)");
        let e = OpenError::Divergent {
            backend: GpuBackend::Wgpu,
            adapter: "a".into(),
            check: "x".into(),
            got: "1".into(),
            want: "2".into(),
        };
        assert!(e.to_string().contains("set BLAZE_WGPU_ALLOW_DIVERGENT=1"), "{e}");
        assert!(
            OpenError::NoAdapter { backend: GpuBackend::CubeCl }.to_string().starts_with("no wgpu adapter for CubeCL")
        );
    }

    #[test]
    fn a_divergent_device_is_refused_unless_allowed() {
        let diverges = || Err(OpenError::Device { adapter: "a".into(), message: "m".into() });
        assert!(GpuBackend::Wgpu.admit(7, false, diverges()).is_err());
        assert_eq!(GpuBackend::Wgpu.admit(7, true, diverges()).ok(), Some(7));
        assert_eq!(GpuBackend::Wgpu.admit(7, false, Ok(())).ok(), Some(7));
    }

    #[test]
    fn the_shared_device_opens_once_and_keeps_its_failure() {
        let shared = SharedDevice::<u8>::new();
        assert_eq!(shared.get(|| Err::<u8, _>("no adapter")), Err("no adapter"));
        assert_eq!(shared.get(|| Ok::<u8, String>(1)), Err("no adapter"), "opened once");
        let ok = SharedDevice::<u8>::new();
        assert_eq!(ok.get(|| Ok::<u8, String>(3)), Ok(3));
        assert_eq!(ok.get_or_panic("d", || Err::<u8, _>("unused")), 3);
    }
}
