use blaze::prelude::*;

#[derive(Module)]
pub struct Net {
    fc: Linear<Cpu, 4, 2>,
}

fn main() {}
