//! Trains a small MLP on handwritten digits with plain tensor ops and a
//! backward pass derived by hand, then reports test accuracy.
//!
//! ```text
//! cargo run --release --example mnist                  # the digits shipped in data/digits-8x8
//! cargo run --release --example mnist -- --data DIR    # any MNIST IDX folder
//! ```
//! Flags: `--data DIR`, `--epochs N`, `--batch-size N`, `--lr X`, `--hidden N`, `--seed N`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use blaze::prelude::*;
use blaze::runtime::data::mnist::{MnistSplit, read_mnist};
use blaze::{Rng, manual_seed};

type T2 = Tensor<Cpu, 2>;
type T1 = Tensor<Cpu, 1>;

struct Args {
    data: PathBuf,
    epochs: usize,
    batch_size: usize,
    lr: f64,
    hidden: usize,
    seed: u64,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/digits-8x8"),
        epochs: 20,
        batch_size: 64,
        lr: 0.05,
        hidden: 128,
        seed: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(value()?),
            "--epochs" => a.epochs = value()?.parse().context("--epochs")?,
            "--batch-size" => a.batch_size = value()?.parse().context("--batch-size")?,
            "--lr" => a.lr = value()?.parse().context("--lr")?,
            "--hidden" => a.hidden = value()?.parse().context("--hidden")?,
            "--seed" => a.seed = value()?.parse().context("--seed")?,
            "-h" | "--help" => {
                println!("flags: --data DIR --epochs N --batch-size N --lr X --hidden N --seed N");
                std::process::exit(0);
            }
            other => bail!("unknown flag {other} (try --help)"),
        }
    }
    if a.batch_size == 0 || a.hidden == 0 {
        bail!("--batch-size and --hidden must be positive");
    }
    Ok(a)
}

/// A linear layer as PyTorch initialises it: weight `[out, in]` and bias
/// uniform in `±1/sqrt(in)`.
struct Linear {
    w: T2,
    b: T2,
    vw: T2,
    vb: T2,
}

impl Linear {
    fn new(inp: usize, out: usize, rng: &mut Rng) -> Self {
        let bound = 1.0 / (inp as f64).sqrt();
        let w = T2::uniform_with([out, inp], -bound, bound, rng, &CpuDevice);
        let b = T2::uniform_with([1, out], -bound, bound, rng, &CpuDevice);
        Linear { vw: w.zeros_like(), vb: b.zeros_like(), w, b }
    }

    fn forward(&self, x: &T2) -> T2 {
        x.matmul(&self.w.t()) + &self.b
    }

    /// SGD with momentum 0.9, as `torch.optim.SGD`.
    fn step(&mut self, gw: &T2, gb: &T2, lr: f64) {
        self.vw = &self.vw * 0.9 + gw;
        self.vb = &self.vb * 0.9 + gb;
        self.w = &self.w - &self.vw * lr;
        self.b = &self.b - &self.vb * lr;
    }
}

fn to_tensors(split: &MnistSplit) -> (T2, T1) {
    let n = split.len();
    let x = T2::from_vec(split.images.clone(), [n, split.rows * split.cols], &CpuDevice);
    let y = T1::from_vec(split.labels.clone(), [n], &CpuDevice);
    (x, y)
}

fn accuracy(logits: &T2, labels: &T1) -> f64 {
    let pred: T1 = logits.argmax(1).squeeze(1);
    pred.eq(labels).to_dtype(DType::F32).mean().item()
}

fn main() -> Result<()> {
    let args = parse_args()?;
    manual_seed(args.seed);
    let data = read_mnist(&args.data)?;
    let (x_train, y_train) = to_tensors(&data.train);
    let (x_test, y_test) = to_tensors(&data.test);
    let features = x_train.size(1);
    println!(
        "{}: {} train / {} test images of {}x{}; MLP {features}-{}-10",
        args.data.display(),
        data.train.len(),
        data.test.len(),
        data.train.rows,
        data.train.cols,
        args.hidden
    );

    let mut rng = Rng::seed_from_u64(args.seed);
    let mut fc1 = Linear::new(features, args.hidden, &mut rng);
    let mut fc2 = Linear::new(args.hidden, 10, &mut rng);
    let classes = T1::arange(0..10, &CpuDevice).reshape([1, 10]);
    let n = data.train.len();
    let mut order: Vec<i64> = (0..n as i64).collect();

    for epoch in 1..=args.epochs {
        let start = Instant::now();
        rng.shuffle(&mut order);
        let (mut loss_sum, mut batches) = (0.0, 0);
        for chunk in order.chunks(args.batch_size) {
            let idx = T1::from_vec(chunk.to_vec(), [chunk.len()], &CpuDevice);
            let x = x_train.index_select(0, &idx);
            let y = y_train.index_select(0, &idx);
            let b = chunk.len() as f64;

            // Forward.
            let z1 = fc1.forward(&x);
            let h = z1.relu();
            let logits = fc2.forward(&h);
            let logp = logits.log_softmax(1);
            let target: T2 = y.reshape([-1, 1]);
            loss_sum -= logp.gather(1, &target).mean().item();
            batches += 1;

            // Backward of the mean cross-entropy: d logits = (softmax - onehot) / b.
            let onehot = target.eq(&classes.expand([chunk.len(), 10])).to_dtype(DType::F32);
            let dlogits = (logp.exp() - onehot) / b;
            let dw2 = dlogits.t().matmul(&h);
            let db2 = dlogits.sum_dim(0);
            // relu'(z) is 1 where z > 0.
            let dz1 = dlogits.matmul(&fc2.w) * z1.gt_scalar(0.0).to_dtype(DType::F32);
            let dw1 = dz1.t().matmul(&x);
            let db1 = dz1.sum_dim(0);

            fc2.step(&dw2, &db2, args.lr);
            fc1.step(&dw1, &db1, args.lr);
        }
        let test_logits = fc2.forward(&fc1.forward(&x_test).relu());
        println!(
            "epoch {epoch:>3}  train loss {:.4}  test accuracy {:.4}  ({:.0} ms)",
            loss_sum / batches as f64,
            accuracy(&test_logits, &y_test),
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let test_logits = fc2.forward(&fc1.forward(&x_test).relu());
    println!("test accuracy: {:.4}", accuracy(&test_logits, &y_test));
    Ok(())
}
