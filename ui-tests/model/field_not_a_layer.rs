use blaze::prelude::*;

#[model(input = [4])]
pub struct Net {
    fc: Linear<4, 2>,
    steps: usize,
}

fn main() {}
