use blaze::prelude::*;

#[model]
pub struct Cross {
    attn: MultiHeadAttention<16, 4>,
}

#[model(input = ([T, 16], [S, 16], [S, 8], [T]))]
impl Cross {
    fn forward(&self, x: Tensor, memory: Tensor, narrow: Tensor, mask: Tensor) -> Tensor {
        let a = self.attn(x, memory);
        let b = self.attn(x, memory, narrow);
        let c = self.attn(x, memory, memory, mask);
        a + b + c
    }
}

fn main() {}
