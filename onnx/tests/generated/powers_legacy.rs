// `PowersLegacy`, converted by blaze-onnx from `powers_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct PowersLegacy {
    fc: Linear<6, 6>,
    gate: Linear<6, 1>,
}

#[model(input = [6])]
impl PowersLegacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let fc_gemm_output_0 = self.fc(input); // [6]
        let pow_output_0 = fc_gemm_output_0.powf(2.0); // [6]
        let pow_1_output_0 = input.powf(3.0); // [6]
        let sub_output_0 = pow_output_0 - pow_1_output_0; // [6]
        let abs_output_0 = abs(fc_gemm_output_0); // [6]
        let add_output_0 = abs_output_0 + 0.5; // [6]
        let gate_gemm_output_0 = self.gate(input); // [1]
        let sigmoid_output_0 = sigmoid(gate_gemm_output_0); // [1]
        let pow_2_output_0 = pow(add_output_0, sigmoid_output_0); // [6]
        sub_output_0 + pow_2_output_0 // [6]
    }
}
