// `#[load]` misuse, each an error at its tokens: a tensor the layer does
// not have (a bias of a layer without one too), a name mapped twice, `{i}`
// on a single layer, an array's prefix without `{i}`, and something other
// than `transposed(..)`.
use blaze::prelude::*;

#[model]
pub struct Block {
    #[load(weights = "ln.weight")]
    ln: LayerNorm<8>,
    #[load(weight = "fc.weight", weight = transposed("fc.w"))]
    fc: Linear<8, 8>,
    #[load("out.{i}")]
    out: Linear<8, 8>,
    #[load(bias = flipped("proj.bias"))]
    proj: Linear<8, 8>,
    #[layer(bias = false)]
    #[load(bias = "last.bias")]
    last: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl Block {
    fn forward(&self, x: Tensor) -> Tensor {
        self.last(self.proj(self.out(self.fc(self.ln(x)))))
    }
}

#[model]
pub struct Stack {
    #[load("h")]
    h: [Block; 2],
}

#[model(input = [T, 8])]
impl Stack {
    fn forward(&self, x: Tensor) -> Tensor {
        let mut x = x;
        for b in &self.h {
            x = b(x);
        }
        x
    }
}

fn main() {}
