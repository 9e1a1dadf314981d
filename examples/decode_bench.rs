//! Tokens a second of greedy generation at batch 1, with the decoding step
//! `#[model]` derives (keys and values cached) and without it (the whole
//! sequence through the full forward for every token), for the example's
//! GPT at width 256, 8 heads, MLP 1024, four blocks and a context of 256.
//! `bench/torch_decode.py` times `transformers`' GPT-2 of the same sizes
//! with its cache; `bench/decode_rounds.sh` alternates the two.
//!
//! ```text
//! cargo run --release --example decode_bench -- --threads 1
//! ```
//! `--cached-only` times the cached generation alone, 20 times (for a
//! profiler).

use std::time::Instant;

use blaze::nn::{GenerateConfig, generate};
use blaze::prelude::*;

#[path = "common/gpt_model.rs"]
mod gpt_model;

use gpt_model::{Size, VOCAB};

mod long {
    use super::gpt_model::{self, Size};
    use blaze::prelude::*;

    gpt_model::gpt!(
        /// The benchmark's size: width 256, 8 heads, MLP 1024, context 256.
        GptLong, LongBlock, 256, 8, 1024, 256
    );
}

use long::GptLong;

/// Greedy generation without a cache: every token runs the full forward
/// over the whole sequence so far.
fn without_cache(model: &GptLong<Cpu>, prompt: &[i64], n: usize) -> Vec<i64> {
    let mut tokens = prompt.to_vec();
    for _ in 0..n {
        let t = tokens.len();
        let x = Tensor::<Cpu, 2>::from_vec(tokens.clone(), [1, t], &CpuDevice);
        let next: Tensor<Cpu, 1> = model.forward(&x).narrow(1, t - 1, 1).reshape([VOCAB as i64]);
        tokens.push(next.argmax(0).to_vec::<i64>()[0]);
    }
    tokens[prompt.len()..].to_vec()
}

fn main() {
    let threads = std::env::args()
        .skip_while(|a| a != "--threads")
        .nth(1)
        .map_or(1, |t| t.parse::<usize>().expect("--threads N"));
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().expect("the global pool is built first");
    let model = GptLong::<Cpu>::new_seeded(0, &CpuDevice);
    if std::env::args().any(|a| a == "--cached-only") {
        let n = <GptLong<Cpu> as Size>::CONTEXT - 1;
        let started = Instant::now();
        CpuDevice.run(|| (0..20).for_each(|_| drop(generate(&model, &[1], &GenerateConfig::greedy(n), |_| {}))));
        println!("with cache     {:10.1} tokens/s", 20.0 * n as f64 / started.elapsed().as_secs_f64());
        return;
    }
    let prompt = [1i64];
    let n = <GptLong<Cpu> as Size>::CONTEXT - prompt.len();
    let (cached, plain, with, without) = CpuDevice.run(|| {
        // Warm up (the buffer pool learns the cache's sizes), then the
        // median of five runs with the cache, and one without (each of its
        // steps runs the whole sequence).
        generate(&model, &prompt, &GenerateConfig::greedy(n), |_| {});
        let mut times = Vec::new();
        let mut cached = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            cached = generate(&model, &prompt, &GenerateConfig::greedy(n), |_| {});
            times.push(started.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let started = Instant::now();
        let plain = without_cache(&model, &prompt, n);
        (cached, plain, times[2], started.elapsed().as_secs_f64())
    });
    assert_eq!(cached, plain, "the cached and uncached generations differ");
    println!("decode, {n} tokens to context 256, {threads} thread(s)");
    println!("with cache     {:10.1} tokens/s", n as f64 / with);
    println!("without cache  {:10.1} tokens/s", n as f64 / without);
}
