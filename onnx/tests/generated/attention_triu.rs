// `AttentionTriu`, converted by blaze-onnx from `attention_triu.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct AttentionTriu {
    qkv: Linear<16, 48>,
}

#[model(input = [T, 16])]
impl AttentionTriu {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.qkv(input); // [T, 48]
        let [split_split_0, split_split_1, split_split_2] = linear.split(16, -1); // [T, 16], [T, 16], [T, 16]
        let transpose = split_split_1.transpose(-2, -1); // [16, T]
        let matmul_out = split_split_0.matmul(transpose); // [T, T]
        let div = matmul_out / 4.0; // [T, T]
        let masked_fill = div.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [T, T]
        let softmax_out = masked_fill.softmax(-1); // [T, T]
        softmax_out.matmul(split_split_2) // [T, 16]
    }
}
