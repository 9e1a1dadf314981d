// `BatchNormKeptLegacy`, converted by blaze-onnx from `batch_norm_kept_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [3, 8, 8])]
pub struct BatchNormKeptLegacy {
    v0_conv: Conv2d<3, 4, 3>, // -> [4, 6, 6]
    v1_batchnormalization: BatchNorm2d<4>, // -> [4, 6, 6]
    relu: Relu, // -> [4, 6, 6]
    flatten: Flatten, // -> [144]
    v4_gemm: Linear<144, 5>, // -> [5]
}
