use blaze::prelude::*;

#[model]
pub struct Tail {
    fc: Linear<4, 4>,
}

#[model(input = ([T, 4], [3, 4]))]
impl Tail {
    fn forward(&self, x: Tensor, fixed: Tensor) -> Tensor {
        let a = x.narrow(0, -1, 2);
        let b = fixed.narrow(0, -4, 1);
        self.fc(a) + b
    }
}

#[model]
pub struct Huge {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Huge {
    fn forward(&self, x: Tensor) -> Tensor {
        let a = x.narrow(0, 0, 9223372036854775807);
        self.fc(cat([a, a], 0))
    }
}

fn main() {}
