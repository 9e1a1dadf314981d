use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<8, 8>,
}

#[model(input = [8])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        let mut h = self.fc(x);
        for _ in 0..3 {
            h = h * 0.5;
        }
        h
    }
}

fn main() {}
