// `LstmLegacy`, converted by blaze-onnx from `lstm_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmLegacy {
    rnn_lstm: Lstm<8, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl LstmLegacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let rnn_lstm_output_0 = self.rnn_lstm(input); // [T, 12]
        self.fc(rnn_lstm_output_0) // [T, 3]
    }
}
