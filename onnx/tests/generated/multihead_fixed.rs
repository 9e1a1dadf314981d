// `MultiheadFixed`, converted by blaze-onnx from `multihead_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct MultiheadFixed {
    attn_in_proj: Linear<16, 48>,
    attn_out_proj: Linear<16, 16>,
    fc: Linear<16, 5>,
}

#[model(input = [9, 16])]
impl MultiheadFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.attn_in_proj(input); // [9, 48]
        let view = linear.reshape([9, 3, 16]); // [9, 3, 16]
        let select = view.narrow(-2, 0, 1).reshape([9, 16]); // [9, 16]
        let select_1 = view.narrow(-2, 1, 1).reshape([9, 16]); // [9, 16]
        let select_2 = view.narrow(-2, 2, 1).reshape([9, 16]); // [9, 16]
        let view_1 = select.reshape([9, 4, 4]); // [9, 4, 4]
        let view_2 = select_1.reshape([9, 4, 4]); // [9, 4, 4]
        let view_3 = select_2.reshape([9, 4, 4]); // [9, 4, 4]
        let val_77 = view_1 * 0.70710677; // [9, 4, 4]
        let val_79 = view_2 * 0.70710677; // [9, 4, 4]
        let val_77_data = val_77.transpose(-3, -2); // [4, 9, 4]
        let val_79_data = val_79.permute([1, 2, 0]); // [4, 4, 9]
        let val_80 = val_77_data.matmul(val_79_data); // [4, 9, 9]
        let val_81 = val_80.masked_fill(causal_mask(9), f64::NEG_INFINITY); // [4, 9, 9]
        let val_82 = val_81.softmax(-1); // [4, 9, 9]
        let view_6_data = view_3.transpose(-3, -2); // [4, 9, 4]
        let scaled_dot_product_attention = val_82.matmul(view_6_data); // [4, 9, 4]
        let view_7_data = scaled_dot_product_attention.transpose(-3, -2).reshape([9, 16]); // [9, 16]
        let linear_1 = self.attn_out_proj(view_7_data); // [9, 16]
        let add = input + linear_1; // [9, 16]
        self.fc(add) // [9, 5]
    }
}
