// `DigitsCnn`, converted by blaze-onnx from `roundtrip_digits_cnn.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct DigitsCnn {
    #[layer(padding = 1)]
    conv1: Conv2d<1, 16, 3>, // -> [16, 8, 8]
    relu: Relu, // -> [16, 8, 8]
    max_pool: MaxPool2d<2>, // -> [16, 4, 4]
    #[layer(padding = 1)]
    conv2: Conv2d<16, 32, 3>, // -> [32, 4, 4]
    relu_1: Relu, // -> [32, 4, 4]
    max_pool_1: MaxPool2d<2>, // -> [32, 2, 2]
    flatten: Flatten, // -> [128]
    fc: Linear<128, 10>, // -> [10]
}
