use blaze::prelude::*;

#[model(input = [5, 16])]
pub struct WrongWidth {
    norm: RMSNorm<8>,
}

#[model(input = [16])]
pub struct NumericFlag {
    #[layer(elementwise_affine = 1)]
    norm: RMSNorm<16>,
}

#[model(input = [16])]
pub struct NegativeEps {
    #[layer(eps = -1e-6)]
    norm: RMSNorm<16>,
}

fn main() {}
