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

#[model]
pub struct HugeDim {
    fc: Linear<8, 8>,
}

#[model(input = [T, 18446744073709551615])]
impl HugeDim {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

fn main() {}
