// `BatchNormKeptDynamo`, converted by blaze-onnx from `batch_norm_kept_dynamo.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [3, 8, 8])]
pub struct BatchNormKeptDynamo {
    conv2d: Conv2d<3, 4, 3>, // -> [4, 6, 6]
    native_batch_norm_legit_no_training_0: BatchNorm2d<4>, // -> [4, 6, 6]
    relu: Relu, // -> [4, 6, 6]
    flatten: Flatten, // -> [144]
    linear: Linear<144, 5>, // -> [5]
}
