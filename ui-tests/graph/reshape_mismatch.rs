use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<64, 64>,
}

#[model(input = [T, 64])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x).reshape([T, 4, 8]).reshape([T, 64])
    }
}

fn main() {}
