//! `kernel!` kernels on the CubeCL backend, through the `#[cube]` code
//! `kernel!` writes for them, against the CPU backend: general kernels
//! (shared memory, barriers, scalars, integer semantics) and elementwise
//! ones with their partials. Without an adapter these tests print a
//! notice and pass, unless `BLAZE_REQUIRE_CUBECL=1`.

use crate::common_kernels::{SEMANTICS_OUT, affine, row_sum, semantics, semantics_inputs, signed};
use blaze::cubecl::{CubeCl, CubeDevice};
use blaze::prelude::*;
use blaze::runtime::kernel::{Arg, partial};

kernel! {
    /// Swish with a slope: an elementwise kernel with its partials.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

kernel! {
    /// The intrinsics CubeCL lacks (exp2, log2, sign) and the NaN-aware ones.
    pub fn lacking(x: f32, y: f32) -> f32 {
        exp2(x) + log2(abs(y) + 1.0) * sign(x - y) + max(x, y) - min(x, y) + clamp(x, -0.5, 0.5) + x % (y + 3.0)
    }
}

fn device() -> Option<CubeDevice> {
    let d = CubeDevice::probe()?;
    println!("cubecl adapter: {}", d.adapter_name());
    Some(d)
}

fn data(n: usize, seed: u64) -> Vec<f32> {
    Tensor::<Cpu, 1>::normal_with([n], 0.0, 1.0, &mut blaze::Rng::seed_from_u64(seed), &CpuDevice).to_vec::<f32>()
}

/// NaN matches NaN; other values within `tol` of their size.
fn agree(what: &str, got: &[f32], cpu: &[f32], tol: impl Fn(usize) -> f32) {
    assert_eq!(got.len(), cpu.len(), "{what}");
    for (i, (g, c)) in got.iter().zip(cpu).enumerate() {
        let ok = g.to_bits() == c.to_bits() || g.is_nan() && c.is_nan() || (g - c).abs() <= tol(i) * (1.0 + c.abs());
        assert!(ok, "{what}[{i}]: cubecl {g}, cpu {c}");
    }
}

#[test]
fn shared_memory_reduction_agrees_with_the_cpu() {
    let Some(dev) = device() else { return };
    for (rows, cols) in [(1, 1), (3, 63), (9, 200), (40, 513)] {
        let x = data(rows * cols, 1);
        let xg = Tensor::<CubeCl, 2>::from_vec(x.clone(), [rows, cols], &dev);
        let mut gpu = Tensor::<CubeCl, 1>::zeros([rows], &dev);
        row_sum::launch(rows as u32, &xg, &mut gpu, cols as u32);
        let xt = Tensor::<Cpu, 2>::from_vec(x, [rows, cols], &CpuDevice);
        let mut cpu = Tensor::<Cpu, 1>::zeros([rows], &CpuDevice);
        row_sum::launch(rows as u32, &xt, &mut cpu, cols as u32);
        agree(&format!("row_sum {rows}x{cols}"), &gpu.to_vec::<f32>(), &cpu.to_vec::<f32>(), |_| 1e-5);
    }
}

#[test]
fn scalars_ids_and_bounds_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let n = 100;
    let x = data(n, 2);
    let groups = n.div_ceil(32) as u32;
    let xg = Tensor::<CubeCl, 1>::from_vec(x.clone(), [n], &dev);
    let before = Tensor::<CubeCl, 1>::full([n], 7.0, &dev);
    let mut gpu = before.clone();
    affine::launch(groups, &xg, &mut gpu, 1.5, n as u32);
    let xt = Tensor::<Cpu, 1>::from_vec(x, [n], &CpuDevice);
    let mut cpu = Tensor::<Cpu, 1>::full([n], 7.0, &CpuDevice);
    affine::launch(groups, &xt, &mut cpu, 1.5, n as u32);
    agree("affine", &gpu.to_vec::<f32>(), &cpu.to_vec::<f32>(), |_| 1e-5);
    // The output was written in a buffer of its own.
    assert_eq!(before.to_vec::<f32>(), vec![7.0; n], "a launch wrote through a shared buffer");
}

#[test]
fn signed_integers_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let mut gpu = Tensor::<CubeCl, 1>::zeros([32], &dev);
    signed::launch(2, &mut gpu, 5);
    let mut cpu = Tensor::<Cpu, 1>::zeros([32], &CpuDevice);
    signed::launch(2, &mut cpu, 5);
    assert_eq!(gpu.to_vec::<f32>(), cpu.to_vec::<f32>());
}

#[test]
fn division_shifts_casts_and_nan_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let (x, y) = semantics_inputs();
    let n = x.len();
    let groups = n.div_ceil(64) as u32;
    let (xg, yg) = (Tensor::<CubeCl, 1>::from_vec(x.clone(), [n], &dev), Tensor::from_vec(y.clone(), [n], &dev));
    let mut gpu = Tensor::<CubeCl, 1>::zeros([n * SEMANTICS_OUT], &dev);
    semantics::launch(groups, &xg, &yg, &mut gpu, n as u32);
    let (xt, yt) = (Tensor::<Cpu, 1>::from_vec(x, [n], &CpuDevice), Tensor::from_vec(y, [n], &CpuDevice));
    let mut cpu = Tensor::<Cpu, 1>::zeros([n * SEMANTICS_OUT], &CpuDevice);
    semantics::launch(groups, &xt, &yt, &mut cpu, n as u32);
    // Output 25 of each case is the float remainder.
    agree(
        "semantics",
        &gpu.to_vec::<f32>(),
        &cpu.to_vec::<f32>(),
        |i| if i % SEMANTICS_OUT == 25 { 1e-6 } else { 0.0 },
    );
}

#[test]
fn elementwise_kernels_and_their_partials_agree_with_the_cpu() {
    let Some(dev) = device() else { return };
    let n = 1000;
    let (x, beta) = (data(n, 3), data(n, 4));
    let (xg, bg) = (Tensor::<CubeCl, 1>::from_vec(x.clone(), [n], &dev), Tensor::from_vec(beta.clone(), [n], &dev));
    let (xt, bt) = (Tensor::<Cpu, 1>::from_vec(x, [n], &CpuDevice), Tensor::from_vec(beta, [n], &CpuDevice));
    agree("swish", &swish(&xg, &bg).to_vec::<f32>(), &swish(&xt, &bt).to_vec::<f32>(), |_| 1e-5);
    for i in 0..2 {
        let g = partial::<swish::Kernel, CubeCl, 1>(i, &[Arg::from(&xg), Arg::from(&bg)]);
        let c = partial::<swish::Kernel, Cpu, 1>(i, &[Arg::from(&xt), Arg::from(&bt)]);
        agree(&format!("swish d{i}"), &g.to_vec::<f32>(), &c.to_vec::<f32>(), |_| 1e-5);
    }
    // A number in place of a tensor, and a broadcast row.
    agree("swish(x, 1.5)", &swish(&xg, 1.5).to_vec::<f32>(), &swish(&xt, 1.5).to_vec::<f32>(), |_| 1e-5);
    let rows = xg.reshape([10, 100]);
    let row = bg.reshape([10, 100]).slice(&[0..1, 0..100]);
    let cpu_rows = xt.reshape([10, 100]);
    let cpu_row = bt.reshape([10, 100]).slice(&[0..1, 0..100]);
    agree("swish broadcast", &swish(&rows, &row).to_vec::<f32>(), &swish(&cpu_rows, &cpu_row).to_vec::<f32>(), |_| {
        1e-5
    });
    agree("lacking", &lacking(&xg, &bg).to_vec::<f32>(), &lacking(&xt, &bt).to_vec::<f32>(), |_| 1e-5);
}

#[test]
fn kernels_train_under_autodiff() {
    let Some(dev) = device() else { return };
    type Ad = blaze::autodiff::Autodiff<CubeCl>;
    let x = Tensor::<Ad, 1>::from_vec(data(64, 5), [64], &dev).require_grad();
    let loss = swish(&x, 1.0).sum();
    let g = loss.backward().get(&x).expect("a gradient").to_vec::<f32>();
    let xc = Tensor::<Cpu, 1>::from_vec(data(64, 5), [64], &CpuDevice);
    let want = partial::<swish::Kernel, Cpu, 1>(0, &[Arg::from(&xc), Arg::Number(1.0)]).to_vec::<f32>();
    agree("d swish / dx", &g, &want, |_| 1e-5);
}

/// A fused chain of the op table's ops, those of two tensors included:
/// its `#[cube]` code calls the table's functions in the backend.
#[model]
pub struct Chain {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Chain {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        let m = maximum(h, x * 0.5) - h.minimum(tanh(x)) * 0.5;
        m * sigmoid(h) + (abs(h) + 0.5).pow(x * 0.25) + m.powf(2.0)
    }
}

#[test]
fn fused_groups_of_table_ops_agree_with_the_cpu() {
    use blaze::nn::{Ctx, grads_dict};
    let grouped: Vec<&str> = Chain::<Cpu>::FUSION.groups.iter().flat_map(|g| g.ops.iter().copied()).collect();
    for op in ["maximum", "minimum", "pow", "powf"] {
        assert!(grouped.contains(&op), "{op} in no group: {}", Chain::<Cpu>::FUSION);
    }
    let Some(dev) = device() else { return };
    let x = Tensor::<Cpu, 3>::from_vec(data(24, 7), [2, 3, 4], &CpuDevice);
    let (mut cpu, mut gpu) = (Chain::<Cpu>::new_seeded(4, &CpuDevice), Chain::<CubeCl>::new_seeded(4, &dev));
    let (yc, cc) = cpu.forward_train(&x, &mut Ctx::train(1));
    let xg = Tensor::<CubeCl, 3>::from_data(x.to_data(), &dev).expect("upload");
    let (yg, cg) = gpu.forward_train(&xg, &mut Ctx::train(1));
    agree("output", &yg.to_vec::<f32>(), &yc.to_vec::<f32>(), |_| 1e-5);
    let g = Tensor::<Cpu, 3>::from_vec(data(24, 8), [2, 3, 4], &CpuDevice);
    let (dxc, gc) = cpu.backward(&cc, &g);
    let (dxg, gg) = gpu.backward(&cg, &Tensor::from_data(g.to_data(), &dev).expect("upload"));
    agree("input gradient", &dxg.to_vec::<f32>(), &dxc.to_vec::<f32>(), |_| 1e-5);
    for ((name, c), (_, w)) in grads_dict::<Cpu, Chain<Cpu>>(&gc).iter().zip(&grads_dict::<CubeCl, Chain<CubeCl>>(&gg))
    {
        let f32s = |d: &blaze::TensorData| d.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>();
        agree(name, &f32s(w), &f32s(c), |_| 1e-4);
    }
}
