use blaze::prelude::*;

#[model(input = [3, 16])]
pub struct WrongChannels {
    conv: Conv1d<4, 8, 3>,
}

#[model(input = [3, 2])]
pub struct KernelTooLong {
    conv: Conv1d<3, 8, 5>,
}

#[model(input = [3, 16, 16])]
pub struct OnImages {
    conv: Conv1d<3, 8, 3>,
}

fn main() {}
