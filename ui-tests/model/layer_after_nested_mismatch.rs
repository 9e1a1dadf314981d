use blaze::prelude::*;

#[model(input = [16])]
pub struct Body {
    fc: Linear<16, 32>,
}

#[model(input = [16])]
pub struct Net {
    body: Body,
    head: Linear<64, 10>,
}

fn main() {}
