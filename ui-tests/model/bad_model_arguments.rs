use blaze::prelude::*;

#[model(input = [4], fuse = 1)]
pub struct FuseNotABool {
    fc: Linear<4, 2>,
}

#[model(input = [4], fusion = false)]
pub struct UnknownArgument {
    fc: Linear<4, 2>,
}

#[model(input = [4], fusee = false)]
pub struct MisspeltArgument {
    fc: Linear<4, 2>,
}

#[model(input = [4], input = [5])]
pub struct InputTwice {
    fc: Linear<4, 2>,
}

#[model(input = [4], precision = fp8)]
pub struct UnknownPrecision {
    fc: Linear<4, 2>,
}

#[model(input = [4], precision = bf16, precison = f16)]
pub struct MisspeltPrecision {
    fc: Linear<4, 2>,
}

#[model(precision = bf16)]
pub struct PrecisionOnAGraphStruct {
    fc: Linear<4, 2>,
}

#[model(input = [1, 8, 8])]
pub struct BareLayerOption {
    #[layer(1)]
    conv: Conv2d<1, 4, 3>,
}

fn main() {}
