//! `kernel!` kernels on this backend: `kernel!` writes a `#[cube]`
//! version of every kernel beside its WGSL and its CPU loop (when the
//! `blaze` facade's `cubecl` feature is on) and hands this backend its
//! launcher through `Elementwise::DEVICE` / `Workgroups::DEVICE`. The
//! runtime's own hand-written kernels run their versions in `builtin.rs`;
//! any other elementwise kernel written by hand runs on the host.

use blaze_runtime::DType;
use blaze_runtime::kernel::{
    Builtin, Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups, check_launch, own_outputs,
};
use cubecl::prelude::*;

use super::{CubeStorage, grid, strides};
use crate::CubeDevice;

/// What `kernel!` generates for an elementwise kernel on this backend.
#[derive(Debug)]
pub struct CubeElementwise {
    /// Launches the kernel (`which` 0) or its partial `which - 1` over the
    /// elements of `out`, one tensor per argument, each read through its
    /// strides (0 where it broadcasts).
    pub launch: fn(client: &Client, count: CubeCount, dim: CubeDim, args: Vec<TensorArg>, out: TensorArg, which: u32),
}

/// What `kernel!` generates for a general kernel on this backend.
#[derive(Debug)]
pub struct CubeWorkgroups {
    /// Launches `groups` cubes of the kernel's workgroup size over the
    /// buffers (flat f32 arrays, in parameter order) and scalars.
    pub launch: fn(client: &Client, groups: u32, buffers: Vec<BufferArg>, scalars: &[ScalarArg]),
}

/// `t` as a flat f32 buffer of general kernel `kernel`.
pub(crate) fn buffer_arg(kernel: &str, t: &CubeStorage) -> BufferArg {
    assert!(t.dtype == DType::F32, "cubecl {kernel}: a {} buffer; kernels take f32", t.dtype);
    // SAFETY: the buffer holds `numel` f32 values (at least one word).
    unsafe { BufferArg::from_raw_parts(t.handle.clone(), t.numel()) }
}

/// `out[i]`: a number uniform in `[0, 1)` from the seed's words and `i`,
/// as `blaze_runtime::rng::counter_uniform` draws it.
#[cube(launch)]
fn uniform_kernel(out: &mut Tensor<f32>, k0: u32, k1: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = draw(ABSOLUTE_POS as u32, k0, k1);
}

/// Element `i`'s draw from the seed's words.
#[cube]
pub(super) fn draw(i: u32, k0: u32, k1: u32) -> f32 {
    let bits = mix(mix(i ^ k0) ^ k1) >> 8u32;
    f32::cast_from(bits) / 16_777_216.0
}

#[cube]
fn mix(x: u32) -> u32 {
    let mut h = x ^ (x >> 16u32);
    h *= 0x7feb_352du32;
    h ^= h >> 15u32;
    h *= 0x846c_a68bu32;
    h ^ (h >> 16u32)
}

/// How many elementwise kernels ran on the host: the unit tests check
/// that the runtime's builtins do not.
#[cfg(test)]
pub(super) static HOST_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// An elementwise kernel with no `#[cube]` version (one written by hand
/// against `Elementwise` outside the runtime's builtins) runs its CPU
/// loop on the host: the operands are
/// read back, the result uploaded. Correct everywhere, at the cost of the
/// round trip.
fn on_host<K: Elementwise>(
    device: &CubeDevice,
    f: KernelFn,
    inputs: &[KernelArg<CubeStorage>],
    shape: &[usize],
) -> CubeStorage {
    #[cfg(test)]
    HOST_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let n: usize = shape.iter().product();
    let args: Vec<Vec<f32>> = inputs
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(t) => {
                let full = <super::CubeNative as blaze_runtime::Primitives>::expand(t, shape);
                match <super::CubeNative as blaze_runtime::Primitives>::to_data(&full).values {
                    blaze_runtime::DataVec::F32(v) => v,
                    other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
                }
            }
            KernelArg::Number(v) => vec![*v as f32; n],
            KernelArg::Uniform(seed) => (0..n).map(|i| blaze_runtime::rng::counter_uniform(*seed, i as u32)).collect(),
        })
        .collect();
    let slices: Vec<&[f32]> = args.iter().map(Vec::as_slice).collect();
    let mut out = vec![std::mem::MaybeUninit::<f32>::uninit(); n];
    match f {
        KernelFn::Value => K::map(&slices, &mut out),
        KernelFn::Partial(i) => K::map_partial(i, &slices, &mut out),
    }
    // SAFETY: `map` and `map_partial` write every slot (their contract).
    let values: Vec<f32> = out.into_iter().map(|v| unsafe { v.assume_init() }).collect();
    let data = blaze_runtime::TensorData { shape: shape.to_vec(), values: blaze_runtime::DataVec::F32(values) };
    <super::CubeNative as blaze_runtime::Primitives>::from_data(data, device)
}

/// `t` read over `shape`, which it broadcasts to: strides of 0 where it
/// has size 1 or lacks the dim.
fn view(t: &CubeStorage, shape: &[usize]) -> TensorArg {
    if t.shape == shape {
        return t.arg();
    }
    let st = strides(&t.shape);
    let st: Vec<usize> = if t.shape.len() == shape.len() {
        t.shape.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect()
    } else {
        vec![0; shape.len()]
    };
    t.view(st, shape.to_vec())
}

pub(super) fn elementwise<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<CubeStorage>],
    shape: &[usize],
    dtype: DType,
) -> CubeStorage {
    assert!(dtype == DType::F32, "cubecl {}: kernels run on f32 here; {dtype} tensors live on the host", K::NAME);
    let device = inputs.iter().find_map(|a| Some(a.tensor()?.device.clone())).unwrap_or_default();
    let builtin = Builtin::of::<K>();
    let table = K::DEVICE.and_then(|d| d.downcast_ref::<CubeElementwise>());
    let table = table
        .or_else(|| builtin.map(super::builtin::table))
        .or_else(crate::__private::unary::launcher::<K>)
        .or_else(crate::__private::binary::launcher::<K>);
    let Some(table) = table else {
        return on_host::<K>(&device, f, inputs, shape);
    };
    let out = CubeStorage::empty(&device, shape, DType::F32);
    let n = out.numel();
    if n == 0 {
        return out;
    }
    let which = match f {
        KernelFn::Value => 0,
        KernelFn::Partial(i) => 1 + u32::try_from(i).expect("a kernel has few arguments"),
    };
    if builtin == Some(Builtin::Dropout) && super::builtin::try_dropout_drawn(inputs, &out, which, |x| view(x, shape)) {
        return out;
    }
    // Numbers and noise become tensors read through strides of 0.
    let held: Vec<CubeStorage> = inputs
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(t) => t.clone(),
            KernelArg::Number(v) => {
                <super::CubeNative as blaze_runtime::Primitives>::full(&[1], *v, DType::F32, &device)
            }
            KernelArg::Uniform(seed) => uniform(&device, shape, *seed),
        })
        .collect();
    let args = held.iter().map(|t| view(t, shape)).collect();
    let (count, cube) = grid(n);
    (table.launch)(device.client(), count, cube, args, out.arg(), which);
    out
}

/// Noise over `shape` from `seed`, drawn on the device.
fn uniform(device: &CubeDevice, shape: &[usize], seed: u64) -> CubeStorage {
    let out = CubeStorage::empty(device, shape, DType::F32);
    let (count, cube) = grid(out.numel());
    uniform_kernel::launch(device.client(), count, cube, out.arg(), seed as u32, (seed >> 32) as u32);
    out
}

pub(super) fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, CubeStorage>], scalars: &[ScalarArg]) {
    check_launch::<K, _>(buffers, scalars);
    let table = K::DEVICE.and_then(|d| d.downcast_ref::<CubeWorkgroups>()).unwrap_or_else(|| {
        panic!(
            "cubecl {}: this general kernel has no CubeCL version; kernel! writes one when the `blaze` crate's \
             `cubecl` feature is on",
            K::NAME
        )
    });
    let Some(device) = buffers.first().map(|b| b.storage().device.clone()) else {
        return;
    };
    own_outputs(buffers, |t| {
        let own = CubeStorage::empty(&device, &t.shape, t.dtype);
        super::CubeNative::copy_into(t.arg(), 0, &own, 0, &t.shape);
        own
    });
    if groups == 0 {
        return;
    }
    let args = buffers.iter().map(|b| buffer_arg(K::NAME, b.storage())).collect();
    (table.launch)(device.client(), groups, args, scalars);
}
