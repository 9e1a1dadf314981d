//! Decoding with a cache: the step `#[model]` derives gives the full
//! forward's logits at every position, however the sequence is fed, and
//! `generate` continues a prompt as the full forward would.

use blaze::nn::{Decode, GenerateConfig, generate};
use blaze::prelude::*;

use crate::gpt_model::{self, Gpt, VOCAB};

fn ids(n: usize, t: usize) -> Tensor<Cpu, 2> {
    let v: Vec<i64> = (0..n * t).map(|i| ((i * 37 + 11) % VOCAB) as i64).collect();
    Tensor::from_vec(v, [n, t], &CpuDevice)
}

fn assert_close(what: &str, got: &Tensor<Cpu, 3>, want: &Tensor<Cpu, 3>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec::<f32>(), want.to_vec::<f32>());
    let worst = g.iter().zip(&w).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst <= 1e-4, "{what}: the step's logits differ from the full forward's by {worst}");
}

#[test]
fn each_step_gives_the_full_forwards_logits() {
    let model = Gpt::<Cpu>::new_seeded(3, &CpuDevice);
    let x = ids(2, 12);
    let full = model.forward(&x);
    // One position at a time.
    let mut state = model.decode_state();
    for t in 0..12 {
        let step = model.decode_step(&x.narrow(1, t, 1), &mut state);
        assert_close(&format!("position {t}"), &step, &full.narrow(1, t, 1));
    }
    assert_eq!(Gpt::<Cpu>::decoded(&state), 12);
    // A prompt of five at once, then the rest in twos and a single.
    let mut state = model.decode_state();
    for (start, len) in [(0, 5), (5, 2), (7, 2), (9, 2), (11, 1)] {
        let step = model.decode_step(&x.narrow(1, start, len), &mut state);
        assert_close(&format!("positions {start}..{}", start + len), &step, &full.narrow(1, start, len));
    }
}

/// Greedy decoding without a cache: the whole sequence through the full
/// forward for every new token.
fn greedy_without_cache(model: &Gpt<Cpu>, prompt: &[i64], n: usize) -> Vec<i64> {
    let mut tokens = prompt.to_vec();
    for _ in 0..n {
        let x = Tensor::<Cpu, 2>::from_vec(tokens.clone(), [1, tokens.len()], &CpuDevice);
        let logits = model.forward(&x);
        let t = tokens.len();
        let next: Tensor<Cpu, 1> = logits.narrow(1, t - 1, 1).reshape([VOCAB as i64]);
        tokens.push(next.argmax(0).to_vec::<i64>()[0]);
    }
    tokens[prompt.len()..].to_vec()
}

#[test]
fn greedy_generation_continues_as_the_full_forward_does() {
    let model = Gpt::<Cpu>::new_seeded(4, &CpuDevice);
    let prompt = [5, 17, 42, 8];
    let mut streamed = Vec::new();
    let got = generate(&model, &prompt, &GenerateConfig::greedy(20), |t| streamed.push(t));
    assert_eq!(got, greedy_without_cache(&model, &prompt, 20));
    assert_eq!(streamed, got, "each token is handed over as it is drawn");
}

#[test]
fn sampling_follows_the_seed_and_stops() {
    let model = Gpt::<Cpu>::new_seeded(5, &CpuDevice);
    let config =
        GenerateConfig { max_new_tokens: 30, temperature: 0.8, top_k: Some(10), seed: 7, ..Default::default() };
    let a = generate(&model, &[1, 2, 3], &config, |_| {});
    let b = generate(&model, &[1, 2, 3], &config, |_| {});
    assert_eq!(a, b, "the same seed draws the same tokens");
    assert_eq!(a.len(), 30);
    let other = generate(&model, &[1, 2, 3], &GenerateConfig { seed: 8, ..config.clone() }, |_| {});
    assert_ne!(a, other, "another seed draws other tokens");
    // Stop at the first token drawn that is a stop token, keeping it.
    let stop = a[4];
    let stopped = generate(&model, &[1, 2, 3], &GenerateConfig { stop: vec![stop], ..config.clone() }, |_| {});
    let first = a.iter().position(|&t| t == stop).expect("drawn");
    assert_eq!(stopped, a[..=first].to_vec());
}

#[test]
fn a_full_context_starts_again_from_its_last_half() {
    let model = Gpt::<Cpu>::new_seeded(6, &CpuDevice);
    let context = gpt_model::CONTEXT;
    // More tokens than the position table holds: the state is rebuilt
    // rather than running past it.
    let config = GenerateConfig { context: Some(context), ..GenerateConfig::greedy(context + 10) };
    let got = generate(&model, &[1, 2, 3], &config, |_| {});
    assert_eq!(got.len(), context + 10);
}
