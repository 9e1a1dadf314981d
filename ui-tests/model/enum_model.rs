use blaze::prelude::*;

#[model(input = [4])]
pub enum Net {
    Small,
    Large,
}

fn main() {}
