use blaze::prelude::*;
use blaze::Backend;

#[derive(Module)]
pub struct Net<B: Backend, L> {
    layer: L,
    fc: Linear<B, 4, 2>,
}

fn main() {}
