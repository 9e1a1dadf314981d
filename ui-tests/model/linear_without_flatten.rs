use blaze::prelude::*;

#[model(input = [1, 28, 28])]
pub struct Net {
    #[layer(padding = 2)]
    conv1: Conv2d<1, 6, 5>,
    pool1: MaxPool2d<2>,
    conv2: Conv2d<6, 16, 5>,
    pool2: MaxPool2d<2>,
    fc1: Linear<400, 120>,
}

fn main() {}
