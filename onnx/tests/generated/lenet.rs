// `Lenet`, converted by blaze-onnx from `lenet.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [1, 28, 28])]
pub struct Lenet {
    #[layer(padding = 2)]
    conv1: Conv2d<1, 6, 5>, // -> [6, 28, 28]
    relu: Relu, // -> [6, 28, 28]
    max_pool: MaxPool2d<2>, // -> [6, 14, 14]
    conv2: Conv2d<6, 16, 5>, // -> [16, 10, 10]
    relu_1: Relu, // -> [16, 10, 10]
    max_pool_1: MaxPool2d<2>, // -> [16, 5, 5]
    flatten: Flatten, // -> [400]
    fc1: Linear<400, 120>, // -> [120]
    relu_2: Relu, // -> [120]
    fc2: Linear<120, 84>, // -> [84]
    relu_3: Relu, // -> [84]
    fc3: Linear<84, 10>, // -> [10]
}
