//! GPT-2 written as `#[model]` forward bodies, reading the checkpoints
//! `transformers` saves: `#[load(..)]` next to each field names its tensor
//! in `model.safetensors` (`transformer.h.{i}.attn.c_attn.weight`, stored
//! `[in, out]`, so read transposed) and the head reads the token
//! embeddings it is tied to. `gpt2!` writes one size (the sizes are
//! literals, as `#[model]` checks shapes from them); [`Gpt2Tiny`] is the
//! test fixture's, `examples/gpt2.rs` adds GPT-2 small.
#![allow(dead_code)]

use blaze::prelude::*;

/// One size: the model, its block, the vocabulary, the width, the heads,
/// the MLP's width, the context and the blocks.
macro_rules! gpt2 {
    ($(#[$doc:meta])* $gpt:ident, $block:ident, $vocab:tt, $width:tt, $heads:tt, $hidden:tt, $context:tt, $layers:tt) => {
        /// GPT-2's block: pre-LayerNorm causal attention and a tanh-GELU MLP.
        #[model]
        pub struct $block {
            #[load("ln_1")]
            ln_1: LayerNorm<$width>,
            #[layer(causal = true)]
            #[load(
                in_proj_weight = transposed("attn.c_attn.weight"),
                in_proj_bias = "attn.c_attn.bias",
                out_proj.weight = transposed("attn.c_proj.weight"),
                out_proj.bias = "attn.c_proj.bias"
            )]
            attn: MultiHeadAttention<$width, $heads>,
            #[load("ln_2")]
            ln_2: LayerNorm<$width>,
            #[load(weight = transposed("mlp.c_fc.weight"), bias = "mlp.c_fc.bias")]
            fc: Linear<$width, $hidden>,
            #[load(weight = transposed("mlp.c_proj.weight"), bias = "mlp.c_proj.bias")]
            proj: Linear<$hidden, $width>,
        }

        #[model(input = [T, $width])]
        impl $block {
            fn forward(&self, x: Tensor) -> Tensor {
                let x = x + self.attn(self.ln_1(x));
                x + self.proj(gelu_tanh(self.fc(self.ln_2(x))))
            }
        }

        $(#[$doc])*
        #[model]
        pub struct $gpt {
            #[load("transformer.wte")]
            wte: Embedding<$vocab, $width>,
            #[load("transformer.wpe")]
            wpe: Embedding<$context, $width>,
            #[load("transformer.h.{i}")]
            h: [$block; $layers],
            #[load("transformer.ln_f")]
            ln_f: LayerNorm<$width>,
            /// Tied to the token embeddings, as `transformers` ties them.
            #[layer(bias = false)]
            #[load(weight = "transformer.wte.weight")]
            pub lm_head: Linear<$width, $vocab>,
        }

        #[model(input = [T])]
        impl $gpt {
            fn forward(&self, ids: Tensor) -> Tensor {
                let mut x = self.wte(ids) + self.wpe(positions(T));
                for block in &self.h {
                    x = block(x);
                }
                self.lm_head(self.ln_f(x))
            }
        }

        impl<B: ::blaze::Backend> $gpt<B> {
            /// The positions its table holds.
            pub const CONTEXT: usize = $context;
        }
    };
}

#[allow(unused_imports)]
pub(crate) use gpt2;

gpt2!(
    /// The test fixture's size (`tests/fixtures/hf_gpt2`): 300 tokens,
    /// width 32, 4 heads, MLP 128, context 32, 2 blocks.
    Gpt2Tiny, Gpt2TinyBlock, 300, 32, 4, 128, 32, 2
);
