use blaze::prelude::*;

const HIDDEN: usize = 32;

#[model(input = [16])]
pub struct Net {
    fc: Linear<16, HIDDEN>,
}

fn main() {}
