use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<4, 4>,
}

#[model(input = [4])]
impl Net {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        if true { h } else { x }
    }
}

fn main() {}
