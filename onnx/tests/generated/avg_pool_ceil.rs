// `AvgPoolCeil`, converted by blaze-onnx from `avg_pool_ceil.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [3, 9, 9])]
pub struct AvgPoolCeil {
    conv: Conv2d<3, 4, 3>, // -> [4, 7, 7]
    relu: Relu, // -> [4, 7, 7]
    #[layer(ceil_mode = true)]
    avg_pool: AvgPool2d<2>, // -> [4, 4, 4]
    #[layer(stride = 2, padding = 1, ceil_mode = true)]
    avg_pool_1: AvgPool2d<3>, // -> [4, 3, 3]
    flatten: Flatten, // -> [36]
    fc: Linear<36, 5>, // -> [5]
}
