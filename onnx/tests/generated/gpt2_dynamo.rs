// `Gpt2Dynamo`, converted by blaze-onnx from `gpt2_dynamo.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Gpt2Dynamo {
    gpt2_wte: Embedding<50, 16>,
    gpt2_wpe: Embedding<16, 16>,
    gpt2_h_0_ln_1: LayerNorm<16>,
    gpt2_h_0_attn_c_attn: Linear<16, 48>,
    gpt2_h_0_attn_c_proj: Linear<16, 16>,
    gpt2_h_0_ln_2: LayerNorm<16>,
    gpt2_h_0_mlp_c_fc: Linear<16, 64>,
    gpt2_h_0_mlp_c_proj: Linear<64, 16>,
    gpt2_h_1_ln_1: LayerNorm<16>,
    gpt2_h_1_attn_c_attn: Linear<16, 48>,
    gpt2_h_1_attn_c_proj: Linear<16, 16>,
    gpt2_h_1_ln_2: LayerNorm<16>,
    gpt2_h_1_mlp_c_fc: Linear<16, 64>,
    gpt2_h_1_mlp_c_proj: Linear<64, 16>,
    gpt2_ln_f: LayerNorm<16>,
    head: Linear<16, 5>,
}

#[model(input = [T])]
impl Gpt2Dynamo {
    fn forward(&self, input: Tensor) -> Tensor {
        let view = input.reshape([T]); // [T]
        let embedding = self.gpt2_wte(view); // [T, 16]
        let embedding_1 = self.gpt2_wpe(positions(T)); // [T, 16]
        let add_1 = embedding + embedding_1; // [T, 16]
        let layer_norm = self.gpt2_h_0_ln_1(add_1); // [T, 16]
        let addmm = self.gpt2_h_0_attn_c_attn(layer_norm); // [T, 48]
        let [split_split_0, split_split_1, split_split_2] = addmm.split(16, -1); // [T, 16], [T, 16], [T, 16]
        let view_3 = split_split_1.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose = view_3.transpose(-3, -2); // [4, T, 4]
        let view_4 = split_split_2.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_1 = view_4.transpose(-3, -2); // [4, T, 4]
        let view_5 = split_split_0.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_2 = view_5.transpose(-3, -2); // [4, T, 4]
        let val_74 = transpose_2 * 0.70710677; // [4, T, 4]
        let val_76 = transpose * 0.70710677; // [4, T, 4]
        let val_76_data = val_76.transpose(-2, -1); // [4, 4, T]
        let val_80 = val_74.matmul(val_76_data); // [4, T, T]
        let val_81 = val_80.masked_fill(causal_mask(T), -3.4028235e38); // [4, T, T]
        let val_82 = val_81.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention = val_82.matmul(transpose_1); // [4, T, 4]
        let transpose_3 = scaled_dot_product_attention.transpose(-3, -2); // [T, 4, 4]
        let view_8_data = transpose_3.reshape([T, 16]); // [T, 16]
        let addmm_1 = self.gpt2_h_0_attn_c_proj(view_8_data); // [T, 16]
        let add_4 = addmm_1 + add_1; // [T, 16]
        let layer_norm_1 = self.gpt2_h_0_ln_2(add_4); // [T, 16]
        let addmm_2 = self.gpt2_h_0_mlp_c_fc(layer_norm_1); // [T, 64]
        let mul_19 = addmm_2 * 0.5; // [T, 64]
        let pow_1 = addmm_2.powf(3.0); // [T, 64]
        let mul_20 = pow_1 * 0.044715; // [T, 64]
        let add_5 = addmm_2 + mul_20; // [T, 64]
        let mul_21 = add_5 * 0.7978846; // [T, 64]
        let tanh_out = tanh(mul_21); // [T, 64]
        let add_6 = tanh_out + 1.0; // [T, 64]
        let mul_22 = mul_19 * add_6; // [T, 64]
        let addmm_3 = self.gpt2_h_0_mlp_c_proj(mul_22); // [T, 16]
        let add_7 = add_4 + addmm_3; // [T, 16]
        let layer_norm_2 = self.gpt2_h_1_ln_1(add_7); // [T, 16]
        let addmm_4 = self.gpt2_h_1_attn_c_attn(layer_norm_2); // [T, 48]
        let [split_1_split_0, split_1_split_1, split_1_split_2] = addmm_4.split(16, -1); // [T, 16], [T, 16], [T, 16]
        let view_16 = split_1_split_1.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_4 = view_16.transpose(-3, -2); // [4, T, 4]
        let view_17 = split_1_split_2.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_5 = view_17.transpose(-3, -2); // [4, T, 4]
        let view_18 = split_1_split_0.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_6 = view_18.transpose(-3, -2); // [4, T, 4]
        let val_171 = transpose_6 * 0.70710677; // [4, T, 4]
        let val_173 = transpose_4 * 0.70710677; // [4, T, 4]
        let val_173_data = val_173.transpose(-2, -1); // [4, 4, T]
        let val_177 = val_171.matmul(val_173_data); // [4, T, T]
        let val_178 = val_177.masked_fill(causal_mask(T), -3.4028235e38); // [4, T, T]
        let val_179 = val_178.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention_1 = val_179.matmul(transpose_5); // [4, T, 4]
        let transpose_7 = scaled_dot_product_attention_1.transpose(-3, -2); // [T, 4, 4]
        let view_21_data = transpose_7.reshape([T, 16]); // [T, 16]
        let addmm_5 = self.gpt2_h_1_attn_c_proj(view_21_data); // [T, 16]
        let add_8 = addmm_5 + add_7; // [T, 16]
        let layer_norm_3 = self.gpt2_h_1_ln_2(add_8); // [T, 16]
        let addmm_6 = self.gpt2_h_1_mlp_c_fc(layer_norm_3); // [T, 64]
        let mul_42 = addmm_6 * 0.5; // [T, 64]
        let pow_2 = addmm_6.powf(3.0); // [T, 64]
        let mul_43 = pow_2 * 0.044715; // [T, 64]
        let add_9 = addmm_6 + mul_43; // [T, 64]
        let mul_44 = add_9 * 0.7978846; // [T, 64]
        let tanh_1 = tanh(mul_44); // [T, 64]
        let add_10 = tanh_1 + 1.0; // [T, 64]
        let mul_45 = mul_42 * add_10; // [T, 64]
        let addmm_7 = self.gpt2_h_1_mlp_c_proj(mul_45); // [T, 16]
        let add_11 = add_8 + addmm_7; // [T, 16]
        let layer_norm_4 = self.gpt2_ln_f(add_11); // [T, 16]
        let view_27 = layer_norm_4.reshape([T, 16]); // [T, 16]
        self.head(view_27) // [T, 5]
    }
}
