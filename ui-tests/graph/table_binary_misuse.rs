use blaze::prelude::*;

#[model]
pub struct NumberForTensor {
    fc: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl NumberForTensor {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x).maximum(2.0)
    }
}

#[model]
pub struct TensorForNumber {
    fc: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl TensorForNumber {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x).powf(x)
    }
}

#[model]
pub struct NoBroadcast {
    fc: Linear<8, 8>,
    narrow: Linear<8, 3>,
}

#[model(input = [T, 8])]
impl NoBroadcast {
    fn forward(&self, x: Tensor) -> Tensor {
        pow(self.fc(x), self.narrow(x))
    }
}

fn main() {}
