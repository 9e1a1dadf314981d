// `DigitsMlp`, converted by blaze-onnx from `roundtrip_digits_mlp.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct DigitsMlp {
    flatten: Flatten, // -> [64]
    fc1: Linear<64, 128>, // -> [128]
    relu: Relu, // -> [128]
    fc2: Linear<128, 10>, // -> [10]
}
