//! A decoder-only transformer trained character by character on the
//! King James text shipped in `data/text` (public domain; see README).
//!
//! Token and position embeddings, four blocks of causal multi-head
//! self-attention (`MultiHeadAttention`, which ran 5% faster here than the
//! same attention written out in the body) and a GELU MLP (pre-LayerNorm,
//! residuals), a final LayerNorm and a linear head, all written as
//! `#[model]` forward bodies:
//! the macro checks the shapes (the sequence length `T` symbolically) and
//! generates the backward pass. Prints the training and held-out loss as it
//! trains, then a sample of generated text, drawn one character a step
//! over the keys and values cached so far (the decoding step `#[model]`
//! derives, through `blaze::nn::generate`); then the same weights in
//! int8 (`blaze::quant`): their held-out loss, and a sample.
//!
//! ```text
//! cargo run --release --example gpt
//! cargo run --release --example gpt -- --steps 3000 --data ../shared/data/text/kjv-1mb.txt
//! cargo run --release --example gpt -- --size base --precision bf16
//! ```
//! `--size` picks one of the two sizes compiled in (`small`: width 64,
//! context 64; `base`: width 256, 8 heads, context 128), `--precision`
//! the precision of its products (`bf16` runs them on AMX or AVX512-BF16
//! where the CPU has them). `--help` lists the flags and their defaults.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use blaze::Precision;
use blaze::data::{DataLoader, Dataset, TextDataset, Vocab};
use blaze::nn::{Ctx, Decode, Differentiable, GenerateConfig, Graph, generate};
use blaze::optim::{Adam, CosineWithWarmup};
use blaze::loss::cross_entropy;
use blaze::prelude::*;
use blaze::quant::{InferBlock, Quantize, quantize_dynamic};
use blaze::rng::Rng;
use blaze::train::{FitConfig, fit};
use clap::{Parser, ValueEnum};

#[path = "common/gpt_model.rs"]
mod gpt_model;

use gpt_model::{Gpt, GptBase, Size, VOCAB};

/// Trains a small character-level GPT on a text, then writes a sample.
#[derive(Parser)]
struct Args {
    /// The text (UTF-8, or gzipped with a .gz name).
    #[arg(long, default_value_os_t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/text/kjv-1mb.txt.gz"))]
    data: PathBuf,
    /// Optimizer steps in all.
    #[arg(long, default_value = "1500")]
    steps: NonZeroUsize,
    /// The model: `small` (width 64, 4 heads, context 64) or `base`
    /// (width 256, 8 heads, context 128).
    #[arg(long, value_enum, default_value_t = ModelSize::Small)]
    size: ModelSize,
    /// The precision of the model's products, forward and backward: f32,
    /// bf16 or f16 (with loss scaling); weights and optimizer stay f32.
    #[arg(long, default_value_t = Precision::F32)]
    precision: Precision,
    /// Windows of the context length per step (default: 32 for `small`,
    /// 16 for `base`).
    #[arg(long)]
    batch_size: Option<NonZeroUsize>,
    /// AdamW's peak learning rate (cosine schedule after 100 warm-up steps).
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Seed of the weights, the shuffling and the sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Characters to generate at the end.
    #[arg(long, default_value_t = 400)]
    sample: usize,
    /// Where to save the trained weights (safetensors), if anywhere.
    #[arg(long)]
    save: Option<PathBuf>,
}

/// The sizes compiled in.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModelSize {
    Small,
    Base,
}

/// The text's windows of `context` characters, and its characters.
fn load(path: &Path, context: usize) -> Result<(TextDataset, Vocab)> {
    let (data, vocab) = TextDataset::from_file(path, context)?;
    if vocab.len() > VOCAB {
        bail!("{}: {} distinct characters, but the model tells {VOCAB} apart", path.display(), vocab.len());
    }
    if data.ids().len() < 10 * context {
        bail!("{}: too short to train on ({} characters)", path.display(), data.ids().len());
    }
    Ok((data, vocab))
}

/// What training and sampling need of either size.
trait Model:
    Size
    + Graph<Cpu>
    + Differentiable<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>>
    + Decode<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>>
    + Quantize<Cpu, Quantized: Int8Model>
{
}

impl<M> Model for M where
    M: Size
        + Graph<Cpu>
        + Differentiable<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>>
        + Decode<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>>
        + Quantize<Cpu, Quantized: Int8Model>
{
}

/// What the int8 form (`blaze::quant`) needs: its forward and its
/// decoding step.
trait Int8Model: InferBlock<Cpu, 2, 3> + Decode<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>> {}

impl<Q> Int8Model for Q where Q: InferBlock<Cpu, 2, 3> + Decode<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>> {}

fn main() -> Result<()> {
    let args = Args::parse();
    blaze::cpu::tune_allocator_for_training();
    match args.size {
        ModelSize::Small => run::<Gpt<Cpu>>(&args, 32),
        ModelSize::Base => run::<GptBase<Cpu>>(&args, 16),
    }
}

/// Trains the size `M` (`batch` windows a step unless `--batch-size`
/// says), then samples from it.
fn run<M: Model>(args: &Args, batch: usize) -> Result<()> {
    let device = CpuDevice;
    let batch = args.batch_size.map_or(batch, NonZeroUsize::get);
    let (text, vocab) = load(&args.data, M::CONTEXT)?;
    let (train, held) = text.split(0.9);
    println!(
        "{}: {} characters ({} distinct), {} for training, {} held out",
        args.data.display(),
        text.ids().len(),
        vocab.len(),
        train.ids().len(),
        held.ids().len()
    );

    let mut model = M::init(&mut Rng::seed_from_u64(args.seed), &device);
    print!("{}", model.summary());
    println!("products in {}", args.precision);
    let mut train = DataLoader::new(train, batch).shuffle(args.seed);
    let mut held = DataLoader::new(held, batch);
    println!("the training forward keeps {:.1} MB for the backward (logits included)", kept_mb(&mut model, &train));
    let config = FitConfig {
        // Whole epochs up to the step count; the last one ends at it.
        epochs: args.steps.get().div_ceil(train.len()),
        max_steps: Some(args.steps.get() as u64),
        schedule: Some(Box::new(CosineWithWarmup {
            base: args.lr,
            min: args.lr / 10.0,
            warmup: 100,
            total: args.steps.get() as u64,
        })),
        clip_grad_norm: Some(1.0),
        precision: args.precision,
        seed: args.seed,
        ..FitConfig::default()
    };
    let mut opt = Adam::adamw(args.lr).weight_decay(0.01);
    let history = fit(&mut model, &mut opt, &mut train, &mut held, &config)?;
    if let Some(last) = history.epochs.last() {
        println!(
            "held-out loss {:.3} nats/char, perplexity {:.2}; median training step: {:.1} ms (bench/torch_gpt.py times PyTorch on the same model)",
            last.val.loss(),
            last.val["perplexity"],
            1e3 * last.step_seconds
        );
    }

    if let Some(path) = &args.save {
        blaze::record::save_model(&model, path)?;
        println!("saved the weights to {}", path.display());
    }

    // One character a step over the keys and values cached so far (the
    // decoding step `#[model]` derives), streamed as it is drawn.
    let prompt = vocab.encode("And God said").unwrap_or_default();
    let sampling = GenerateConfig {
        max_new_tokens: args.sample,
        temperature: 1.0,
        seed: args.seed,
        context: Some(M::CONTEXT),
        ..GenerateConfig::default()
    };
    print!("\nsample:\n{}", vocab.decode(&prompt));
    let started = std::time::Instant::now();
    let drawn = generate(&model, &prompt, &sampling, |t| print!("{}", vocab.decode(&[t])));
    println!("\n({} characters, {:.0} a second)", drawn.len(), drawn.len() as f64 / started.elapsed().as_secs_f64());

    // The same weights in int8 (`blaze::quant`): the held-out loss of
    // both on a few batches, and a sample drawn over the int8 model's cache.
    let int8 = quantize_dynamic(&model);
    let (f32_loss, int8_loss) = (held_out(&held, |x| model.forward(x)), held_out(&held, |x| int8.forward(x)));
    println!("\nint8: held-out loss {int8_loss:.3} nats/char (f32 {f32_loss:.3}, on the same {HELD_BATCHES} batches)");
    print!("int8 sample:\n{}", vocab.decode(&prompt));
    generate(&int8, &prompt, &GenerateConfig { max_new_tokens: args.sample.min(200), ..sampling }, |t| {
        print!("{}", vocab.decode(&[t]))
    });
    println!();
    Ok(())
}

/// Batches of the held-out text the int8 comparison reads.
const HELD_BATCHES: usize = 8;

/// The mean next-character loss of `forward` on the first batches of `held`.
fn held_out(held: &DataLoader<TextDataset>, forward: impl Fn(&Tensor<Cpu, 2>) -> Tensor<Cpu, 3>) -> f64 {
    let n = held.batch_size();
    let losses: Vec<f64> = (0..HELD_BATCHES.min(held.len()))
        .map(|b| {
            let batch = held.dataset().batch(&(b * n..(b + 1) * n).collect::<Vec<_>>());
            let x = Tensor::<Cpu, 2>::from_data(batch.inputs, &CpuDevice).expect("token ids [n, context]");
            let y = Tensor::<Cpu, 2>::from_data(batch.targets, &CpuDevice).expect("next ids [n, context]");
            let logits = forward(&x);
            let v = logits.shape()[2];
            cross_entropy(&logits.reshape([-1, v as i64]), &y.reshape([-1]), 0.0).item()
        })
        .collect();
    losses.iter().sum::<f64>() / losses.len() as f64
}

/// Megabytes the training forward keeps for the backward on one batch.
fn kept_mb<M: Model>(model: &mut M, train: &DataLoader<TextDataset>) -> f64 {
    let batch = train.dataset().batch(&(0..train.batch_size().min(train.samples())).collect::<Vec<_>>());
    let x = Tensor::<Cpu, 2>::from_data(batch.inputs, &CpuDevice).expect("token ids [n, context]");
    let before = blaze::cpu::bytes_in_use();
    let kept = model.forward_train(&x, &mut Ctx::train(0));
    let bytes = blaze::cpu::bytes_in_use() - before;
    drop(kept);
    bytes as f64 / 1e6
}
