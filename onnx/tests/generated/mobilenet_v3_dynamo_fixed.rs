// `MobilenetV3DynamoFixed`, converted by blaze-onnx from `mobilenet_v3_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct MobilenetV3DynamoFixed {
    #[layer(stride = 2, padding = 1)]
    features_0_0: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    features_1_block_0_0: Conv2d<8, 8, 3>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    features_1_block_1_fc1: Conv2d<8, 8, 1>,
    features_1_block_1_fc2: Conv2d<8, 8, 1>,
    features_1_block_2_0: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    features_2_block_0_0: Conv2d<8, 8, 3>,
    features_2_block_1_0: Conv2d<8, 8, 1>,
    #[layer(padding = 1, groups = 8)]
    features_3_block_0_0: Conv2d<8, 8, 3>,
    features_3_block_1_0: Conv2d<8, 8, 1>,
    features_4_block_0_0: Conv2d<8, 16, 1>,
    #[layer(stride = 2, padding = 2, groups = 16)]
    features_4_block_1_0: Conv2d<16, 16, 5>,
    avg_pool_1: AdaptiveAvgPool2d<1, 1>,
    features_4_block_2_fc1: Conv2d<16, 8, 1>,
    features_4_block_2_fc2: Conv2d<8, 16, 1>,
    features_4_block_3_0: Conv2d<16, 8, 1>,
    features_5_block_0_0: Conv2d<8, 24, 1>,
    #[layer(padding = 2, groups = 24)]
    features_5_block_1_0: Conv2d<24, 24, 5>,
    avg_pool_2: AdaptiveAvgPool2d<1, 1>,
    features_5_block_2_fc1: Conv2d<24, 8, 1>,
    features_5_block_2_fc2: Conv2d<8, 24, 1>,
    features_5_block_3_0: Conv2d<24, 8, 1>,
    features_6_block_0_0: Conv2d<8, 24, 1>,
    #[layer(padding = 2, groups = 24)]
    features_6_block_1_0: Conv2d<24, 24, 5>,
    avg_pool_3: AdaptiveAvgPool2d<1, 1>,
    features_6_block_2_fc1: Conv2d<24, 8, 1>,
    features_6_block_2_fc2: Conv2d<8, 24, 1>,
    features_6_block_3_0: Conv2d<24, 8, 1>,
    features_7_block_0_0: Conv2d<8, 16, 1>,
    #[layer(padding = 2, groups = 16)]
    features_7_block_1_0: Conv2d<16, 16, 5>,
    avg_pool_4: AdaptiveAvgPool2d<1, 1>,
    features_7_block_2_fc1: Conv2d<16, 8, 1>,
    features_7_block_2_fc2: Conv2d<8, 16, 1>,
    features_7_block_3_0: Conv2d<16, 8, 1>,
    features_8_block_0_0: Conv2d<8, 16, 1>,
    #[layer(padding = 2, groups = 16)]
    features_8_block_1_0: Conv2d<16, 16, 5>,
    avg_pool_5: AdaptiveAvgPool2d<1, 1>,
    features_8_block_2_fc1: Conv2d<16, 8, 1>,
    features_8_block_2_fc2: Conv2d<8, 16, 1>,
    features_8_block_3_0: Conv2d<16, 8, 1>,
    features_9_block_0_0: Conv2d<8, 32, 1>,
    #[layer(stride = 2, padding = 2, groups = 32)]
    features_9_block_1_0: Conv2d<32, 32, 5>,
    avg_pool_6: AdaptiveAvgPool2d<1, 1>,
    features_9_block_2_fc1: Conv2d<32, 8, 1>,
    features_9_block_2_fc2: Conv2d<8, 32, 1>,
    features_9_block_3_0: Conv2d<32, 8, 1>,
    features_10_block_0_0: Conv2d<8, 32, 1>,
    #[layer(padding = 2, groups = 32)]
    features_10_block_1_0: Conv2d<32, 32, 5>,
    avg_pool_7: AdaptiveAvgPool2d<1, 1>,
    features_10_block_2_fc1: Conv2d<32, 8, 1>,
    features_10_block_2_fc2: Conv2d<8, 32, 1>,
    features_10_block_3_0: Conv2d<32, 8, 1>,
    features_11_block_0_0: Conv2d<8, 32, 1>,
    #[layer(padding = 2, groups = 32)]
    features_11_block_1_0: Conv2d<32, 32, 5>,
    avg_pool_8: AdaptiveAvgPool2d<1, 1>,
    features_11_block_2_fc1: Conv2d<32, 8, 1>,
    features_11_block_2_fc2: Conv2d<8, 32, 1>,
    features_11_block_3_0: Conv2d<32, 8, 1>,
    features_12_0: Conv2d<8, 48, 1>,
    avg_pool_9: AdaptiveAvgPool2d<1, 1>,
    classifier_0: Linear<48, 48>,
    classifier_3: Linear<48, 5>,
}

#[model(input = [3, 32, 32])]
impl MobilenetV3DynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.features_0_0(input); // [8, 16, 16]
        let hardswish_out = hardswish(getitem); // [8, 16, 16]
        let getitem_3 = self.features_1_block_0_0(hardswish_out); // [8, 8, 8]
        let relu_out = relu(getitem_3); // [8, 8, 8]
        let mean = self.avg_pool(relu_out); // [8, 1, 1]
        let conv2d_2 = self.features_1_block_1_fc1(mean); // [8, 1, 1]
        let relu_1 = relu(conv2d_2); // [8, 1, 1]
        let conv2d_3 = self.features_1_block_1_fc2(relu_1); // [8, 1, 1]
        let hardsigmoid_out = hardsigmoid(conv2d_3); // [8, 1, 1]
        let mul = hardsigmoid_out * relu_out; // [8, 8, 8]
        let getitem_6 = self.features_1_block_2_0(mul); // [8, 8, 8]
        let getitem_9 = self.features_2_block_0_0(getitem_6); // [8, 4, 4]
        let relu_2 = relu(getitem_9); // [8, 4, 4]
        let getitem_12 = self.features_2_block_1_0(relu_2); // [8, 4, 4]
        let getitem_15 = self.features_3_block_0_0(getitem_12); // [8, 4, 4]
        let relu_3 = relu(getitem_15); // [8, 4, 4]
        let getitem_18 = self.features_3_block_1_0(relu_3); // [8, 4, 4]
        let add = getitem_18 + getitem_12; // [8, 4, 4]
        let getitem_21 = self.features_4_block_0_0(add); // [16, 4, 4]
        let hardswish_1 = hardswish(getitem_21); // [16, 4, 4]
        let getitem_24 = self.features_4_block_1_0(hardswish_1); // [16, 2, 2]
        let hardswish_2 = hardswish(getitem_24); // [16, 2, 2]
        let mean_1 = self.avg_pool_1(hardswish_2); // [16, 1, 1]
        let conv2d_11 = self.features_4_block_2_fc1(mean_1); // [8, 1, 1]
        let relu_4 = relu(conv2d_11); // [8, 1, 1]
        let conv2d_12 = self.features_4_block_2_fc2(relu_4); // [16, 1, 1]
        let hardsigmoid_1 = hardsigmoid(conv2d_12); // [16, 1, 1]
        let mul_1 = hardsigmoid_1 * hardswish_2; // [16, 2, 2]
        let getitem_27 = self.features_4_block_3_0(mul_1); // [8, 2, 2]
        let getitem_30 = self.features_5_block_0_0(getitem_27); // [24, 2, 2]
        let hardswish_3 = hardswish(getitem_30); // [24, 2, 2]
        let getitem_33 = self.features_5_block_1_0(hardswish_3); // [24, 2, 2]
        let hardswish_4 = hardswish(getitem_33); // [24, 2, 2]
        let mean_2 = self.avg_pool_2(hardswish_4); // [24, 1, 1]
        let conv2d_16 = self.features_5_block_2_fc1(mean_2); // [8, 1, 1]
        let relu_5 = relu(conv2d_16); // [8, 1, 1]
        let conv2d_17 = self.features_5_block_2_fc2(relu_5); // [24, 1, 1]
        let hardsigmoid_2 = hardsigmoid(conv2d_17); // [24, 1, 1]
        let mul_2 = hardsigmoid_2 * hardswish_4; // [24, 2, 2]
        let getitem_36 = self.features_5_block_3_0(mul_2); // [8, 2, 2]
        let add_1 = getitem_36 + getitem_27; // [8, 2, 2]
        let getitem_39 = self.features_6_block_0_0(add_1); // [24, 2, 2]
        let hardswish_5 = hardswish(getitem_39); // [24, 2, 2]
        let getitem_42 = self.features_6_block_1_0(hardswish_5); // [24, 2, 2]
        let hardswish_6 = hardswish(getitem_42); // [24, 2, 2]
        let mean_3 = self.avg_pool_3(hardswish_6); // [24, 1, 1]
        let conv2d_21 = self.features_6_block_2_fc1(mean_3); // [8, 1, 1]
        let relu_6 = relu(conv2d_21); // [8, 1, 1]
        let conv2d_22 = self.features_6_block_2_fc2(relu_6); // [24, 1, 1]
        let hardsigmoid_3 = hardsigmoid(conv2d_22); // [24, 1, 1]
        let mul_3 = hardsigmoid_3 * hardswish_6; // [24, 2, 2]
        let getitem_45 = self.features_6_block_3_0(mul_3); // [8, 2, 2]
        let add_2 = getitem_45 + add_1; // [8, 2, 2]
        let getitem_48 = self.features_7_block_0_0(add_2); // [16, 2, 2]
        let hardswish_7 = hardswish(getitem_48); // [16, 2, 2]
        let getitem_51 = self.features_7_block_1_0(hardswish_7); // [16, 2, 2]
        let hardswish_8 = hardswish(getitem_51); // [16, 2, 2]
        let mean_4 = self.avg_pool_4(hardswish_8); // [16, 1, 1]
        let conv2d_26 = self.features_7_block_2_fc1(mean_4); // [8, 1, 1]
        let relu_7 = relu(conv2d_26); // [8, 1, 1]
        let conv2d_27 = self.features_7_block_2_fc2(relu_7); // [16, 1, 1]
        let hardsigmoid_4 = hardsigmoid(conv2d_27); // [16, 1, 1]
        let mul_4 = hardsigmoid_4 * hardswish_8; // [16, 2, 2]
        let getitem_54 = self.features_7_block_3_0(mul_4); // [8, 2, 2]
        let add_3 = getitem_54 + add_2; // [8, 2, 2]
        let getitem_57 = self.features_8_block_0_0(add_3); // [16, 2, 2]
        let hardswish_9 = hardswish(getitem_57); // [16, 2, 2]
        let getitem_60 = self.features_8_block_1_0(hardswish_9); // [16, 2, 2]
        let hardswish_10 = hardswish(getitem_60); // [16, 2, 2]
        let mean_5 = self.avg_pool_5(hardswish_10); // [16, 1, 1]
        let conv2d_31 = self.features_8_block_2_fc1(mean_5); // [8, 1, 1]
        let relu_8 = relu(conv2d_31); // [8, 1, 1]
        let conv2d_32 = self.features_8_block_2_fc2(relu_8); // [16, 1, 1]
        let hardsigmoid_5 = hardsigmoid(conv2d_32); // [16, 1, 1]
        let mul_5 = hardsigmoid_5 * hardswish_10; // [16, 2, 2]
        let getitem_63 = self.features_8_block_3_0(mul_5); // [8, 2, 2]
        let add_4 = getitem_63 + add_3; // [8, 2, 2]
        let getitem_66 = self.features_9_block_0_0(add_4); // [32, 2, 2]
        let hardswish_11 = hardswish(getitem_66); // [32, 2, 2]
        let getitem_69 = self.features_9_block_1_0(hardswish_11); // [32, 1, 1]
        let hardswish_12 = hardswish(getitem_69); // [32, 1, 1]
        let mean_6 = self.avg_pool_6(hardswish_12); // [32, 1, 1]
        let conv2d_36 = self.features_9_block_2_fc1(mean_6); // [8, 1, 1]
        let relu_9 = relu(conv2d_36); // [8, 1, 1]
        let conv2d_37 = self.features_9_block_2_fc2(relu_9); // [32, 1, 1]
        let hardsigmoid_6 = hardsigmoid(conv2d_37); // [32, 1, 1]
        let mul_6 = hardsigmoid_6 * hardswish_12; // [32, 1, 1]
        let getitem_72 = self.features_9_block_3_0(mul_6); // [8, 1, 1]
        let getitem_75 = self.features_10_block_0_0(getitem_72); // [32, 1, 1]
        let hardswish_13 = hardswish(getitem_75); // [32, 1, 1]
        let getitem_78 = self.features_10_block_1_0(hardswish_13); // [32, 1, 1]
        let hardswish_14 = hardswish(getitem_78); // [32, 1, 1]
        let mean_7 = self.avg_pool_7(hardswish_14); // [32, 1, 1]
        let conv2d_41 = self.features_10_block_2_fc1(mean_7); // [8, 1, 1]
        let relu_10 = relu(conv2d_41); // [8, 1, 1]
        let conv2d_42 = self.features_10_block_2_fc2(relu_10); // [32, 1, 1]
        let hardsigmoid_7 = hardsigmoid(conv2d_42); // [32, 1, 1]
        let mul_7 = hardsigmoid_7 * hardswish_14; // [32, 1, 1]
        let getitem_81 = self.features_10_block_3_0(mul_7); // [8, 1, 1]
        let add_5 = getitem_81 + getitem_72; // [8, 1, 1]
        let getitem_84 = self.features_11_block_0_0(add_5); // [32, 1, 1]
        let hardswish_15 = hardswish(getitem_84); // [32, 1, 1]
        let getitem_87 = self.features_11_block_1_0(hardswish_15); // [32, 1, 1]
        let hardswish_16 = hardswish(getitem_87); // [32, 1, 1]
        let mean_8 = self.avg_pool_8(hardswish_16); // [32, 1, 1]
        let conv2d_46 = self.features_11_block_2_fc1(mean_8); // [8, 1, 1]
        let relu_11 = relu(conv2d_46); // [8, 1, 1]
        let conv2d_47 = self.features_11_block_2_fc2(relu_11); // [32, 1, 1]
        let hardsigmoid_8 = hardsigmoid(conv2d_47); // [32, 1, 1]
        let mul_8 = hardsigmoid_8 * hardswish_16; // [32, 1, 1]
        let getitem_90 = self.features_11_block_3_0(mul_8); // [8, 1, 1]
        let add_6 = getitem_90 + add_5; // [8, 1, 1]
        let getitem_93 = self.features_12_0(add_6); // [48, 1, 1]
        let hardswish_17 = hardswish(getitem_93); // [48, 1, 1]
        let mean_9 = self.avg_pool_9(hardswish_17); // [48, 1, 1]
        let view = mean_9.flatten(); // [48]
        let linear = self.classifier_0(view); // [48]
        let hardswish_18 = hardswish(linear); // [48]
        self.classifier_3(hardswish_18) // [5]
    }
}
