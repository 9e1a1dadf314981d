// `MobilenetV2DynamoFixed`, converted by blaze-onnx from `mobilenet_v2_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct MobilenetV2DynamoFixed {
    #[layer(stride = 2, padding = 1)]
    features_0_0: Conv2d<3, 32, 3>,
    #[layer(padding = 1, groups = 32)]
    features_1_conv_0_0: Conv2d<32, 32, 3>,
    features_1_conv_1: Conv2d<32, 8, 1>,
    features_2_conv_0_0: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_2_conv_1_0: Conv2d<48, 48, 3>,
    features_2_conv_2: Conv2d<48, 8, 1>,
    features_3_conv_0_0: Conv2d<8, 48, 1>,
    #[layer(padding = 1, groups = 48)]
    features_3_conv_1_0: Conv2d<48, 48, 3>,
    features_3_conv_2: Conv2d<48, 8, 1>,
    features_4_conv_0_0: Conv2d<8, 48, 1>,
    #[layer(stride = 2, padding = 1, groups = 48)]
    features_4_conv_1_0: Conv2d<48, 48, 3>,
    features_4_conv_2: Conv2d<48, 16, 1>,
    features_5_0: Conv2d<16, 1280, 1>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    classifier_1: Linear<1280, 5>,
}

#[model(input = [3, 32, 32])]
impl MobilenetV2DynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.features_0_0(input); // [32, 16, 16]
        let hardtanh = relu6(getitem); // [32, 16, 16]
        let getitem_3 = self.features_1_conv_0_0(hardtanh); // [32, 16, 16]
        let hardtanh_1 = relu6(getitem_3); // [32, 16, 16]
        let getitem_6 = self.features_1_conv_1(hardtanh_1); // [8, 16, 16]
        let getitem_9 = self.features_2_conv_0_0(getitem_6); // [48, 16, 16]
        let hardtanh_2 = relu6(getitem_9); // [48, 16, 16]
        let getitem_12 = self.features_2_conv_1_0(hardtanh_2); // [48, 8, 8]
        let hardtanh_3 = relu6(getitem_12); // [48, 8, 8]
        let getitem_15 = self.features_2_conv_2(hardtanh_3); // [8, 8, 8]
        let getitem_18 = self.features_3_conv_0_0(getitem_15); // [48, 8, 8]
        let hardtanh_4 = relu6(getitem_18); // [48, 8, 8]
        let getitem_21 = self.features_3_conv_1_0(hardtanh_4); // [48, 8, 8]
        let hardtanh_5 = relu6(getitem_21); // [48, 8, 8]
        let getitem_24 = self.features_3_conv_2(hardtanh_5); // [8, 8, 8]
        let add = getitem_15 + getitem_24; // [8, 8, 8]
        let getitem_27 = self.features_4_conv_0_0(add); // [48, 8, 8]
        let hardtanh_6 = relu6(getitem_27); // [48, 8, 8]
        let getitem_30 = self.features_4_conv_1_0(hardtanh_6); // [48, 4, 4]
        let hardtanh_7 = relu6(getitem_30); // [48, 4, 4]
        let getitem_33 = self.features_4_conv_2(hardtanh_7); // [16, 4, 4]
        let getitem_36 = self.features_5_0(getitem_33); // [1280, 4, 4]
        let hardtanh_8 = relu6(getitem_36); // [1280, 4, 4]
        let mean = self.avg_pool(hardtanh_8); // [1280, 1, 1]
        let view = mean.flatten(); // [1280]
        self.classifier_1(view) // [5]
    }
}
