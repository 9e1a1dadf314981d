// `Ops`, converted by blaze-onnx from `ops.onnx` (ONNX opset 20).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Ops {
    #[layer(padding = 1)]
    conv: Conv2d<4, 4, 3>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    #[layer(p = 0.25)]
    dropout: Dropout,
    proj: Linear<4, 9>,
}

#[model(input = [4, 6, 6])]
impl Ops {
    fn forward(&self, x: Tensor) -> Tensor {
        let c = self.conv(x); // [4, 6, 6]
        let g = self.global_avg_pool(c); // [4, 1, 1]
        let f = g.flatten(); // [4]
        let m = f * 2.0; // [4]
        let a = gelu(m); // [4]
        let d = self.dropout(a); // [4]
        let pb = self.proj(d); // [9]
        let s0 = pb.narrow(-1, 0, 2); // [2]
        let s1 = pb.narrow(-1, 2, 3); // [3]
        let s2 = pb.narrow(-1, 5, 4); // [4]
        let cat_out = cat([s2, s0], -1); // [6]
        cat_out.softmax(-1) // [6]
    }
}
