// `ActivationsLegacy`, converted by blaze-onnx from `activations_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ActivationsLegacy {
    fc1: Linear<6, 8>,
    fc2: Linear<8, 8>,
    fc3: Linear<8, 8>,
    softplus: Softplus,
    fc4: Linear<8, 8>,
    fc5: Linear<8, 8>,
    fc6: Linear<8, 4>,
}

#[model(input = [6])]
impl ActivationsLegacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let fc1_gemm_output_0 = self.fc1(input); // [8]
        let mul_output_0 = fc1_gemm_output_0 * 3.0; // [8]
        let relu6_clip_output_0 = relu6(mul_output_0); // [8]
        let fc2_gemm_output_0 = self.fc2(relu6_clip_output_0); // [8]
        let mul_1_output_0 = fc2_gemm_output_0 * 3.0; // [8]
        let hardswish_hardswish_output_0 = hardswish(mul_1_output_0); // [8]
        let fc3_gemm_output_0 = self.fc3(hardswish_hardswish_output_0); // [8]
        let mish_softplus_output_0 = self.softplus(fc3_gemm_output_0); // [8]
        let mish_tanh_output_0 = tanh(mish_softplus_output_0); // [8]
        let mish_mul_output_0 = fc3_gemm_output_0 * mish_tanh_output_0; // [8]
        let fc4_gemm_output_0 = self.fc4(mish_mul_output_0); // [8]
        let softsign_abs_output_0 = abs(fc4_gemm_output_0); // [8]
        let softsign_add_output_0 = softsign_abs_output_0 + 1.0; // [8]
        let softsign_div_output_0 = fc4_gemm_output_0 / softsign_add_output_0; // [8]
        let mul_2_output_0 = softsign_div_output_0 * 30.0; // [8]
        let logsigmoid_log_output_0 = logsigmoid(mul_2_output_0); // [8]
        let fc5_gemm_output_0 = self.fc5(logsigmoid_log_output_0); // [8]
        let mul_3_output_0 = fc5_gemm_output_0 * 3.0; // [8]
        let hardsigmoid_hardsigmoid_output_0 = hardsigmoid(mul_3_output_0); // [8]
        let fc6_gemm_output_0 = self.fc6(hardsigmoid_hardsigmoid_output_0); // [4]
        let abs_output_0 = abs(fc6_gemm_output_0); // [4]
        let sin_output_0 = sin(fc6_gemm_output_0); // [4]
        let cos_output_0 = cos(fc6_gemm_output_0); // [4]
        let mul_4_output_0 = sin_output_0 * cos_output_0; // [4]
        let neg_output_0 = abs_output_0.neg(); // [4]
        let exp_output_0 = exp(neg_output_0); // [4]
        let add_output_0 = mul_4_output_0 + exp_output_0; // [4]
        let mul_5_output_0 = fc6_gemm_output_0 * fc6_gemm_output_0; // [4]
        let add_1_output_0 = mul_5_output_0 + 1.0; // [4]
        let reciprocal_output_0 = recip(add_1_output_0); // [4]
        let add_2_output_0 = add_output_0 + reciprocal_output_0; // [4]
        let add_3_output_0 = abs_output_0 + 1.0; // [4]
        let log_output_0 = log(add_3_output_0); // [4]
        let add_4_output_0 = add_2_output_0 + log_output_0; // [4]
        let erf_output_0 = erf(fc6_gemm_output_0); // [4]
        let add_5_output_0 = add_4_output_0 + erf_output_0; // [4]
        let floor_output_0 = floor(fc6_gemm_output_0); // [4]
        let ceil_output_0 = ceil(fc6_gemm_output_0); // [4]
        let add_6_output_0 = floor_output_0 + ceil_output_0; // [4]
        let sign_output_0 = sign(fc6_gemm_output_0); // [4]
        let add_7_output_0 = add_6_output_0 + sign_output_0; // [4]
        let mul_6_output_0 = add_7_output_0 * 0.1; // [4]
        add_5_output_0 + mul_6_output_0 // [4]
    }
}
