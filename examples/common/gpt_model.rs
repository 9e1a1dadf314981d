//! The decoder-only transformer of `examples/gpt.rs`, shared with the
//! wgpu bench: token and position embeddings, four pre-LayerNorm blocks of
//! causal multi-head self-attention and a GELU MLP, a final LayerNorm and
//! a linear head, written as `#[model]` forward bodies.

use blaze::prelude::*;

/// Characters the model can tell apart (the text has 63).
pub const VOCAB: usize = 64;
/// Context length the position table covers.
pub const CONTEXT: usize = 64;

/// A pre-LayerNorm transformer block.
#[model]
pub struct TransformerBlock {
    ln1: LayerNorm<64>,
    /// 4 heads of 16 dims, each position attending to itself and before.
    #[layer(causal = true)]
    attn: MultiHeadAttention<64, 4>,
    ln2: LayerNorm<64>,
    fc1: Linear<64, 256>,
    fc2: Linear<256, 64>,
}

#[model(input = [T, 64])]
impl TransformerBlock {
    fn forward(&self, x: Tensor) -> Tensor {
        let x = x + self.attn(self.ln1(x));
        x + self.fc2(gelu(self.fc1(self.ln2(x))))
    }
}

/// The whole model: ids `[T]` in, next-character logits `[T, VOCAB]` out.
#[model]
pub struct Gpt {
    tok: Embedding<64, 64>,
    pos: Embedding<64, 64>,
    blocks: [TransformerBlock; 4],
    ln: LayerNorm<64>,
    head: Linear<64, 64>,
}

#[model(input = [T])]
impl Gpt {
    fn forward(&self, ids: Tensor) -> Tensor {
        let mut x = self.tok(ids) + self.pos(positions(T));
        for block in &self.blocks {
            x = block(x);
        }
        self.head(self.ln(x))
    }
}
