use blaze::prelude::*;

#[model]
pub struct NoShape {
    fc: Linear<8, 8>,
}

#[model]
impl NoShape {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

#[model]
pub struct TwoShapes {
    fc: Linear<8, 8>,
}

#[model(input = ([8], [8]))]
impl TwoShapes {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

fn main() {}
