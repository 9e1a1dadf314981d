// `SqueezenetLegacyFixed`, converted by blaze-onnx from `squeezenet_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct SqueezenetLegacyFixed {
    #[layer(stride = 2)]
    v0_conv: Conv2d<3, 8, 3>,
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
    v8_conv: Conv2d<32, 5, 1>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
}

#[model(input = [3, 34, 34])]
impl SqueezenetLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let v0_conv_output_0 = self.v0_conv(input); // [8, 16, 16]
        let v1_relu_output_0 = relu(v0_conv_output_0); // [8, 16, 16]
        let v2_maxpool_output_0 = self.max_pool(v1_relu_output_0); // [8, 8, 8]
        let v3_squeeze_conv_output_0 = self.v3_squeeze(v2_maxpool_output_0); // [4, 8, 8]
        let v3_squeeze_activation_relu_output_0 = relu(v3_squeeze_conv_output_0); // [4, 8, 8]
        let v3_expand1x1_conv_output_0 = self.v3_expand1x1(v3_squeeze_activation_relu_output_0); // [8, 8, 8]
        let v3_expand1x1_activation_relu_output_0 = relu(v3_expand1x1_conv_output_0); // [8, 8, 8]
        let v3_expand3x3_conv_output_0 = self.v3_expand3x3(v3_squeeze_activation_relu_output_0); // [8, 8, 8]
        let v3_expand3x3_activation_relu_output_0 = relu(v3_expand3x3_conv_output_0); // [8, 8, 8]
        let v3_concat_output_0 = cat([v3_expand1x1_activation_relu_output_0, v3_expand3x3_activation_relu_output_0], -3); // [16, 8, 8]
        let v4_squeeze_conv_output_0 = self.v4_squeeze(v3_concat_output_0); // [4, 8, 8]
        let v4_squeeze_activation_relu_output_0 = relu(v4_squeeze_conv_output_0); // [4, 8, 8]
        let v4_expand1x1_conv_output_0 = self.v4_expand1x1(v4_squeeze_activation_relu_output_0); // [8, 8, 8]
        let v4_expand1x1_activation_relu_output_0 = relu(v4_expand1x1_conv_output_0); // [8, 8, 8]
        let v4_expand3x3_conv_output_0 = self.v4_expand3x3(v4_squeeze_activation_relu_output_0); // [8, 8, 8]
        let v4_expand3x3_activation_relu_output_0 = relu(v4_expand3x3_conv_output_0); // [8, 8, 8]
        let v4_concat_output_0 = cat([v4_expand1x1_activation_relu_output_0, v4_expand3x3_activation_relu_output_0], -3); // [16, 8, 8]
        let v5_maxpool_output_0 = self.max_pool_1(v4_concat_output_0); // [16, 4, 4]
        let v6_squeeze_conv_output_0 = self.v6_squeeze(v5_maxpool_output_0); // [8, 4, 4]
        let v6_squeeze_activation_relu_output_0 = relu(v6_squeeze_conv_output_0); // [8, 4, 4]
        let v6_expand1x1_conv_output_0 = self.v6_expand1x1(v6_squeeze_activation_relu_output_0); // [16, 4, 4]
        let v6_expand1x1_activation_relu_output_0 = relu(v6_expand1x1_conv_output_0); // [16, 4, 4]
        let v6_expand3x3_conv_output_0 = self.v6_expand3x3(v6_squeeze_activation_relu_output_0); // [16, 4, 4]
        let v6_expand3x3_activation_relu_output_0 = relu(v6_expand3x3_conv_output_0); // [16, 4, 4]
        let v6_concat_output_0 = cat([v6_expand1x1_activation_relu_output_0, v6_expand3x3_activation_relu_output_0], -3); // [32, 4, 4]
        let v8_conv_output_0 = self.v8_conv(v6_concat_output_0); // [5, 4, 4]
        let v9_globalaveragepool_output_0 = self.global_avg_pool(v8_conv_output_0); // [5, 1, 1]
        v9_globalaveragepool_output_0.flatten() // [5]
    }
}
