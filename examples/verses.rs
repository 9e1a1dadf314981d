//! A sequence classifier: which book of the King James text (shipped in
//! `data/text`, public domain; see README) a verse comes from, read
//! character by character by a GRU (`--cell lstm`: an LSTM).
//!
//! The text holds eight books in order (Genesis, Exodus, Job, Psalms,
//! Proverbs, Ecclesiastes, Song of Solomon, Isaiah), one verse a line; each
//! book starts at its first verse, which labels the lines. Every fifth
//! verse is held out. Verses are batched with verses of similar length and
//! each batch is cut to its shortest verse (at most `--max-len`
//! characters), so the sequence length `T` differs from batch to batch:
//! the model is a `#[model]` forward body over `[T]` ids (embedding, a
//! two-layer GRU or LSTM, the last step's state, a linear head) whose backward the
//! macro generates, whatever `T` is. Prints the loss and the held-out
//! accuracy per epoch.
//!
//! ```text
//! cargo run --release --example verses
//! cargo run --release --example verses -- --epochs 8 --cell lstm
//! ```
//! `--help` lists the flags and their defaults.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};
use blaze::data::{Vocab, read_text};
use blaze::loss::cross_entropy;
use blaze::nn::Ctx;
use blaze::optim::{Adam, Optimizer, clip_grad_norm};
use blaze::prelude::*;
use blaze::rng::Rng;
use clap::Parser;

/// The books, by their first verse's opening words.
const BOOKS: [(&str, &str); 8] = [
    ("Genesis", "In the beginning God created"),
    ("Exodus", "Now these are the names of the children of Israel"),
    ("Job", "There was a man in the land of Uz"),
    ("Psalms", "Blessed is the man that walketh not"),
    ("Proverbs", "The proverbs of Solomon the son of David"),
    ("Ecclesiastes", "The words of the Preacher"),
    ("Song of Solomon", "The song of songs"),
    ("Isaiah", "The vision of Isaiah the son of Amoz"),
];

#[path = "common/readers.rs"]
mod readers;

use readers::{GruReader, LstmReader, VOCAB};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Cell {
    /// Gated recurrent units.
    Gru,
    /// Long short-term memory.
    Lstm,
}

/// Trains a recurrent classifier of which book a verse comes from.
#[derive(Parser)]
struct Args {
    /// The text, one verse a line (UTF-8, or gzipped with a .gz name).
    #[arg(long, default_value_os_t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/text/kjv-1mb.txt.gz"))]
    data: PathBuf,
    /// Epochs to train.
    #[arg(long, default_value_t = 6)]
    epochs: usize,
    /// Verses per step.
    #[arg(long, default_value = "32")]
    batch_size: NonZeroUsize,
    /// Characters read of each verse at most.
    #[arg(long, default_value = "48")]
    max_len: NonZeroUsize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Seed of the weights and the batching.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The recurrent cell.
    #[arg(long, value_enum, default_value_t = Cell::Gru)]
    cell: Cell,
}

/// Each verse's characters as ids, and its book.
fn load(path: &Path) -> Result<Vec<(Vec<i64>, i64)>> {
    let text = read_text(path)?;
    // The vocabulary of the verses: every character but the line breaks.
    let vocab = Vocab::chars(&text.replace('\n', ""));
    if vocab.len() > VOCAB {
        bail!("{}: {} distinct characters, the model takes {VOCAB}", path.display(), vocab.len());
    }
    let mut verses = Vec::new();
    let mut book: Option<usize> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(next) = BOOKS.iter().position(|(_, first)| line.starts_with(first)) {
            book = Some(next);
        }
        let Some(book) = book else {
            bail!("{}: the text does not start with Genesis 1:1", path.display());
        };
        let ids = vocab.encode(line).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        verses.push((ids, book as i64));
    }
    let found: Vec<i64> = (0..BOOKS.len() as i64).filter(|b| verses.iter().any(|(_, v)| v == b)).collect();
    if found.len() != BOOKS.len() {
        bail!("{}: found the first verse of only {} of the {} books", path.display(), found.len(), BOOKS.len());
    }
    Ok(verses)
}

/// Batches of verses of similar length, each cut to its shortest verse
/// (at most `max_len` characters): `([n, T] ids, [n] books)`.
fn batches(
    verses: &[&(Vec<i64>, i64)],
    size: usize,
    max_len: usize,
    rng: &mut Rng,
) -> Vec<(Vec<i64>, Vec<i64>, usize)> {
    // By length, ties in a random order.
    let mut keyed: Vec<(usize, u64, usize)> =
        (0..verses.len()).map(|i| (verses[i].0.len().min(max_len), rng.next_u64(), i)).collect();
    keyed.sort_unstable();
    let order: Vec<usize> = keyed.into_iter().map(|(_, _, i)| i).collect();
    let mut out: Vec<(Vec<i64>, Vec<i64>, usize)> = order
        .chunks(size)
        .map(|chunk| {
            let t = chunk.iter().map(|&i| verses[i].0.len()).min().unwrap_or(1).clamp(1, max_len);
            let ids = chunk.iter().flat_map(|&i| verses[i].0[..t].iter().copied()).collect();
            (ids, chunk.iter().map(|&i| verses[i].1).collect(), t)
        })
        .collect();
    // Shuffle the batches, not their lengths.
    for i in (1..out.len()).rev() {
        out.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    out
}

/// What training needs of either reader.
trait Reader: Sized {
    fn fresh(seed: u64) -> Self;
    fn summary(&self) -> String;
    /// One step: the batch's loss.
    fn train_step(&mut self, opt: &mut Adam<Cpu>, ids: &Tensor<Cpu, 2>, books: &Tensor<Cpu, 1>, step: u64) -> f64;
    fn logits(&self, ids: &Tensor<Cpu, 2>) -> Tensor<Cpu, 2>;
}

macro_rules! reader {
    ($t:ident) => {
        impl Reader for $t<Cpu> {
            fn fresh(seed: u64) -> Self {
                $t::new_seeded(seed, &CpuDevice)
            }
            fn summary(&self) -> String {
                $t::summary(self)
            }
            fn train_step(
                &mut self,
                opt: &mut Adam<Cpu>,
                ids: &Tensor<Cpu, 2>,
                books: &Tensor<Cpu, 1>,
                step: u64,
            ) -> f64 {
                let (logits, cache) = self.forward_train(ids, &mut Ctx::train(step));
                let loss = cross_entropy(&logits, books, 0.0);
                let mut grads = self.backward_params(&cache, &loss.grad);
                clip_grad_norm::<Cpu, $t<Cpu>>(&mut grads, 1.0);
                opt.step(self, &grads);
                loss.item()
            }
            fn logits(&self, ids: &Tensor<Cpu, 2>) -> Tensor<Cpu, 2> {
                self.forward(ids)
            }
        }
    };
}

reader!(LstmReader);
reader!(GruReader);

fn train<R: Reader>(args: &Args, verses: &[(Vec<i64>, i64)]) {
    let (train, held): (Vec<_>, Vec<_>) = verses.iter().enumerate().partition(|(i, _)| i % 5 != 4);
    let (train, held): (Vec<_>, Vec<_>) =
        (train.into_iter().map(|p| p.1).collect(), held.into_iter().map(|p| p.1).collect());
    println!("{} verses: {} for training, {} held out", verses.len(), train.len(), held.len());
    let mut model = R::fresh(args.seed);
    print!("{}", model.summary());
    let mut opt = Adam::new(args.lr);
    let mut rng = Rng::seed_from_u64(args.seed);
    let tensors = |(ids, books, t): &(Vec<i64>, Vec<i64>, usize)| {
        let n = books.len();
        (
            Tensor::<Cpu, 2>::from_vec(ids.clone(), [n, *t], &CpuDevice),
            Tensor::<Cpu, 1>::from_vec(books.clone(), [n], &CpuDevice),
        )
    };
    let held_batches = batches(&held, 256, args.max_len.get(), &mut Rng::seed_from_u64(1));
    let start = Instant::now();
    let mut step = 0u64;
    for epoch in 1..=args.epochs {
        let (mut total, mut count) = (0.0, 0usize);
        let mut lengths = std::collections::BTreeSet::new();
        for batch in batches(&train, args.batch_size.get(), args.max_len.get(), &mut rng) {
            lengths.insert(batch.2);
            let (ids, books) = tensors(&batch);
            total += model.train_step(&mut opt, &ids, &books, step);
            count += 1;
            step += 1;
        }
        let (mut right, mut seen) = (0usize, 0usize);
        for batch in &held_batches {
            let (ids, _) = tensors(batch);
            let guess = model.logits(&ids).argmax(1).to_vec::<i64>();
            right += guess.iter().zip(&batch.1).filter(|(g, b)| g == b).count();
            seen += batch.1.len();
        }
        println!(
            "epoch {epoch}  train loss {:.3}  held-out accuracy {:.3}  (lengths {}..={} per batch, {:.0} s)",
            total / count.max(1) as f64,
            right as f64 / seen.max(1) as f64,
            lengths.first().copied().unwrap_or(0),
            lengths.last().copied().unwrap_or(0),
            start.elapsed().as_secs_f64()
        );
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let verses = load(&args.data)?;
    let mut counts = [0usize; 8];
    for (_, b) in &verses {
        counts[*b as usize] += 1;
    }
    let majority = *counts.iter().max().unwrap_or(&0) as f64 / verses.len().max(1) as f64;
    println!(
        "books: {}",
        BOOKS.iter().zip(counts).map(|((name, _), n)| format!("{name} {n}")).collect::<Vec<_>>().join(", ")
    );
    println!("guessing the largest book scores {majority:.3}");
    CpuDevice.run(|| match args.cell {
        Cell::Gru => train::<GruReader<Cpu>>(&args, &verses),
        Cell::Lstm => train::<LstmReader<Cpu>>(&args, &verses),
    });
    Ok(())
}
