// Every mistake in the `#[module]` attributes of one struct is reported, each
// at its tokens; the fields around them still derive.
use blaze::prelude::*;
use blaze::Backend;

#[derive(Module)]
pub struct Net<B: Backend> {
    fc: Linear<B, 4, 2>,
    #[module]
    bare: usize,
    #[module(skip = true)]
    valued: usize,
    #[module(skip, skip)]
    twice: usize,
    #[module(1)]
    literal: usize,
    #[module(skip, colour)]
    unknown: usize,
}

fn main() {}
