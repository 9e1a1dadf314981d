use blaze::prelude::*;

#[model(input = [8])]
pub struct Inner {
    fc: Linear<8, 8>,
}

// `output` belongs to forward bodies: a sequential model reads it.
#[model(input = [8])]
pub struct Seq {
    #[layer(output = [8])]
    inner: Inner,
}

fn main() {}
