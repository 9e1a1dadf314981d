//! The wgpu backend on whatever adapter exists: the tensor matmul (64x64
//! tiles, 4x4 register blocks) in GFLOP/s on device-resident operands,
//! a training step of the MLP 784-256-128-10 at batch 128, each next to
//! the CPU backend; then a tiled matmul written with `kernel!` (16x16
//! tiles in workgroup memory) launched on host data, and its agreement
//! with the CPU.
//!
//! ```text
//! cargo run --release --example wgpu_bench --features wgpu
//! ```

#[path = "common/gpt_model.rs"]
mod gpt_model;
#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use blaze::Backend;
use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use blaze::runtime::kernel::ScalarArg;
use blaze::wgpu::{HostBuffer, Wgpu, WgpuDevice, launch};
use gpt_model::{CONTEXT, Gpt, VOCAB};
use mlp::Mlp;
use timing::median;

/// GFLOP/s of `reps` chained `[n, n]` products on `B`, synchronised by
/// reading one number back.
fn matmul_gflops<B: Backend>(n: usize, reps: usize, device: &B::Device) -> f64 {
    let a =
        Tensor::<B, 2>::from_data(Tensor::<Cpu, 2>::rand_normal([n, n], &CpuDevice).to_data(), device).expect("upload");
    let b = a.mul_scalar(1.0 / n as f64);
    let run = || {
        let mut c = a.clone();
        for _ in 0..reps {
            c = c.matmul(&b);
        }
        std::hint::black_box(c.narrow(0, 0, 1).narrow(1, 0, 1).sum().item());
    };
    run();
    2.0 * (n * n * n * reps) as f64 / median(5, run) / 1e9
}

/// Median seconds of one MLP training step (forward, loss, backward,
/// SGD) at batch 128 on `B`, synchronised by reading the loss.
fn mlp_step<B: Backend>(device: &B::Device) -> f64 {
    let mut model = <Mlp<B> as Block<B>>::init(&mut blaze::Rng::seed_from_u64(0), device);
    let x = Tensor::<B, 2>::from_data(Tensor::<Cpu, 2>::rand_normal([128, 784], &CpuDevice).to_data(), device)
        .expect("upload");
    let y = Tensor::<B, 1>::from_vec((0..128).map(|i| i % 10).collect::<Vec<i64>>(), [128], device);
    let mut sgd = Sgd::new(0.01);
    let mut step = || {
        let (out, cache) = model.forward_train(&x, &mut Ctx::train(0));
        let loss = cross_entropy(&out, &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        sgd.step(&mut model, &grads);
        std::hint::black_box(loss.item());
    };
    step();
    median(9, step)
}

/// One training step of the GPT example's model (batch 8, context 64,
/// AdamW) on `B`, synchronised by reading the loss: its median seconds,
/// and `count()` after one step less before it (dispatches on wgpu).
fn gpt_step<B: Backend>(device: &B::Device, count: impl Fn() -> u64) -> (f64, u64) {
    let mut model = <Gpt<B> as blaze::nn::Graph<B>>::init(&mut blaze::Rng::seed_from_u64(0), device);
    let (n, v) = (8, VOCAB as i64);
    let ids: Vec<i64> = (0..n * CONTEXT).map(|i| (i * 7 % VOCAB) as i64).collect();
    let x = Tensor::<B, 2>::from_vec(ids.clone(), [n, CONTEXT], device);
    let y = Tensor::<B, 1>::from_vec(ids.iter().map(|i| (i + 1) % v).collect::<Vec<i64>>(), [n * CONTEXT], device);
    let mut opt = blaze::optim::Adam::adamw(1e-3);
    let mut step = || {
        let (logits, cache) = model.forward_train(&x, &mut Ctx::train(0));
        let loss = cross_entropy(&logits.reshape([-1, v]), &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad.reshape(logits.shape()));
        opt.step(&mut model, &grads);
        std::hint::black_box(loss.item());
    };
    step();
    let before = count();
    step();
    let dispatches = count() - before;
    (median(3, step), dispatches)
}

kernel! {
    /// `c = a b` for row-major `[m, k]` and `[k, n]`: one workgroup per
    /// 16x16 tile of `c`, one invocation per element, the matching tiles of
    /// `a` and `b` staged through workgroup memory.
    #[workgroup(256)]
    pub fn tiled_matmul(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
        let tiles_n = (n + 15) / 16;
        let row = workgroup_id() / tiles_n * 16 + local_id() / 16;
        let col = workgroup_id() % tiles_n * 16 + local_id() % 16;
        let lr = local_id() / 16;
        let lc = local_id() % 16;
        #[shared]
        let ta: [f32; 256];
        #[shared]
        let tb: [f32; 256];
        let mut acc = 0.0;
        let mut t = 0;
        while t < k {
            ta[local_id()] = 0.0;
            if row < m && t + lc < k {
                ta[local_id()] = a[row * k + t + lc];
            }
            tb[local_id()] = 0.0;
            if t + lr < k && col < n {
                tb[local_id()] = b[(t + lr) * n + col];
            }
            barrier();
            for i in 0..16 {
                acc += ta[lr * 16 + i] * tb[i * 16 + lc];
            }
            barrier();
            t += 16;
        }
        if row < m && col < n {
            c[row * n + col] = acc;
        }
    }
}

fn main() {
    let device = match WgpuDevice::new() {
        Ok(d) => d,
        Err(e) => return println!("no wgpu adapter, nothing to measure: {e}"),
    };
    println!("adapter: {}", device.adapter_name());
    println!("\ntensor matmul, operands on the device (8 chained products per timing)");
    println!("{:>6} {:>14} {:>14}", "n", "wgpu GFLOP/s", "cpu GFLOP/s");
    for n in [256usize, 512, 1024] {
        let gpu = matmul_gflops::<Wgpu>(n, 8, &device);
        let cpu = matmul_gflops::<Cpu>(n, 8, &CpuDevice);
        println!("{n:>6} {gpu:>14.2} {cpu:>14.2}");
    }
    let (gpu, cpu) = (mlp_step::<Wgpu>(&device), mlp_step::<Cpu>(&CpuDevice));
    println!("\nMLP 784-256-128-10 training step, batch 128");
    println!("  wgpu {:>9.2} ms   cpu {:>9.2} ms", 1e3 * gpu, 1e3 * cpu);

    let ((gpu, dispatches), (cpu, _)) =
        (gpt_step::<Wgpu>(&device, || device.dispatches()), gpt_step::<Cpu>(&CpuDevice, || 0));
    println!("\nGPT example's model, training step at batch 8 (AdamW)");
    println!("  wgpu {:>9.2} ms   cpu {:>9.2} ms   wgpu dispatches per step: {dispatches}", 1e3 * gpu, 1e3 * cpu);

    println!("\nkernel! tiled matmul on host data (uploads and read-back included)");
    println!("{:>6} {:>14} {:>14} {:>12}", "n", "wgpu GFLOP/s", "cpu GFLOP/s", "max |diff|");
    for n in [128usize, 256, 512] {
        let a = Tensor::<Cpu, 2>::rand_normal([n, n], &CpuDevice);
        let b = Tensor::<Cpu, 2>::rand_normal([n, n], &CpuDevice);
        let (av, bv) = (a.to_vec::<f32>(), b.to_vec::<f32>());
        let mut c = vec![0.0f32; n * n];
        let groups = (n.div_ceil(16) * n.div_ceil(16)) as u32;
        let dims = [n as u32; 3].map(ScalarArg::U32);
        let mut run = || {
            let mut bufs = [HostBuffer::Input(&av), HostBuffer::Input(&bv), HostBuffer::Output(&mut c)];
            launch::<tiled_matmul::Kernel>(&device, groups, &mut bufs, &dims).expect("launch");
        };
        run();
        let gpu_s = median(5, &mut run);
        let cpu_s = median(5, || {
            std::hint::black_box(a.matmul(&b));
        });
        let want = a.matmul(&b).to_vec::<f32>();
        let diff = c.iter().zip(&want).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        let flops = 2.0 * (n * n * n) as f64;
        println!("{n:>6} {:>14.2} {:>14.2} {diff:>12.2e}", flops / gpu_s / 1e9, flops / cpu_s / 1e9);
    }
}
