use blaze::prelude::*;

#[model(input = [1, 28, 28])]
pub struct Net {
    conv1: Conv2d<1, 16, 5>,
    pool: MaxPool2d<2>,
    conv2: Conv2d<16, 16, 5>,
    pool2: MaxPool2d<2>,
    flat: Flatten,
    fc1: Linear<400, 120>,
}

fn main() {}
