use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct Net {
    #[layer(padding = 1, stride = 1, padding = 2)]
    conv: Conv2d<1, 4, 3>,
}

fn main() {}
