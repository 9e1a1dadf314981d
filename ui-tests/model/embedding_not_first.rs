use blaze::prelude::*;

#[model(input = [16])]
pub struct Net {
    fc: Linear<16, 16>,
    emb: Embedding<100, 8>,
}

fn main() {}
