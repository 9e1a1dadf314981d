// `AttentionBufferFixed`, converted by blaze-onnx from `attention_buffer_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct AttentionBufferFixed {
    c_attn: Linear<16, 48>,
    c_proj: Linear<16, 16>,
}

#[model(input = [9, 16])]
impl AttentionBufferFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.c_attn(input); // [9, 48]
        let [split_split_0, split_split_1, split_split_2] = linear.split(16, -1); // [9, 16], [9, 16], [9, 16]
        let view = split_split_1.reshape([9, 4, 4]); // [9, 4, 4]
        let view_1 = split_split_0.reshape([9, 4, 4]); // [9, 4, 4]
        let transpose_1 = view_1.transpose(-3, -2); // [4, 9, 4]
        let view_2 = split_split_2.reshape([9, 4, 4]); // [9, 4, 4]
        let transpose_2 = view_2.transpose(-3, -2); // [4, 9, 4]
        let transpose_3 = view.permute([1, 2, 0]); // [4, 4, 9]
        let matmul_out = transpose_1.matmul(transpose_3); // [4, 9, 9]
        let mul = matmul_out * 0.5; // [4, 9, 9]
        let masked_fill = mul.masked_fill(causal_mask(9), f64::NEG_INFINITY); // [4, 9, 9]
        let softmax_out = masked_fill.softmax(-1); // [4, 9, 9]
        let matmul_1 = softmax_out.matmul(transpose_2); // [4, 9, 4]
        let transpose_4 = matmul_1.transpose(-3, -2); // [9, 4, 4]
        let view_3 = transpose_4.reshape([9, 16]); // [9, 16]
        self.c_proj(view_3) // [9, 16]
    }
}
