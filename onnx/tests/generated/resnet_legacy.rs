// `ResnetLegacy`, converted by blaze-onnx from `resnet_legacy.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ResnetLegacy {
    #[layer(padding = 1)]
    v0_conv: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    #[layer(padding = 1)]
    v4_conv1_conv: Conv2d<8, 8, 3>,
    #[layer(padding = 1)]
    v4_conv2_conv: Conv2d<8, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    v5_conv1_conv: Conv2d<8, 16, 3>,
    #[layer(padding = 1)]
    v5_conv2_conv: Conv2d<16, 16, 3>,
    #[layer(stride = 2)]
    v5_downsample_downsample_0_conv: Conv2d<8, 16, 1>,
    v6_conv1_conv: Conv2d<16, 4, 1>,
    #[layer(stride = 2, padding = 1)]
    v6_conv2_conv: Conv2d<4, 4, 3>,
    v6_conv3_conv: Conv2d<4, 16, 1>,
    #[layer(stride = 2)]
    v6_downsample_downsample_0_conv: Conv2d<16, 16, 1>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    v9_gemm: Linear<16, 5>,
}

#[model(input = [3, 32, 32])]
impl ResnetLegacy {
    fn forward(&self, input: Tensor) -> Tensor {
        let v0_conv_output_0 = self.v0_conv(input); // [8, 32, 32]
        let v2_relu_output_0 = relu(v0_conv_output_0); // [8, 32, 32]
        let v3_maxpool_output_0 = self.max_pool(v2_relu_output_0); // [8, 16, 16]
        let v4_conv1_conv_output_0 = self.v4_conv1_conv(v3_maxpool_output_0); // [8, 16, 16]
        let v4_relu_relu_output_0 = relu(v4_conv1_conv_output_0); // [8, 16, 16]
        let v4_conv2_conv_output_0 = self.v4_conv2_conv(v4_relu_relu_output_0); // [8, 16, 16]
        let v4_add_output_0 = v4_conv2_conv_output_0 + v3_maxpool_output_0; // [8, 16, 16]
        let v4_relu_1_relu_output_0 = relu(v4_add_output_0); // [8, 16, 16]
        let v5_conv1_conv_output_0 = self.v5_conv1_conv(v4_relu_1_relu_output_0); // [16, 8, 8]
        let v5_relu_relu_output_0 = relu(v5_conv1_conv_output_0); // [16, 8, 8]
        let v5_conv2_conv_output_0 = self.v5_conv2_conv(v5_relu_relu_output_0); // [16, 8, 8]
        let v5_downsample_downsample_0_conv_output_0 = self.v5_downsample_downsample_0_conv(v4_relu_1_relu_output_0); // [16, 8, 8]
        let v5_add_output_0 = v5_conv2_conv_output_0 + v5_downsample_downsample_0_conv_output_0; // [16, 8, 8]
        let v5_relu_1_relu_output_0 = relu(v5_add_output_0); // [16, 8, 8]
        let v6_conv1_conv_output_0 = self.v6_conv1_conv(v5_relu_1_relu_output_0); // [4, 8, 8]
        let v6_relu_relu_output_0 = relu(v6_conv1_conv_output_0); // [4, 8, 8]
        let v6_conv2_conv_output_0 = self.v6_conv2_conv(v6_relu_relu_output_0); // [4, 4, 4]
        let v6_relu_1_relu_output_0 = relu(v6_conv2_conv_output_0); // [4, 4, 4]
        let v6_conv3_conv_output_0 = self.v6_conv3_conv(v6_relu_1_relu_output_0); // [16, 4, 4]
        let v6_downsample_downsample_0_conv_output_0 = self.v6_downsample_downsample_0_conv(v5_relu_1_relu_output_0); // [16, 4, 4]
        let v6_add_output_0 = v6_conv3_conv_output_0 + v6_downsample_downsample_0_conv_output_0; // [16, 4, 4]
        let v6_relu_2_relu_output_0 = relu(v6_add_output_0); // [16, 4, 4]
        let v7_globalaveragepool_output_0 = self.global_avg_pool(v6_relu_2_relu_output_0); // [16, 1, 1]
        let v8_flatten_output_0 = v7_globalaveragepool_output_0.flatten(); // [16]
        self.v9_gemm(v8_flatten_output_0) // [5]
    }
}
