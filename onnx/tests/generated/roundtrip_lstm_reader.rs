// `LstmReader`, converted by blaze-onnx from `roundtrip_lstm_reader.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmReader {
    chars: Embedding<64, 32>,
    lstm_l0_w: Lstm<32, 64>,
    lstm_l1_w: Lstm<64, 64>,
    head: Linear<64, 8>,
}

#[model(input = [T])]
impl LstmReader {
    fn forward(&self, input: Tensor) -> Tensor {
        let chars_gather = self.chars(input); // [T, 32]
        let lstm_lstm = self.lstm_l0_w(chars_gather); // [T, 64]
        let lstm_lstm_1 = self.lstm_l1_w(lstm_lstm); // [T, 64]
        let slice = lstm_lstm_1.narrow(-2, -1, 1); // [1, 64]
        let reshape = slice.flatten(); // [64]
        self.head(reshape) // [8]
    }
}
