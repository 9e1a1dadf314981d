use blaze::prelude::*;
use blaze::Backend;

#[derive(Module)]
pub struct Net<B: Backend> {
    fc: Linear<B, 4, 2>,
    #[module(skp)]
    steps: usize,
}

fn main() {}
