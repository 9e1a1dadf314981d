// `LegacyEncoderLayer`, converted by blaze-onnx from `legacy_encoder_layer.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LegacyEncoderLayer {
    layer_self_attn_in_proj: Linear<16, 48>,
    layer_self_attn_out_proj: Linear<16, 16>,
    layer_norm1: LayerNorm<16>,
    layer_linear1: Linear<16, 32>,
    layer_linear2: Linear<32, 16>,
    layer_norm2: LayerNorm<16>,
    fc: Linear<16, 5>,
}

#[model(input = [9, 16])]
impl LegacyEncoderLayer {
    fn forward(&self, input: Tensor) -> Tensor {
        let layer_self_attn_add_output_0 = self.layer_self_attn_in_proj(input); // [9, 48]
        let layer_self_attn_reshape_2_output_0 = layer_self_attn_add_output_0.reshape([9, 3, 16]); // [9, 3, 16]
        let layer_self_attn_gather_3_output_0 = layer_self_attn_reshape_2_output_0.narrow(-2, 0, 1).reshape([9, 16]); // [9, 16]
        let layer_self_attn_gather_4_output_0 = layer_self_attn_reshape_2_output_0.narrow(-2, 1, 1).reshape([9, 16]); // [9, 16]
        let layer_self_attn_gather_5_output_0 = layer_self_attn_reshape_2_output_0.narrow(-2, 2, 1).reshape([9, 16]); // [9, 16]
        let layer_self_attn_reshape_3_output_0 = layer_self_attn_gather_3_output_0.reshape([9, 4, 4]); // [9, 4, 4]
        let layer_self_attn_reshape_4_output_0 = layer_self_attn_gather_4_output_0.reshape([9, 4, 4]); // [9, 4, 4]
        let layer_self_attn_reshape_5_output_0 = layer_self_attn_gather_5_output_0.reshape([9, 4, 4]); // [9, 4, 4]
        let layer_self_attn_mul_1_output_0 = layer_self_attn_reshape_3_output_0 * 0.70710677; // [9, 4, 4]
        let layer_self_attn_mul_2_output_0 = layer_self_attn_reshape_4_output_0 * 0.70710677; // [9, 4, 4]
        let layer_self_attn_mul_1_output_0_data = layer_self_attn_mul_1_output_0.transpose(-3, -2); // [4, 9, 4]
        let layer_self_attn_mul_2_output_0_data = layer_self_attn_mul_2_output_0.permute([1, 2, 0]); // [4, 4, 9]
        let layer_self_attn_matmul_1_output_0 = layer_self_attn_mul_1_output_0_data.matmul(layer_self_attn_mul_2_output_0_data); // [4, 9, 9]
        let layer_self_attn_softmax_output_0 = layer_self_attn_matmul_1_output_0.softmax(-1); // [4, 9, 9]
        let layer_self_attn_reshape_8_output_0_data = layer_self_attn_reshape_5_output_0.transpose(-3, -2); // [4, 9, 4]
        let layer_self_attn_matmul_2_output_0 = layer_self_attn_softmax_output_0.matmul(layer_self_attn_reshape_8_output_0_data); // [4, 9, 4]
        let layer_self_attn_reshape_9_output_0_data = layer_self_attn_matmul_2_output_0.transpose(-3, -2).reshape([9, 16]); // [9, 16]
        let layer_self_attn_gemm_output_0 = self.layer_self_attn_out_proj(layer_self_attn_reshape_9_output_0_data); // [9, 16]
        let layer_add_output_0 = input + layer_self_attn_gemm_output_0; // [9, 16]
        let layer_norm1_layernormalization_output_0 = self.layer_norm1(layer_add_output_0); // [9, 16]
        let layer_linear1_add_output_0 = self.layer_linear1(layer_norm1_layernormalization_output_0); // [9, 32]
        let layer_relu_output_0 = relu(layer_linear1_add_output_0); // [9, 32]
        let layer_linear2_add_output_0 = self.layer_linear2(layer_relu_output_0); // [9, 16]
        let layer_add_1_output_0 = layer_norm1_layernormalization_output_0 + layer_linear2_add_output_0; // [9, 16]
        let layer_norm2_layernormalization_output_0 = self.layer_norm2(layer_add_1_output_0); // [9, 16]
        self.fc(layer_norm2_layernormalization_output_0) // [9, 5]
    }
}
