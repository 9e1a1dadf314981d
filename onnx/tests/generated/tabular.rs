// `Tabular`, converted by blaze-onnx from `tabular.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [13])]
pub struct Tabular {
    fc1: Linear<13, 32>, // -> [32]
    relu: Relu, // -> [32]
    bn: BatchNorm1d<32>, // -> [32]
    fc2: Linear<32, 3>, // -> [3]
}
