//! The decoder-only transformers of `examples/gpt.rs`, shared with the
//! GPU benches: token and position embeddings, four pre-LayerNorm blocks
//! of causal multi-head self-attention and a GELU MLP, a final LayerNorm
//! and a linear head, written as `#[model]` forward bodies. Two sizes are
//! compiled in: [`Gpt`] (`small`: width 64, 4 heads, context 64) and
//! [`GptBase`] (`base`: width 256, 8 heads, context 128).
#![allow(dead_code)]

use blaze::prelude::*;

/// Characters the models can tell apart (the text has 63).
pub const VOCAB: usize = 64;
/// Context length of [`Gpt`]'s position table.
pub const CONTEXT: usize = 64;

/// One size of the model: its struct, its blocks' struct, the width, the
/// heads, the MLP's hidden width and the context (each a literal, as
/// `#[model]` checks shapes from literal sizes).
macro_rules! gpt {
    ($(#[$doc:meta])* $gpt:ident, $block:ident, $width:tt, $heads:tt, $hidden:tt, $context:tt) => {
        /// A pre-LayerNorm transformer block.
        #[model]
        pub struct $block {
            ln1: LayerNorm<$width>,
            /// Each position attending to itself and before.
            #[layer(causal = true)]
            attn: MultiHeadAttention<$width, $heads>,
            ln2: LayerNorm<$width>,
            fc1: Linear<$width, $hidden>,
            fc2: Linear<$hidden, $width>,
        }

        #[model(input = [T, $width])]
        impl $block {
            fn forward(&self, x: Tensor) -> Tensor {
                let x = x + self.attn(self.ln1(x));
                x + self.fc2(gelu(self.fc1(self.ln2(x))))
            }
        }

        $(#[$doc])*
        #[model]
        pub struct $gpt {
            tok: Embedding<64, $width>,
            pos: Embedding<$context, $width>,
            blocks: [$block; 4],
            ln: LayerNorm<$width>,
            head: Linear<$width, 64>,
        }

        #[model(input = [T])]
        impl $gpt {
            fn forward(&self, ids: Tensor) -> Tensor {
                let mut x = self.tok(ids) + self.pos(positions(T));
                for block in &self.blocks {
                    x = block(x);
                }
                self.head(self.ln(x))
            }
        }

        impl Size for $gpt<Cpu> {
            const CONTEXT: usize = $context;
        }
    };
}

/// Other sizes for the benches: `gpt_model::gpt!(Name, Block, width,
/// heads, hidden, context)`.
#[allow(unused_imports)]
pub(crate) use gpt;

/// What the example reads of a size.
pub trait Size {
    /// The context length its position table covers.
    const CONTEXT: usize;
}

gpt!(
    /// `small`: ids `[T]` in, next-character logits `[T, VOCAB]` out;
    /// width 64, 4 heads of 16, MLP width 256, context 64.
    Gpt, TransformerBlock, 64, 4, 256, 64
);

gpt!(
    /// `base`: as [`Gpt`] with width 256, 8 heads of 32, MLP width 1024,
    /// context 128.
    GptBase, BaseBlock, 256, 8, 1024, 128
);
