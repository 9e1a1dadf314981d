use blaze::prelude::*;

#[model]
pub struct Net {
    norm: LayerNorm<8>,
    fc: Linear<8, 8>,
}

#[model(input = [8])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(self.nrom(x))
    }
}

fn main() {}
