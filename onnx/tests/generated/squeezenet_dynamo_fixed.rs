// `SqueezenetDynamoFixed`, converted by blaze-onnx from `squeezenet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct SqueezenetDynamoFixed {
    #[layer(stride = 2)]
    conv2d: Conv2d<3, 8, 3>,
    #[layer(stride = 2, ceil_mode = true)]
    max_pool: MaxPool2d<3>,
    v3_squeeze: Conv2d<8, 4, 1>,
    v3_expand1x1: Conv2d<4, 8, 1>,
    #[layer(padding = 1)]
    v3_expand3x3: Conv2d<4, 8, 3>,
    v4_squeeze: Conv2d<16, 4, 1>,
    v4_expand1x1: Conv2d<4, 8, 1>,
    #[layer(padding = 1)]
    v4_expand3x3: Conv2d<4, 8, 3>,
    #[layer(stride = 2, ceil_mode = true)]
    max_pool_1: MaxPool2d<3>,
    v6_squeeze: Conv2d<16, 8, 1>,
    v6_expand1x1: Conv2d<8, 16, 1>,
    #[layer(padding = 1)]
    v6_expand3x3: Conv2d<8, 16, 3>,
    conv2d_10: Conv2d<32, 5, 1>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
}

#[model(input = [3, 34, 34])]
impl SqueezenetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let conv2d_1 = self.conv2d(input); // [8, 16, 16]
        let relu_out = relu(conv2d_1); // [8, 16, 16]
        let max_pool2d = self.max_pool(relu_out); // [8, 8, 8]
        let conv2d_1_1 = self.v3_squeeze(max_pool2d); // [4, 8, 8]
        let relu_1 = relu(conv2d_1_1); // [4, 8, 8]
        let conv2d_2 = self.v3_expand1x1(relu_1); // [8, 8, 8]
        let relu_2 = relu(conv2d_2); // [8, 8, 8]
        let conv2d_3 = self.v3_expand3x3(relu_1); // [8, 8, 8]
        let relu_3 = relu(conv2d_3); // [8, 8, 8]
        let cat_out = cat([relu_2, relu_3], -3); // [16, 8, 8]
        let conv2d_4 = self.v4_squeeze(cat_out); // [4, 8, 8]
        let relu_4 = relu(conv2d_4); // [4, 8, 8]
        let conv2d_5 = self.v4_expand1x1(relu_4); // [8, 8, 8]
        let relu_5 = relu(conv2d_5); // [8, 8, 8]
        let conv2d_6 = self.v4_expand3x3(relu_4); // [8, 8, 8]
        let relu_6 = relu(conv2d_6); // [8, 8, 8]
        let cat_1 = cat([relu_5, relu_6], -3); // [16, 8, 8]
        let max_pool2d_1 = self.max_pool_1(cat_1); // [16, 4, 4]
        let conv2d_7 = self.v6_squeeze(max_pool2d_1); // [8, 4, 4]
        let relu_7 = relu(conv2d_7); // [8, 4, 4]
        let conv2d_8 = self.v6_expand1x1(relu_7); // [16, 4, 4]
        let relu_8 = relu(conv2d_8); // [16, 4, 4]
        let conv2d_9 = self.v6_expand3x3(relu_7); // [16, 4, 4]
        let relu_9 = relu(conv2d_9); // [16, 4, 4]
        let cat_2 = cat([relu_8, relu_9], -3); // [32, 4, 4]
        let conv2d_10_1 = self.conv2d_10(cat_2); // [5, 4, 4]
        let mean = self.avg_pool(conv2d_10_1); // [5, 1, 1]
        mean.flatten() // [5]
    }
}
