// `GruBidirectional`, converted by blaze-onnx from `gru_bidirectional.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruBidirectional {
    #[layer(bidirectional = true)]
    gru_1: Gru<8, 6>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl GruBidirectional {
    fn forward(&self, input: Tensor) -> Tensor {
        let val_82 = self.gru_1(input); // [T, 12]
        self.fc(val_82) // [T, 3]
    }
}
