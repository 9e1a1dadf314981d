use blaze::prelude::*;

// The backend parameter is `B`, so a model cannot take that name.
#[model(input = [16])]
pub struct B {
    fc: Linear<16, 4>,
}

fn main() {}
