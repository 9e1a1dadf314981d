//! The wgpu backend on whatever adapter exists: the tensor matmul (64x64
//! tiles, 4x4 register blocks) in GFLOP/s on device-resident operands,
//! training steps of the MLP 784-256-128-10 at batch 128 and of the
//! CNN at batch 64, each next to the CPU backend; then a tiled matmul written with `kernel!` (16x16
//! tiles in workgroup memory) launched on host data, and its agreement
//! with the CPU.
//!
//! ```text
//! cargo run --release --example wgpu_bench --features wgpu
//! ```

#[path = "common/cnn.rs"]
mod cnn;
#[path = "common/gpt_model.rs"]
mod gpt_model;
#[path = "common/gpu_bench.rs"]
mod gpu_bench;
#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use blaze::prelude::*;
use blaze::runtime::kernel::ScalarArg;
use blaze::wgpu::{HostBuffer, Wgpu, WgpuDevice, launch};
use gpu_bench::{cnn_step, gpt_step, matmul_gflops, mlp_step};
use timing::median;

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
    let (gpu, cpu) = (cnn_step::<Wgpu>(&device), cnn_step::<Cpu>(&CpuDevice));
    println!("\nCNN (two 3x3 convolutions) training step, batch 64");
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
