//! `kernel!` kernels as tensor ops: elementwise kernels and their partials
//! wrapped in a per-output shader, general kernels dispatched over their
//! workgroups. The host-data `launch` and `map` run through these too.

use super::*;

pub(super) fn elementwise<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    dtype: DType,
) -> WgpuStorage {
    let device = device_of::<K>(inputs, dtype);
    elementwise_on::<K>(&device, f, inputs, shape)
}

/// The device kernel `K`'s f32 `inputs` live on.
fn device_of<K: Elementwise>(inputs: &[KernelArg<WgpuStorage>], dtype: DType) -> WgpuDevice {
    assert!(dtype == DType::F32, "wgpu {}: kernels run on f32 here; {dtype} tensors live on the host", K::NAME);
    inputs.iter().find_map(|a| Some(a.tensor()?.device.clone())).unwrap_or_default()
}

/// The buffers an elementwise kernel's shader binds (the tensor inputs in
/// order, then `outputs`), its numbers (and each noise seed, as two words)
/// appended to `params`.
fn bind<'a>(
    inputs: &'a [KernelArg<WgpuStorage>],
    params: &mut Vec<u32>,
    outputs: &[&'a WgpuStorage],
) -> Vec<&'a wgpu::Buffer> {
    let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
    for a in inputs {
        match a {
            KernelArg::Tensor(t) => buffers.push(t.buffer()),
            KernelArg::Number(v) => params.push((*v as f32).to_bits()),
            KernelArg::Uniform(seed) => params.extend([*seed as u32, (*seed >> 32) as u32]),
        }
    }
    buffers.extend(outputs.iter().map(|o| o.buffer()));
    buffers
}

pub(super) fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, WgpuStorage>], scalars: &[ScalarArg]) {
    check_launch::<K, _>(buffers, scalars);
    let Some(device) = buffers.first().map(|b| b.storage().device.clone()) else {
        return;
    };
    own_outputs(buffers, |t| {
        let d = native(K::NAME, t);
        let fresh = WgpuStorage::new(&d.device, &d.shape, d.dtype);
        device.copy(d.buffer(), fresh.buffer(), 4 * d.numel() as u64);
        fresh
    });
    let bound: Vec<&wgpu::Buffer> = buffers.iter().map(|b| b.storage().buffer()).collect();
    let max = device.max_groups();
    assert!(groups <= max, "{}: {groups} workgroups; this device dispatches at most {max} at once", K::NAME);
    dispatch::<K>(&device, groups, &bound, scalars);
}

/// General kernel `K` over `groups` workgroups (at most the device's
/// grid) on buffers `bound`, in the kernel's order.
pub(super) fn dispatch<K: Workgroups>(
    device: &WgpuDevice,
    groups: u32,
    bound: &[&wgpu::Buffer],
    scalars: &[ScalarArg],
) {
    let words: Vec<u32> = scalars
        .iter()
        .map(|s| match s {
            ScalarArg::F32(v) => v.to_bits(),
            ScalarArg::U32(v) => *v,
            ScalarArg::I32(v) => *v as u32,
        })
        .collect();
    let pipeline = device.compile(K::NAME, general_key::<K>(), || K::WGSL.to_owned(), K::NAME);
    device.dispatch_with(&pipeline, bound, (!words.is_empty()).then_some(&words), (groups, 1, 1));
}

/// What general kernel `K`'s pipeline is cached under: its type's path, so
/// that kernels of one name in different modules (a user's `softmax` and
/// the runtime's row kernel) stay apart.
pub(crate) fn general_key<K: Workgroups>() -> &'static str {
    std::any::type_name::<K>()
}

/// Row op `K` of the runtime (`blaze_runtime::rows`) over `rows` rows: a
/// workgroup per row, each striding on past the device's grid.
pub(super) fn rows<K: Workgroups>(device: &WgpuDevice, rows: usize, bound: &[&wgpu::Buffer], scalars: &[ScalarArg]) {
    let groups = u32::try_from(rows).unwrap_or(u32::MAX).min(device.max_groups());
    dispatch::<K>(device, groups, bound, scalars);
}

/// How an elementwise kernel's arguments are passed, one letter each: `t`
/// a tensor (bound in order), `n` a number, `u` noise (its seed, as
/// parameters): the shader differs.
pub(super) fn layout(inputs: &[KernelArg<WgpuStorage>]) -> String {
    inputs
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(_) => 't',
            KernelArg::Number(_) => 'n',
            KernelArg::Uniform(_) => 'u',
        })
        .collect()
}

/// Elementwise kernel `K`'s function `f` as a per-output shader over
/// arguments laid out as `layout` says ([`layout`]): the key its pipeline
/// is cached under, and its WGSL. (A fused group with a sum, softmax or
/// norm after it runs this, then the reduction's or the row op's own
/// kernel: `Kernels`' defaults.)
pub(crate) fn elementwise_program<K: Elementwise>(
    f: KernelFn,
    layout: &str,
) -> (String, impl FnOnce() -> String + use<K>) {
    let name = match f {
        KernelFn::Value => K::NAME.to_owned(),
        KernelFn::Partial(i) => format!("{}_d_{}", K::NAME, K::ARGS[i]),
    };
    let key = format!("kernel:{name}:{layout}");
    // Parameter 0 is the element count; numbers follow in order.
    let mut params = 1;
    let args: Vec<String> = layout
        .chars()
        .enumerate()
        .map(|(k, kind)| match kind {
            't' => format!("in{k}[i]"),
            'n' => {
                params += 1;
                format!("pf({}u)", params - 1)
            }
            _ => {
                params += 2;
                format!("blaze_uniform(pu({}u), pu({}u), i)", params - 2, params - 1)
            }
        })
        .collect();
    let noise = if layout.contains('u') { blaze_runtime::rng::COUNTER_WGSL } else { "" };
    let inputs: Vec<String> =
        layout.chars().enumerate().filter(|&(_, t)| t == 't').map(|(k, _)| format!("in{k}")).collect();
    let wgsl = move || {
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let functions = [K::DEPS.join("\n").as_str(), noise, K::WGSL].concat();
        shaders::kernel(&inputs, &functions, &format!("{name}({})", args.join(", ")))
    };
    (key, wgsl)
}

/// Elementwise kernel `K` (or a partial) over f32 `inputs` on `device`.
pub(crate) fn elementwise_on<K: Elementwise>(
    device: &WgpuDevice,
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
) -> WgpuStorage {
    let out = WgpuStorage::new(device, shape, DType::F32);
    let n = out.numel();
    if n == 0 {
        return out;
    }
    let mut params = vec![u(n)];
    let buffers = bind(inputs, &mut params, &[&out]);
    let (key, wgsl) = elementwise_program::<K>(f, &layout(inputs));
    let pipeline = device.compile(K::NAME, &key, wgsl, "main");
    device.dispatch(&pipeline, &buffers, &params, grid(device, n, WG));
    out
}

/// The values of an f32 tensor, or the fault that makes them invalid.
pub(crate) fn read_f32(t: &WgpuStorage, out: &mut [f32]) -> Result<(), blaze_runtime::DeviceError> {
    match t.device.try_read(t.buffer(), 4 * t.numel() as u64) {
        Some(bytes) => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            Ok(())
        }
        None => t.device.synchronize(),
    }
}
