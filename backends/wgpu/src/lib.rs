//! Blaze on wgpu: picking a device (a hardware adapter when there is one,
//! else a software one such as Mesa's llvmpipe), and running `kernel!`
//! kernels on it: general ones with [`launch`], elementwise ones (and
//! their generated partials) with [`map`], on host data; and
//! [`WgpuNative`], the tensor backend for the dtypes WGSL has, which
//! tensors use as `HostFallback<WgpuNative, Cpu>` (`blaze::wgpu::Wgpu`):
//! this crate needs no CPU backend. `launch` and `map` upload the host data as tensors
//! and run the tensor backend's kernels, so a kernel has one dispatch path.
//!
//! `BLAZE_WGPU_ADAPTER=name` picks the first adapter whose name contains
//! `name` (case-insensitively), `WGPU_BACKEND=vulkan|gl|metal|dx12` the
//! APIs searched. Every device checks on opening that the adapter computes
//! integer and NaN operations as the CPU does (see [`DeviceOptions`]).
#![deny(missing_docs)]

mod backend;
mod device;
mod self_check;
mod shaders;

pub use backend::{WgpuNative, WgpuStorage};
pub use blaze_gpu_host::OpenError;
pub use device::{DeviceOptions, WgpuDevice};

use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups, launch_mismatch};
use blaze_runtime::{DataVec, Kernels, Primitives, TensorData};

/// What can go wrong opening a device or running a kernel on it.
#[derive(Debug, thiserror::Error)]
pub enum WgpuError {
    /// No device: no adapter, none that matches, or one that would not
    /// open or computes differently from the CPU (the GPU backends' shared
    /// [`OpenError`]).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The device faulted (an allocation beyond its limits, a lost device).
    #[error(transparent)]
    Fault(#[from] blaze_runtime::DeviceError),
    /// A launch the device rejected, or bad arguments.
    #[error("{kernel}: {message}")]
    Launch {
        /// The kernel.
        kernel: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// A buffer argument of a launch, in host memory.
#[derive(Debug)]
pub enum HostBuffer<'a> {
    /// Read by the kernel.
    Input(&'a [f32]),
    /// Read and written; holds the kernel's result after the launch.
    Output(&'a mut [f32]),
}

/// Runs general kernel `K` over `groups` workgroups on `device`: uploads
/// the buffers as tensors, runs the tensor backend's launch, and reads the
/// outputs back into `buffers`.
pub fn launch<K: Workgroups>(
    device: &WgpuDevice,
    groups: u32,
    buffers: &mut [HostBuffer<'_>],
    scalars: &[ScalarArg],
) -> Result<(), WgpuError> {
    let fail = |message: String| WgpuError::Launch { kernel: K::NAME, message };
    let outputs: Vec<bool> = buffers.iter().map(|b| matches!(b, HostBuffer::Output(_))).collect();
    if let Some(problem) = launch_mismatch::<K>(outputs.iter().copied(), scalars.len()) {
        return Err(fail(problem));
    }
    let max_groups = device.max_groups();
    if groups > max_groups {
        return Err(fail(format!("{groups} workgroups; this device dispatches at most {max_groups} at once")));
    }
    let values = |b: &HostBuffer<'_>| -> Vec<f32> {
        match b {
            HostBuffer::Input(v) => v.to_vec(),
            HostBuffer::Output(v) => v.to_vec(),
        }
    };
    let host: Vec<Vec<f32>> = buffers.iter().map(values).collect();
    let key = backend::general_key::<K>();
    prepare(device, K::NAME, host.iter().map(Vec::len), key, || K::WGSL.to_owned(), K::NAME)?;
    let mut tensors: Vec<WgpuStorage> = host.into_iter().map(|v| upload(device, v)).collect();
    let mut args: Vec<LaunchBuffer<'_, WgpuStorage>> = tensors
        .iter_mut()
        .zip(&outputs)
        .map(|(t, &output)| if output { LaunchBuffer::Output(t) } else { LaunchBuffer::Input(&*t) })
        .collect();
    WgpuNative::launch::<K>(groups, &mut args, scalars);
    device.synchronize()?;
    for (b, t) in buffers.iter_mut().zip(&tensors) {
        if let HostBuffer::Output(out) = b {
            backend::read_f32(t, out)?;
        }
    }
    Ok(())
}

/// What a host-data launch checks before it records anything, so a bad
/// launch is its own error and leaves the device usable: no earlier
/// fault, every buffer within the device's limit, and a shader the device
/// compiles (cached under `key`, where the tensor op finds it).
fn prepare(
    device: &WgpuDevice,
    kernel: &'static str,
    lens: impl Iterator<Item = usize>,
    key: &str,
    wgsl: impl FnOnce() -> String,
    entry: &str,
) -> Result<(), WgpuError> {
    device.synchronize()?;
    let max = device.max_buffer_bytes();
    for (i, len) in lens.enumerate() {
        let bytes = 4 * len as u64;
        if bytes > max {
            return Err(WgpuError::Launch {
                kernel,
                message: format!(
                    "buffer {i} holds {bytes} bytes, more than this device's largest buffer of {max} bytes"
                ),
            });
        }
    }
    device.pipeline(kernel, key, wgsl, entry)?;
    Ok(())
}

/// Host values as an f32 tensor on `device`.
fn upload(device: &WgpuDevice, values: Vec<f32>) -> WgpuStorage {
    let shape = vec![values.len()];
    WgpuNative::from_data(TensorData { shape, values: DataVec::F32(values) }, device)
}

/// An argument of an elementwise kernel on the device: a whole array (as
/// long as the output) or one number for every element.
#[derive(Debug, Clone, Copy)]
pub enum MapArg<'a> {
    /// One value per output element.
    Array(&'a [f32]),
    /// The same value everywhere.
    Number(f32),
}

/// Elementwise kernel `K` (or one of its partials) over `args` on the
/// device, into `out`: every array argument is as long as `out`.
pub fn map<K: Elementwise>(
    device: &WgpuDevice,
    f: KernelFn,
    args: &[MapArg<'_>],
    out: &mut [f32],
) -> Result<(), WgpuError> {
    let fail = |message: String| WgpuError::Launch { kernel: K::NAME, message };
    if args.len() != K::ARGS.len() {
        return Err(fail(format!("{} arguments for {} parameters", args.len(), K::ARGS.len())));
    }
    let n = out.len();
    if let Some((i, len)) = args.iter().enumerate().find_map(|(i, a)| match a {
        MapArg::Array(v) if v.len() != n => Some((i, v.len())),
        _ => None,
    }) {
        return Err(fail(format!("argument `{}` has {len} values for {n} outputs", K::ARGS[i])));
    }
    if let KernelFn::Partial(i) = f
        && i >= K::ARGS.len()
    {
        return Err(fail(format!("no argument {i}")));
    }
    if n == 0 {
        return Ok(());
    }
    let layout: String = args.iter().map(|a| if matches!(a, MapArg::Array(_)) { 't' } else { 'n' }).collect();
    let (key, wgsl) = backend::elementwise_program::<K>(f, &layout);
    let lens = args.iter().filter_map(|a| if let MapArg::Array(v) = a { Some(v.len()) } else { None });
    prepare(device, K::NAME, lens.chain([n]), &key, wgsl, "main")?;
    let inputs: Vec<KernelArg<WgpuStorage>> = args
        .iter()
        .map(|a| match a {
            MapArg::Array(v) => KernelArg::Tensor(upload(device, v.to_vec())),
            MapArg::Number(v) => KernelArg::Number(f64::from(*v)),
        })
        .collect();
    let y = backend::elementwise_on::<K>(device, f, &inputs, &[n]);
    device.synchronize()?;
    backend::read_f32(&y, out)?;
    Ok(())
}
