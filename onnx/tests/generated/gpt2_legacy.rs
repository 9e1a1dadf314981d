// `Gpt2Legacy`, converted by blaze-onnx from `gpt2_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Gpt2Legacy {
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
impl Gpt2Legacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let gpt2_reshape_output_0 = input.reshape([T]); // [T]
        let gpt2_wte_gather_output_0 = self.gpt2_wte(gpt2_reshape_output_0); // [T, 16]
        let gpt2_wpe_gather_output_0 = self.gpt2_wpe(positions(T)); // [T, 16]
        let gpt2_add_output_0 = gpt2_wte_gather_output_0 + gpt2_wpe_gather_output_0; // [T, 16]
        let gpt2_h_0_ln_1_layernormalization_output_0 = self.gpt2_h_0_ln_1(gpt2_add_output_0); // [T, 16]
        let gpt2_h_0_attn_c_attn_gemm_output_0 = self.gpt2_h_0_attn_c_attn(gpt2_h_0_ln_1_layernormalization_output_0); // [T, 48]
        let [gpt2_h_0_attn_split_output_0, gpt2_h_0_attn_split_output_1, gpt2_h_0_attn_split_output_2] = gpt2_h_0_attn_c_attn_gemm_output_0.split(16, -1); // [T, 16], [T, 16], [T, 16]
        let gpt2_h_0_attn_reshape_output_0 = gpt2_h_0_attn_split_output_1.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_0_attn_transpose_output_0 = gpt2_h_0_attn_reshape_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_0_attn_reshape_1_output_0 = gpt2_h_0_attn_split_output_2.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_0_attn_transpose_1_output_0 = gpt2_h_0_attn_reshape_1_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_0_attn_reshape_2_output_0 = gpt2_h_0_attn_split_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_0_attn_transpose_2_output_0 = gpt2_h_0_attn_reshape_2_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_0_attn_concat_3_output_0 = cat([gpt2_h_0_attn_transpose_output_0], -2); // [4, T, 4]
        let gpt2_h_0_attn_concat_4_output_0 = cat([gpt2_h_0_attn_transpose_1_output_0], -2); // [4, T, 4]
        let gpt2_h_0_attn_transpose_3_output_0 = gpt2_h_0_attn_concat_3_output_0.transpose(-2, -1); // [4, 4, T]
        let gpt2_h_0_attn_mul_output_0 = gpt2_h_0_attn_transpose_2_output_0 * 0.70710677; // [4, T, 4]
        let gpt2_h_0_attn_mul_1_output_0 = gpt2_h_0_attn_transpose_3_output_0 * 0.70710677; // [4, 4, T]
        let gpt2_h_0_attn_matmul_output_0 = gpt2_h_0_attn_mul_output_0.matmul(gpt2_h_0_attn_mul_1_output_0); // [4, T, T]
        let gpt2_h_0_attn_add_output_0 = gpt2_h_0_attn_matmul_output_0.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let gpt2_h_0_attn_softmax_output_0 = gpt2_h_0_attn_add_output_0.softmax(-1); // [4, T, T]
        let gpt2_h_0_attn_matmul_1_output_0 = gpt2_h_0_attn_softmax_output_0.matmul(gpt2_h_0_attn_concat_4_output_0); // [4, T, 4]
        let gpt2_h_0_attn_reshape_3_output_0 = gpt2_h_0_attn_matmul_1_output_0.reshape([4, T, 4]); // [4, T, 4]
        let gpt2_h_0_attn_transpose_4_output_0 = gpt2_h_0_attn_reshape_3_output_0.transpose(-3, -2); // [T, 4, 4]
        let gpt2_h_0_attn_reshape_4_output_0 = gpt2_h_0_attn_transpose_4_output_0.reshape([T, 16]); // [T, 16]
        let gpt2_h_0_attn_c_proj_gemm_output_0 = self.gpt2_h_0_attn_c_proj(gpt2_h_0_attn_reshape_4_output_0); // [T, 16]
        let gpt2_h_0_add_output_0 = gpt2_h_0_attn_c_proj_gemm_output_0 + gpt2_add_output_0; // [T, 16]
        let gpt2_h_0_ln_2_layernormalization_output_0 = self.gpt2_h_0_ln_2(gpt2_h_0_add_output_0); // [T, 16]
        let gpt2_h_0_mlp_c_fc_gemm_output_0 = self.gpt2_h_0_mlp_c_fc(gpt2_h_0_ln_2_layernormalization_output_0); // [T, 64]
        let gpt2_h_0_mlp_act_mul_output_0 = gpt2_h_0_mlp_c_fc_gemm_output_0 * 0.5; // [T, 64]
        let gpt2_h_0_mlp_act_pow_output_0 = gpt2_h_0_mlp_c_fc_gemm_output_0.powf(3.0); // [T, 64]
        let gpt2_h_0_mlp_act_mul_1_output_0 = gpt2_h_0_mlp_act_pow_output_0 * 0.044715; // [T, 64]
        let gpt2_h_0_mlp_act_add_output_0 = gpt2_h_0_mlp_c_fc_gemm_output_0 + gpt2_h_0_mlp_act_mul_1_output_0; // [T, 64]
        let gpt2_h_0_mlp_act_mul_2_output_0 = gpt2_h_0_mlp_act_add_output_0 * 0.7978846; // [T, 64]
        let gpt2_h_0_mlp_act_tanh_output_0 = tanh(gpt2_h_0_mlp_act_mul_2_output_0); // [T, 64]
        let gpt2_h_0_mlp_act_add_1_output_0 = gpt2_h_0_mlp_act_tanh_output_0 + 1.0; // [T, 64]
        let gpt2_h_0_mlp_act_mul_3_output_0 = gpt2_h_0_mlp_act_mul_output_0 * gpt2_h_0_mlp_act_add_1_output_0; // [T, 64]
        let gpt2_h_0_mlp_c_proj_gemm_output_0 = self.gpt2_h_0_mlp_c_proj(gpt2_h_0_mlp_act_mul_3_output_0); // [T, 16]
        let gpt2_h_0_add_1_output_0 = gpt2_h_0_add_output_0 + gpt2_h_0_mlp_c_proj_gemm_output_0; // [T, 16]
        let gpt2_h_1_ln_1_layernormalization_output_0 = self.gpt2_h_1_ln_1(gpt2_h_0_add_1_output_0); // [T, 16]
        let gpt2_h_1_attn_c_attn_gemm_output_0 = self.gpt2_h_1_attn_c_attn(gpt2_h_1_ln_1_layernormalization_output_0); // [T, 48]
        let [gpt2_h_1_attn_split_output_0, gpt2_h_1_attn_split_output_1, gpt2_h_1_attn_split_output_2] = gpt2_h_1_attn_c_attn_gemm_output_0.split(16, -1); // [T, 16], [T, 16], [T, 16]
        let gpt2_h_1_attn_reshape_output_0 = gpt2_h_1_attn_split_output_1.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_1_attn_transpose_output_0 = gpt2_h_1_attn_reshape_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_1_attn_reshape_1_output_0 = gpt2_h_1_attn_split_output_2.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_1_attn_transpose_1_output_0 = gpt2_h_1_attn_reshape_1_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_1_attn_reshape_2_output_0 = gpt2_h_1_attn_split_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let gpt2_h_1_attn_transpose_2_output_0 = gpt2_h_1_attn_reshape_2_output_0.transpose(-3, -2); // [4, T, 4]
        let gpt2_h_1_attn_concat_3_output_0 = cat([gpt2_h_1_attn_transpose_output_0], -2); // [4, T, 4]
        let gpt2_h_1_attn_concat_4_output_0 = cat([gpt2_h_1_attn_transpose_1_output_0], -2); // [4, T, 4]
        let gpt2_h_1_attn_transpose_3_output_0 = gpt2_h_1_attn_concat_3_output_0.transpose(-2, -1); // [4, 4, T]
        let gpt2_h_1_attn_mul_output_0 = gpt2_h_1_attn_transpose_2_output_0 * 0.70710677; // [4, T, 4]
        let gpt2_h_1_attn_mul_1_output_0 = gpt2_h_1_attn_transpose_3_output_0 * 0.70710677; // [4, 4, T]
        let gpt2_h_1_attn_matmul_output_0 = gpt2_h_1_attn_mul_output_0.matmul(gpt2_h_1_attn_mul_1_output_0); // [4, T, T]
        let gpt2_h_1_attn_add_output_0 = gpt2_h_1_attn_matmul_output_0.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let gpt2_h_1_attn_softmax_output_0 = gpt2_h_1_attn_add_output_0.softmax(-1); // [4, T, T]
        let gpt2_h_1_attn_matmul_1_output_0 = gpt2_h_1_attn_softmax_output_0.matmul(gpt2_h_1_attn_concat_4_output_0); // [4, T, 4]
        let gpt2_h_1_attn_reshape_3_output_0 = gpt2_h_1_attn_matmul_1_output_0.reshape([4, T, 4]); // [4, T, 4]
        let gpt2_h_1_attn_transpose_4_output_0 = gpt2_h_1_attn_reshape_3_output_0.transpose(-3, -2); // [T, 4, 4]
        let gpt2_h_1_attn_reshape_4_output_0 = gpt2_h_1_attn_transpose_4_output_0.reshape([T, 16]); // [T, 16]
        let gpt2_h_1_attn_c_proj_gemm_output_0 = self.gpt2_h_1_attn_c_proj(gpt2_h_1_attn_reshape_4_output_0); // [T, 16]
        let gpt2_h_1_add_output_0 = gpt2_h_1_attn_c_proj_gemm_output_0 + gpt2_h_0_add_1_output_0; // [T, 16]
        let gpt2_h_1_ln_2_layernormalization_output_0 = self.gpt2_h_1_ln_2(gpt2_h_1_add_output_0); // [T, 16]
        let gpt2_h_1_mlp_c_fc_gemm_output_0 = self.gpt2_h_1_mlp_c_fc(gpt2_h_1_ln_2_layernormalization_output_0); // [T, 64]
        let gpt2_h_1_mlp_act_mul_output_0 = gpt2_h_1_mlp_c_fc_gemm_output_0 * 0.5; // [T, 64]
        let gpt2_h_1_mlp_act_pow_output_0 = gpt2_h_1_mlp_c_fc_gemm_output_0.powf(3.0); // [T, 64]
        let gpt2_h_1_mlp_act_mul_1_output_0 = gpt2_h_1_mlp_act_pow_output_0 * 0.044715; // [T, 64]
        let gpt2_h_1_mlp_act_add_output_0 = gpt2_h_1_mlp_c_fc_gemm_output_0 + gpt2_h_1_mlp_act_mul_1_output_0; // [T, 64]
        let gpt2_h_1_mlp_act_mul_2_output_0 = gpt2_h_1_mlp_act_add_output_0 * 0.7978846; // [T, 64]
        let gpt2_h_1_mlp_act_tanh_output_0 = tanh(gpt2_h_1_mlp_act_mul_2_output_0); // [T, 64]
        let gpt2_h_1_mlp_act_add_1_output_0 = gpt2_h_1_mlp_act_tanh_output_0 + 1.0; // [T, 64]
        let gpt2_h_1_mlp_act_mul_3_output_0 = gpt2_h_1_mlp_act_mul_output_0 * gpt2_h_1_mlp_act_add_1_output_0; // [T, 64]
        let gpt2_h_1_mlp_c_proj_gemm_output_0 = self.gpt2_h_1_mlp_c_proj(gpt2_h_1_mlp_act_mul_3_output_0); // [T, 16]
        let gpt2_h_1_add_1_output_0 = gpt2_h_1_add_output_0 + gpt2_h_1_mlp_c_proj_gemm_output_0; // [T, 16]
        let gpt2_ln_f_layernormalization_output_0 = self.gpt2_ln_f(gpt2_h_1_add_1_output_0); // [T, 16]
        let gpt2_reshape_1_output_0 = gpt2_ln_f_layernormalization_output_0.reshape([T, 16]); // [T, 16]
        self.head(gpt2_reshape_1_output_0) // [T, 5]
    }
}
