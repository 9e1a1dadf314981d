use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct Net {
    conv1: Conv2d<1, 4, 3>,
    pool: MaxPool2d<2>,
    conv2: Conv2d<4, 4, 5>,
}

fn main() {}
