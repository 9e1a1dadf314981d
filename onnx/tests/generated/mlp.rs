// `Mlp`, converted by blaze-onnx from `mlp.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [64])]
pub struct Mlp {
    fc1: Linear<64, 48>, // -> [48]
    relu: Relu, // -> [48]
    fc2: Linear<48, 32>, // -> [32]
    tanh: Tanh, // -> [32]
    fc3: Linear<32, 10>, // -> [10]
    log_softmax: LogSoftmax, // -> [10]
}
