// `Multihead`, converted by blaze-onnx from `multihead.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Multihead {
    attn_in_proj: Linear<16, 48>,
    attn_out_proj: Linear<16, 16>,
    fc: Linear<16, 5>,
}

#[model(input = [T, 16])]
impl Multihead {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.attn_in_proj(input); // [T, 48]
        let view = linear.reshape([T, 3, 16]); // [T, 3, 16]
        let select = view.narrow(-2, 0, 1).reshape([T, 16]); // [T, 16]
        let select_1 = view.narrow(-2, 1, 1).reshape([T, 16]); // [T, 16]
        let select_2 = view.narrow(-2, 2, 1).reshape([T, 16]); // [T, 16]
        let view_1 = select.reshape([T, 4, 4]); // [T, 4, 4]
        let view_2 = select_1.reshape([T, 4, 4]); // [T, 4, 4]
        let view_3 = select_2.reshape([T, 4, 4]); // [T, 4, 4]
        let val_84 = view_1 * 0.70710677; // [T, 4, 4]
        let val_86 = view_2 * 0.70710677; // [T, 4, 4]
        let val_84_data = val_84.transpose(-3, -2); // [4, T, 4]
        let val_86_data = val_86.permute([1, 2, 0]); // [4, 4, T]
        let val_87 = val_84_data.matmul(val_86_data); // [4, T, T]
        let val_88 = val_87.masked_fill(causal_mask(T), f64::NEG_INFINITY); // [4, T, T]
        let val_89 = val_88.softmax(-1); // [4, T, T]
        let view_6_data = view_3.transpose(-3, -2); // [4, T, 4]
        let scaled_dot_product_attention = val_89.matmul(view_6_data); // [4, T, 4]
        let view_7_data = scaled_dot_product_attention.transpose(-3, -2).reshape([T, 16]); // [T, 16]
        let linear_1 = self.attn_out_proj(view_7_data); // [T, 16]
        let add_6 = input + linear_1; // [T, 16]
        self.fc(add_6) // [T, 5]
    }
}
