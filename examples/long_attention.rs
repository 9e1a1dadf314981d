//! Causal attention over long sequences, for inference: the tiled kernel
//! (`Tensor::scaled_dot_product_attention`, an online softmax over blocks
//! of keys) against the same attention composed of a product, a softmax
//! and a product, which holds the `[n, H, T, T]` weights. Prints, for each
//! length, the milliseconds of each and how much the buffer pool grew (the
//! most each held at once), and the largest difference between them.
//!
//! ```text
//! cargo run --release --example long_attention
//! ```

use std::time::Instant;

use blaze::prelude::*;
use blaze::runtime::backend::composed_attention;

/// 4 heads of 16, as `examples/gpt.rs`'s attention.
const HEADS: usize = 4;
const WIDTH: usize = 16;

/// Runs `f` once to measure the pool's growth, then `reps` times for the
/// median milliseconds.
fn measure(reps: usize, f: impl Fn() -> Tensor<Cpu, 4>) -> (f64, f64, Tensor<Cpu, 4>) {
    let before = blaze::cpu::bytes_pooled();
    let out = f();
    let grew = (blaze::cpu::bytes_pooled() - before) as f64 / 1e6;
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[reps / 2], grew, out)
}

fn main() {
    println!(
        "{:>6} {:>12} {:>12} {:>14} {:>14} {:>10}",
        "T", "tiled ms", "composed ms", "tiled pool MB", "composed MB", "max diff"
    );
    for t in [256usize, 1024, 4096] {
        let heads = |seed: u64| {
            Tensor::<Cpu, 4>::normal_with(
                [1, HEADS, t, WIDTH],
                0.0,
                1.0,
                &mut blaze::Rng::seed_from_u64(seed),
                &CpuDevice,
            )
        };
        let (q, k, v) = (heads(1), heads(2), heads(3));
        let o = SoftmaxOptions::default().scale(1.0 / (WIDTH as f64).sqrt()).causal();
        // The tiled run first, so the composed one cannot reuse its buffers.
        let (tiled_ms, tiled_mb, tiled) = measure(5, || q.scaled_dot_product_attention(&k, &v, true, None));
        let composed = || Tensor::from_storage(composed_attention::<Cpu>(q.storage(), k.storage(), v.storage(), o));
        let (composed_ms, composed_mb, reference) = measure(5, composed);
        let diff = tiled.sub(&reference).abs().max().item();
        println!("{t:>6} {tiled_ms:>12.2} {composed_ms:>12.2} {tiled_mb:>14.2} {composed_mb:>14.2} {diff:>10.1e}");
    }
}
