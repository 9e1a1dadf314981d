// `Gpt`, converted by blaze-onnx from `gpt.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Gpt {
    tok: Embedding<40, 32>,
    pos: Embedding<16, 32>,
    blocks_0_ln1: LayerNorm<32>,
    blocks_0_qkv: Linear<32, 96>,
    blocks_0_proj: Linear<32, 32>,
    blocks_0_ln2: LayerNorm<32>,
    blocks_0_fc1: Linear<32, 128>,
    blocks_0_fc2: Linear<128, 32>,
    blocks_1_ln1: LayerNorm<32>,
    blocks_1_qkv: Linear<32, 96>,
    blocks_1_proj: Linear<32, 32>,
    blocks_1_ln2: LayerNorm<32>,
    blocks_1_fc1: Linear<32, 128>,
    blocks_1_fc2: Linear<128, 32>,
    ln: LayerNorm<32>,
    head: Linear<32, 40>,
}

#[model(input = [T])]
impl Gpt {
    fn forward(&self, input: Tensor) -> Tensor {
        let embedding = self.tok(input); // [T, 32]
        let embedding_1 = self.pos(positions(T)); // [T, 32]
        let add = embedding + embedding_1; // [T, 32]
        let layer_norm = self.blocks_0_ln1(add); // [T, 32]
        let linear = self.blocks_0_qkv(layer_norm); // [T, 96]
        let [split_split_0, split_split_1, split_split_2] = linear.split(32, -1); // [T, 32], [T, 32], [T, 32]
        let view = split_split_0.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose = view.transpose(-3, -2); // [4, T, 8]
        let view_1 = split_split_1.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose_1 = view_1.transpose(-3, -2); // [4, T, 8]
        let view_2 = split_split_2.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose_2 = view_2.transpose(-3, -2); // [4, T, 8]
        let val_73 = transpose * 0.59460354; // [4, T, 8]
        let val_75 = transpose_1 * 0.59460354; // [4, T, 8]
        let val_75_data = val_75.transpose(-2, -1); // [4, 8, T]
        let val_76 = val_73.matmul(val_75_data); // [4, T, T]
        let val_77 = val_76.masked_fill(causal_mask(T), -3.4028235e38); // [4, T, T]
        let val_78 = val_77.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention = val_78.matmul(transpose_2); // [4, T, 8]
        let transpose_3 = scaled_dot_product_attention.transpose(-3, -2); // [T, 4, 8]
        let view_3 = transpose_3.reshape([T, 32]); // [T, 32]
        let linear_1 = self.blocks_0_proj(view_3); // [T, 32]
        let add_1 = add + linear_1; // [T, 32]
        let layer_norm_1 = self.blocks_0_ln2(add_1); // [T, 32]
        let linear_2 = self.blocks_0_fc1(layer_norm_1); // [T, 128]
        let gelu_out = gelu(linear_2); // [T, 128]
        let linear_3 = self.blocks_0_fc2(gelu_out); // [T, 32]
        let add_2 = add_1 + linear_3; // [T, 32]
        let layer_norm_2 = self.blocks_1_ln1(add_2); // [T, 32]
        let linear_4 = self.blocks_1_qkv(layer_norm_2); // [T, 96]
        let [split_1_split_0, split_1_split_1, split_1_split_2] = linear_4.split(32, -1); // [T, 32], [T, 32], [T, 32]
        let view_4 = split_1_split_0.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose_4 = view_4.transpose(-3, -2); // [4, T, 8]
        let view_5 = split_1_split_1.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose_5 = view_5.transpose(-3, -2); // [4, T, 8]
        let view_6 = split_1_split_2.reshape([T, 4, 8]); // [T, 4, 8]
        let transpose_6 = view_6.transpose(-3, -2); // [4, T, 8]
        let val_160 = transpose_4 * 0.59460354; // [4, T, 8]
        let val_162 = transpose_5 * 0.59460354; // [4, T, 8]
        let val_162_data = val_162.transpose(-2, -1); // [4, 8, T]
        let val_163 = val_160.matmul(val_162_data); // [4, T, T]
        let val_164 = val_163.masked_fill(causal_mask(T), -3.4028235e38); // [4, T, T]
        let val_165 = val_164.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention_1 = val_165.matmul(transpose_6); // [4, T, 8]
        let transpose_7 = scaled_dot_product_attention_1.transpose(-3, -2); // [T, 4, 8]
        let view_7 = transpose_7.reshape([T, 32]); // [T, 32]
        let linear_5 = self.blocks_1_proj(view_7); // [T, 32]
        let add_3 = add_2 + linear_5; // [T, 32]
        let layer_norm_3 = self.blocks_1_ln2(add_3); // [T, 32]
        let linear_6 = self.blocks_1_fc1(layer_norm_3); // [T, 128]
        let gelu_1 = gelu(linear_6); // [T, 128]
        let linear_7 = self.blocks_1_fc2(gelu_1); // [T, 32]
        let add_4 = add_3 + linear_7; // [T, 32]
        let layer_norm_4 = self.ln(add_4); // [T, 32]
        self.head(layer_norm_4) // [T, 40]
    }
}
