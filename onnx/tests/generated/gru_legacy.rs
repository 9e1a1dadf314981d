// `GruLegacy`, converted by blaze-onnx from `gru_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruLegacy {
    rnn_gru: Gru<8, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl GruLegacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let rnn_gru_output_0 = self.rnn_gru(input); // [T, 12]
        self.fc(rnn_gru_output_0) // [T, 3]
    }
}
