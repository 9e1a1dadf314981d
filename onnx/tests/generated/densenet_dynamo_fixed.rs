// `DensenetDynamoFixed`, converted by blaze-onnx from `densenet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct DensenetDynamoFixed {
    #[layer(stride = 2, padding = 3)]
    features_conv0: Conv2d<3, 8, 7>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    features_denseblock1_denselayer1_norm1: BatchNorm2d<8>,
    features_denseblock1_denselayer1_conv1: Conv2d<8, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock1_denselayer1_conv2: Conv2d<8, 4, 3>,
    features_denseblock1_denselayer2_norm1: BatchNorm2d<12>,
    features_denseblock1_denselayer2_conv1: Conv2d<12, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock1_denselayer2_conv2: Conv2d<8, 4, 3>,
    features_transition1_norm: BatchNorm2d<16>,
    #[layer(bias = false)]
    features_transition1_conv: Conv2d<16, 8, 1>,
    avg_pool: AvgPool2d<2>,
    features_denseblock2_denselayer1_norm1: BatchNorm2d<8>,
    features_denseblock2_denselayer1_conv1: Conv2d<8, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock2_denselayer1_conv2: Conv2d<8, 4, 3>,
    features_denseblock2_denselayer2_norm1: BatchNorm2d<12>,
    features_denseblock2_denselayer2_conv1: Conv2d<12, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock2_denselayer2_conv2: Conv2d<8, 4, 3>,
    features_norm5: BatchNorm2d<16>,
    avg_pool_1: AdaptiveAvgPool2d<1, 1>,
    classifier: Linear<16, 5>,
}

#[model(input = [3, 32, 32])]
impl DensenetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.features_conv0(input); // [8, 16, 16]
        let relu_out = relu(getitem); // [8, 16, 16]
        let max_pool2d = self.max_pool(relu_out); // [8, 8, 8]
        let getitem_3 = self.features_denseblock1_denselayer1_norm1(max_pool2d); // [8, 8, 8]
        let relu_1 = relu(getitem_3); // [8, 8, 8]
        let getitem_6 = self.features_denseblock1_denselayer1_conv1(relu_1); // [8, 8, 8]
        let relu_2 = relu(getitem_6); // [8, 8, 8]
        let conv2d_2 = self.features_denseblock1_denselayer1_conv2(relu_2); // [4, 8, 8]
        let cat_1 = cat([max_pool2d, conv2d_2], -3); // [12, 8, 8]
        let getitem_9 = self.features_denseblock1_denselayer2_norm1(cat_1); // [12, 8, 8]
        let relu_3 = relu(getitem_9); // [12, 8, 8]
        let getitem_12 = self.features_denseblock1_denselayer2_conv1(relu_3); // [8, 8, 8]
        let relu_4 = relu(getitem_12); // [8, 8, 8]
        let conv2d_4 = self.features_denseblock1_denselayer2_conv2(relu_4); // [4, 8, 8]
        let cat_2 = cat([max_pool2d, conv2d_2, conv2d_4], -3); // [16, 8, 8]
        let getitem_15 = self.features_transition1_norm(cat_2); // [16, 8, 8]
        let relu_5 = relu(getitem_15); // [16, 8, 8]
        let conv2d_5 = self.features_transition1_conv(relu_5); // [8, 8, 8]
        let avg_pool2d = self.avg_pool(conv2d_5); // [8, 4, 4]
        let getitem_18 = self.features_denseblock2_denselayer1_norm1(avg_pool2d); // [8, 4, 4]
        let relu_6 = relu(getitem_18); // [8, 4, 4]
        let getitem_21 = self.features_denseblock2_denselayer1_conv1(relu_6); // [8, 4, 4]
        let relu_7 = relu(getitem_21); // [8, 4, 4]
        let conv2d_7 = self.features_denseblock2_denselayer1_conv2(relu_7); // [4, 4, 4]
        let cat_4 = cat([avg_pool2d, conv2d_7], -3); // [12, 4, 4]
        let getitem_24 = self.features_denseblock2_denselayer2_norm1(cat_4); // [12, 4, 4]
        let relu_8 = relu(getitem_24); // [12, 4, 4]
        let getitem_27 = self.features_denseblock2_denselayer2_conv1(relu_8); // [8, 4, 4]
        let relu_9 = relu(getitem_27); // [8, 4, 4]
        let conv2d_9 = self.features_denseblock2_denselayer2_conv2(relu_9); // [4, 4, 4]
        let cat_5 = cat([avg_pool2d, conv2d_7, conv2d_9], -3); // [16, 4, 4]
        let getitem_30 = self.features_norm5(cat_5); // [16, 4, 4]
        let relu_10 = relu(getitem_30); // [16, 4, 4]
        let mean = self.avg_pool_1(relu_10); // [16, 1, 1]
        let view = mean.flatten(); // [16]
        self.classifier(view) // [5]
    }
}
