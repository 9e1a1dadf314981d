//! `CubeDevice`: one CubeCL client on the wgpu runtime, on an adapter
//! Blaze picks itself (hardware before software, `BLAZE_CUBECL_ADAPTER`),
//! with its first fault kept for `synchronize`.

use std::sync::{Arc, Mutex};

use blaze_gpu_host::{GpuBackend, Identity, OpenError, Opened};
use blaze_runtime::{DType, DeviceError};
use cubecl::prelude::{Client, Scalar};
use cubecl::wgpu::{RuntimeOptions, WgpuSetup, wgpu};

use crate::tune::Tuner;

/// A CubeCL device: the wgpu runtime's client on one adapter. Cloning
/// shares it; `CubeDevice::default()` is one device shared by the process
/// (it panics, saying how to get one, when there is no adapter).
#[derive(Clone)]
pub struct CubeDevice {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The order the process opened it in, and its adapter.
    id: Identity,
    pub(crate) client: Client,
    /// Whether the adapter computes in f16 (`SHADER_F16`).
    f16: bool,
    /// Whether shaders have 64-bit integers (`SHADER_INT64`), which
    /// cubek's convolution and pooling kernels index with.
    pub(crate) int64: bool,
    /// The first fault, as `synchronize` reports it.
    fault: Mutex<Option<String>>,
    /// Measured choices among kernels, per shape class (`tune.rs`).
    pub(crate) tuner: Tuner,
}

blaze_gpu_host::device_handle!(CubeDevice, GpuBackend::CubeCl, "BLAZE_REQUIRE_CUBECL");

/// How [`CubeDevice::open`] picks and sets up a device.
#[derive(Clone, Debug, Default)]
pub struct CubeOptions {
    /// The first adapter whose name contains this (case-insensitively);
    /// `None` reads `BLAZE_CUBECL_ADAPTER`, and without it takes the best
    /// adapter (hardware before software).
    pub adapter: Option<String>,
    /// Whether the matmul and the sums measure their kernels on the first
    /// call for each shape class (`Some(false)`: each takes its first
    /// kernel that runs the shape); `None` reads `BLAZE_CUBECL_AUTOTUNE`
    /// (`0` or `off` turns it off), on by default.
    pub autotune: Option<bool>,
    /// The file that keeps the tuning choices between processes; `None`
    /// takes [`crate::autotune_cache_path`].
    pub autotune_cache: Option<std::path::PathBuf>,
    /// Opens a device that fails the self-check, computing some operation
    /// differently from the CPU. `BLAZE_CUBECL_ALLOW_DIVERGENT=1` does the
    /// same.
    pub allow_divergent: bool,
}

impl CubeDevice {
    /// A device as `options` say, before its self-check: what
    /// [`CubeDevice::open`] (`self_check.rs`) checks and admits.
    pub(crate) fn open_unchecked(options: &CubeOptions) -> Result<Self, OpenError> {
        let wanted = wgpu::Features::SHADER_F16 | wgpu::Features::SHADER_INT64;
        let Opened { instance, adapter, info, device, queue } =
            blaze_gpu_host::open_device(GpuBackend::CubeCl, options.adapter.as_deref(), wanted, |limits| limits)?;
        let fail = |message: String| OpenError::Device { adapter: info.name.clone(), message };
        let setup = WgpuSetup { instance, adapter, device, queue, backend: info.backend };
        let mut runtime = RuntimeOptions::try_default().map_err(|e| fail(e.to_string()))?;
        // One page per buffer in power-of-two buckets, as the wgpu
        // backend pools: CubeCL's default slices pages and searches them
        // on every allocation, which grew with the buffers alive (a
        // recorded graph of 20k small tensors: 3.4 s, against 1.2 s here).
        runtime.memory_config = cubecl::MemoryConfiguration::ExclusivePages;
        let id = cubecl::wgpu::try_init_device(setup, runtime).map_err(|e| fail(e.to_string()))?;
        let client = cubecl::Device::Wgpu(id).client();
        let f16 = client.properties().supports_type(blaze_runtime::f16::elem_type_native());
        let int64 = client.properties().supports_type(u64::elem_type_native());
        let inner = Inner {
            id: Identity::next(info),
            client,
            f16,
            int64,
            fault: Mutex::new(None),
            tuner: Tuner::new(
                options.autotune.unwrap_or_else(crate::tune::tuning_on),
                options.autotune_cache.clone().or_else(crate::tune::cache_path),
            ),
        };
        Ok(CubeDevice { inner: Arc::new(inner) })
    }

    /// [`CubeDevice::probe`] for a device of its own, opened with `options`.
    pub fn probe_with(options: CubeOptions) -> Option<CubeDevice> {
        GpuBackend::CubeCl.probe(Self::open(options))
    }

    /// Whether tensors of `dtype` live on this device: f32 and bool
    /// always, f16 where the adapter has 16-bit floats (`SHADER_F16`).
    /// The rest (f64, bf16, which WGSL lacks, and i64) live on the host
    /// in `blaze::cubecl::CubeCl`.
    pub fn holds(&self, dtype: DType) -> bool {
        match dtype {
            DType::F32 | DType::Bool => true,
            DType::F16 => self.inner.f16,
            DType::F64 | DType::BF16 | DType::I64 => false,
        }
    }

    /// What names this device in the autotune cache: the adapter, its
    /// API and its driver.
    pub(crate) fn identity(&self) -> String {
        let i = self.inner.id.info();
        format!("{} ({:?}; {} {})", i.name, i.backend, i.driver, i.driver_info).replace(['\t', '\n'], " ")
    }

    /// Forgets the kernels autotuning chose on this device, in this
    /// process and in the cache file ([`crate::autotune_cache_path`]):
    /// the next call of each tuned op measures its candidates again.
    pub fn clear_autotune_cache(&self) -> std::io::Result<()> {
        self.inner.tuner.clear(&|| self.identity())
    }

    /// The kernels this device runs for each shape class it has met (or
    /// loaded from the cache file): `("matmul:b1:m64:k64:n64",
    /// "simple_unit_max")` and so on, sorted.
    pub fn autotune_choices(&self) -> Vec<(String, String)> {
        self.inner.tuner.choices(&|| self.identity())
    }

    /// The CubeCL client, for launching CubeCL kernels of one's own on
    /// this device.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The first fault this device has had, if any.
    pub fn fault(&self) -> Option<String> {
        self.inner.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records `message` as the device's fault unless it already has one.
    pub(crate) fn record_fault(&self, message: String) {
        let mut slot = self.inner.fault.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(message);
    }

    /// Waits for the work queued so far and reports the first fault the
    /// device has had; see [`blaze_runtime::Device::synchronize`].
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        if self.fault().is_none()
            && let Err(e) = cubecl::future::block_on(self.inner.client.sync())
        {
            self.record_fault(crate::first_line(&e.to_string()));
        }
        match self.fault() {
            Some(message) => Err(DeviceError { device: self.adapter_name(), message }),
            None => Ok(()),
        }
    }
}
