// `MobilenetV2LegacyFixed`, converted by blaze-onnx from `mobilenet_v2_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct MobilenetV2LegacyFixed {
    #[layer(stride = 2, padding = 1)]
    features_features_0_features_0_0_conv: Conv2d<3, 32, 3>,
    #[layer(padding = 1, groups = 32)]
    features_features_1_conv_conv_0_conv_0_0_conv: Conv2d<32, 32, 3>,
    features_features_1_conv_conv_1_conv: Conv2d<32, 8, 1>,
    features_features_2_conv_conv_0_conv_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_features_2_conv_conv_1_conv_1_0_conv: Conv2d<48, 48, 3>,
    features_features_2_conv_conv_2_conv: Conv2d<48, 8, 1>,
    features_features_3_conv_conv_0_conv_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(padding = 1, groups = 48)]
    features_features_3_conv_conv_1_conv_1_0_conv: Conv2d<48, 48, 3>,
    features_features_3_conv_conv_2_conv: Conv2d<48, 8, 1>,
    features_features_4_conv_conv_0_conv_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_features_4_conv_conv_1_conv_1_0_conv: Conv2d<48, 48, 3>,
    features_features_4_conv_conv_2_conv: Conv2d<48, 16, 1>,
    features_features_5_features_5_0_conv: Conv2d<16, 1280, 1>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    classifier_1: Linear<1280, 5>,
}

#[model(input = [3, 32, 32])]
impl MobilenetV2LegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let features_features_0_features_0_0_conv_output_0 = self.features_features_0_features_0_0_conv(input); // [32, 16, 16]
        let features_features_0_features_0_2_clip_output_0 = relu6(features_features_0_features_0_0_conv_output_0); // [32, 16, 16]
        let features_features_1_conv_conv_0_conv_0_0_conv_output_0 = self.features_features_1_conv_conv_0_conv_0_0_conv(features_features_0_features_0_2_clip_output_0); // [32, 16, 16]
        let features_features_1_conv_conv_0_conv_0_2_clip_output_0 = relu6(features_features_1_conv_conv_0_conv_0_0_conv_output_0); // [32, 16, 16]
        let features_features_1_conv_conv_1_conv_output_0 = self.features_features_1_conv_conv_1_conv(features_features_1_conv_conv_0_conv_0_2_clip_output_0); // [8, 16, 16]
        let features_features_2_conv_conv_0_conv_0_0_conv_output_0 = self.features_features_2_conv_conv_0_conv_0_0_conv(features_features_1_conv_conv_1_conv_output_0); // [48, 16, 16]
        let features_features_2_conv_conv_0_conv_0_2_clip_output_0 = relu6(features_features_2_conv_conv_0_conv_0_0_conv_output_0); // [48, 16, 16]
        let features_features_2_conv_conv_1_conv_1_0_conv_output_0 = self.features_features_2_conv_conv_1_conv_1_0_conv(features_features_2_conv_conv_0_conv_0_2_clip_output_0); // [48, 8, 8]
        let features_features_2_conv_conv_1_conv_1_2_clip_output_0 = relu6(features_features_2_conv_conv_1_conv_1_0_conv_output_0); // [48, 8, 8]
        let features_features_2_conv_conv_2_conv_output_0 = self.features_features_2_conv_conv_2_conv(features_features_2_conv_conv_1_conv_1_2_clip_output_0); // [8, 8, 8]
        let features_features_3_conv_conv_0_conv_0_0_conv_output_0 = self.features_features_3_conv_conv_0_conv_0_0_conv(features_features_2_conv_conv_2_conv_output_0); // [48, 8, 8]
        let features_features_3_conv_conv_0_conv_0_2_clip_output_0 = relu6(features_features_3_conv_conv_0_conv_0_0_conv_output_0); // [48, 8, 8]
        let features_features_3_conv_conv_1_conv_1_0_conv_output_0 = self.features_features_3_conv_conv_1_conv_1_0_conv(features_features_3_conv_conv_0_conv_0_2_clip_output_0); // [48, 8, 8]
        let features_features_3_conv_conv_1_conv_1_2_clip_output_0 = relu6(features_features_3_conv_conv_1_conv_1_0_conv_output_0); // [48, 8, 8]
        let features_features_3_conv_conv_2_conv_output_0 = self.features_features_3_conv_conv_2_conv(features_features_3_conv_conv_1_conv_1_2_clip_output_0); // [8, 8, 8]
        let features_features_3_add_output_0 = features_features_2_conv_conv_2_conv_output_0 + features_features_3_conv_conv_2_conv_output_0; // [8, 8, 8]
        let features_features_4_conv_conv_0_conv_0_0_conv_output_0 = self.features_features_4_conv_conv_0_conv_0_0_conv(features_features_3_add_output_0); // [48, 8, 8]
        let features_features_4_conv_conv_0_conv_0_2_clip_output_0 = relu6(features_features_4_conv_conv_0_conv_0_0_conv_output_0); // [48, 8, 8]
        let features_features_4_conv_conv_1_conv_1_0_conv_output_0 = self.features_features_4_conv_conv_1_conv_1_0_conv(features_features_4_conv_conv_0_conv_0_2_clip_output_0); // [48, 4, 4]
        let features_features_4_conv_conv_1_conv_1_2_clip_output_0 = relu6(features_features_4_conv_conv_1_conv_1_0_conv_output_0); // [48, 4, 4]
        let features_features_4_conv_conv_2_conv_output_0 = self.features_features_4_conv_conv_2_conv(features_features_4_conv_conv_1_conv_1_2_clip_output_0); // [16, 4, 4]
        let features_features_5_features_5_0_conv_output_0 = self.features_features_5_features_5_0_conv(features_features_4_conv_conv_2_conv_output_0); // [1280, 4, 4]
        let features_features_5_features_5_2_clip_output_0 = relu6(features_features_5_features_5_0_conv_output_0); // [1280, 4, 4]
        let globalaveragepool_output_0 = self.global_avg_pool(features_features_5_features_5_2_clip_output_0); // [1280, 1, 1]
        let flatten_output_0 = globalaveragepool_output_0.flatten(); // [1280]
        self.classifier_1(flatten_output_0) // [5]
    }
}
