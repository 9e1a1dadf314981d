use blaze::prelude::*;

#[model]
pub struct Inner {
    fc: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl Inner {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

#[model]
pub struct Outer {
    fc: Linear<8, 4>,
    inner: Inner,
}

#[model(input = [T, 8])]
impl Outer {
    fn forward(&self, x: Tensor) -> Tensor {
        self.inner(self.fc(x))
    }
}

fn main() {}
