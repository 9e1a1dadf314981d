// `LstmBidirectional`, converted by blaze-onnx from `lstm_bidirectional.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmBidirectional {
    #[layer(bidirectional = true)]
    rnn_lstm: Lstm<8, 6>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl LstmBidirectional {
    fn forward(&self, input: Tensor) -> Tensor {
        let rnn_lstm_output_0 = self.rnn_lstm(input); // [T, 12]
        self.fc(rnn_lstm_output_0) // [T, 3]
    }
}
