// `Activations`, converted by blaze-onnx from `activations.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Activations {
    fc1: Linear<6, 8>,
    fc2: Linear<8, 8>,
    fc3: Linear<8, 8>,
    fc4: Linear<8, 8>,
    fc5: Linear<8, 8>,
    fc6: Linear<8, 4>,
}

#[model(input = [6])]
impl Activations {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.fc1(input); // [8]
        let mul = linear * 3.0; // [8]
        let hardtanh = relu6(mul); // [8]
        let linear_1 = self.fc2(hardtanh); // [8]
        let mul_1 = linear_1 * 3.0; // [8]
        let hardswish_out = hardswish(mul_1); // [8]
        let linear_2 = self.fc3(hardswish_out); // [8]
        let mish_out = mish(linear_2); // [8]
        let linear_3 = self.fc4(mish_out); // [8]
        let abs_1 = abs(linear_3); // [8]
        let add = abs_1 + 1.0; // [8]
        let div = linear_3 / add; // [8]
        let mul_2 = div * 30.0; // [8]
        let log_sigmoid = logsigmoid(mul_2); // [8]
        let linear_4 = self.fc5(log_sigmoid); // [8]
        let mul_3 = linear_4 * 3.0; // [8]
        let hardsigmoid_out = hardsigmoid(mul_3); // [8]
        let linear_5 = self.fc6(hardsigmoid_out); // [4]
        let abs_2 = abs(linear_5); // [4]
        let sin_out = sin(linear_5); // [4]
        let cos_out = cos(linear_5); // [4]
        let mul_4 = sin_out * cos_out; // [4]
        let neg_out = abs_2.neg(); // [4]
        let exp_out = exp(neg_out); // [4]
        let add_1 = mul_4 + exp_out; // [4]
        let mul_5 = linear_5 * linear_5; // [4]
        let add_2 = mul_5 + 1.0; // [4]
        let reciprocal = recip(add_2); // [4]
        let add_3 = add_1 + reciprocal; // [4]
        let add_4 = abs_2 + 1.0; // [4]
        let log_out = log(add_4); // [4]
        let add_5 = add_3 + log_out; // [4]
        let erf_out = erf(linear_5); // [4]
        let add_6 = add_5 + erf_out; // [4]
        let floor_out = floor(linear_5); // [4]
        let ceil_out = ceil(linear_5); // [4]
        let add_7 = floor_out + ceil_out; // [4]
        let sign_out = sign(linear_5); // [4]
        let add_8 = add_7 + sign_out; // [4]
        let mul_6 = add_8 * 0.1; // [4]
        add_6 + mul_6 // [4]
    }
}
