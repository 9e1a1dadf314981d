//! Matmul on whatever wgpu adapter exists: a tiled kernel written with
//! `kernel!` (16x16 tiles in workgroup memory), its GFLOP/s at a few sizes
//! next to the CPU backend's, and its agreement with the CPU.
//!
//! ```text
//! cargo run --release --example wgpu_bench --features wgpu
//! ```

#[path = "common/timing.rs"]
mod timing;

use blaze::prelude::*;
use blaze::runtime::kernel::ScalarArg;
use blaze::wgpu::{HostBuffer, WgpuDevice, launch};
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
    println!("(wgpu times include uploading the operands and reading the product back)");
}
