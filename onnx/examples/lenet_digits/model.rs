// `LeNet`, converted by blaze-onnx from `lenet_digits.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct LeNet {
    #[layer(padding = 1)]
    conv1: Conv2d<1, 6, 3>, // -> [6, 8, 8]
    relu: Relu, // -> [6, 8, 8]
    max_pool: MaxPool2d<2>, // -> [6, 4, 4]
    #[layer(padding = 1)]
    conv2: Conv2d<6, 16, 3>, // -> [16, 4, 4]
    relu_1: Relu, // -> [16, 4, 4]
    max_pool_1: MaxPool2d<2>, // -> [16, 2, 2]
    flatten: Flatten, // -> [64]
    fc1: Linear<64, 32>, // -> [32]
    relu_2: Relu, // -> [32]
    fc2: Linear<32, 10>, // -> [10]
}
