// `LstmModel`, converted by blaze-onnx from `lstm.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmModel {
    lstm_2: Lstm<8, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl LstmModel {
    fn forward(&self, input: Tensor) -> Tensor {
        let val_67 = self.lstm_2(input); // [T, 12]
        self.fc(val_67) // [T, 3]
    }
}
