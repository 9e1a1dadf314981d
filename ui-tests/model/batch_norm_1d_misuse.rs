use blaze::prelude::*;

#[model(input = [3, 16, 16])]
pub struct OnImages {
    conv: Conv2d<3, 4, 3>,
    norm: BatchNorm1d<4>,
}

#[model(input = [6, 10])]
pub struct WrongChannels {
    norm: BatchNorm1d<10>,
}

fn main() {}
