// `Decoder`, converted by blaze-onnx from `decoder.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [3, 4, 4])]
pub struct Decoder {
    #[layer(padding = 1)]
    conv1: Conv2d<3, 4, 3>, // -> [4, 4, 4]
    relu: Relu, // -> [4, 4, 4]
    upsample: Upsample, // -> [4, 8, 8]
    #[layer(padding = 1)]
    conv2: Conv2d<4, 4, 3>, // -> [4, 8, 8]
    relu_1: Relu, // -> [4, 8, 8]
    #[layer(mode = "bilinear")]
    upsample_1: Upsample, // -> [4, 16, 16]
    #[layer(padding = 1)]
    conv3: Conv2d<4, 2, 3>, // -> [2, 16, 16]
    #[layer(mode = "bilinear", align_corners = true)]
    upsample_2: Upsample, // -> [2, 32, 32]
    flatten: Flatten, // -> [2048]
    fc: Linear<2048, 4>, // -> [4]
}
