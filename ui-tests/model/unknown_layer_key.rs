use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct Net {
    #[layer(paddng = 1)]
    conv: Conv2d<1, 4, 3>,
}

fn main() {}
