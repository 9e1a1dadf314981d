use blaze::prelude::*;

#[model(input = [3, 32, 32])]
pub struct Net {
    conv1: Conv2d<3, 6, 5>,
    act: Relu,
    conv2: Conv2d<8, 16, 5>,
}

fn main() {}
