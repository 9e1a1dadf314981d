// `ResnetDynamoFixed`, converted by blaze-onnx from `resnet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ResnetDynamoFixed {
    #[layer(padding = 1)]
    conv_151: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    #[layer(padding = 1)]
    v4_conv1: Conv2d<8, 8, 3>,
    #[layer(padding = 1)]
    v4_conv2: Conv2d<8, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    v5_conv1: Conv2d<8, 16, 3>,
    #[layer(padding = 1)]
    v5_conv2: Conv2d<16, 16, 3>,
    #[layer(stride = 2)]
    v5_downsample_0: Conv2d<8, 16, 1>,
    v6_conv1: Conv2d<16, 4, 1>,
    #[layer(stride = 2, padding = 1)]
    v6_conv2: Conv2d<4, 4, 3>,
    v6_conv3: Conv2d<4, 16, 1>,
    #[layer(stride = 2)]
    v6_downsample_0: Conv2d<16, 16, 1>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    linear: Linear<16, 5>,
}

#[model(input = [3, 32, 32])]
impl ResnetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.conv_151(input); // [8, 32, 32]
        let relu_out = relu(getitem); // [8, 32, 32]
        let max_pool2d = self.max_pool(relu_out); // [8, 16, 16]
        let getitem_3 = self.v4_conv1(max_pool2d); // [8, 16, 16]
        let relu_1 = relu(getitem_3); // [8, 16, 16]
        let getitem_6 = self.v4_conv2(relu_1); // [8, 16, 16]
        let add = getitem_6 + max_pool2d; // [8, 16, 16]
        let relu_2 = relu(add); // [8, 16, 16]
        let getitem_9 = self.v5_conv1(relu_2); // [16, 8, 8]
        let relu_3 = relu(getitem_9); // [16, 8, 8]
        let getitem_12 = self.v5_conv2(relu_3); // [16, 8, 8]
        let getitem_15 = self.v5_downsample_0(relu_2); // [16, 8, 8]
        let add_1 = getitem_12 + getitem_15; // [16, 8, 8]
        let relu_4 = relu(add_1); // [16, 8, 8]
        let getitem_18 = self.v6_conv1(relu_4); // [4, 8, 8]
        let relu_5 = relu(getitem_18); // [4, 8, 8]
        let getitem_21 = self.v6_conv2(relu_5); // [4, 4, 4]
        let relu_6 = relu(getitem_21); // [4, 4, 4]
        let getitem_24 = self.v6_conv3(relu_6); // [16, 4, 4]
        let getitem_27 = self.v6_downsample_0(relu_4); // [16, 4, 4]
        let add_2 = getitem_24 + getitem_27; // [16, 4, 4]
        let relu_7 = relu(add_2); // [16, 4, 4]
        let mean = self.avg_pool(relu_7); // [16, 1, 1]
        let view = mean.flatten(); // [16]
        self.linear(view) // [5]
    }
}
