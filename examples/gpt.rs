//! A small decoder-only transformer trained character by character on the
//! King James text shipped in `data/text` (public domain; see README).
//!
//! Token and position embeddings, four blocks of causal multi-head
//! self-attention (`MultiHeadAttention`, which ran 5% faster here than the
//! same attention written out in the body) and a GELU MLP (pre-LayerNorm,
//! residuals), a final LayerNorm and a linear head, all written as
//! `#[model]` forward bodies:
//! the macro checks the shapes (the sequence length `T` symbolically) and
//! generates the backward pass. Prints the training and held-out loss as it
//! trains, then a sample of generated text.
//!
//! ```text
//! cargo run --release --example gpt
//! cargo run --release --example gpt -- --steps 3000 --data ../shared/data/text/kjv-1mb.txt
//! ```
//! Flags: `--data FILE` (text, or `.gz`), `--steps N`, `--batch-size N`,
//! `--lr X`, `--seed N`, `--sample N` (characters to generate).

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use blaze::loss::cross_entropy;
use blaze::nn::Ctx;
use blaze::optim::{Adam, CosineWithWarmup, LrSchedule, Optimizer, clip_grad_norm};
use blaze::prelude::*;
use blaze::rng::Rng;

#[path = "common/gpt_model.rs"]
mod gpt_model;

use gpt_model::{CONTEXT, Gpt, VOCAB};

struct Args {
    data: PathBuf,
    steps: usize,
    batch_size: usize,
    lr: f64,
    seed: u64,
    sample: usize,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/text/kjv-1mb.txt.gz"),
        steps: 1500,
        batch_size: 32,
        lr: 3e-3,
        seed: 0,
        sample: 400,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(value()?),
            "--steps" => a.steps = value()?.parse().context("--steps takes a whole number")?,
            "--batch-size" => a.batch_size = value()?.parse().context("--batch-size takes a whole number")?,
            "--lr" => a.lr = value()?.parse().context("--lr takes a number")?,
            "--seed" => a.seed = value()?.parse().context("--seed takes a whole number")?,
            "--sample" => a.sample = value()?.parse().context("--sample takes a whole number")?,
            "-h" | "--help" => {
                println!("flags: --data FILE --steps N --batch-size N --lr X --seed N --sample N");
                std::process::exit(0);
            }
            other => bail!("unknown flag {other} (try --help)"),
        }
    }
    Ok(a)
}

/// The text as ids, and the characters in id order.
fn load(path: &PathBuf) -> Result<(Vec<i64>, Vec<char>)> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .with_context(|| format!("{}: not a valid gzip file", path.display()))?;
        out
    } else {
        raw
    };
    let text = String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))?;
    let mut chars: Vec<char> = text.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    if chars.len() > VOCAB {
        bail!("{}: {} distinct characters, but the model tells {VOCAB} apart", path.display(), chars.len());
    }
    if text.chars().count() < 10 * CONTEXT {
        bail!("{}: too short to train on ({} characters)", path.display(), text.chars().count());
    }
    let ids = text.chars().map(|c| chars.binary_search(&c).map_or(0, |i| i as i64)).collect();
    Ok((ids, chars))
}

/// `n` random windows of `CONTEXT + 1` characters: inputs and next characters.
fn batch(ids: &[i64], n: usize, rng: &mut Rng, device: &CpuDevice) -> (Tensor<Cpu, 2>, Tensor<Cpu, 1>) {
    let (mut x, mut y) = (Vec::with_capacity(n * CONTEXT), Vec::with_capacity(n * CONTEXT));
    for _ in 0..n {
        let start = rng.below((ids.len() - CONTEXT - 1) as u64) as usize;
        x.extend_from_slice(&ids[start..start + CONTEXT]);
        y.extend_from_slice(&ids[start + 1..start + CONTEXT + 1]);
    }
    (Tensor::from_vec(x, [n, CONTEXT], device), Tensor::from_vec(y, [n * CONTEXT], device))
}

/// Mean cross-entropy (nats per character) over fixed held-out windows.
fn held_out_loss(model: &Gpt, val: &[i64], device: &CpuDevice) -> f64 {
    let mut rng = Rng::seed_from_u64(1234);
    let batches: Vec<f64> = (0..8)
        .map(|_| {
            let (x, y) = batch(val, 32, &mut rng, device);
            let logits: Tensor<Cpu, 2> = model.forward(&x).reshape([-1, VOCAB as i64]);
            cross_entropy(&logits, &y, 0.0).item()
        })
        .collect();
    batches.iter().sum::<f64>() / batches.len() as f64
}

/// Continues `prompt` by sampling one character at a time.
fn generate(model: &Gpt, prompt: &[i64], n: usize, rng: &mut Rng, device: &CpuDevice) -> Vec<i64> {
    let mut out = prompt.to_vec();
    for _ in 0..n {
        let context = &out[out.len().saturating_sub(CONTEXT)..];
        let x = Tensor::<Cpu, 2>::from_vec(context.to_vec(), [1, context.len()], device);
        let logits = model.forward(&x);
        let t = context.len();
        let probs = logits.narrow(1, t - 1, 1).softmax(2).to_vec::<f32>();
        let mut u = rng.next_f64() as f32;
        let mut next = probs.len() - 1;
        for (i, p) in probs.iter().enumerate() {
            if u < *p {
                next = i;
                break;
            }
            u -= p;
        }
        out.push(next as i64);
    }
    out
}

fn main() -> Result<()> {
    let args = parse_args()?;
    blaze::cpu::tune_allocator_for_training();
    let device = CpuDevice;
    let (ids, chars) = load(&args.data)?;
    let split = ids.len() * 9 / 10;
    let (train, val) = (&ids[..split], &ids[split..]);
    println!(
        "{}: {} characters ({} distinct), {} for training, {} held out",
        args.data.display(),
        ids.len(),
        chars.len(),
        train.len(),
        val.len()
    );

    let mut model = Gpt::new_seeded(args.seed, &device);
    print!("{}", model.summary());
    let schedule = CosineWithWarmup { base: args.lr, min: args.lr / 10.0, warmup: 100, total: args.steps as u64 };
    let mut opt = Adam::adamw(args.lr).weight_decay(0.01);
    let mut rng = Rng::seed_from_u64(args.seed);
    let start = Instant::now();
    let (b, v) = (args.batch_size, VOCAB as i64);
    let mut running = None;
    let mut step_secs = Vec::with_capacity(args.steps);
    CpuDevice.run(|| {
        for step in 0..args.steps {
            let began = Instant::now();
            opt.set_lr(schedule.lr_at(step as u64));
            let (x, y) = batch(train, b, &mut rng, &device);
            let mut ctx = Ctx::train(step as u64);
            let before = blaze::cpu::bytes_in_use();
            let (logits, cache) = model.forward_train(&x, &mut ctx);
            if step == 0 {
                let kept = blaze::cpu::bytes_in_use() - before;
                println!("the training forward keeps {:.1} MB for the backward (logits included)", kept as f64 / 1e6);
            }
            let loss = cross_entropy(&logits.reshape([-1, v]), &y, 0.0);
            let mut grads = model.backward_params(&cache, &loss.grad.reshape(logits.shape()));
            clip_grad_norm::<Cpu, Gpt>(&mut grads, 1.0);
            opt.step(&mut model, &grads);
            let l = loss.item();
            step_secs.push(began.elapsed().as_secs_f64());
            let avg = running.map_or(l, |r: f64| 0.98 * r + 0.02 * l);
            running = Some(avg);
            if (step + 1) % 100 == 0 || step + 1 == args.steps {
                let secs = start.elapsed().as_secs_f64();
                println!(
                    "step {:>5}  train loss {avg:.3}  held-out loss {:.3} nats/char  ({:.0} ms/step, {secs:.0} s)",
                    step + 1,
                    held_out_loss(&model, val, &device),
                    1000.0 * secs / (step + 1) as f64
                );
            }
        }
    });

    step_secs.sort_by(f64::total_cmp);
    if let Some(median) = step_secs.get(step_secs.len() / 2) {
        println!("median training step: {:.1} ms (bench/torch_gpt.py times PyTorch on the same model)", 1e3 * median);
    }

    let prompt: Vec<i64> = "And God said".chars().map(|c| chars.binary_search(&c).map_or(0, |i| i as i64)).collect();
    let text: String =
        generate(&model, &prompt, args.sample, &mut rng, &device).iter().map(|&i| chars[i as usize]).collect();
    println!("\nsample:\n{text}");
    Ok(())
}
