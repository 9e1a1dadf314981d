//! A pre-LayerNorm transformer block (causal multi-head self-attention and
//! a GELU MLP, with residuals) written as `#[model]` forward bodies, shared
//! by the gradient checks, the PyTorch fixture test and the tape oracle.

use blaze::prelude::*;

#[model]
pub struct Attention {
    qkv: Linear<16, 48>,
    proj: Linear<16, 16>,
}

#[model(input = [T, 16])]
impl Attention {
    fn forward(&self, x: Tensor) -> Tensor {
        let [q, k, v] = self.qkv(x).split(16, -1);
        let q = q.reshape([T, 4, 4]).transpose(0, 1);
        let k = k.reshape([T, 4, 4]).transpose(0, 1);
        let v = v.reshape([T, 4, 4]).transpose(0, 1);
        let att = q.matmul(k.transpose(-2, -1)) * (1.0 / (4.0f64).sqrt());
        let att = att.masked_fill(causal_mask(T), f64::NEG_INFINITY).softmax(-1);
        let y = att.matmul(v).transpose(0, 1).reshape([T, 16]);
        self.proj(y)
    }
}

#[model]
pub struct TransformerBlock {
    ln1: LayerNorm<16>,
    attn: Attention,
    ln2: LayerNorm<16>,
    fc1: Linear<16, 64>,
    fc2: Linear<64, 16>,
}

#[model(input = [T, 16])]
impl TransformerBlock {
    fn forward(&self, x: Tensor) -> Tensor {
        let x = x + self.attn(self.ln1(x));
        x + self.fc2(gelu(self.fc1(self.ln2(x))))
    }
}
