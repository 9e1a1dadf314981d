// `LstmBidirectionalFinalState`, converted by blaze-onnx from `lstm_bidirectional_final_state.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct LstmBidirectionalFinalState {
    #[layer(bidirectional = true)]
    rnn_lstm: Lstm<8, 6>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl LstmBidirectionalFinalState {
    fn forward(&self, input: Tensor) -> Tensor {
        let rnn_lstm_output_0 = self.rnn_lstm(input); // [T, 12]
        let rnn_lstm_output_0_directions = rnn_lstm_output_0.reshape([T, 2, 6]); // [T, 2, 6]
        let rnn_lstm_output_1 = cat([rnn_lstm_output_0_directions.narrow(0, -1, 1).narrow(1, 0, 1), rnn_lstm_output_0_directions.narrow(0, 0, 1).narrow(1, 1, 1)], 1).reshape([2, 6]); // [2, 6]
        let gather_output_0 = rnn_lstm_output_1.narrow(-2, 0, 1).reshape([6]); // [6]
        let gather_1_output_0 = rnn_lstm_output_1.narrow(-2, 1, 1).reshape([6]); // [6]
        let concat_output_0 = cat([gather_output_0, gather_1_output_0], -1); // [12]
        self.fc(concat_output_0) // [3]
    }
}
