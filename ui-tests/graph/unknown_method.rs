use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x).sofmax(-1)
    }
}

fn main() {}
