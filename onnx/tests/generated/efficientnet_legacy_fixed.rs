// `EfficientnetLegacyFixed`, converted by blaze-onnx from `efficientnet_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct EfficientnetLegacyFixed {
    #[layer(stride = 2, padding = 1)]
    features_features_0_features_0_0_conv: Conv2d<3, 8, 3>,
    #[layer(padding = 1, groups = 8)]
    features_features_1_features_1_0_block_block_0_block_0_0_conv: Conv2d<8, 8, 3>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    features_1_0_block_1_fc1: Conv2d<8, 2, 1>,
    features_1_0_block_1_fc2: Conv2d<2, 8, 1>,
    features_features_1_features_1_0_block_block_2_block_2_0_conv: Conv2d<8, 8, 1>,
    features_features_2_features_2_0_block_block_0_block_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_features_2_features_2_0_block_block_1_block_1_0_conv: Conv2d<48, 48, 3>,
    global_avg_pool_1: AdaptiveAvgPool2d<1, 1>,
    features_2_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_2_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_features_2_features_2_0_block_block_3_block_3_0_conv: Conv2d<48, 8, 1>,
    features_features_3_features_3_0_block_block_0_block_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 2, groups = 48)]
    features_features_3_features_3_0_block_block_1_block_1_0_conv: Conv2d<48, 48, 5>,
    global_avg_pool_2: AdaptiveAvgPool2d<1, 1>,
    features_3_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_3_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_features_3_features_3_0_block_block_3_block_3_0_conv: Conv2d<48, 8, 1>,
    features_features_4_features_4_0_block_block_0_block_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_features_4_features_4_0_block_block_1_block_1_0_conv: Conv2d<48, 48, 3>,
    global_avg_pool_3: AdaptiveAvgPool2d<1, 1>,
    features_4_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_4_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_features_4_features_4_0_block_block_3_block_3_0_conv: Conv2d<48, 8, 1>,
    features_features_5_features_5_0_block_block_0_block_0_0_conv: Conv2d<8, 48, 1>,
    #[layer(padding = 2, groups = 48)]
    features_features_5_features_5_0_block_block_1_block_1_0_conv: Conv2d<48, 48, 5>,
    global_avg_pool_4: AdaptiveAvgPool2d<1, 1>,
    features_5_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_5_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_features_5_features_5_0_block_block_3_block_3_0_conv: Conv2d<48, 16, 1>,
    features_features_6_features_6_0_block_block_0_block_0_0_conv: Conv2d<16, 96, 1>,
    #[layer(stride = 2, padding = 2, groups = 96)]
    features_features_6_features_6_0_block_block_1_block_1_0_conv: Conv2d<96, 96, 5>,
    global_avg_pool_5: AdaptiveAvgPool2d<1, 1>,
    features_6_0_block_2_fc1: Conv2d<96, 4, 1>,
    features_6_0_block_2_fc2: Conv2d<4, 96, 1>,
    features_features_6_features_6_0_block_block_3_block_3_0_conv: Conv2d<96, 24, 1>,
    features_features_7_features_7_0_block_block_0_block_0_0_conv: Conv2d<24, 144, 1>,
    #[layer(padding = 1, groups = 144)]
    features_features_7_features_7_0_block_block_1_block_1_0_conv: Conv2d<144, 144, 3>,
    global_avg_pool_6: AdaptiveAvgPool2d<1, 1>,
    features_7_0_block_2_fc1: Conv2d<144, 6, 1>,
    features_7_0_block_2_fc2: Conv2d<6, 144, 1>,
    features_features_7_features_7_0_block_block_3_block_3_0_conv: Conv2d<144, 32, 1>,
    features_features_8_features_8_0_conv: Conv2d<32, 128, 1>,
    global_avg_pool_7: AdaptiveAvgPool2d<1, 1>,
    classifier_1: Linear<128, 5>,
}

#[model(input = [3, 32, 32])]
impl EfficientnetLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let features_features_0_features_0_0_conv_output_0 = self.features_features_0_features_0_0_conv(input); // [8, 16, 16]
        let features_features_0_features_0_2_sigmoid_output_0 = sigmoid(features_features_0_features_0_0_conv_output_0); // [8, 16, 16]
        let features_features_0_features_0_2_mul_output_0 = features_features_0_features_0_0_conv_output_0 * features_features_0_features_0_2_sigmoid_output_0; // [8, 16, 16]
        let features_features_1_features_1_0_block_block_0_block_0_0_conv_output_0 = self.features_features_1_features_1_0_block_block_0_block_0_0_conv(features_features_0_features_0_2_mul_output_0); // [8, 16, 16]
        let features_features_1_features_1_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_1_features_1_0_block_block_0_block_0_0_conv_output_0); // [8, 16, 16]
        let features_features_1_features_1_0_block_block_0_block_0_2_mul_output_0 = features_features_1_features_1_0_block_block_0_block_0_0_conv_output_0 * features_features_1_features_1_0_block_block_0_block_0_2_sigmoid_output_0; // [8, 16, 16]
        let features_features_1_features_1_0_block_block_1_avgpool_globalaveragepool_output_0 = self.global_avg_pool(features_features_1_features_1_0_block_block_0_block_0_2_mul_output_0); // [8, 1, 1]
        let features_features_1_features_1_0_block_block_1_fc1_conv_output_0 = self.features_1_0_block_1_fc1(features_features_1_features_1_0_block_block_1_avgpool_globalaveragepool_output_0); // [2, 1, 1]
        let features_features_1_features_1_0_block_block_1_activation_sigmoid_output_0 = sigmoid(features_features_1_features_1_0_block_block_1_fc1_conv_output_0); // [2, 1, 1]
        let features_features_1_features_1_0_block_block_1_activation_mul_output_0 = features_features_1_features_1_0_block_block_1_fc1_conv_output_0 * features_features_1_features_1_0_block_block_1_activation_sigmoid_output_0; // [2, 1, 1]
        let features_features_1_features_1_0_block_block_1_fc2_conv_output_0 = self.features_1_0_block_1_fc2(features_features_1_features_1_0_block_block_1_activation_mul_output_0); // [8, 1, 1]
        let features_features_1_features_1_0_block_block_1_scale_activation_sigmoid_output_0 = sigmoid(features_features_1_features_1_0_block_block_1_fc2_conv_output_0); // [8, 1, 1]
        let features_features_1_features_1_0_block_block_1_mul_output_0 = features_features_1_features_1_0_block_block_1_scale_activation_sigmoid_output_0 * features_features_1_features_1_0_block_block_0_block_0_2_mul_output_0; // [8, 16, 16]
        let features_features_1_features_1_0_block_block_2_block_2_0_conv_output_0 = self.features_features_1_features_1_0_block_block_2_block_2_0_conv(features_features_1_features_1_0_block_block_1_mul_output_0); // [8, 16, 16]
        let features_features_1_features_1_0_add_output_0 = features_features_1_features_1_0_block_block_2_block_2_0_conv_output_0 + features_features_0_features_0_2_mul_output_0; // [8, 16, 16]
        let features_features_2_features_2_0_block_block_0_block_0_0_conv_output_0 = self.features_features_2_features_2_0_block_block_0_block_0_0_conv(features_features_1_features_1_0_add_output_0); // [48, 16, 16]
        let features_features_2_features_2_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_2_features_2_0_block_block_0_block_0_0_conv_output_0); // [48, 16, 16]
        let features_features_2_features_2_0_block_block_0_block_0_2_mul_output_0 = features_features_2_features_2_0_block_block_0_block_0_0_conv_output_0 * features_features_2_features_2_0_block_block_0_block_0_2_sigmoid_output_0; // [48, 16, 16]
        let features_features_2_features_2_0_block_block_1_block_1_0_conv_output_0 = self.features_features_2_features_2_0_block_block_1_block_1_0_conv(features_features_2_features_2_0_block_block_0_block_0_2_mul_output_0); // [48, 8, 8]
        let features_features_2_features_2_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_2_features_2_0_block_block_1_block_1_0_conv_output_0); // [48, 8, 8]
        let features_features_2_features_2_0_block_block_1_block_1_2_mul_output_0 = features_features_2_features_2_0_block_block_1_block_1_0_conv_output_0 * features_features_2_features_2_0_block_block_1_block_1_2_sigmoid_output_0; // [48, 8, 8]
        let features_features_2_features_2_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_1(features_features_2_features_2_0_block_block_1_block_1_2_mul_output_0); // [48, 1, 1]
        let features_features_2_features_2_0_block_block_2_fc1_conv_output_0 = self.features_2_0_block_2_fc1(features_features_2_features_2_0_block_block_2_avgpool_globalaveragepool_output_0); // [2, 1, 1]
        let features_features_2_features_2_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_2_features_2_0_block_block_2_fc1_conv_output_0); // [2, 1, 1]
        let features_features_2_features_2_0_block_block_2_activation_mul_output_0 = features_features_2_features_2_0_block_block_2_fc1_conv_output_0 * features_features_2_features_2_0_block_block_2_activation_sigmoid_output_0; // [2, 1, 1]
        let features_features_2_features_2_0_block_block_2_fc2_conv_output_0 = self.features_2_0_block_2_fc2(features_features_2_features_2_0_block_block_2_activation_mul_output_0); // [48, 1, 1]
        let features_features_2_features_2_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_2_features_2_0_block_block_2_fc2_conv_output_0); // [48, 1, 1]
        let features_features_2_features_2_0_block_block_2_mul_output_0 = features_features_2_features_2_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_2_features_2_0_block_block_1_block_1_2_mul_output_0; // [48, 8, 8]
        let features_features_2_features_2_0_block_block_3_block_3_0_conv_output_0 = self.features_features_2_features_2_0_block_block_3_block_3_0_conv(features_features_2_features_2_0_block_block_2_mul_output_0); // [8, 8, 8]
        let features_features_3_features_3_0_block_block_0_block_0_0_conv_output_0 = self.features_features_3_features_3_0_block_block_0_block_0_0_conv(features_features_2_features_2_0_block_block_3_block_3_0_conv_output_0); // [48, 8, 8]
        let features_features_3_features_3_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_3_features_3_0_block_block_0_block_0_0_conv_output_0); // [48, 8, 8]
        let features_features_3_features_3_0_block_block_0_block_0_2_mul_output_0 = features_features_3_features_3_0_block_block_0_block_0_0_conv_output_0 * features_features_3_features_3_0_block_block_0_block_0_2_sigmoid_output_0; // [48, 8, 8]
        let features_features_3_features_3_0_block_block_1_block_1_0_conv_output_0 = self.features_features_3_features_3_0_block_block_1_block_1_0_conv(features_features_3_features_3_0_block_block_0_block_0_2_mul_output_0); // [48, 4, 4]
        let features_features_3_features_3_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_3_features_3_0_block_block_1_block_1_0_conv_output_0); // [48, 4, 4]
        let features_features_3_features_3_0_block_block_1_block_1_2_mul_output_0 = features_features_3_features_3_0_block_block_1_block_1_0_conv_output_0 * features_features_3_features_3_0_block_block_1_block_1_2_sigmoid_output_0; // [48, 4, 4]
        let features_features_3_features_3_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_2(features_features_3_features_3_0_block_block_1_block_1_2_mul_output_0); // [48, 1, 1]
        let features_features_3_features_3_0_block_block_2_fc1_conv_output_0 = self.features_3_0_block_2_fc1(features_features_3_features_3_0_block_block_2_avgpool_globalaveragepool_output_0); // [2, 1, 1]
        let features_features_3_features_3_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_3_features_3_0_block_block_2_fc1_conv_output_0); // [2, 1, 1]
        let features_features_3_features_3_0_block_block_2_activation_mul_output_0 = features_features_3_features_3_0_block_block_2_fc1_conv_output_0 * features_features_3_features_3_0_block_block_2_activation_sigmoid_output_0; // [2, 1, 1]
        let features_features_3_features_3_0_block_block_2_fc2_conv_output_0 = self.features_3_0_block_2_fc2(features_features_3_features_3_0_block_block_2_activation_mul_output_0); // [48, 1, 1]
        let features_features_3_features_3_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_3_features_3_0_block_block_2_fc2_conv_output_0); // [48, 1, 1]
        let features_features_3_features_3_0_block_block_2_mul_output_0 = features_features_3_features_3_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_3_features_3_0_block_block_1_block_1_2_mul_output_0; // [48, 4, 4]
        let features_features_3_features_3_0_block_block_3_block_3_0_conv_output_0 = self.features_features_3_features_3_0_block_block_3_block_3_0_conv(features_features_3_features_3_0_block_block_2_mul_output_0); // [8, 4, 4]
        let features_features_4_features_4_0_block_block_0_block_0_0_conv_output_0 = self.features_features_4_features_4_0_block_block_0_block_0_0_conv(features_features_3_features_3_0_block_block_3_block_3_0_conv_output_0); // [48, 4, 4]
        let features_features_4_features_4_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_4_features_4_0_block_block_0_block_0_0_conv_output_0); // [48, 4, 4]
        let features_features_4_features_4_0_block_block_0_block_0_2_mul_output_0 = features_features_4_features_4_0_block_block_0_block_0_0_conv_output_0 * features_features_4_features_4_0_block_block_0_block_0_2_sigmoid_output_0; // [48, 4, 4]
        let features_features_4_features_4_0_block_block_1_block_1_0_conv_output_0 = self.features_features_4_features_4_0_block_block_1_block_1_0_conv(features_features_4_features_4_0_block_block_0_block_0_2_mul_output_0); // [48, 2, 2]
        let features_features_4_features_4_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_4_features_4_0_block_block_1_block_1_0_conv_output_0); // [48, 2, 2]
        let features_features_4_features_4_0_block_block_1_block_1_2_mul_output_0 = features_features_4_features_4_0_block_block_1_block_1_0_conv_output_0 * features_features_4_features_4_0_block_block_1_block_1_2_sigmoid_output_0; // [48, 2, 2]
        let features_features_4_features_4_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_3(features_features_4_features_4_0_block_block_1_block_1_2_mul_output_0); // [48, 1, 1]
        let features_features_4_features_4_0_block_block_2_fc1_conv_output_0 = self.features_4_0_block_2_fc1(features_features_4_features_4_0_block_block_2_avgpool_globalaveragepool_output_0); // [2, 1, 1]
        let features_features_4_features_4_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_4_features_4_0_block_block_2_fc1_conv_output_0); // [2, 1, 1]
        let features_features_4_features_4_0_block_block_2_activation_mul_output_0 = features_features_4_features_4_0_block_block_2_fc1_conv_output_0 * features_features_4_features_4_0_block_block_2_activation_sigmoid_output_0; // [2, 1, 1]
        let features_features_4_features_4_0_block_block_2_fc2_conv_output_0 = self.features_4_0_block_2_fc2(features_features_4_features_4_0_block_block_2_activation_mul_output_0); // [48, 1, 1]
        let features_features_4_features_4_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_4_features_4_0_block_block_2_fc2_conv_output_0); // [48, 1, 1]
        let features_features_4_features_4_0_block_block_2_mul_output_0 = features_features_4_features_4_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_4_features_4_0_block_block_1_block_1_2_mul_output_0; // [48, 2, 2]
        let features_features_4_features_4_0_block_block_3_block_3_0_conv_output_0 = self.features_features_4_features_4_0_block_block_3_block_3_0_conv(features_features_4_features_4_0_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_5_features_5_0_block_block_0_block_0_0_conv_output_0 = self.features_features_5_features_5_0_block_block_0_block_0_0_conv(features_features_4_features_4_0_block_block_3_block_3_0_conv_output_0); // [48, 2, 2]
        let features_features_5_features_5_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_5_features_5_0_block_block_0_block_0_0_conv_output_0); // [48, 2, 2]
        let features_features_5_features_5_0_block_block_0_block_0_2_mul_output_0 = features_features_5_features_5_0_block_block_0_block_0_0_conv_output_0 * features_features_5_features_5_0_block_block_0_block_0_2_sigmoid_output_0; // [48, 2, 2]
        let features_features_5_features_5_0_block_block_1_block_1_0_conv_output_0 = self.features_features_5_features_5_0_block_block_1_block_1_0_conv(features_features_5_features_5_0_block_block_0_block_0_2_mul_output_0); // [48, 2, 2]
        let features_features_5_features_5_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_5_features_5_0_block_block_1_block_1_0_conv_output_0); // [48, 2, 2]
        let features_features_5_features_5_0_block_block_1_block_1_2_mul_output_0 = features_features_5_features_5_0_block_block_1_block_1_0_conv_output_0 * features_features_5_features_5_0_block_block_1_block_1_2_sigmoid_output_0; // [48, 2, 2]
        let features_features_5_features_5_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_4(features_features_5_features_5_0_block_block_1_block_1_2_mul_output_0); // [48, 1, 1]
        let features_features_5_features_5_0_block_block_2_fc1_conv_output_0 = self.features_5_0_block_2_fc1(features_features_5_features_5_0_block_block_2_avgpool_globalaveragepool_output_0); // [2, 1, 1]
        let features_features_5_features_5_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_5_features_5_0_block_block_2_fc1_conv_output_0); // [2, 1, 1]
        let features_features_5_features_5_0_block_block_2_activation_mul_output_0 = features_features_5_features_5_0_block_block_2_fc1_conv_output_0 * features_features_5_features_5_0_block_block_2_activation_sigmoid_output_0; // [2, 1, 1]
        let features_features_5_features_5_0_block_block_2_fc2_conv_output_0 = self.features_5_0_block_2_fc2(features_features_5_features_5_0_block_block_2_activation_mul_output_0); // [48, 1, 1]
        let features_features_5_features_5_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_5_features_5_0_block_block_2_fc2_conv_output_0); // [48, 1, 1]
        let features_features_5_features_5_0_block_block_2_mul_output_0 = features_features_5_features_5_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_5_features_5_0_block_block_1_block_1_2_mul_output_0; // [48, 2, 2]
        let features_features_5_features_5_0_block_block_3_block_3_0_conv_output_0 = self.features_features_5_features_5_0_block_block_3_block_3_0_conv(features_features_5_features_5_0_block_block_2_mul_output_0); // [16, 2, 2]
        let features_features_6_features_6_0_block_block_0_block_0_0_conv_output_0 = self.features_features_6_features_6_0_block_block_0_block_0_0_conv(features_features_5_features_5_0_block_block_3_block_3_0_conv_output_0); // [96, 2, 2]
        let features_features_6_features_6_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_6_features_6_0_block_block_0_block_0_0_conv_output_0); // [96, 2, 2]
        let features_features_6_features_6_0_block_block_0_block_0_2_mul_output_0 = features_features_6_features_6_0_block_block_0_block_0_0_conv_output_0 * features_features_6_features_6_0_block_block_0_block_0_2_sigmoid_output_0; // [96, 2, 2]
        let features_features_6_features_6_0_block_block_1_block_1_0_conv_output_0 = self.features_features_6_features_6_0_block_block_1_block_1_0_conv(features_features_6_features_6_0_block_block_0_block_0_2_mul_output_0); // [96, 1, 1]
        let features_features_6_features_6_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_6_features_6_0_block_block_1_block_1_0_conv_output_0); // [96, 1, 1]
        let features_features_6_features_6_0_block_block_1_block_1_2_mul_output_0 = features_features_6_features_6_0_block_block_1_block_1_0_conv_output_0 * features_features_6_features_6_0_block_block_1_block_1_2_sigmoid_output_0; // [96, 1, 1]
        let features_features_6_features_6_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_5(features_features_6_features_6_0_block_block_1_block_1_2_mul_output_0); // [96, 1, 1]
        let features_features_6_features_6_0_block_block_2_fc1_conv_output_0 = self.features_6_0_block_2_fc1(features_features_6_features_6_0_block_block_2_avgpool_globalaveragepool_output_0); // [4, 1, 1]
        let features_features_6_features_6_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_6_features_6_0_block_block_2_fc1_conv_output_0); // [4, 1, 1]
        let features_features_6_features_6_0_block_block_2_activation_mul_output_0 = features_features_6_features_6_0_block_block_2_fc1_conv_output_0 * features_features_6_features_6_0_block_block_2_activation_sigmoid_output_0; // [4, 1, 1]
        let features_features_6_features_6_0_block_block_2_fc2_conv_output_0 = self.features_6_0_block_2_fc2(features_features_6_features_6_0_block_block_2_activation_mul_output_0); // [96, 1, 1]
        let features_features_6_features_6_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_6_features_6_0_block_block_2_fc2_conv_output_0); // [96, 1, 1]
        let features_features_6_features_6_0_block_block_2_mul_output_0 = features_features_6_features_6_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_6_features_6_0_block_block_1_block_1_2_mul_output_0; // [96, 1, 1]
        let features_features_6_features_6_0_block_block_3_block_3_0_conv_output_0 = self.features_features_6_features_6_0_block_block_3_block_3_0_conv(features_features_6_features_6_0_block_block_2_mul_output_0); // [24, 1, 1]
        let features_features_7_features_7_0_block_block_0_block_0_0_conv_output_0 = self.features_features_7_features_7_0_block_block_0_block_0_0_conv(features_features_6_features_6_0_block_block_3_block_3_0_conv_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_0_block_0_2_sigmoid_output_0 = sigmoid(features_features_7_features_7_0_block_block_0_block_0_0_conv_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_0_block_0_2_mul_output_0 = features_features_7_features_7_0_block_block_0_block_0_0_conv_output_0 * features_features_7_features_7_0_block_block_0_block_0_2_sigmoid_output_0; // [144, 1, 1]
        let features_features_7_features_7_0_block_block_1_block_1_0_conv_output_0 = self.features_features_7_features_7_0_block_block_1_block_1_0_conv(features_features_7_features_7_0_block_block_0_block_0_2_mul_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_1_block_1_2_sigmoid_output_0 = sigmoid(features_features_7_features_7_0_block_block_1_block_1_0_conv_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_1_block_1_2_mul_output_0 = features_features_7_features_7_0_block_block_1_block_1_0_conv_output_0 * features_features_7_features_7_0_block_block_1_block_1_2_sigmoid_output_0; // [144, 1, 1]
        let features_features_7_features_7_0_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_6(features_features_7_features_7_0_block_block_1_block_1_2_mul_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_2_fc1_conv_output_0 = self.features_7_0_block_2_fc1(features_features_7_features_7_0_block_block_2_avgpool_globalaveragepool_output_0); // [6, 1, 1]
        let features_features_7_features_7_0_block_block_2_activation_sigmoid_output_0 = sigmoid(features_features_7_features_7_0_block_block_2_fc1_conv_output_0); // [6, 1, 1]
        let features_features_7_features_7_0_block_block_2_activation_mul_output_0 = features_features_7_features_7_0_block_block_2_fc1_conv_output_0 * features_features_7_features_7_0_block_block_2_activation_sigmoid_output_0; // [6, 1, 1]
        let features_features_7_features_7_0_block_block_2_fc2_conv_output_0 = self.features_7_0_block_2_fc2(features_features_7_features_7_0_block_block_2_activation_mul_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_2_scale_activation_sigmoid_output_0 = sigmoid(features_features_7_features_7_0_block_block_2_fc2_conv_output_0); // [144, 1, 1]
        let features_features_7_features_7_0_block_block_2_mul_output_0 = features_features_7_features_7_0_block_block_2_scale_activation_sigmoid_output_0 * features_features_7_features_7_0_block_block_1_block_1_2_mul_output_0; // [144, 1, 1]
        let features_features_7_features_7_0_block_block_3_block_3_0_conv_output_0 = self.features_features_7_features_7_0_block_block_3_block_3_0_conv(features_features_7_features_7_0_block_block_2_mul_output_0); // [32, 1, 1]
        let features_features_8_features_8_0_conv_output_0 = self.features_features_8_features_8_0_conv(features_features_7_features_7_0_block_block_3_block_3_0_conv_output_0); // [128, 1, 1]
        let features_features_8_features_8_2_sigmoid_output_0 = sigmoid(features_features_8_features_8_0_conv_output_0); // [128, 1, 1]
        let features_features_8_features_8_2_mul_output_0 = features_features_8_features_8_0_conv_output_0 * features_features_8_features_8_2_sigmoid_output_0; // [128, 1, 1]
        let avgpool_globalaveragepool_output_0 = self.global_avg_pool_7(features_features_8_features_8_2_mul_output_0); // [128, 1, 1]
        let flatten_output_0 = avgpool_globalaveragepool_output_0.flatten(); // [128]
        self.classifier_1(flatten_output_0) // [5]
    }
}
