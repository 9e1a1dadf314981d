// `EncoderLayer`, converted by blaze-onnx from `encoder_layer.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct EncoderLayer {
    layer_norm1: LayerNorm<16>,
    layer_self_attn_in_proj: Linear<16, 48>,
    layer_self_attn_out_proj: Linear<16, 16>,
    layer_norm2: LayerNorm<16>,
    layer_linear1: Linear<16, 32>,
    layer_linear2: Linear<32, 16>,
    fc: Linear<16, 5>,
}

#[model(input = [T, 16])]
impl EncoderLayer {
    fn forward(&self, input: Tensor) -> Tensor {
        let layer_norm = self.layer_norm1(input); // [T, 16]
        let linear = self.layer_self_attn_in_proj(layer_norm); // [T, 48]
        let view = linear.reshape([T, 3, 16]); // [T, 3, 16]
        let select = view.narrow(-2, 0, 1).reshape([T, 16]); // [T, 16]
        let select_1 = view.narrow(-2, 1, 1).reshape([T, 16]); // [T, 16]
        let select_2 = view.narrow(-2, 2, 1).reshape([T, 16]); // [T, 16]
        let view_1 = select.reshape([T, 4, 4]); // [T, 4, 4]
        let view_2 = select_1.reshape([T, 4, 4]); // [T, 4, 4]
        let view_3 = select_2.reshape([T, 4, 4]); // [T, 4, 4]
        let val_91 = view_1 * 0.70710677; // [T, 4, 4]
        let val_93 = view_2 * 0.70710677; // [T, 4, 4]
        let val_91_data = val_91.transpose(-3, -2); // [4, T, 4]
        let val_93_data = val_93.permute([1, 2, 0]); // [4, 4, T]
        let val_94 = val_91_data.matmul(val_93_data); // [4, T, T]
        let val_95 = val_94.masked_fill(causal_mask(T), -3.4028235e38); // [4, T, T]
        let val_96 = val_95.softmax(-1); // [4, T, T]
        let view_6_data = view_3.transpose(-3, -2); // [4, T, 4]
        let scaled_dot_product_attention = val_96.matmul(view_6_data); // [4, T, 4]
        let view_7_data = scaled_dot_product_attention.transpose(-3, -2).reshape([T, 16]); // [T, 16]
        let linear_1 = self.layer_self_attn_out_proj(view_7_data); // [T, 16]
        let add = input + linear_1; // [T, 16]
        let layer_norm_1 = self.layer_norm2(add); // [T, 16]
        let linear_2 = self.layer_linear1(layer_norm_1); // [T, 32]
        let gelu_out = gelu(linear_2); // [T, 32]
        let linear_3 = self.layer_linear2(gelu_out); // [T, 16]
        let add_1 = add + linear_3; // [T, 16]
        self.fc(add_1) // [T, 5]
    }
}
