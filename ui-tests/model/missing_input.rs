use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<4, 2>,
}

fn main() {}
