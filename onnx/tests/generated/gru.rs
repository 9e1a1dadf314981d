// `GruModel`, converted by blaze-onnx from `gru.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruModel {
    gru_1: Gru<8, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl GruModel {
    fn forward(&self, input: Tensor) -> Tensor {
        let val_47 = self.gru_1(input); // [T, 12]
        self.fc(val_47) // [T, 3]
    }
}
