use blaze::prelude::*;

// Every mistake in one model's attributes is reported, each at its tokens.
#[model(input = [0, 28, n])]
pub struct Dims {
    #[layer]
    conv: Conv2d<1, 4, 3>,
    #[layer(padding = 1 stride = 2)]
    conv2: Conv2d<4, 4, 3>,
    #[layer(nn::bias = false, p = pub)]
    drop: Dropout,
}

#[model(input = [4] fuse = false)]
pub struct MissingComma {
    fc: Linear<4, 2>,
}

#[model(input = [4], fuse)]
pub struct FuseWithoutValue {
    fc: Linear<4, 2>,
}

fn main() {}
