//! Finding the adapter: the one whose name contains what the user asked
//! for (an option, else the backend's environment variable), else the best
//! one present, hardware before software.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{GpuBackend, OpenError};

/// The adapter `backend` runs on, and the instance that found it (the
/// CubeCL runtime keeps both). `wanted` is the caller's option; without
/// one, the backend's `BLAZE_<BACKEND>_ADAPTER` is read. An empty name
/// asks for nothing. `WGPU_BACKEND=vulkan|gl|metal|dx12` limits the APIs
/// searched.
pub fn choose_adapter(backend: GpuBackend, wanted: Option<&str>) -> Result<(wgpu::Instance, wgpu::Adapter), OpenError> {
    let wanted = wanted.map(str::to_owned).or_else(|| std::env::var(backend.var("ADAPTER")).ok());
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let present: Vec<(String, wgpu::DeviceType)> = adapters
        .iter()
        .map(|a| {
            let info = a.get_info();
            (info.name, info.device_type)
        })
        .collect();
    let i = pick(&present, wanted.as_deref()).map_err(|e| match e {
        NoAdapter::None => OpenError::NoAdapter { backend },
        NoAdapter::NoMatch { wanted, found } => OpenError::NoMatch { backend, wanted, found },
    })?;
    Ok((instance, adapters.swap_remove(i)))
}

/// A logical device on the adapter [`choose_adapter`] picks, and what
/// found it (the CubeCL runtime keeps them all).
#[derive(Debug)]
pub struct Opened {
    /// The instance that found the adapter.
    pub instance: wgpu::Instance,
    /// The adapter.
    pub adapter: wgpu::Adapter,
    /// What the adapter says of itself.
    pub info: wgpu::AdapterInfo,
    /// The device opened on it.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
}

/// Opens a device for `backend` on the adapter [`choose_adapter`] picks
/// for `wanted`, with the `features` of those it asks for that the adapter
/// has and the limits `limits` makes of the adapter's own; a refusal is
/// [`OpenError::Device`], naming the adapter.
pub fn open_device(
    backend: GpuBackend,
    wanted: Option<&str>,
    features: wgpu::Features,
    limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits,
) -> Result<Opened, OpenError> {
    let (instance, adapter) = choose_adapter(backend, wanted)?;
    let info = adapter.get_info();
    let label = match backend {
        GpuBackend::Wgpu => "blaze",
        GpuBackend::CubeCl => "blaze-cubecl",
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some(label),
        required_features: adapter.features() & features,
        required_limits: limits(adapter.limits()),
        ..Default::default()
    }))
    .map_err(|e| OpenError::Device { adapter: info.name.clone(), message: e.to_string() })?;
    Ok(Opened { instance, adapter, info, device, queue })
}

/// What names an open device: the order in which the process opened it
/// (counted over both backends) and its adapter. Shown as
/// `#1 llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)`.
#[derive(Debug)]
pub struct Identity {
    ordinal: u64,
    info: wgpu::AdapterInfo,
}

impl Identity {
    /// The next device the process opens, on the adapter `info` describes.
    pub fn next(info: wgpu::AdapterInfo) -> Identity {
        static OPENED: AtomicU64 = AtomicU64::new(0);
        Identity { ordinal: OPENED.fetch_add(1, Ordering::Relaxed), info }
    }

    /// The adapter's name and API, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)`.
    pub fn adapter_name(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    /// Whether the adapter is a software one (a CPU rasteriser).
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// What wgpu says of the adapter.
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{} {}", self.ordinal, self.adapter_name())
    }
}

/// Why no adapter fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoAdapter {
    /// wgpu found none at all.
    None,
    /// None's name contains `wanted`; `found` lists the names present.
    NoMatch {
        /// What was asked for.
        wanted: String,
        /// The adapters present, comma-separated.
        found: String,
    },
}

/// Which of the adapters `present` (name, kind) to take: of those whose
/// name contains `wanted` (case-insensitively; all of them without it),
/// the best kind, the first of it in order.
pub fn pick(present: &[(String, wgpu::DeviceType)], wanted: Option<&str>) -> Result<usize, NoAdapter> {
    if present.is_empty() {
        return Err(NoAdapter::None);
    }
    let wanted = wanted.filter(|w| !w.is_empty());
    let low = wanted.map(str::to_lowercase);
    let fits = |name: &str| low.as_ref().is_none_or(|w| name.to_lowercase().contains(w));
    let best = (0..present.len()).filter(|&i| fits(&present[i].0)).min_by_key(|&i| rank(present[i].1));
    best.ok_or_else(|| {
        let found: Vec<&str> = present.iter().map(|(name, _)| name.as_str()).collect();
        NoAdapter::NoMatch { wanted: wanted.unwrap_or_default().to_owned(), found: found.join(", ") }
    })
}

/// Hardware first: discrete, integrated, virtual, then software (CPU).
fn rank(kind: wgpu::DeviceType) -> u8 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::DeviceType::{Cpu, DiscreteGpu, IntegratedGpu};

    fn present(list: &[(&str, wgpu::DeviceType)]) -> Vec<(String, wgpu::DeviceType)> {
        list.iter().map(|&(n, k)| (n.to_owned(), k)).collect()
    }

    #[test]
    fn hardware_comes_first_and_a_name_picks_its_adapter() {
        let p = present(&[
            ("llvmpipe", Cpu),
            ("Intel Iris", IntegratedGpu),
            ("RTX 4090", DiscreteGpu),
            ("RTX 3060", DiscreteGpu),
        ]);
        assert_eq!(pick(&p, None), Ok(2));
        assert_eq!(pick(&p, Some("")), Ok(2));
        assert_eq!(pick(&p, Some("LLVM")), Ok(0));
        assert_eq!(pick(&p, Some("rtx")), Ok(2));
        assert_eq!(pick(&p, Some("E")), Ok(1), "llvmpipe and Intel Iris match; the GPU wins");
        assert_eq!(
            pick(&p, Some("radeon")),
            Err(NoAdapter::NoMatch {
                wanted: "radeon".into(),
                found: "llvmpipe, Intel Iris, RTX 4090, RTX 3060".into()
            })
        );
        assert_eq!(pick(&[], None), Err(NoAdapter::None));
    }
}
