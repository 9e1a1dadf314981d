use blaze::prelude::*;

#[model(input = [6, 10])]
pub struct HeadsDoNotDivide {
    attn: MultiHeadAttention<10, 4>,
}

#[model(input = [6, 12])]
pub struct WrongWidth {
    attn: MultiHeadAttention<16, 4>,
}

#[model(input = [16])]
pub struct NotASequence {
    attn: MultiHeadAttention<16, 4>,
}

fn main() {}
