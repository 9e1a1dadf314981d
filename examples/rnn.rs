//! A recurrent network written by hand, trained through the tape.
//!
//! An Elman RNN reads a sequence of bits, one step per Rust loop iteration,
//! and says whether it holds more ones than zeros. Every batch has its own
//! sequence length (5 to 21), so the graph differs from step to step: what
//! `#[model]` cannot express, `Autodiff<Cpu>` records as it runs.
//!
//! ```text
//! cargo run --release --example rnn
//! ```

use blaze::autodiff::{Autodiff, track};
use blaze::loss::cross_entropy;
use blaze::nn::{Linear, LinearConfig};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::{Backend, Rng};

type B = Autodiff<Cpu>;

/// h_t = tanh(W_ih x_t + W_hh h_{t-1}); logits = W_out h_T.
#[derive(Module, Clone, Debug)]
struct Elman<B: Backend> {
    input: Linear<B, 1, 32>,
    hidden: Linear<B, 32, 32>,
    head: Linear<B, 32, 2>,
}

impl<B: Backend> Elman<B> {
    fn new(rng: &mut Rng, device: &B::Device) -> Self {
        let c = LinearConfig::default();
        Elman {
            input: Linear::new(c, rng, device),
            hidden: Linear::new(c, rng, device),
            head: Linear::new(c, rng, device),
        }
    }

    fn forward(&self, bits: &Tensor<B, 2>) -> Tensor<B, 2> {
        let [n, len] = bits.shape();
        let mut h = Tensor::<B, 2>::zeros([n, 32], &bits.device());
        for t in 0..len {
            let x = bits.narrow(1, t, 1);
            h = (self.input.forward(&x) + self.hidden.forward(&h)).tanh();
        }
        self.head.forward(&h)
    }
}

/// A batch of random bit sequences of one length and their majority labels.
fn batch(n: usize, len: usize, rng: &mut Rng) -> (Tensor<B, 2>, Tensor<B, 1>) {
    let bits: Vec<f32> = (0..n * len).map(|_| rng.below(2) as f32).collect();
    let labels: Vec<i64> = bits.chunks(len).map(|s| i64::from(s.iter().sum::<f32>() * 2.0 > len as f32)).collect();
    (Tensor::from_vec(bits, [n, len], &CpuDevice), Tensor::from_vec(labels, [n], &CpuDevice))
}

fn main() {
    let mut rng = Rng::seed_from_u64(0);
    let mut model = Elman::<B>::new(&mut rng, &CpuDevice);
    track(&mut model);
    let mut opt = Adam::new(0.01);
    let mut recent = Vec::new();
    let mut first = None;
    for step in 1..=600 {
        let len = 5 + 2 * rng.below(9) as usize; // odd lengths: no ties
        let (x, y) = batch(64, len, &mut rng);
        let logits = model.forward(&x);
        let loss = cross_entropy(&logits, &y, 0.0);
        recent.push(loss.item());
        loss.value.backward().step(&mut model, &mut opt);
        if step % 50 == 0 {
            let mean = recent.iter().sum::<f64>() / recent.len() as f64;
            first.get_or_insert(mean);
            println!("step {step:>4}  sequence length {len:>2}  loss {mean:.4}");
            recent.clear();
        }
    }
    // Held-out accuracy on longer sequences than any seen in training.
    let (x, y) = batch(1000, 31, &mut rng);
    let pred: Tensor<B, 1> = model.forward(&x).argmax(1).squeeze(1);
    let acc = pred.eq(&y).to_dtype(DType::F32).mean().item();
    println!("accuracy on 1000 sequences of length 31: {acc:.3} (loss fell from {:.3})", first.unwrap_or(0.0));
}
