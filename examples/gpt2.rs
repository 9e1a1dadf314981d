//! Generates text with a GPT-2 checkpoint saved by `transformers`: a
//! folder with `model.safetensors` and `tokenizer.json`, as
//! `save_pretrained` writes them. The model is `#[model]` forward bodies
//! (`examples/common/gpt2_model.rs`) whose fields name their tensors in
//! the checkpoint with `#[load(..)]`; the tokenizer is read with the
//! `tokenizers` crate; tokens are drawn one a step over the keys and
//! values cached so far (`blaze::nn::generate`), and printed as they come.
//!
//! ```text
//! cargo run --release --example gpt2                 # tests/fixtures/hf_gpt2: a tiny random GPT-2
//! cargo run --release --example gpt2 -- --model ~/gpt2 --prompt "The meaning of life is" --top-k 40
//! ```
//! The sizes are compiled in: the test fixture's (`Gpt2Tiny`) and GPT-2
//! small's (124M parameters: `transformers`' `gpt2`, whose files a user
//! downloads on their own). The folder's token-embedding shape picks one.
//! `--help` lists the flags and their defaults.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use blaze::nn::{Decode, GenerateConfig, Graph, generate};
use blaze::prelude::*;
use blaze::record::{load_model_from, load_tensors};
use clap::Parser;

#[path = "common/gpt2_model.rs"]
mod gpt2_model;

mod small {
    use super::gpt2_model;
    use blaze::prelude::*;

    gpt2_model::gpt2!(
        /// GPT-2 small: 50257 tokens, width 768, 12 heads, MLP 3072,
        /// context 1024, 12 blocks.
        Gpt2Small, Gpt2SmallBlock, 50257, 768, 12, 3072, 1024, 12
    );
}

use gpt2_model::Gpt2Tiny;
use small::Gpt2Small;

/// The positions a size's table holds.
trait Positions {
    const CONTEXT: usize;
}

impl Positions for Gpt2Tiny<Cpu> {
    const CONTEXT: usize = Gpt2Tiny::<Cpu>::CONTEXT;
}

impl Positions for Gpt2Small<Cpu> {
    const CONTEXT: usize = Gpt2Small::<Cpu>::CONTEXT;
}

/// Continues a prompt with a GPT-2 checkpoint.
#[derive(Parser)]
struct Args {
    /// The folder `save_pretrained` wrote (`model.safetensors`, `tokenizer.json`).
    #[arg(long, default_value_os_t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf_gpt2"))]
    model: PathBuf,
    /// The text to continue.
    #[arg(long, default_value = "And God said unto")]
    prompt: String,
    /// Tokens to add at most.
    #[arg(long, default_value_t = 40)]
    max_new_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.8)]
    temperature: f64,
    /// Draw from the k most likely tokens only.
    #[arg(long)]
    top_k: Option<usize>,
    /// Draw from the most likely tokens holding this much probability only.
    #[arg(long)]
    top_p: Option<f64>,
    /// Seed of the draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// The checkpoint's token embeddings: `[vocabulary, width]`.
fn embedding_shape(path: &Path) -> Result<Vec<usize>> {
    let (tensors, _) = load_tensors(path)?;
    let wte = tensors.iter().find(|(n, _)| n == "transformer.wte.weight");
    let (_, t) =
        wte.with_context(|| format!("{}: no `transformer.wte.weight`: not a GPT-2 checkpoint", path.display()))?;
    Ok(t.shape.clone())
}

/// Loads a model of size `M` and generates with it.
fn run<M>(args: &Args, weights: &Path, tokenizer: &tokenizers::Tokenizer) -> Result<()>
where
    M: Graph<Cpu> + Decode<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 3>> + Positions,
{
    let mut model = M::init(&mut blaze::Rng::seed_from_u64(0), &CpuDevice);
    load_model_from(&mut model, weights)?;
    let encoding = tokenizer.encode(args.prompt.as_str(), false).map_err(|e| anyhow::anyhow!("{e}"))?;
    let prompt: Vec<i64> = encoding.get_ids().iter().map(|&i| i64::from(i)).collect();
    if prompt.is_empty() {
        bail!("the prompt encodes to no tokens");
    }
    let config = GenerateConfig {
        max_new_tokens: args.max_new_tokens,
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        seed: args.seed,
        stop: tokenizer.token_to_id("<|endoftext|>").map(i64::from).into_iter().collect(),
        context: Some(M::CONTEXT),
    };
    print!("{}", args.prompt);
    // Tokens decode to text only together (a character may span several
    // byte-level tokens): print what the new ones add to the text so far.
    let mut ids: Vec<u32> = prompt.iter().map(|&i| i as u32).collect();
    let mut shown = tokenizer.decode(&ids, false).map_err(|e| anyhow::anyhow!("{e}"))?.len();
    let started = std::time::Instant::now();
    let new = generate(&model, &prompt, &config, |t| {
        ids.push(t as u32);
        if let Ok(text) = tokenizer.decode(&ids, false)
            && text.len() > shown
            && text.is_char_boundary(shown)
        {
            print!("{}", &text[shown..]);
            shown = text.len();
            let _ = std::io::stdout().flush();
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    println!("\n({} tokens, {:.0} a second)", new.len(), new.len() as f64 / seconds);
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let weights = args.model.join("model.safetensors");
    let tokenizer = tokenizers::Tokenizer::from_file(args.model.join("tokenizer.json"))
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.model.join("tokenizer.json").display()))?;
    match embedding_shape(&weights)?.as_slice() {
        [300, 32] => run::<Gpt2Tiny<Cpu>>(&args, &weights, &tokenizer),
        [50257, 768] => run::<Gpt2Small<Cpu>>(&args, &weights, &tokenizer),
        other => bail!(
            "{}: token embeddings of shape {other:?}; this example compiles in [300, 32] (the test fixture) and \
             [50257, 768] (GPT-2 small)",
            weights.display()
        ),
    }
}
