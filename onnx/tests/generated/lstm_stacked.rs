// `LstmStacked`, converted by blaze-onnx from `lstm_stacked.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmStacked {
    lstm_67: Lstm<8, 12>,
    lstm_128: Lstm<12, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl LstmStacked {
    fn forward(&self, input: Tensor) -> Tensor {
        let val_67 = self.lstm_67(input); // [T, 12]
        let val_130 = self.lstm_128(val_67); // [T, 12]
        self.fc(val_130) // [T, 3]
    }
}
