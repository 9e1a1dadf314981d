// A field of a type that does not implement Module (and is not a plain
// number or string, which the derive reports itself).
use blaze::prelude::*;
use blaze::Backend;

pub struct Config {
    pub width: usize,
}

#[derive(Module)]
pub struct Net<B: Backend> {
    fc: Linear<B, 4, 2>,
    config: Config,
}

fn main() {}
