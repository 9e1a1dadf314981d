// `GruBidirectionalFinalState`, converted by blaze-onnx from `gru_bidirectional_final_state.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct GruBidirectionalFinalState {
    #[layer(bidirectional = true)]
    gru_1: Gru<8, 6>,
    fc: Linear<12, 3>,
}

#[model(input = [T, 8])]
impl GruBidirectionalFinalState {
    fn forward(&self, input: Tensor) -> Tensor {
        let v = self.gru_1(input); // [T, 12]
        let v_directions = v.reshape([T, 2, 6]); // [T, 2, 6]
        let getitem_1 = cat([v_directions.narrow(0, -1, 1).narrow(1, 0, 1), v_directions.narrow(0, 0, 1).narrow(1, 1, 1)], 1).reshape([2, 6]); // [2, 6]
        let select = getitem_1.narrow(-2, 0, 1).reshape([6]); // [6]
        let select_1 = getitem_1.narrow(-2, 1, 1).reshape([6]); // [6]
        let cat_out = cat([select, select_1], -1); // [12]
        self.fc(cat_out) // [3]
    }
}
