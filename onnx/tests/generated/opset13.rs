// `Opset13`, converted by blaze-onnx from `opset13.onnx` (ONNX opset 13).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Opset13 {
    fc: Linear<6, 5>,
}

#[model(input = [4, 6])]
impl Opset13 {
    fn forward(&self, x: Tensor) -> Tensor {
        let mean = x.mean_dim(-1); // [4, 1]
        let centred = x - mean; // [4, 6]
        let a = centred.narrow(-1, 0, 2); // [4, 2]
        let c = centred.narrow(-1, 2, 4); // [4, 4]
        let cat_out = cat([c, a], -1); // [4, 6]
        let pb = self.fc(cat_out); // [4, 5]
        pb.softmax(-1) // [4, 5]
    }
}
