use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct Net {
    #[layer(padding = -1)]
    conv: Conv2d<1, 4, 3>,
    #[layer(p = 1.5)]
    drop: Dropout,
    #[layer(bias = 1)]
    flat_fc: Flatten,
}

fn main() {}
