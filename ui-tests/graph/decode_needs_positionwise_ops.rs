// A forward body that sums over its positions does not decode one
// position at a time: `generate` names the missing `Decode`.
use blaze::nn::{GenerateConfig, generate};
use blaze::prelude::*;

#[model]
pub struct Pooled {
    tok: Embedding<16, 8>,
    head: Linear<8, 16>,
}

#[model(input = [T])]
impl Pooled {
    fn forward(&self, ids: Tensor) -> Tensor {
        let h = self.tok(ids);
        self.head(h - h.mean_dim(0))
    }
}

fn main() {
    let model = Pooled::<Cpu>::new(&CpuDevice);
    generate(&model, &[1, 2], &GenerateConfig::greedy(4), |_| {});
    moved();
}

// Positions moved out of the first dim and reshaped back mix them: no
// decoding step either.
#[model]
pub struct Moved {
    tok: Embedding<16, 8>,
    head: Linear<8, 16>,
}

#[model(input = [T])]
impl Moved {
    fn forward(&self, ids: Tensor) -> Tensor {
        let h = self.tok(ids);
        self.head(h.transpose(0, 1).reshape([T, 8]))
    }
}

fn moved() {
    let model = Moved::<Cpu>::new(&CpuDevice);
    generate(&model, &[1, 2], &GenerateConfig::greedy(4), |_| {});
}
