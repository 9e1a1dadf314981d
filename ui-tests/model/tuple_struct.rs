use blaze::prelude::*;

#[model(input = [4])]
pub struct Net(Linear<4, 2>, Relu);

fn main() {}
