//! Memory-bound ops on 4M-element tensors (f32), timed the way a training
//! loop runs them: from inside the backend's pool (`Device::run`, as `fit`
//! runs its loop), each call's result dropped before the next, the median
//! of single calls after warm-up. `bench/torch_memory.py` times the same
//! work in PyTorch the same way.
//!
//! ```text
//! cargo run --release --example memory_bench -- --threads 1
//! python3 bench/torch_memory.py --threads 1
//! ```
//!
//! Flags: `--threads N` (the pool's size; default: every core).

#[path = "common/timing.rs"]
mod timing;

use std::num::NonZeroUsize;

use blaze::UnaryOp;
use blaze::prelude::*;
use blaze::runtime::adjoint;
use clap::Parser;

const BIG: usize = 1 << 22;

/// The median time of single calls of `f` in microseconds, after five
/// warm-up calls: at least 60 calls and one second.
fn time<R>(mut f: impl FnMut() -> R) -> f64 {
    for _ in 0..5 {
        drop(f());
    }
    let start = std::time::Instant::now();
    let mut times = Vec::new();
    while times.len() < 60 || start.elapsed().as_secs_f64() < 1.0 {
        times.push(timing::median(1, || drop(f())) * 1e6);
        if times.len() >= 2000 {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Times memory-bound ops (elementwise, reductions, softmax, LayerNorm)
/// for bench/torch_memory.py to compare.
#[derive(Parser)]
struct Args {
    /// Threads of the pool (all cores by default).
    #[arg(long)]
    threads: Option<NonZeroUsize>,
}

fn main() {
    let threads = Args::parse().threads;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n.get());
    }
    pool.build_global().expect("the global pool is built first");
    let dev = CpuDevice;
    let normal = |shape: [usize; 2], seed| {
        Tensor::<Cpu, 2>::normal_with(shape, 0.0, 1.0, &mut blaze::Rng::seed_from_u64(seed), &dev)
    };
    let (x, y) = (normal([1, BIG], 1), normal([1, BIG], 2));
    let m = normal([BIG / 1024, 1024], 3);
    let bias = normal([1, 1024], 4);
    let g = normal([BIG / 1024, 1024], 5);
    let (w, b) = (Tensor::<Cpu, 1>::ones([1024], &dev), Tensor::<Cpu, 1>::zeros([1024], &dev));
    println!("blaze, {} threads", rayon::current_num_threads());
    dev.run(|| {
        let row = |name: &str, us: f64| println!("{name:<30} {us:10.1} us  {:6.2} Gitem/s", BIG as f64 / us / 1e3);
        row("add", time(|| &x + &y));
        row("bias add + relu", time(|| (&m + &bias).relu()));
        row("sum over rows", time(|| m.sum_dim(1)));
        row("softmax over rows", time(|| m.softmax(1)));
        row(
            "layernorm fwd + bwd",
            time(|| {
                let (out, stats) = m.norm_with_stats(Some(&w), Some(&b), 1e-5, true);
                (out, g.norm_backward(&m, &stats, Some(&w), true))
            }),
        );
        row(
            "gelu fwd + bwd",
            time(|| (m.gelu(), adjoint::unary::<Cpu>(UnaryOp::Gelu, m.storage(), m.storage(), g.storage()))),
        );
        row(
            "tanh fwd + bwd",
            time(|| {
                let y = m.tanh();
                let dx = adjoint::unary::<Cpu>(UnaryOp::Tanh, m.storage(), y.storage(), g.storage());
                (y, dx)
            }),
        );
    });
}
