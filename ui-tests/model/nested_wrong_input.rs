use blaze::prelude::*;

#[model(input = [64])]
pub struct Head {
    fc: Linear<64, 10>,
}

#[model(input = [1, 28, 28])]
pub struct Net {
    conv: Conv2d<1, 4, 5>,
    pool: MaxPool2d<2>,
    flat: Flatten,
    head: Head,
}

fn main() {}
