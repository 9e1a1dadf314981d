// `Mlp`, converted by blaze-onnx from `mlp.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Mlp {
    fc1: Linear<64, 48>,
    fc2: Linear<48, 32>,
    fc3: Linear<32, 10>,
}

#[model(input = [64])]
impl Mlp {
    fn forward(&self, input: Tensor) -> Tensor {
        let linear = self.fc1(input); // [48]
        let relu_out = relu(linear); // [48]
        let linear_1 = self.fc2(relu_out); // [32]
        let tanh_out = tanh(linear_1); // [32]
        let linear_2 = self.fc3(tanh_out); // [10]
        linear_2.log_softmax(-1) // [10]
    }
}
