//! `kernel!` general kernels on the wgpu device against the CPU backend.
//! Without an adapter these tests print a notice and pass, unless
//! `BLAZE_REQUIRE_WGPU=1` (as `.ci/run` sets), where a missing adapter fails.

use crate::common_kernels::{SEMANTICS_OUT, affine, row_sum, semantics, semantics_inputs, signed};
use blaze::prelude::*;
use blaze::runtime::kernel::KernelFn;
use blaze::runtime::kernel::ScalarArg;
use blaze_wgpu::{HostBuffer, MapArg, WgpuDevice, launch, map};

kernel! {
    /// NaN-keeping maximum.
    pub fn fmax(x: f32, y: f32) -> f32 {
        max(x, y)
    }
}

kernel! {
    /// NaN-keeping minimum.
    pub fn fmin(x: f32, y: f32) -> f32 {
        min(x, y)
    }
}

kernel! {
    /// NaN-keeping clamp to [-1, 1].
    pub fn fclamp(x: f32) -> f32 {
        clamp(x, -1.0, 1.0)
    }
}

kernel! {
    /// WGSL's float remainder, `x - y * trunc(x / y)`.
    pub fn frem(x: f32, y: f32) -> f32 {
        x % y
    }
}

kernel! {
    /// Swish with a slope: an elementwise kernel with its partials.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

fn device() -> Option<WgpuDevice> {
    let d = WgpuDevice::probe()?;
    println!("wgpu adapter: {}", d.adapter_name());
    Some(d)
}

fn data(n: usize, seed: u64) -> Vec<f32> {
    Tensor::<Cpu, 1>::normal_with([n], 0.0, 1.0, &mut blaze::Rng::seed_from_u64(seed), &CpuDevice).to_vec::<f32>()
}

fn close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len());
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        assert!((g - c).abs() <= 1e-5 * (1.0 + c.abs()), "{what}[{i}]: wgpu {g}, cpu {c}");
    }
}

#[test]
fn shared_memory_reduction_agrees_with_the_cpu() {
    let Some(dev) = device() else { return };
    for (rows, cols) in [(1, 1), (3, 63), (9, 200), (40, 513)] {
        let x = data(rows * cols, 1);
        let mut gpu = vec![0.0f32; rows];
        let mut bufs = [HostBuffer::Input(&x), HostBuffer::Output(&mut gpu)];
        launch::<row_sum::Kernel>(&dev, rows as u32, &mut bufs, &[ScalarArg::U32(cols as u32)]).expect("launch");
        let xt = Tensor::<Cpu, 2>::from_vec(x.clone(), [rows, cols], &CpuDevice);
        let mut cpu = Tensor::<Cpu, 1>::zeros([rows], &CpuDevice);
        row_sum::launch(rows as u32, &xt, &mut cpu, cols as u32);
        close(&format!("row_sum {rows}x{cols}"), &gpu, &cpu.to_vec::<f32>());
    }
}

#[test]
fn scalars_ids_and_bounds_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let n = 100;
    let x = data(n, 2);
    let mut gpu = vec![7.0f32; n];
    let groups = n.div_ceil(32) as u32;
    let mut bufs = [HostBuffer::Input(&x), HostBuffer::Output(&mut gpu)];
    launch::<affine::Kernel>(&dev, groups, &mut bufs, &[ScalarArg::F32(1.5), ScalarArg::U32(n as u32)])
        .expect("launch");
    let xt = Tensor::<Cpu, 1>::from_vec(x.clone(), [n], &CpuDevice);
    let mut cpu = Tensor::<Cpu, 1>::full([n], 7.0, &CpuDevice);
    affine::launch(groups, &xt, &mut cpu, 1.5, n as u32);
    close("affine", &gpu, &cpu.to_vec::<f32>());
}

#[test]
fn bad_launches_are_errors_naming_the_kernel() {
    let Some(dev) = device() else { return };
    let x = [1.0f32];
    let err = launch::<row_sum::Kernel>(&dev, 1, &mut [HostBuffer::Input(&x)], &[ScalarArg::U32(1)]).unwrap_err();
    assert!(err.to_string().starts_with("row_sum: buffers"), "{err}");
    let mut out = [0.0f32];
    let err = launch::<row_sum::Kernel>(&dev, 1, &mut [HostBuffer::Input(&x), HostBuffer::Output(&mut out)], &[])
        .unwrap_err();
    assert_eq!(err.to_string(), "row_sum: 0 scalars for 1 parameters");
}

#[test]
fn signed_integers_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let mut gpu = vec![0.0f32; 32];
    launch::<signed::Kernel>(&dev, 2, &mut [HostBuffer::Output(&mut gpu)], &[ScalarArg::I32(5)]).expect("launch");
    let mut cpu = Tensor::<Cpu, 1>::zeros([32], &CpuDevice);
    signed::launch(2, &mut cpu, 5);
    assert_eq!(gpu, cpu.to_vec::<f32>());
}

#[test]
fn elementwise_kernels_and_their_partials_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let n = 1000;
    let x = data(n, 3);
    let beta = data(n, 4);
    let xt = Tensor::<Cpu, 1>::from_vec(x.clone(), [n], &CpuDevice);
    let bt = Tensor::<Cpu, 1>::from_vec(beta.clone(), [n], &CpuDevice);
    for f in [KernelFn::Value, KernelFn::Partial(0), KernelFn::Partial(1)] {
        let mut gpu = vec![0.0f32; n];
        map::<swish::Kernel>(&dev, f, &[MapArg::Array(&x), MapArg::Array(&beta)], &mut gpu).expect("map");
        let cpu = match f {
            KernelFn::Value => swish(&xt, &bt),
            KernelFn::Partial(i) => {
                blaze::runtime::kernel::partial::<swish::Kernel, Cpu, 1>(i, &[(&xt).into(), (&bt).into()])
            }
        };
        close(&format!("swish {f:?}"), &gpu, &cpu.to_vec::<f32>());
    }
    // A number in place of an array.
    let mut gpu = vec![0.0f32; n];
    map::<swish::Kernel>(&dev, KernelFn::Value, &[MapArg::Array(&x), MapArg::Number(1.5)], &mut gpu).expect("map");
    close("swish(x, 1.5)", &gpu, &swish(&xt, 1.5).to_vec::<f32>());
    let err = map::<swish::Kernel>(&dev, KernelFn::Value, &[MapArg::Array(&x[..3]), MapArg::Number(1.0)], &mut gpu)
        .unwrap_err();
    assert_eq!(err.to_string(), "swish: argument `x` has 3 values for 1000 outputs");
}

/// NaN matches NaN; other values agree to the bit, or within `tol` of
/// their size where WGSL allows an inexact division (float remainder).
fn agree(what: &str, gpu: &[f32], cpu: &[f32], tol: impl Fn(usize) -> f32) {
    assert_eq!(gpu.len(), cpu.len());
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        let ok = g.to_bits() == c.to_bits() || g.is_nan() && c.is_nan() || (g - c).abs() <= tol(i) * (1.0 + c.abs());
        assert!(ok, "{what}[{i}]: wgpu {g}, cpu {c}");
    }
}

#[test]
fn division_shifts_casts_and_nan_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let (x, y) = semantics_inputs();
    let n = x.len();
    let mut gpu = vec![0.0f32; n * SEMANTICS_OUT];
    let groups = n.div_ceil(64) as u32;
    let mut bufs = [HostBuffer::Input(&x), HostBuffer::Input(&y), HostBuffer::Output(&mut gpu)];
    launch::<semantics::Kernel>(&dev, groups, &mut bufs, &[ScalarArg::U32(n as u32)]).expect("launch");
    let (xt, yt) =
        (Tensor::<Cpu, 1>::from_vec(x.clone(), [n], &CpuDevice), Tensor::from_vec(y.clone(), [n], &CpuDevice));
    let mut cpu = Tensor::<Cpu, 1>::zeros([n * SEMANTICS_OUT], &CpuDevice);
    semantics::launch(groups, &xt, &yt, &mut cpu, n as u32);
    // Output 25 of each case is the float remainder.
    agree("semantics", &gpu, &cpu.to_vec::<f32>(), |i| if i % SEMANTICS_OUT == 25 { 1e-6 } else { 0.0 });

    let (xc, yc) =
        (Tensor::<Cpu, 1>::from_vec(x.clone(), [n], &CpuDevice), Tensor::from_vec(y.clone(), [n], &CpuDevice));
    let two = [MapArg::Array(&x), MapArg::Array(&y)];
    let mut out = vec![0.0f32; n];
    map::<fmax::Kernel>(&dev, KernelFn::Value, &two, &mut out).expect("map");
    agree("max", &out, &fmax(&xc, &yc).to_vec::<f32>(), |_| 0.0);
    map::<fmin::Kernel>(&dev, KernelFn::Value, &two, &mut out).expect("map");
    agree("min", &out, &fmin(&xc, &yc).to_vec::<f32>(), |_| 0.0);
    map::<frem::Kernel>(&dev, KernelFn::Value, &two, &mut out).expect("map");
    agree("rem", &out, &frem(&xc, &yc).to_vec::<f32>(), |_| 1e-6);
    map::<fclamp::Kernel>(&dev, KernelFn::Value, &[MapArg::Array(&x)], &mut out).expect("map");
    agree("clamp", &out, &fclamp(&xc).to_vec::<f32>(), |_| 0.0);
    assert!(fmax(&xc, &yc).to_vec::<f32>()[1].is_nan(), "max(NaN, inf) keeps the NaN on the CPU");
}

/// Two general kernels of one name in different modules.
mod twins {
    pub mod a {
        blaze::kernel! {
            #[workgroup(1)]
            pub fn softmax(out: &mut [f32]) {
                out[0] = 1.0;
            }
        }
    }
    pub mod b {
        blaze::kernel! {
            #[workgroup(1)]
            pub fn softmax(out: &mut [f32]) {
                out[0] = 2.0;
            }
        }
    }
}

type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

#[test]
fn kernels_of_one_name_keep_their_own_pipelines() {
    let Some(dev) = device() else { return };
    let run = |twin: &dyn Fn(&mut Tensor<Wgpu, 1>)| {
        let mut out = Tensor::<Wgpu, 1>::zeros([1], &dev);
        twin(&mut out);
        out.to_vec::<f32>()[0]
    };
    // A user's `softmax`, another one, and the runtime's row kernel of that
    // name: each runs its own shader.
    assert_eq!(run(&|o| twins::a::softmax::launch(1, o)), 1.0);
    assert_eq!(run(&|o| twins::b::softmax::launch(1, o)), 2.0);
    let x = Tensor::<Wgpu, 2>::from_vec(vec![0.0f32, 0.0], [1, 2], &dev);
    assert_eq!(x.softmax(1).to_vec::<f32>(), vec![0.5, 0.5]);
    let mut host = [0.0f32];
    launch::<twins::b::softmax::Kernel>(&dev, 1, &mut [HostBuffer::Output(&mut host)], &[]).expect("launch");
    assert_eq!(host, [2.0]);
}
