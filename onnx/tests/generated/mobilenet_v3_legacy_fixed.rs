// `MobilenetV3LegacyFixed`, converted by blaze-onnx from `mobilenet_v3_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct MobilenetV3LegacyFixed {
    #[layer(stride = 2, padding = 1)]
    features_features_0_features_0_0_conv: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    features_features_1_block_block_0_block_0_0_conv: Conv2d<8, 8, 3>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    features_1_block_1_fc1: Conv2d<8, 8, 1>,
    features_1_block_1_fc2: Conv2d<8, 8, 1>,
    features_features_1_block_block_2_block_2_0_conv: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    features_features_2_block_block_0_block_0_0_conv: Conv2d<8, 8, 3>,
    features_features_2_block_block_1_block_1_0_conv: Conv2d<8, 8, 1>,
    #[layer(padding = 1, groups = 8)]
    features_features_3_block_block_0_block_0_0_conv: Conv2d<8, 8, 3>,
    features_features_3_block_block_1_block_1_0_conv: Conv2d<8, 8, 1>,
    features_features_4_block_block_0_block_0_0_conv: Conv2d<8, 16, 1>,
    #[layer(stride = 2, padding = 2, groups = 16)]
    features_features_4_block_block_1_block_1_0_conv: Conv2d<16, 16, 5>,
    global_avg_pool_1: AdaptiveAvgPool2d<1, 1>,
    features_4_block_2_fc1: Conv2d<16, 8, 1>,
    features_4_block_2_fc2: Conv2d<8, 16, 1>,
    features_features_4_block_block_3_block_3_0_conv: Conv2d<16, 8, 1>,
    features_features_5_block_block_0_block_0_0_conv: Conv2d<8, 24, 1>,
    #[layer(padding = 2, groups = 24)]
    features_features_5_block_block_1_block_1_0_conv: Conv2d<24, 24, 5>,
    global_avg_pool_2: AdaptiveAvgPool2d<1, 1>,
    features_5_block_2_fc1: Conv2d<24, 8, 1>,
    features_5_block_2_fc2: Conv2d<8, 24, 1>,
    features_features_5_block_block_3_block_3_0_conv: Conv2d<24, 8, 1>,
    features_features_6_block_block_0_block_0_0_conv: Conv2d<8, 24, 1>,
    #[layer(padding = 2, groups = 24)]
    features_features_6_block_block_1_block_1_0_conv: Conv2d<24, 24, 5>,
    global_avg_pool_3: AdaptiveAvgPool2d<1, 1>,
    features_6_block_2_fc1: Conv2d<24, 8, 1>,
    features_6_block_2_fc2: Conv2d<8, 24, 1>,
    features_features_6_block_block_3_block_3_0_conv: Conv2d<24, 8, 1>,
    features_features_7_block_block_0_block_0_0_conv: Conv2d<8, 16, 1>,
    #[layer(padding = 2, groups = 16)]
    features_features_7_block_block_1_block_1_0_conv: Conv2d<16, 16, 5>,
    global_avg_pool_4: AdaptiveAvgPool2d<1, 1>,
    features_7_block_2_fc1: Conv2d<16, 8, 1>,
    features_7_block_2_fc2: Conv2d<8, 16, 1>,
    features_features_7_block_block_3_block_3_0_conv: Conv2d<16, 8, 1>,
    features_features_8_block_block_0_block_0_0_conv: Conv2d<8, 16, 1>,
    #[layer(padding = 2, groups = 16)]
    features_features_8_block_block_1_block_1_0_conv: Conv2d<16, 16, 5>,
    global_avg_pool_5: AdaptiveAvgPool2d<1, 1>,
    features_8_block_2_fc1: Conv2d<16, 8, 1>,
    features_8_block_2_fc2: Conv2d<8, 16, 1>,
    features_features_8_block_block_3_block_3_0_conv: Conv2d<16, 8, 1>,
    features_features_9_block_block_0_block_0_0_conv: Conv2d<8, 32, 1>,
    #[layer(stride = 2, padding = 2, groups = 32)]
    features_features_9_block_block_1_block_1_0_conv: Conv2d<32, 32, 5>,
    global_avg_pool_6: AdaptiveAvgPool2d<1, 1>,
    features_9_block_2_fc1: Conv2d<32, 8, 1>,
    features_9_block_2_fc2: Conv2d<8, 32, 1>,
    features_features_9_block_block_3_block_3_0_conv: Conv2d<32, 8, 1>,
    features_features_10_block_block_0_block_0_0_conv: Conv2d<8, 32, 1>,
    #[layer(padding = 2, groups = 32)]
    features_features_10_block_block_1_block_1_0_conv: Conv2d<32, 32, 5>,
    global_avg_pool_7: AdaptiveAvgPool2d<1, 1>,
    features_10_block_2_fc1: Conv2d<32, 8, 1>,
    features_10_block_2_fc2: Conv2d<8, 32, 1>,
    features_features_10_block_block_3_block_3_0_conv: Conv2d<32, 8, 1>,
    features_features_11_block_block_0_block_0_0_conv: Conv2d<8, 32, 1>,
    #[layer(padding = 2, groups = 32)]
    features_features_11_block_block_1_block_1_0_conv: Conv2d<32, 32, 5>,
    global_avg_pool_8: AdaptiveAvgPool2d<1, 1>,
    features_11_block_2_fc1: Conv2d<32, 8, 1>,
    features_11_block_2_fc2: Conv2d<8, 32, 1>,
    features_features_11_block_block_3_block_3_0_conv: Conv2d<32, 8, 1>,
    features_features_12_features_12_0_conv: Conv2d<8, 48, 1>,
    global_avg_pool_9: AdaptiveAvgPool2d<1, 1>,
    classifier_0: Linear<48, 48>,
    classifier_3: Linear<48, 5>,
}

#[model(input = [3, 32, 32])]
impl MobilenetV3LegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let features_features_0_features_0_0_conv_output_0 = self.features_features_0_features_0_0_conv(input); // [8, 16, 16]
        let features_features_0_features_0_2_hardswish_output_0 = hardswish(features_features_0_features_0_0_conv_output_0); // [8, 16, 16]
        let features_features_1_block_block_0_block_0_0_conv_output_0 = self.features_features_1_block_block_0_block_0_0_conv(features_features_0_features_0_2_hardswish_output_0); // [8, 8, 8]
        let features_features_1_block_block_0_block_0_2_relu_output_0 = relu(features_features_1_block_block_0_block_0_0_conv_output_0); // [8, 8, 8]
        let features_features_1_block_block_1_avgpool_globalaveragepool_output_0 = self.global_avg_pool(features_features_1_block_block_0_block_0_2_relu_output_0); // [8, 1, 1]
        let features_features_1_block_block_1_fc1_conv_output_0 = self.features_1_block_1_fc1(features_features_1_block_block_1_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_1_block_block_1_activation_relu_output_0 = relu(features_features_1_block_block_1_fc1_conv_output_0); // [8, 1, 1]
        let features_features_1_block_block_1_fc2_conv_output_0 = self.features_1_block_1_fc2(features_features_1_block_block_1_activation_relu_output_0); // [8, 1, 1]
        let features_features_1_block_block_1_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_1_block_block_1_fc2_conv_output_0); // [8, 1, 1]
        let features_features_1_block_block_1_mul_output_0 = features_features_1_block_block_1_scale_activation_hardsigmoid_output_0 * features_features_1_block_block_0_block_0_2_relu_output_0; // [8, 8, 8]
        let features_features_1_block_block_2_block_2_0_conv_output_0 = self.features_features_1_block_block_2_block_2_0_conv(features_features_1_block_block_1_mul_output_0); // [8, 8, 8]
        let features_features_2_block_block_0_block_0_0_conv_output_0 = self.features_features_2_block_block_0_block_0_0_conv(features_features_1_block_block_2_block_2_0_conv_output_0); // [8, 4, 4]
        let features_features_2_block_block_0_block_0_2_relu_output_0 = relu(features_features_2_block_block_0_block_0_0_conv_output_0); // [8, 4, 4]
        let features_features_2_block_block_1_block_1_0_conv_output_0 = self.features_features_2_block_block_1_block_1_0_conv(features_features_2_block_block_0_block_0_2_relu_output_0); // [8, 4, 4]
        let features_features_3_block_block_0_block_0_0_conv_output_0 = self.features_features_3_block_block_0_block_0_0_conv(features_features_2_block_block_1_block_1_0_conv_output_0); // [8, 4, 4]
        let features_features_3_block_block_0_block_0_2_relu_output_0 = relu(features_features_3_block_block_0_block_0_0_conv_output_0); // [8, 4, 4]
        let features_features_3_block_block_1_block_1_0_conv_output_0 = self.features_features_3_block_block_1_block_1_0_conv(features_features_3_block_block_0_block_0_2_relu_output_0); // [8, 4, 4]
        let features_features_3_add_output_0 = features_features_3_block_block_1_block_1_0_conv_output_0 + features_features_2_block_block_1_block_1_0_conv_output_0; // [8, 4, 4]
        let features_features_4_block_block_0_block_0_0_conv_output_0 = self.features_features_4_block_block_0_block_0_0_conv(features_features_3_add_output_0); // [16, 4, 4]
        let features_features_4_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_4_block_block_0_block_0_0_conv_output_0); // [16, 4, 4]
        let features_features_4_block_block_1_block_1_0_conv_output_0 = self.features_features_4_block_block_1_block_1_0_conv(features_features_4_block_block_0_block_0_2_hardswish_output_0); // [16, 2, 2]
        let features_features_4_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_4_block_block_1_block_1_0_conv_output_0); // [16, 2, 2]
        let features_features_4_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_1(features_features_4_block_block_1_block_1_2_hardswish_output_0); // [16, 1, 1]
        let features_features_4_block_block_2_fc1_conv_output_0 = self.features_4_block_2_fc1(features_features_4_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_4_block_block_2_activation_relu_output_0 = relu(features_features_4_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_4_block_block_2_fc2_conv_output_0 = self.features_4_block_2_fc2(features_features_4_block_block_2_activation_relu_output_0); // [16, 1, 1]
        let features_features_4_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_4_block_block_2_fc2_conv_output_0); // [16, 1, 1]
        let features_features_4_block_block_2_mul_output_0 = features_features_4_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_4_block_block_1_block_1_2_hardswish_output_0; // [16, 2, 2]
        let features_features_4_block_block_3_block_3_0_conv_output_0 = self.features_features_4_block_block_3_block_3_0_conv(features_features_4_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_5_block_block_0_block_0_0_conv_output_0 = self.features_features_5_block_block_0_block_0_0_conv(features_features_4_block_block_3_block_3_0_conv_output_0); // [24, 2, 2]
        let features_features_5_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_5_block_block_0_block_0_0_conv_output_0); // [24, 2, 2]
        let features_features_5_block_block_1_block_1_0_conv_output_0 = self.features_features_5_block_block_1_block_1_0_conv(features_features_5_block_block_0_block_0_2_hardswish_output_0); // [24, 2, 2]
        let features_features_5_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_5_block_block_1_block_1_0_conv_output_0); // [24, 2, 2]
        let features_features_5_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_2(features_features_5_block_block_1_block_1_2_hardswish_output_0); // [24, 1, 1]
        let features_features_5_block_block_2_fc1_conv_output_0 = self.features_5_block_2_fc1(features_features_5_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_5_block_block_2_activation_relu_output_0 = relu(features_features_5_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_5_block_block_2_fc2_conv_output_0 = self.features_5_block_2_fc2(features_features_5_block_block_2_activation_relu_output_0); // [24, 1, 1]
        let features_features_5_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_5_block_block_2_fc2_conv_output_0); // [24, 1, 1]
        let features_features_5_block_block_2_mul_output_0 = features_features_5_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_5_block_block_1_block_1_2_hardswish_output_0; // [24, 2, 2]
        let features_features_5_block_block_3_block_3_0_conv_output_0 = self.features_features_5_block_block_3_block_3_0_conv(features_features_5_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_5_add_output_0 = features_features_5_block_block_3_block_3_0_conv_output_0 + features_features_4_block_block_3_block_3_0_conv_output_0; // [8, 2, 2]
        let features_features_6_block_block_0_block_0_0_conv_output_0 = self.features_features_6_block_block_0_block_0_0_conv(features_features_5_add_output_0); // [24, 2, 2]
        let features_features_6_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_6_block_block_0_block_0_0_conv_output_0); // [24, 2, 2]
        let features_features_6_block_block_1_block_1_0_conv_output_0 = self.features_features_6_block_block_1_block_1_0_conv(features_features_6_block_block_0_block_0_2_hardswish_output_0); // [24, 2, 2]
        let features_features_6_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_6_block_block_1_block_1_0_conv_output_0); // [24, 2, 2]
        let features_features_6_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_3(features_features_6_block_block_1_block_1_2_hardswish_output_0); // [24, 1, 1]
        let features_features_6_block_block_2_fc1_conv_output_0 = self.features_6_block_2_fc1(features_features_6_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_6_block_block_2_activation_relu_output_0 = relu(features_features_6_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_6_block_block_2_fc2_conv_output_0 = self.features_6_block_2_fc2(features_features_6_block_block_2_activation_relu_output_0); // [24, 1, 1]
        let features_features_6_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_6_block_block_2_fc2_conv_output_0); // [24, 1, 1]
        let features_features_6_block_block_2_mul_output_0 = features_features_6_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_6_block_block_1_block_1_2_hardswish_output_0; // [24, 2, 2]
        let features_features_6_block_block_3_block_3_0_conv_output_0 = self.features_features_6_block_block_3_block_3_0_conv(features_features_6_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_6_add_output_0 = features_features_6_block_block_3_block_3_0_conv_output_0 + features_features_5_add_output_0; // [8, 2, 2]
        let features_features_7_block_block_0_block_0_0_conv_output_0 = self.features_features_7_block_block_0_block_0_0_conv(features_features_6_add_output_0); // [16, 2, 2]
        let features_features_7_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_7_block_block_0_block_0_0_conv_output_0); // [16, 2, 2]
        let features_features_7_block_block_1_block_1_0_conv_output_0 = self.features_features_7_block_block_1_block_1_0_conv(features_features_7_block_block_0_block_0_2_hardswish_output_0); // [16, 2, 2]
        let features_features_7_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_7_block_block_1_block_1_0_conv_output_0); // [16, 2, 2]
        let features_features_7_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_4(features_features_7_block_block_1_block_1_2_hardswish_output_0); // [16, 1, 1]
        let features_features_7_block_block_2_fc1_conv_output_0 = self.features_7_block_2_fc1(features_features_7_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_7_block_block_2_activation_relu_output_0 = relu(features_features_7_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_7_block_block_2_fc2_conv_output_0 = self.features_7_block_2_fc2(features_features_7_block_block_2_activation_relu_output_0); // [16, 1, 1]
        let features_features_7_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_7_block_block_2_fc2_conv_output_0); // [16, 1, 1]
        let features_features_7_block_block_2_mul_output_0 = features_features_7_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_7_block_block_1_block_1_2_hardswish_output_0; // [16, 2, 2]
        let features_features_7_block_block_3_block_3_0_conv_output_0 = self.features_features_7_block_block_3_block_3_0_conv(features_features_7_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_7_add_output_0 = features_features_7_block_block_3_block_3_0_conv_output_0 + features_features_6_add_output_0; // [8, 2, 2]
        let features_features_8_block_block_0_block_0_0_conv_output_0 = self.features_features_8_block_block_0_block_0_0_conv(features_features_7_add_output_0); // [16, 2, 2]
        let features_features_8_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_8_block_block_0_block_0_0_conv_output_0); // [16, 2, 2]
        let features_features_8_block_block_1_block_1_0_conv_output_0 = self.features_features_8_block_block_1_block_1_0_conv(features_features_8_block_block_0_block_0_2_hardswish_output_0); // [16, 2, 2]
        let features_features_8_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_8_block_block_1_block_1_0_conv_output_0); // [16, 2, 2]
        let features_features_8_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_5(features_features_8_block_block_1_block_1_2_hardswish_output_0); // [16, 1, 1]
        let features_features_8_block_block_2_fc1_conv_output_0 = self.features_8_block_2_fc1(features_features_8_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_8_block_block_2_activation_relu_output_0 = relu(features_features_8_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_8_block_block_2_fc2_conv_output_0 = self.features_8_block_2_fc2(features_features_8_block_block_2_activation_relu_output_0); // [16, 1, 1]
        let features_features_8_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_8_block_block_2_fc2_conv_output_0); // [16, 1, 1]
        let features_features_8_block_block_2_mul_output_0 = features_features_8_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_8_block_block_1_block_1_2_hardswish_output_0; // [16, 2, 2]
        let features_features_8_block_block_3_block_3_0_conv_output_0 = self.features_features_8_block_block_3_block_3_0_conv(features_features_8_block_block_2_mul_output_0); // [8, 2, 2]
        let features_features_8_add_output_0 = features_features_8_block_block_3_block_3_0_conv_output_0 + features_features_7_add_output_0; // [8, 2, 2]
        let features_features_9_block_block_0_block_0_0_conv_output_0 = self.features_features_9_block_block_0_block_0_0_conv(features_features_8_add_output_0); // [32, 2, 2]
        let features_features_9_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_9_block_block_0_block_0_0_conv_output_0); // [32, 2, 2]
        let features_features_9_block_block_1_block_1_0_conv_output_0 = self.features_features_9_block_block_1_block_1_0_conv(features_features_9_block_block_0_block_0_2_hardswish_output_0); // [32, 1, 1]
        let features_features_9_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_9_block_block_1_block_1_0_conv_output_0); // [32, 1, 1]
        let features_features_9_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_6(features_features_9_block_block_1_block_1_2_hardswish_output_0); // [32, 1, 1]
        let features_features_9_block_block_2_fc1_conv_output_0 = self.features_9_block_2_fc1(features_features_9_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_9_block_block_2_activation_relu_output_0 = relu(features_features_9_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_9_block_block_2_fc2_conv_output_0 = self.features_9_block_2_fc2(features_features_9_block_block_2_activation_relu_output_0); // [32, 1, 1]
        let features_features_9_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_9_block_block_2_fc2_conv_output_0); // [32, 1, 1]
        let features_features_9_block_block_2_mul_output_0 = features_features_9_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_9_block_block_1_block_1_2_hardswish_output_0; // [32, 1, 1]
        let features_features_9_block_block_3_block_3_0_conv_output_0 = self.features_features_9_block_block_3_block_3_0_conv(features_features_9_block_block_2_mul_output_0); // [8, 1, 1]
        let features_features_10_block_block_0_block_0_0_conv_output_0 = self.features_features_10_block_block_0_block_0_0_conv(features_features_9_block_block_3_block_3_0_conv_output_0); // [32, 1, 1]
        let features_features_10_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_10_block_block_0_block_0_0_conv_output_0); // [32, 1, 1]
        let features_features_10_block_block_1_block_1_0_conv_output_0 = self.features_features_10_block_block_1_block_1_0_conv(features_features_10_block_block_0_block_0_2_hardswish_output_0); // [32, 1, 1]
        let features_features_10_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_10_block_block_1_block_1_0_conv_output_0); // [32, 1, 1]
        let features_features_10_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_7(features_features_10_block_block_1_block_1_2_hardswish_output_0); // [32, 1, 1]
        let features_features_10_block_block_2_fc1_conv_output_0 = self.features_10_block_2_fc1(features_features_10_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_10_block_block_2_activation_relu_output_0 = relu(features_features_10_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_10_block_block_2_fc2_conv_output_0 = self.features_10_block_2_fc2(features_features_10_block_block_2_activation_relu_output_0); // [32, 1, 1]
        let features_features_10_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_10_block_block_2_fc2_conv_output_0); // [32, 1, 1]
        let features_features_10_block_block_2_mul_output_0 = features_features_10_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_10_block_block_1_block_1_2_hardswish_output_0; // [32, 1, 1]
        let features_features_10_block_block_3_block_3_0_conv_output_0 = self.features_features_10_block_block_3_block_3_0_conv(features_features_10_block_block_2_mul_output_0); // [8, 1, 1]
        let features_features_10_add_output_0 = features_features_10_block_block_3_block_3_0_conv_output_0 + features_features_9_block_block_3_block_3_0_conv_output_0; // [8, 1, 1]
        let features_features_11_block_block_0_block_0_0_conv_output_0 = self.features_features_11_block_block_0_block_0_0_conv(features_features_10_add_output_0); // [32, 1, 1]
        let features_features_11_block_block_0_block_0_2_hardswish_output_0 = hardswish(features_features_11_block_block_0_block_0_0_conv_output_0); // [32, 1, 1]
        let features_features_11_block_block_1_block_1_0_conv_output_0 = self.features_features_11_block_block_1_block_1_0_conv(features_features_11_block_block_0_block_0_2_hardswish_output_0); // [32, 1, 1]
        let features_features_11_block_block_1_block_1_2_hardswish_output_0 = hardswish(features_features_11_block_block_1_block_1_0_conv_output_0); // [32, 1, 1]
        let features_features_11_block_block_2_avgpool_globalaveragepool_output_0 = self.global_avg_pool_8(features_features_11_block_block_1_block_1_2_hardswish_output_0); // [32, 1, 1]
        let features_features_11_block_block_2_fc1_conv_output_0 = self.features_11_block_2_fc1(features_features_11_block_block_2_avgpool_globalaveragepool_output_0); // [8, 1, 1]
        let features_features_11_block_block_2_activation_relu_output_0 = relu(features_features_11_block_block_2_fc1_conv_output_0); // [8, 1, 1]
        let features_features_11_block_block_2_fc2_conv_output_0 = self.features_11_block_2_fc2(features_features_11_block_block_2_activation_relu_output_0); // [32, 1, 1]
        let features_features_11_block_block_2_scale_activation_hardsigmoid_output_0 = hardsigmoid(features_features_11_block_block_2_fc2_conv_output_0); // [32, 1, 1]
        let features_features_11_block_block_2_mul_output_0 = features_features_11_block_block_2_scale_activation_hardsigmoid_output_0 * features_features_11_block_block_1_block_1_2_hardswish_output_0; // [32, 1, 1]
        let features_features_11_block_block_3_block_3_0_conv_output_0 = self.features_features_11_block_block_3_block_3_0_conv(features_features_11_block_block_2_mul_output_0); // [8, 1, 1]
        let features_features_11_add_output_0 = features_features_11_block_block_3_block_3_0_conv_output_0 + features_features_10_add_output_0; // [8, 1, 1]
        let features_features_12_features_12_0_conv_output_0 = self.features_features_12_features_12_0_conv(features_features_11_add_output_0); // [48, 1, 1]
        let features_features_12_features_12_2_hardswish_output_0 = hardswish(features_features_12_features_12_0_conv_output_0); // [48, 1, 1]
        let avgpool_globalaveragepool_output_0 = self.global_avg_pool_9(features_features_12_features_12_2_hardswish_output_0); // [48, 1, 1]
        let flatten_output_0 = avgpool_globalaveragepool_output_0.flatten(); // [48]
        let classifier_classifier_0_gemm_output_0 = self.classifier_0(flatten_output_0); // [48]
        let classifier_classifier_1_hardswish_output_0 = hardswish(classifier_classifier_0_gemm_output_0); // [48]
        self.classifier_3(classifier_classifier_1_hardswish_output_0) // [5]
    }
}
