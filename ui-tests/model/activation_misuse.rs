use blaze::prelude::*;

#[model(input = [4, 5])]
pub struct SoftmaxPastTheLastDim {
    #[layer(dim = 3)]
    probs: Softmax,
}

#[model(input = [4, 5])]
pub struct SoftmaxOverTheBatch {
    #[layer(dim = 0)]
    probs: Softmax,
}

#[model(input = [8])]
pub struct FlatSoftplus {
    #[layer(beta = 0.0)]
    soft: Softplus,
}

#[model(input = [8])]
pub struct EluWithASlope {
    #[layer(negative_slope = 0.1)]
    elu: Elu,
}

fn main() {}
