// `Gpt`, converted by blaze-onnx from `roundtrip_gpt.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Gpt {
    tok: Embedding<64, 64>,
    pos: Embedding<64, 64>,
    blocks_0_ln1: LayerNorm<64>,
    blocks_0_attn_slice_1: Linear<64, 64>,
    blocks_0_attn_slice_3: Linear<64, 64>,
    blocks_0_attn_slice_5: Linear<64, 64>,
    blocks_0_attn_out_proj: Linear<64, 64>,
    blocks_0_ln2: LayerNorm<64>,
    blocks_0_fc1: Linear<64, 256>,
    blocks_0_fc2: Linear<256, 64>,
    blocks_1_ln1: LayerNorm<64>,
    blocks_1_attn_slice_1: Linear<64, 64>,
    blocks_1_attn_slice_3: Linear<64, 64>,
    blocks_1_attn_slice_5: Linear<64, 64>,
    blocks_1_attn_out_proj: Linear<64, 64>,
    blocks_1_ln2: LayerNorm<64>,
    blocks_1_fc1: Linear<64, 256>,
    blocks_1_fc2: Linear<256, 64>,
    blocks_2_ln1: LayerNorm<64>,
    blocks_2_attn_slice_1: Linear<64, 64>,
    blocks_2_attn_slice_3: Linear<64, 64>,
    blocks_2_attn_slice_5: Linear<64, 64>,
    blocks_2_attn_out_proj: Linear<64, 64>,
    blocks_2_ln2: LayerNorm<64>,
    blocks_2_fc1: Linear<64, 256>,
    blocks_2_fc2: Linear<256, 64>,
    blocks_3_ln1: LayerNorm<64>,
    blocks_3_attn_slice_1: Linear<64, 64>,
    blocks_3_attn_slice_3: Linear<64, 64>,
    blocks_3_attn_slice_5: Linear<64, 64>,
    blocks_3_attn_out_proj: Linear<64, 64>,
    blocks_3_ln2: LayerNorm<64>,
    blocks_3_fc1: Linear<64, 256>,
    blocks_3_fc2: Linear<256, 64>,
    ln: LayerNorm<64>,
    head: Linear<64, 64>,
}

#[model(input = [T])]
impl Gpt {
    fn forward(&self, input: Tensor) -> Tensor {
        let tok_gather = self.tok(input); // [T, 64]
        let pos_gather = self.pos(positions(T)); // [T, 64]
        let add = tok_gather + pos_gather; // [T, 64]
        let blocks_0_ln1_layernormalization = self.blocks_0_ln1(add); // [T, 64]
        let blocks_0_attn_add = self.blocks_0_attn_slice_1(blocks_0_ln1_layernormalization); // [T, 64]
        let blocks_0_attn_reshape = blocks_0_attn_add.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_0_attn_transpose_1 = blocks_0_attn_reshape.transpose(-3, -2); // [4, T, 16]
        let blocks_0_attn_add_1 = self.blocks_0_attn_slice_3(blocks_0_ln1_layernormalization); // [T, 64]
        let blocks_0_attn_reshape_1 = blocks_0_attn_add_1.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_0_attn_transpose_3 = blocks_0_attn_reshape_1.transpose(-3, -2); // [4, T, 16]
        let blocks_0_attn_add_2 = self.blocks_0_attn_slice_5(blocks_0_ln1_layernormalization); // [T, 64]
        let blocks_0_attn_reshape_2 = blocks_0_attn_add_2.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_0_attn_transpose_5 = blocks_0_attn_reshape_2.transpose(-3, -2); // [4, T, 16]
        let blocks_0_attn_transpose_6 = blocks_0_attn_transpose_3.transpose(-2, -1); // [4, 16, T]
        let blocks_0_attn_matmul_3 = blocks_0_attn_transpose_1.matmul(blocks_0_attn_transpose_6); // [4, T, T]
        let blocks_0_attn_mul = blocks_0_attn_matmul_3 * 0.25; // [4, T, T]
        let blocks_0_attn_where = blocks_0_attn_mul.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let blocks_0_attn_softmax = blocks_0_attn_where.softmax(-1); // [4, T, T]
        let blocks_0_attn_matmul_4 = blocks_0_attn_softmax.matmul(blocks_0_attn_transpose_5); // [4, T, 16]
        let blocks_0_attn_transpose_7 = blocks_0_attn_matmul_4.transpose(-3, -2); // [T, 4, 16]
        let blocks_0_attn_reshape_3 = blocks_0_attn_transpose_7.reshape([T, 64]); // [T, 64]
        let blocks_0_attn_add_3 = self.blocks_0_attn_out_proj(blocks_0_attn_reshape_3); // [T, 64]
        let blocks_0_add = add + blocks_0_attn_add_3; // [T, 64]
        let blocks_0_ln2_layernormalization = self.blocks_0_ln2(blocks_0_add); // [T, 64]
        let blocks_0_fc1_add = self.blocks_0_fc1(blocks_0_ln2_layernormalization); // [T, 256]
        let blocks_0_mul = 0.5 * blocks_0_fc1_add; // [T, 256]
        let blocks_0_mul_2 = gelu(blocks_0_fc1_add); // [T, 256]
        let blocks_0_fc2_add = self.blocks_0_fc2(blocks_0_mul_2); // [T, 64]
        let blocks_0_add_2 = blocks_0_add + blocks_0_fc2_add; // [T, 64]
        let blocks_1_ln1_layernormalization = self.blocks_1_ln1(blocks_0_add_2); // [T, 64]
        let blocks_1_attn_add = self.blocks_1_attn_slice_1(blocks_1_ln1_layernormalization); // [T, 64]
        let blocks_1_attn_reshape = blocks_1_attn_add.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_1_attn_transpose_1 = blocks_1_attn_reshape.transpose(-3, -2); // [4, T, 16]
        let blocks_1_attn_add_1 = self.blocks_1_attn_slice_3(blocks_1_ln1_layernormalization); // [T, 64]
        let blocks_1_attn_reshape_1 = blocks_1_attn_add_1.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_1_attn_transpose_3 = blocks_1_attn_reshape_1.transpose(-3, -2); // [4, T, 16]
        let blocks_1_attn_add_2 = self.blocks_1_attn_slice_5(blocks_1_ln1_layernormalization); // [T, 64]
        let blocks_1_attn_reshape_2 = blocks_1_attn_add_2.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_1_attn_transpose_5 = blocks_1_attn_reshape_2.transpose(-3, -2); // [4, T, 16]
        let blocks_1_attn_transpose_6 = blocks_1_attn_transpose_3.transpose(-2, -1); // [4, 16, T]
        let blocks_1_attn_matmul_3 = blocks_1_attn_transpose_1.matmul(blocks_1_attn_transpose_6); // [4, T, T]
        let blocks_1_attn_mul = blocks_1_attn_matmul_3 * 0.25; // [4, T, T]
        let blocks_1_attn_where = blocks_1_attn_mul.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let blocks_1_attn_softmax = blocks_1_attn_where.softmax(-1); // [4, T, T]
        let blocks_1_attn_matmul_4 = blocks_1_attn_softmax.matmul(blocks_1_attn_transpose_5); // [4, T, 16]
        let blocks_1_attn_transpose_7 = blocks_1_attn_matmul_4.transpose(-3, -2); // [T, 4, 16]
        let blocks_1_attn_reshape_3 = blocks_1_attn_transpose_7.reshape([T, 64]); // [T, 64]
        let blocks_1_attn_add_3 = self.blocks_1_attn_out_proj(blocks_1_attn_reshape_3); // [T, 64]
        let blocks_1_add = blocks_0_add_2 + blocks_1_attn_add_3; // [T, 64]
        let blocks_1_ln2_layernormalization = self.blocks_1_ln2(blocks_1_add); // [T, 64]
        let blocks_1_fc1_add = self.blocks_1_fc1(blocks_1_ln2_layernormalization); // [T, 256]
        let blocks_1_mul = 0.5 * blocks_1_fc1_add; // [T, 256]
        let blocks_1_mul_2 = gelu(blocks_1_fc1_add); // [T, 256]
        let blocks_1_fc2_add = self.blocks_1_fc2(blocks_1_mul_2); // [T, 64]
        let blocks_1_add_2 = blocks_1_add + blocks_1_fc2_add; // [T, 64]
        let blocks_2_ln1_layernormalization = self.blocks_2_ln1(blocks_1_add_2); // [T, 64]
        let blocks_2_attn_add = self.blocks_2_attn_slice_1(blocks_2_ln1_layernormalization); // [T, 64]
        let blocks_2_attn_reshape = blocks_2_attn_add.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_2_attn_transpose_1 = blocks_2_attn_reshape.transpose(-3, -2); // [4, T, 16]
        let blocks_2_attn_add_1 = self.blocks_2_attn_slice_3(blocks_2_ln1_layernormalization); // [T, 64]
        let blocks_2_attn_reshape_1 = blocks_2_attn_add_1.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_2_attn_transpose_3 = blocks_2_attn_reshape_1.transpose(-3, -2); // [4, T, 16]
        let blocks_2_attn_add_2 = self.blocks_2_attn_slice_5(blocks_2_ln1_layernormalization); // [T, 64]
        let blocks_2_attn_reshape_2 = blocks_2_attn_add_2.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_2_attn_transpose_5 = blocks_2_attn_reshape_2.transpose(-3, -2); // [4, T, 16]
        let blocks_2_attn_transpose_6 = blocks_2_attn_transpose_3.transpose(-2, -1); // [4, 16, T]
        let blocks_2_attn_matmul_3 = blocks_2_attn_transpose_1.matmul(blocks_2_attn_transpose_6); // [4, T, T]
        let blocks_2_attn_mul = blocks_2_attn_matmul_3 * 0.25; // [4, T, T]
        let blocks_2_attn_where = blocks_2_attn_mul.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let blocks_2_attn_softmax = blocks_2_attn_where.softmax(-1); // [4, T, T]
        let blocks_2_attn_matmul_4 = blocks_2_attn_softmax.matmul(blocks_2_attn_transpose_5); // [4, T, 16]
        let blocks_2_attn_transpose_7 = blocks_2_attn_matmul_4.transpose(-3, -2); // [T, 4, 16]
        let blocks_2_attn_reshape_3 = blocks_2_attn_transpose_7.reshape([T, 64]); // [T, 64]
        let blocks_2_attn_add_3 = self.blocks_2_attn_out_proj(blocks_2_attn_reshape_3); // [T, 64]
        let blocks_2_add = blocks_1_add_2 + blocks_2_attn_add_3; // [T, 64]
        let blocks_2_ln2_layernormalization = self.blocks_2_ln2(blocks_2_add); // [T, 64]
        let blocks_2_fc1_add = self.blocks_2_fc1(blocks_2_ln2_layernormalization); // [T, 256]
        let blocks_2_mul = 0.5 * blocks_2_fc1_add; // [T, 256]
        let blocks_2_mul_2 = gelu(blocks_2_fc1_add); // [T, 256]
        let blocks_2_fc2_add = self.blocks_2_fc2(blocks_2_mul_2); // [T, 64]
        let blocks_2_add_2 = blocks_2_add + blocks_2_fc2_add; // [T, 64]
        let blocks_3_ln1_layernormalization = self.blocks_3_ln1(blocks_2_add_2); // [T, 64]
        let blocks_3_attn_add = self.blocks_3_attn_slice_1(blocks_3_ln1_layernormalization); // [T, 64]
        let blocks_3_attn_reshape = blocks_3_attn_add.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_3_attn_transpose_1 = blocks_3_attn_reshape.transpose(-3, -2); // [4, T, 16]
        let blocks_3_attn_add_1 = self.blocks_3_attn_slice_3(blocks_3_ln1_layernormalization); // [T, 64]
        let blocks_3_attn_reshape_1 = blocks_3_attn_add_1.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_3_attn_transpose_3 = blocks_3_attn_reshape_1.transpose(-3, -2); // [4, T, 16]
        let blocks_3_attn_add_2 = self.blocks_3_attn_slice_5(blocks_3_ln1_layernormalization); // [T, 64]
        let blocks_3_attn_reshape_2 = blocks_3_attn_add_2.reshape([T, 4, 16]); // [T, 4, 16]
        let blocks_3_attn_transpose_5 = blocks_3_attn_reshape_2.transpose(-3, -2); // [4, T, 16]
        let blocks_3_attn_transpose_6 = blocks_3_attn_transpose_3.transpose(-2, -1); // [4, 16, T]
        let blocks_3_attn_matmul_3 = blocks_3_attn_transpose_1.matmul(blocks_3_attn_transpose_6); // [4, T, T]
        let blocks_3_attn_mul = blocks_3_attn_matmul_3 * 0.25; // [4, T, T]
        let blocks_3_attn_where = blocks_3_attn_mul.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let blocks_3_attn_softmax = blocks_3_attn_where.softmax(-1); // [4, T, T]
        let blocks_3_attn_matmul_4 = blocks_3_attn_softmax.matmul(blocks_3_attn_transpose_5); // [4, T, 16]
        let blocks_3_attn_transpose_7 = blocks_3_attn_matmul_4.transpose(-3, -2); // [T, 4, 16]
        let blocks_3_attn_reshape_3 = blocks_3_attn_transpose_7.reshape([T, 64]); // [T, 64]
        let blocks_3_attn_add_3 = self.blocks_3_attn_out_proj(blocks_3_attn_reshape_3); // [T, 64]
        let blocks_3_add = blocks_2_add_2 + blocks_3_attn_add_3; // [T, 64]
        let blocks_3_ln2_layernormalization = self.blocks_3_ln2(blocks_3_add); // [T, 64]
        let blocks_3_fc1_add = self.blocks_3_fc1(blocks_3_ln2_layernormalization); // [T, 256]
        let blocks_3_mul = 0.5 * blocks_3_fc1_add; // [T, 256]
        let blocks_3_mul_2 = gelu(blocks_3_fc1_add); // [T, 256]
        let blocks_3_fc2_add = self.blocks_3_fc2(blocks_3_mul_2); // [T, 64]
        let blocks_3_add_2 = blocks_3_add + blocks_3_fc2_add; // [T, 64]
        let ln_layernormalization = self.ln(blocks_3_add_2); // [T, 64]
        self.head(ln_layernormalization) // [T, 64]
    }
}
