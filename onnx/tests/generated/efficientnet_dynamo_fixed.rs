// `EfficientnetDynamoFixed`, converted by blaze-onnx from `efficientnet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct EfficientnetDynamoFixed {
    #[layer(stride = 2, padding = 1)]
    features_0_0: Conv2d<3, 8, 3>,
    #[layer(padding = 1, groups = 8)]
    features_1_0_block_0_0: Conv2d<8, 8, 3>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    features_1_0_block_1_fc1: Conv2d<8, 2, 1>,
    features_1_0_block_1_fc2: Conv2d<2, 8, 1>,
    features_1_0_block_2_0: Conv2d<8, 8, 1>,
    features_2_0_block_0_0: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_2_0_block_1_0: Conv2d<48, 48, 3>,
    avg_pool_1: AdaptiveAvgPool2d<1, 1>,
    features_2_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_2_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_2_0_block_3_0: Conv2d<48, 8, 1>,
    features_3_0_block_0_0: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 2, groups = 48)]
    features_3_0_block_1_0: Conv2d<48, 48, 5>,
    avg_pool_2: AdaptiveAvgPool2d<1, 1>,
    features_3_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_3_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_3_0_block_3_0: Conv2d<48, 8, 1>,
    features_4_0_block_0_0: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_4_0_block_1_0: Conv2d<48, 48, 3>,
    avg_pool_3: AdaptiveAvgPool2d<1, 1>,
    features_4_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_4_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_4_0_block_3_0: Conv2d<48, 8, 1>,
    features_5_0_block_0_0: Conv2d<8, 48, 1>,
    #[layer(padding = 2, groups = 48)]
    features_5_0_block_1_0: Conv2d<48, 48, 5>,
    avg_pool_4: AdaptiveAvgPool2d<1, 1>,
    features_5_0_block_2_fc1: Conv2d<48, 2, 1>,
    features_5_0_block_2_fc2: Conv2d<2, 48, 1>,
    features_5_0_block_3_0: Conv2d<48, 16, 1>,
    features_6_0_block_0_0: Conv2d<16, 96, 1>,
    #[layer(stride = 2, padding = 2, groups = 96)]
    features_6_0_block_1_0: Conv2d<96, 96, 5>,
    avg_pool_5: AdaptiveAvgPool2d<1, 1>,
    features_6_0_block_2_fc1: Conv2d<96, 4, 1>,
    features_6_0_block_2_fc2: Conv2d<4, 96, 1>,
    features_6_0_block_3_0: Conv2d<96, 24, 1>,
    features_7_0_block_0_0: Conv2d<24, 144, 1>,
    #[layer(padding = 1, groups = 144)]
    features_7_0_block_1_0: Conv2d<144, 144, 3>,
    avg_pool_6: AdaptiveAvgPool2d<1, 1>,
    features_7_0_block_2_fc1: Conv2d<144, 6, 1>,
    features_7_0_block_2_fc2: Conv2d<6, 144, 1>,
    features_7_0_block_3_0: Conv2d<144, 32, 1>,
    features_8_0: Conv2d<32, 128, 1>,
    avg_pool_7: AdaptiveAvgPool2d<1, 1>,
    classifier_1: Linear<128, 5>,
}

#[model(input = [3, 32, 32])]
impl EfficientnetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.features_0_0(input); // [8, 16, 16]
        let val_14 = sigmoid(getitem); // [8, 16, 16]
        let silu = getitem * val_14; // [8, 16, 16]
        let getitem_3 = self.features_1_0_block_0_0(silu); // [8, 16, 16]
        let val_26 = sigmoid(getitem_3); // [8, 16, 16]
        let silu_1 = getitem_3 * val_26; // [8, 16, 16]
        let mean = self.avg_pool(silu_1); // [8, 1, 1]
        let conv2d_2 = self.features_1_0_block_1_fc1(mean); // [2, 1, 1]
        let val_30 = sigmoid(conv2d_2); // [2, 1, 1]
        let silu_2 = conv2d_2 * val_30; // [2, 1, 1]
        let conv2d_3 = self.features_1_0_block_1_fc2(silu_2); // [8, 1, 1]
        let sigmoid_out = sigmoid(conv2d_3); // [8, 1, 1]
        let mul = sigmoid_out * silu_1; // [8, 16, 16]
        let getitem_6 = self.features_1_0_block_2_0(mul); // [8, 16, 16]
        let add = getitem_6 + silu; // [8, 16, 16]
        let getitem_9 = self.features_2_0_block_0_0(add); // [48, 16, 16]
        let val_53 = sigmoid(getitem_9); // [48, 16, 16]
        let silu_3 = getitem_9 * val_53; // [48, 16, 16]
        let getitem_12 = self.features_2_0_block_1_0(silu_3); // [48, 8, 8]
        let val_65 = sigmoid(getitem_12); // [48, 8, 8]
        let silu_4 = getitem_12 * val_65; // [48, 8, 8]
        let mean_1 = self.avg_pool_1(silu_4); // [48, 1, 1]
        let conv2d_7 = self.features_2_0_block_2_fc1(mean_1); // [2, 1, 1]
        let val_68 = sigmoid(conv2d_7); // [2, 1, 1]
        let silu_5 = conv2d_7 * val_68; // [2, 1, 1]
        let conv2d_8 = self.features_2_0_block_2_fc2(silu_5); // [48, 1, 1]
        let sigmoid_1 = sigmoid(conv2d_8); // [48, 1, 1]
        let mul_1 = sigmoid_1 * silu_4; // [48, 8, 8]
        let getitem_15 = self.features_2_0_block_3_0(mul_1); // [8, 8, 8]
        let getitem_18 = self.features_3_0_block_0_0(getitem_15); // [48, 8, 8]
        let val_91 = sigmoid(getitem_18); // [48, 8, 8]
        let silu_6 = getitem_18 * val_91; // [48, 8, 8]
        let getitem_21 = self.features_3_0_block_1_0(silu_6); // [48, 4, 4]
        let val_103 = sigmoid(getitem_21); // [48, 4, 4]
        let silu_7 = getitem_21 * val_103; // [48, 4, 4]
        let mean_2 = self.avg_pool_2(silu_7); // [48, 1, 1]
        let conv2d_12 = self.features_3_0_block_2_fc1(mean_2); // [2, 1, 1]
        let val_106 = sigmoid(conv2d_12); // [2, 1, 1]
        let silu_8 = conv2d_12 * val_106; // [2, 1, 1]
        let conv2d_13 = self.features_3_0_block_2_fc2(silu_8); // [48, 1, 1]
        let sigmoid_2 = sigmoid(conv2d_13); // [48, 1, 1]
        let mul_2 = sigmoid_2 * silu_7; // [48, 4, 4]
        let getitem_24 = self.features_3_0_block_3_0(mul_2); // [8, 4, 4]
        let getitem_27 = self.features_4_0_block_0_0(getitem_24); // [48, 4, 4]
        let val_129 = sigmoid(getitem_27); // [48, 4, 4]
        let silu_9 = getitem_27 * val_129; // [48, 4, 4]
        let getitem_30 = self.features_4_0_block_1_0(silu_9); // [48, 2, 2]
        let val_141 = sigmoid(getitem_30); // [48, 2, 2]
        let silu_10 = getitem_30 * val_141; // [48, 2, 2]
        let mean_3 = self.avg_pool_3(silu_10); // [48, 1, 1]
        let conv2d_17 = self.features_4_0_block_2_fc1(mean_3); // [2, 1, 1]
        let val_144 = sigmoid(conv2d_17); // [2, 1, 1]
        let silu_11 = conv2d_17 * val_144; // [2, 1, 1]
        let conv2d_18 = self.features_4_0_block_2_fc2(silu_11); // [48, 1, 1]
        let sigmoid_3 = sigmoid(conv2d_18); // [48, 1, 1]
        let mul_3 = sigmoid_3 * silu_10; // [48, 2, 2]
        let getitem_33 = self.features_4_0_block_3_0(mul_3); // [8, 2, 2]
        let getitem_36 = self.features_5_0_block_0_0(getitem_33); // [48, 2, 2]
        let val_167 = sigmoid(getitem_36); // [48, 2, 2]
        let silu_12 = getitem_36 * val_167; // [48, 2, 2]
        let getitem_39 = self.features_5_0_block_1_0(silu_12); // [48, 2, 2]
        let val_179 = sigmoid(getitem_39); // [48, 2, 2]
        let silu_13 = getitem_39 * val_179; // [48, 2, 2]
        let mean_4 = self.avg_pool_4(silu_13); // [48, 1, 1]
        let conv2d_22 = self.features_5_0_block_2_fc1(mean_4); // [2, 1, 1]
        let val_182 = sigmoid(conv2d_22); // [2, 1, 1]
        let silu_14 = conv2d_22 * val_182; // [2, 1, 1]
        let conv2d_23 = self.features_5_0_block_2_fc2(silu_14); // [48, 1, 1]
        let sigmoid_4 = sigmoid(conv2d_23); // [48, 1, 1]
        let mul_4 = sigmoid_4 * silu_13; // [48, 2, 2]
        let getitem_42 = self.features_5_0_block_3_0(mul_4); // [16, 2, 2]
        let getitem_45 = self.features_6_0_block_0_0(getitem_42); // [96, 2, 2]
        let val_205 = sigmoid(getitem_45); // [96, 2, 2]
        let silu_15 = getitem_45 * val_205; // [96, 2, 2]
        let getitem_48 = self.features_6_0_block_1_0(silu_15); // [96, 1, 1]
        let val_217 = sigmoid(getitem_48); // [96, 1, 1]
        let silu_16 = getitem_48 * val_217; // [96, 1, 1]
        let mean_5 = self.avg_pool_5(silu_16); // [96, 1, 1]
        let conv2d_27 = self.features_6_0_block_2_fc1(mean_5); // [4, 1, 1]
        let val_220 = sigmoid(conv2d_27); // [4, 1, 1]
        let silu_17 = conv2d_27 * val_220; // [4, 1, 1]
        let conv2d_28 = self.features_6_0_block_2_fc2(silu_17); // [96, 1, 1]
        let sigmoid_5 = sigmoid(conv2d_28); // [96, 1, 1]
        let mul_5 = sigmoid_5 * silu_16; // [96, 1, 1]
        let getitem_51 = self.features_6_0_block_3_0(mul_5); // [24, 1, 1]
        let getitem_54 = self.features_7_0_block_0_0(getitem_51); // [144, 1, 1]
        let val_243 = sigmoid(getitem_54); // [144, 1, 1]
        let silu_18 = getitem_54 * val_243; // [144, 1, 1]
        let getitem_57 = self.features_7_0_block_1_0(silu_18); // [144, 1, 1]
        let val_255 = sigmoid(getitem_57); // [144, 1, 1]
        let silu_19 = getitem_57 * val_255; // [144, 1, 1]
        let mean_6 = self.avg_pool_6(silu_19); // [144, 1, 1]
        let conv2d_32 = self.features_7_0_block_2_fc1(mean_6); // [6, 1, 1]
        let val_258 = sigmoid(conv2d_32); // [6, 1, 1]
        let silu_20 = conv2d_32 * val_258; // [6, 1, 1]
        let conv2d_33 = self.features_7_0_block_2_fc2(silu_20); // [144, 1, 1]
        let sigmoid_6 = sigmoid(conv2d_33); // [144, 1, 1]
        let mul_6 = sigmoid_6 * silu_19; // [144, 1, 1]
        let getitem_60 = self.features_7_0_block_3_0(mul_6); // [32, 1, 1]
        let getitem_63 = self.features_8_0(getitem_60); // [128, 1, 1]
        let val_281 = sigmoid(getitem_63); // [128, 1, 1]
        let silu_21 = getitem_63 * val_281; // [128, 1, 1]
        let mean_7 = self.avg_pool_7(silu_21); // [128, 1, 1]
        let view = mean_7.flatten(); // [128]
        self.classifier_1(view) // [5]
    }
}
