use blaze::prelude::*;

#[model(input = [3, 8, 8])]
pub struct WrongChannels {
    up: ConvTranspose2d<4, 2, 3>,
}

#[model(input = [4, 8, 8])]
pub struct PaddingPastTheStride {
    #[layer(stride = 2, output_padding = 2)]
    up: ConvTranspose2d<4, 2, 3>,
}

#[model(input = [4, 2, 5])]
pub struct PaddedAway {
    #[layer(padding = 3)]
    up: ConvTranspose2d<4, 2, 3>,
}

fn main() {}
