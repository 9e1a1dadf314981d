use blaze::prelude::*;

#[model]
pub struct Net {
    fc1: Linear<16, 32>,
    fc2: Linear<16, 8>,
    norm: LayerNorm<8>,
}

// Three independent mistakes are each reported at their expression; the
// uses of `h`, whose definition failed, add none of their own.
#[model(input = [T, 16])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc1(x).reshape([T, 5]);
        let y = self.fc2(x) + h;
        let z = x.softmax(4);
        let w = x.transpose(0, 7);
        self.norm(y * z + w)
    }
}

fn main() {}
