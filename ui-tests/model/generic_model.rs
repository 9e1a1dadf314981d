use blaze::prelude::*;

#[model(input = [16])]
pub struct Net<B> {
    fc: Linear<16, 4>,
}

fn main() {}
