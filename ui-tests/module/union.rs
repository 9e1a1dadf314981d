use blaze::prelude::*;

#[derive(Module)]
pub union Net {
    a: u32,
    b: f32,
}

fn main() {}
