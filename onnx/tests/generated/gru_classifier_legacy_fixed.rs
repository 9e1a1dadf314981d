// `GruClassifierLegacyFixed`, converted by blaze-onnx from `gru_classifier_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruClassifierLegacyFixed {
    rnn_gru: Gru<8, 6>,
    fc: Linear<6, 3>,
}

#[model(input = [T, 8])]
impl GruClassifierLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let rnn_gru_output_0 = self.rnn_gru(input); // [T, 6]
        let rnn_gru_output_1 = rnn_gru_output_0.narrow(0, -1, 1); // [1, 6]
        let gather_output_0 = rnn_gru_output_1.narrow(-2, 0, 1).reshape([6]); // [6]
        self.fc(gather_output_0) // [3]
    }
}
