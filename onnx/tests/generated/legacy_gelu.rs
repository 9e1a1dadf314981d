// `LegacyGelu`, converted by blaze-onnx from `legacy_gelu.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model(input = [12])]
pub struct LegacyGelu {
    fc1: Linear<12, 24>, // -> [24]
    gelu: Gelu, // -> [24]
    fc2: Linear<24, 5>, // -> [5]
}
