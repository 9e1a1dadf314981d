use blaze::prelude::*;

#[model]
pub struct Unused {
    fc: Linear<8, 8>,
    spare: Linear<8, 8>,
}

#[model(input = [8])]
impl Unused {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

#[model]
pub struct Twice {
    fc: Linear<8, 8>,
}

#[model(input = [8])]
impl Twice {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(self.fc(x))
    }
}

fn main() {}
