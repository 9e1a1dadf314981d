use blaze::prelude::*;

#[model(input = [3, 16, 16])]
pub struct WrongChannels {
    conv: Conv2d<3, 6, 3>,
    norm: GroupNorm<2, 8>,
}

#[model(input = [6, 16, 16])]
pub struct GroupsDoNotDivide {
    norm: GroupNorm<4, 6>,
}

fn main() {}
