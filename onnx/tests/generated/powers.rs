// `Powers`, converted by blaze-onnx from `powers.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Powers {
    fc: Linear<6, 6>,
    gate: Linear<6, 1>,
}

#[model(input = [6])]
impl Powers {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.fc(input); // [6]
        let pow_1 = linear.powf(2.0); // [6]
        let pow_2 = input.powf(3.0); // [6]
        let sub = pow_1 - pow_2; // [6]
        let abs_1 = abs(linear); // [6]
        let add = abs_1 + 0.5; // [6]
        let linear_1 = self.gate(input); // [1]
        let sigmoid_out = sigmoid(linear_1); // [1]
        let pow_3 = pow(add, sigmoid_out); // [6]
        sub + pow_3 // [6]
    }
}
