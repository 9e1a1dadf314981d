use blaze::prelude::*;

#[model(input = [4])]
pub struct Net {}

fn main() {}
