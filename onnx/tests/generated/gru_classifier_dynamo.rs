// `GruClassifierDynamo`, converted by blaze-onnx from `gru_classifier_dynamo.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruClassifierDynamo {
    gru_1: Gru<8, 6>,
    fc: Linear<6, 3>,
}

#[model(input = [T, 8])]
impl GruClassifierDynamo {
    fn forward(&self, input: Tensor) -> Tensor {
        let v = self.gru_1(input); // [T, 6]
        let getitem_1 = v.narrow(0, -1, 1); // [1, 6]
        let select = getitem_1.narrow(-2, 0, 1).reshape([6]); // [6]
        self.fc(select) // [3]
    }
}
