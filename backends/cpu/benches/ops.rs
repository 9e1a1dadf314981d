//! CPU backend benchmarks: sgemm GFLOP/s at 1 and 2 threads, elementwise and
//! reduction bandwidth, and the small-tensor latency that per-op overhead
//! decides. `bench/torch_ops.py` times the same work in PyTorch.
//!
//! Run with `cargo bench -p blaze-cpu`. Throughputs print as `item/s`: one
//! item is one floating-point operation for `sgemm_*` and one element for
//! the others.

use std::sync::OnceLock;

use blaze_cpu::{Cpu, CpuDevice};
use blaze_runtime::{Rng, Tensor, UnaryOp};
use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

/// A pool of `n` threads; rayon work inside `install` (gemm included) uses it.
fn pool(n: usize) -> &'static rayon::ThreadPool {
    static POOLS: [OnceLock<rayon::ThreadPool>; 2] = [OnceLock::new(), OnceLock::new()];
    POOLS[n - 1].get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool"))
}

/// Times `f` on the `threads`-thread pool, its result dropped inside the
/// timed call, as in PyTorch's benchmark (divan drops a sample's results
/// after timing it). Each call hops onto the pool, which PyTorch's calling
/// thread does not: `examples/memory_bench` times the memory-bound rows
/// from inside the pool.
fn bench_in<T>(bencher: Bencher<'_, '_>, threads: usize, items: usize, f: impl Fn() -> T + Sync) {
    bencher.counter(ItemsCount::new(items)).bench_local(|| pool(threads).install(|| drop(f())));
}

fn randn<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<Cpu, D> {
    Tensor::normal_with(shape, 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice)
}

fn sgemm(bencher: Bencher<'_, '_>, n: usize, threads: usize) {
    let a = randn([n, n], 1);
    let b = randn([n, n], 2);
    bench_in(bencher, threads, 2 * n * n * n, || a.matmul(&b));
}

#[divan::bench(args = [256, 512, 1024, 2048], sample_count = 20, sample_size = 5)]
fn sgemm_1_thread(bencher: Bencher<'_, '_>, n: usize) {
    sgemm(bencher, n, 1);
}

#[divan::bench(args = [256, 512, 1024, 2048], sample_count = 20, sample_size = 5)]
fn sgemm_2_threads(bencher: Bencher<'_, '_>, n: usize) {
    sgemm(bencher, n, 2);
}

const BIG: usize = 1 << 22;

#[divan::bench(args = [1, 2])]
fn add_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG], 3);
    let b = randn([BIG], 4);
    bench_in(bencher, threads, BIG, || &a + &b);
}

#[divan::bench(args = [1, 2])]
fn exp_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG], 5);
    bench_in(bencher, threads, BIG, || a.exp());
}

#[divan::bench(args = [1, 2])]
fn bias_add_relu_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG / 1024, 1024], 6);
    let b = randn([1, 1024], 7);
    bench_in(bencher, threads, BIG, || (&a + &b).relu());
}

#[divan::bench(args = [1, 2])]
fn sum_rows_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG / 1024, 1024], 8);
    bench_in(bencher, threads, BIG, || a.sum_dim(1));
}

#[divan::bench(args = [1, 2])]
fn sum_cols_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG / 1024, 1024], 9);
    bench_in(bencher, threads, BIG, || a.sum_dim(0));
}

#[divan::bench(args = [1, 2])]
fn softmax_rows_4m(bencher: Bencher<'_, '_>, threads: usize) {
    let a = randn([BIG / 1024, 1024], 10);
    bench_in(bencher, threads, BIG, || a.softmax(1));
}

/// LayerNorm over rows of 1024, forward and backward (input, weight and
/// bias gradients), as a training step runs it.
#[divan::bench(args = [1, 2])]
fn layer_norm_rows_4m_fwd_bwd(bencher: Bencher<'_, '_>, threads: usize) {
    let x = randn([BIG / 1024, 1024], 22);
    let g = randn([BIG / 1024, 1024], 23);
    let (w, b) = (randn([1024], 24), randn([1024], 25));
    bench_in(bencher, threads, BIG, || {
        let (y, stats) = x.norm_with_stats(Some(&w), Some(&b), 1e-5, true);
        (y, g.norm_backward(&x, &stats, Some(&w), true))
    });
}

/// The exact GELU forward and its backward (`g * gelu'(x)`).
#[divan::bench(args = [1, 2])]
fn gelu_4m_fwd_bwd(bencher: Bencher<'_, '_>, threads: usize) {
    let x = randn([BIG], 26);
    let g = randn([BIG], 27);
    bench_in(bencher, threads, BIG, || {
        (x.gelu(), blaze_runtime::adjoint::unary::<Cpu>(UnaryOp::Gelu, x.storage(), x.storage(), g.storage()))
    });
}

/// Attention weights as the GPT example makes them, forward and backward:
/// `softmax(scores / 4)` with a causal mask over `[32, 4, 64, 64]` scores.
#[divan::bench(args = [1, 2])]
fn attention_softmax_fwd_bwd(bencher: Bencher<'_, '_>, threads: usize) {
    use blaze_runtime::SoftmaxOptions;
    let s = randn([32, 4, 64, 64], 28);
    let g = randn([32, 4, 64, 64], 29);
    let o = SoftmaxOptions::default().scale(0.25).causal();
    bench_in(bencher, threads, 32 * 4 * 64 * 64, || {
        let y = s.softmax_with(-1, o);
        let dx = blaze_runtime::adjoint::softmax::<Cpu>(g.storage(), y.storage(), 3, o);
        (y, dx)
    });
}

/// Per-op overhead: one add of two 16-element vectors.
#[divan::bench]
fn small_add_16(bencher: Bencher<'_, '_>) {
    let a = randn([16], 11);
    let b = randn([16], 12);
    bencher.bench_local(|| &a + &b);
}

/// Batch-1 inference of the MLP 784-256-128-10 (ReLU), weights as PyTorch
/// stores them (`[out, in]`, used transposed).
#[divan::bench]
fn mlp_forward_batch1(bencher: Bencher<'_, '_>) {
    let x = randn([1, 784], 13);
    let layers = [(784, 256), (256, 128), (128, 10)].map(|(i, o)| (randn([o, i], 14), randn([1, o], 15)));
    bencher.bench_local(|| {
        let mut h = x.clone();
        for (k, (w, b)) in layers.iter().enumerate() {
            h = h.matmul(&w.t()) + b;
            if k < 2 {
                h = h.relu();
            }
        }
        h
    });
}

/// conv2d 3x3, 16 -> 32 channels on a batch of 64 14x14 images.
#[divan::bench(args = [1, 2], sample_count = 20)]
fn conv3x3_b64(bencher: Bencher<'_, '_>, threads: usize) {
    let x = randn([64, 16, 14, 14], 16);
    let w = randn([32, 16, 3, 3], 17);
    let b = randn([32], 18);
    let flops: usize = 2 * 64 * 32 * 12 * 12 * 16 * 9;
    bench_in(bencher, threads, flops, || x.conv2d(&w, Some(&b), Default::default()));
}

/// exp over 4096 cache-resident elements: compute speed without memory traffic.
#[divan::bench]
fn exp_4k(bencher: Bencher<'_, '_>) {
    let a = randn([4096], 19);
    bencher.counter(ItemsCount::new(4096usize)).bench_local(|| a.exp());
}

/// add over 4096 cache-resident elements.
#[divan::bench]
fn add_4k(bencher: Bencher<'_, '_>) {
    let a = randn([4096], 20);
    let b = randn([4096], 21);
    bencher.counter(ItemsCount::new(4096usize)).bench_local(|| &a + &b);
}

/// Fused multiply-adds per call and thread: about 4 ms of work at 100
/// GFLOP/s, so that waking the pool's threads (tens of microseconds) is
/// lost in it. With 2^16 (0.3 ms) the one-thread peak read 79 GFLOP/s on
/// a core where the same loop alone ran at 110.
const PEAK_ITERS: usize = 1 << 20;

/// The cores' FMA peak with 512-bit registers: independent chains of
/// fused multiply-adds and nothing else, the ceiling that `sgemm_*` is
/// measured against. One item is one FLOP.
#[divan::bench(args = [1, 2], sample_count = 20)]
fn fma_peak_512(bencher: Bencher<'_, '_>, threads: usize) {
    fma_peak(bencher, threads, true);
}

/// [`fma_peak_512`] with 256-bit registers: some cores split a 512-bit FMA
/// into two halves, and there both reach the same peak.
#[divan::bench(args = [1, 2], sample_count = 20)]
fn fma_peak_256(bencher: Bencher<'_, '_>, threads: usize) {
    fma_peak(bencher, threads, false);
}

fn fma_peak(bencher: Bencher<'_, '_>, threads: usize, wide: bool) {
    if blaze_cpu::fma_chains(wide, 0).is_none() {
        eprintln!("fma_peak_{}: this CPU lacks the instructions", if wide { 512 } else { 256 });
        return;
    }
    let lanes = if wide { 16 } else { 8 };
    let per_thread = blaze_cpu::FMA_CHAINS * lanes * 2 * PEAK_ITERS;
    bencher.counter(ItemsCount::new(per_thread * threads)).bench_local(|| {
        pool(threads).broadcast(|_| blaze_cpu::fma_chains(wide, PEAK_ITERS));
    });
}
