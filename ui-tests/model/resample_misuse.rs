use blaze::prelude::*;

#[model(input = [16])]
pub struct UpsampleAVector {
    up: Upsample,
}

#[model(input = [3, 4, 4])]
pub struct UnknownMode {
    #[layer(mode = "bicubic")]
    up: Upsample,
}

#[model(input = [3, 4, 4])]
pub struct NothingLeft {
    #[layer(scale_factor = 0.1)]
    up: Upsample,
}

#[model(input = [3, 4])]
pub struct PoolASequence {
    pool: AdaptiveAvgPool2d<2, 2>,
}

#[model(input = [3, 4, 4])]
pub struct ModeAsNumber {
    #[layer(mode = 2)]
    up: Upsample,
}

#[model(input = [3, 4, 4])]
pub struct CornersOfNearest {
    #[layer(align_corners = true)]
    up: Upsample,
}

fn main() {}
