use blaze::prelude::*;

#[model(input = [4], fuse = 1)]
pub struct FuseNotABool {
    fc: Linear<4, 2>,
}

#[model(input = [4], fusion = false)]
pub struct UnknownArgument {
    fc: Linear<4, 2>,
}

fn main() {}
