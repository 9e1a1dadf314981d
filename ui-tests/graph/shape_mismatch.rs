use blaze::prelude::*;

#[model]
pub struct Net {
    fc1: Linear<16, 32>,
    fc2: Linear<32, 8>,
}

#[model(input = [T, 16])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc1(x);
        x + self.fc2(h)
    }
}

fn main() {}
