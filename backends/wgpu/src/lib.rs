//! Blaze on wgpu: picking a device (a hardware adapter when there is one,
//! else a software one such as Mesa's llvmpipe), and running `kernel!`
//! kernels on it: general ones with [`launch`], elementwise ones (and
//! their generated partials) with [`map`], on host data; and [`Wgpu`],
//! the tensor backend.
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

pub use backend::{DeviceTensor, Wgpu, WgpuStorage};
pub use device::{DeviceOptions, WgpuDevice};

use blaze_runtime::kernel::{Elementwise, KernelFn, ScalarArg, Workgroups, launch_mismatch};
use wgpu::util::DeviceExt;

/// What can go wrong finding a device or running a kernel on it.
#[derive(Debug, thiserror::Error)]
pub enum WgpuError {
    /// No adapter at all.
    #[error(
        "no wgpu adapter: install a GPU driver, or Mesa's software Vulkan \
         (`apt-get install mesa-vulkan-drivers libvulkan1` on Debian/Ubuntu)"
    )]
    NoAdapter,
    /// `BLAZE_WGPU_ADAPTER` matched none of the adapters.
    #[error("BLAZE_WGPU_ADAPTER={wanted}: no adapter's name contains it (found: {found})")]
    NoMatch {
        /// The requested name.
        wanted: String,
        /// The adapters present.
        found: String,
    },
    /// The adapter would not give a device.
    #[error("adapter {adapter}: {message}")]
    Device {
        /// The adapter's name.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// The adapter computes some operation differently from the CPU.
    #[error(
        "adapter {adapter} computes {check} as {got}, the CPU as {want}: Blaze refuses adapters whose results \
         differ from the CPU's; set BLAZE_WGPU_ALLOW_DIVERGENT=1 (or DeviceOptions::allow_divergent) to use it anyway"
    )]
    Divergent {
        /// The adapter.
        adapter: String,
        /// The operation and its operands.
        check: String,
        /// What the adapter computed.
        got: String,
        /// What the CPU computes.
        want: String,
    },
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

/// Records general kernel `K` over `groups` workgroups on device buffers
/// (the tensor backend's `launch`); a kernel the device will not compile
/// is a fault of the device.
pub(crate) fn dispatch_general<K: Workgroups>(
    device: &WgpuDevice,
    groups: u32,
    buffers: &[&wgpu::Buffer],
    scalars: &[u32],
) {
    let max = device.max_groups();
    assert!(groups <= max, "{}: {groups} workgroups; this device dispatches at most {max} at once", K::NAME);
    let pipeline = device.compile(K::NAME, K::NAME, || K::WGSL.to_owned(), K::NAME);
    device.dispatch_with(&pipeline, buffers, (!scalars.is_empty()).then_some(scalars), (groups, 1, 1));
}

/// Runs general kernel `K` over `groups` workgroups on `device`: uploads
/// the buffers, dispatches once, and reads the outputs back into `buffers`.
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
    let max_groups = device.inner.device.limits().max_compute_workgroups_per_dimension;
    if groups > max_groups {
        return Err(fail(format!("{groups} workgroups; this device dispatches at most {max_groups} at once")));
    }
    let pipeline = device.pipeline(K::NAME, K::NAME, || K::WGSL.to_owned(), K::NAME)?;
    // Scalars are 4-byte fields of one uniform struct, in order.
    let uniform: Vec<u8> = scalars
        .iter()
        .flat_map(|s| match s {
            ScalarArg::F32(v) => v.to_le_bytes(),
            ScalarArg::U32(v) => v.to_le_bytes(),
            ScalarArg::I32(v) => v.to_le_bytes(),
        })
        .collect();
    dispatch(device, K::NAME, &pipeline, buffers, (!scalars.is_empty()).then_some(uniform), (groups, 1))
}

/// Uploads `buffers` (and a uniform of `uniform`'s bytes bound after them),
/// runs `pipeline` over `groups` workgroups and reads the outputs back.
fn dispatch(
    device: &WgpuDevice,
    kernel: &'static str,
    pipeline: &wgpu::ComputePipeline,
    buffers: &mut [HostBuffer<'_>],
    uniform: Option<Vec<u8>>,
    groups: (u32, u32),
) -> Result<(), WgpuError> {
    let fail = |message: String| WgpuError::Launch { kernel, message };
    device.synchronize()?;
    let max = device.max_buffer_bytes();
    let lens = buffers.iter().map(|b| match b {
        HostBuffer::Input(v) => v.len(),
        HostBuffer::Output(v) => v.len(),
    });
    for (i, len) in lens.enumerate() {
        let bytes = 4 * len as u64;
        if bytes > max {
            return Err(fail(format!(
                "buffer {i} holds {bytes} bytes, more than this device's largest buffer of {max} bytes"
            )));
        }
    }
    let (dev, queue) = (&device.inner.device, &device.inner.queue);
    let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);

    let bytes = |v: &[f32]| -> Vec<u8> {
        // Bindings may not be empty: an empty buffer is one unused zero.
        let v = if v.is_empty() { &[0.0][..] } else { v };
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    };
    let gpu: Vec<wgpu::Buffer> = buffers
        .iter()
        .map(|b| {
            let data = match b {
                HostBuffer::Input(v) => bytes(v),
                HostBuffer::Output(v) => bytes(v),
            };
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(kernel),
                contents: &data,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            })
        })
        .collect();
    // Uniform buffers are padded to 16 bytes.
    let params = uniform.map(|mut u| {
        u.resize(u.len().next_multiple_of(16).max(16), 0);
        dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(kernel),
            contents: &u,
            usage: wgpu::BufferUsages::UNIFORM,
        })
    });
    let mut entries: Vec<wgpu::BindGroupEntry<'_>> = gpu
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
        .collect();
    if let Some(p) = &params {
        entries.push(wgpu::BindGroupEntry { binding: gpu.len() as u32, resource: p.as_entire_binding() });
    }
    let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(kernel),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });

    let mut encoder = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(kernel) });
    {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(kernel), timestamp_writes: None });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }
    // Outputs come back through mappable staging copies.
    let staging: Vec<Option<wgpu::Buffer>> = buffers
        .iter()
        .zip(&gpu)
        .map(|(b, g)| match b {
            HostBuffer::Output(_) => {
                let s = dev.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(kernel),
                    size: g.size(),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                encoder.copy_buffer_to_buffer(g, 0, &s, 0, g.size());
                Some(s)
            }
            HostBuffer::Input(_) => None,
        })
        .collect();
    queue.submit([encoder.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(fail(e.to_string()));
    }
    for (b, s) in buffers.iter_mut().zip(&staging) {
        let (HostBuffer::Output(out), Some(s)) = (b, s) else { continue };
        let slice = s.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        dev.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| fail(e.to_string()))?;
        rx.recv().map_err(|e| fail(e.to_string()))?.map_err(|e| fail(e.to_string()))?;
        let data = slice.get_mapped_range().map_err(|e| fail(e.to_string()))?;
        for (o, c) in out.iter_mut().zip(data.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
    }
    // An out-of-memory or a lost device during the launch.
    device.synchronize()?;
    Ok(())
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

/// Invocations per workgroup of an elementwise kernel.
const MAP_WORKGROUP: u32 = 256;

/// The compute shader around an elementwise kernel's function `f`: one
/// invocation per element; each argument a buffer read at `i * stride`
/// (stride 0 for a number).
fn map_shader(wgsl: &str, f: &str, arity: usize) -> String {
    let mut s = String::from(wgsl);
    for i in 0..arity {
        s.push_str(&format!("@group(0) @binding({i}) var<storage, read> arg{i}: array<f32>;\n"));
    }
    s.push_str(&format!("@group(0) @binding({arity}) var<storage, read_write> out: array<f32>;\n"));
    s.push_str("struct Params {\n    len: u32,\n");
    for i in 0..arity {
        s.push_str(&format!("    stride{i}: u32,\n"));
    }
    s.push_str(&format!("}}\n@group(0) @binding({}) var<uniform> params: Params;\n", arity + 1));
    let args: Vec<String> = (0..arity).map(|i| format!("arg{i}[i * params.stride{i}]")).collect();
    s.push_str(&format!(
        "@compute @workgroup_size({MAP_WORKGROUP})\n\
         fn map(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    \
         let i = gid.x + gid.y * nwg.x * {MAP_WORKGROUP}u;\n    \
         if (i >= params.len) {{ return; }}\n    \
         out[i] = {f}({});\n}}\n",
        args.join(", ")
    ));
    s
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
    let name = match f {
        KernelFn::Value => K::NAME.to_owned(),
        KernelFn::Partial(i) => match K::ARGS.get(i) {
            Some(arg) => format!("{}_d_{arg}", K::NAME),
            None => return Err(fail(format!("no argument {i}"))),
        },
    };
    if n == 0 {
        return Ok(());
    }
    let pipeline =
        device.pipeline(K::NAME, &format!("map:{name}"), || map_shader(K::WGSL, &name, args.len()), "map")?;
    let numbers: Vec<[f32; 1]> = args
        .iter()
        .map(|a| match a {
            MapArg::Number(v) => [*v],
            MapArg::Array(_) => [0.0],
        })
        .collect();
    let mut buffers: Vec<HostBuffer<'_>> = args
        .iter()
        .zip(&numbers)
        .map(|(a, one)| match a {
            MapArg::Array(v) => HostBuffer::Input(v),
            MapArg::Number(_) => HostBuffer::Input(one),
        })
        .collect();
    buffers.push(HostBuffer::Output(out));
    let mut uniform = (n as u32).to_le_bytes().to_vec();
    for a in args {
        uniform.extend(u32::from(matches!(a, MapArg::Array(_))).to_le_bytes());
    }
    // Large outputs spread over a second grid dimension.
    let max = device.inner.device.limits().max_compute_workgroups_per_dimension;
    let groups = (n as u32).div_ceil(MAP_WORKGROUP);
    let grid = if groups <= max { (groups, 1) } else { (max, groups.div_ceil(max)) };
    dispatch(device, K::NAME, &pipeline, &mut buffers, Some(uniform), grid)
}
