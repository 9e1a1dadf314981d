// `ShufflenetLegacyFixed`, converted by blaze-onnx from `shufflenet_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ShufflenetLegacyFixed {
    #[layer(stride = 2, padding = 1)]
    conv1_conv1_0_conv: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    stage2_stage2_0_branch1_branch1_0_conv: Conv2d<8, 8, 3>,
    stage2_stage2_0_branch1_branch1_2_conv: Conv2d<8, 8, 1>,
    stage2_stage2_0_branch2_branch2_0_conv: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    stage2_stage2_0_branch2_branch2_3_conv: Conv2d<8, 8, 3>,
    stage2_stage2_0_branch2_branch2_5_conv: Conv2d<8, 8, 1>,
    stage2_stage2_1_branch2_branch2_0_conv: Conv2d<8, 8, 1>,
    #[layer(padding = 1, groups = 8)]
    stage2_stage2_1_branch2_branch2_3_conv: Conv2d<8, 8, 3>,
    stage2_stage2_1_branch2_branch2_5_conv: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 16)]
    stage3_stage3_0_branch1_branch1_0_conv: Conv2d<16, 16, 3>,
    stage3_stage3_0_branch1_branch1_2_conv: Conv2d<16, 16, 1>,
    stage3_stage3_0_branch2_branch2_0_conv: Conv2d<16, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 16)]
    stage3_stage3_0_branch2_branch2_3_conv: Conv2d<16, 16, 3>,
    stage3_stage3_0_branch2_branch2_5_conv: Conv2d<16, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 32)]
    stage4_stage4_0_branch1_branch1_0_conv: Conv2d<32, 32, 3>,
    stage4_stage4_0_branch1_branch1_2_conv: Conv2d<32, 32, 1>,
    stage4_stage4_0_branch2_branch2_0_conv: Conv2d<32, 32, 1>,
    #[layer(stride = 2, padding = 1, groups = 32)]
    stage4_stage4_0_branch2_branch2_3_conv: Conv2d<32, 32, 3>,
    stage4_stage4_0_branch2_branch2_5_conv: Conv2d<32, 32, 1>,
    conv5_conv5_0_conv: Conv2d<64, 96, 1>,
    global_avg_pool: GlobalAvgPool,
    fc: Linear<96, 5>,
}

#[model(input = [3, 32, 32])]
impl ShufflenetLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let conv1_conv1_0_conv_output_0 = self.conv1_conv1_0_conv(input); // [8, 16, 16]
        let conv1_conv1_2_relu_output_0 = relu(conv1_conv1_0_conv_output_0); // [8, 16, 16]
        let maxpool_maxpool_output_0 = self.max_pool(conv1_conv1_2_relu_output_0); // [8, 8, 8]
        let stage2_stage2_0_branch1_branch1_0_conv_output_0 = self.stage2_stage2_0_branch1_branch1_0_conv(maxpool_maxpool_output_0); // [8, 4, 4]
        let stage2_stage2_0_branch1_branch1_2_conv_output_0 = self.stage2_stage2_0_branch1_branch1_2_conv(stage2_stage2_0_branch1_branch1_0_conv_output_0); // [8, 4, 4]
        let stage2_stage2_0_branch1_branch1_4_relu_output_0 = relu(stage2_stage2_0_branch1_branch1_2_conv_output_0); // [8, 4, 4]
        let stage2_stage2_0_branch2_branch2_0_conv_output_0 = self.stage2_stage2_0_branch2_branch2_0_conv(maxpool_maxpool_output_0); // [8, 8, 8]
        let stage2_stage2_0_branch2_branch2_2_relu_output_0 = relu(stage2_stage2_0_branch2_branch2_0_conv_output_0); // [8, 8, 8]
        let stage2_stage2_0_branch2_branch2_3_conv_output_0 = self.stage2_stage2_0_branch2_branch2_3_conv(stage2_stage2_0_branch2_branch2_2_relu_output_0); // [8, 4, 4]
        let stage2_stage2_0_branch2_branch2_5_conv_output_0 = self.stage2_stage2_0_branch2_branch2_5_conv(stage2_stage2_0_branch2_branch2_3_conv_output_0); // [8, 4, 4]
        let stage2_stage2_0_branch2_branch2_7_relu_output_0 = relu(stage2_stage2_0_branch2_branch2_5_conv_output_0); // [8, 4, 4]
        let stage2_stage2_0_concat_output_0 = cat([stage2_stage2_0_branch1_branch1_4_relu_output_0, stage2_stage2_0_branch2_branch2_7_relu_output_0], -3); // [16, 4, 4]
        let stage2_stage2_0_reshape_output_0 = stage2_stage2_0_concat_output_0.reshape([2, 8, 4, 4]); // [2, 8, 4, 4]
        let stage2_stage2_0_transpose_output_0 = stage2_stage2_0_reshape_output_0.transpose(-4, -3); // [8, 2, 4, 4]
        let stage2_stage2_0_reshape_1_output_0 = stage2_stage2_0_transpose_output_0.reshape([16, 4, 4]); // [16, 4, 4]
        let stage2_stage2_1_slice_output_0 = stage2_stage2_0_reshape_1_output_0.narrow(-3, 0, 8); // [8, 4, 4]
        let stage2_stage2_1_slice_1_output_0 = stage2_stage2_0_reshape_1_output_0.narrow(-3, 8, 8); // [8, 4, 4]
        let stage2_stage2_1_branch2_branch2_0_conv_output_0 = self.stage2_stage2_1_branch2_branch2_0_conv(stage2_stage2_1_slice_1_output_0); // [8, 4, 4]
        let stage2_stage2_1_branch2_branch2_2_relu_output_0 = relu(stage2_stage2_1_branch2_branch2_0_conv_output_0); // [8, 4, 4]
        let stage2_stage2_1_branch2_branch2_3_conv_output_0 = self.stage2_stage2_1_branch2_branch2_3_conv(stage2_stage2_1_branch2_branch2_2_relu_output_0); // [8, 4, 4]
        let stage2_stage2_1_branch2_branch2_5_conv_output_0 = self.stage2_stage2_1_branch2_branch2_5_conv(stage2_stage2_1_branch2_branch2_3_conv_output_0); // [8, 4, 4]
        let stage2_stage2_1_branch2_branch2_7_relu_output_0 = relu(stage2_stage2_1_branch2_branch2_5_conv_output_0); // [8, 4, 4]
        let stage2_stage2_1_concat_output_0 = cat([stage2_stage2_1_slice_output_0, stage2_stage2_1_branch2_branch2_7_relu_output_0], -3); // [16, 4, 4]
        let stage2_stage2_1_reshape_output_0 = stage2_stage2_1_concat_output_0.reshape([2, 8, 4, 4]); // [2, 8, 4, 4]
        let stage2_stage2_1_transpose_output_0 = stage2_stage2_1_reshape_output_0.transpose(-4, -3); // [8, 2, 4, 4]
        let stage2_stage2_1_reshape_1_output_0 = stage2_stage2_1_transpose_output_0.reshape([16, 4, 4]); // [16, 4, 4]
        let stage3_stage3_0_branch1_branch1_0_conv_output_0 = self.stage3_stage3_0_branch1_branch1_0_conv(stage2_stage2_1_reshape_1_output_0); // [16, 2, 2]
        let stage3_stage3_0_branch1_branch1_2_conv_output_0 = self.stage3_stage3_0_branch1_branch1_2_conv(stage3_stage3_0_branch1_branch1_0_conv_output_0); // [16, 2, 2]
        let stage3_stage3_0_branch1_branch1_4_relu_output_0 = relu(stage3_stage3_0_branch1_branch1_2_conv_output_0); // [16, 2, 2]
        let stage3_stage3_0_branch2_branch2_0_conv_output_0 = self.stage3_stage3_0_branch2_branch2_0_conv(stage2_stage2_1_reshape_1_output_0); // [16, 4, 4]
        let stage3_stage3_0_branch2_branch2_2_relu_output_0 = relu(stage3_stage3_0_branch2_branch2_0_conv_output_0); // [16, 4, 4]
        let stage3_stage3_0_branch2_branch2_3_conv_output_0 = self.stage3_stage3_0_branch2_branch2_3_conv(stage3_stage3_0_branch2_branch2_2_relu_output_0); // [16, 2, 2]
        let stage3_stage3_0_branch2_branch2_5_conv_output_0 = self.stage3_stage3_0_branch2_branch2_5_conv(stage3_stage3_0_branch2_branch2_3_conv_output_0); // [16, 2, 2]
        let stage3_stage3_0_branch2_branch2_7_relu_output_0 = relu(stage3_stage3_0_branch2_branch2_5_conv_output_0); // [16, 2, 2]
        let stage3_stage3_0_concat_output_0 = cat([stage3_stage3_0_branch1_branch1_4_relu_output_0, stage3_stage3_0_branch2_branch2_7_relu_output_0], -3); // [32, 2, 2]
        let stage3_stage3_0_reshape_output_0 = stage3_stage3_0_concat_output_0.reshape([2, 16, 2, 2]); // [2, 16, 2, 2]
        let stage3_stage3_0_transpose_output_0 = stage3_stage3_0_reshape_output_0.transpose(-4, -3); // [16, 2, 2, 2]
        let stage3_stage3_0_reshape_1_output_0 = stage3_stage3_0_transpose_output_0.reshape([32, 2, 2]); // [32, 2, 2]
        let stage4_stage4_0_branch1_branch1_0_conv_output_0 = self.stage4_stage4_0_branch1_branch1_0_conv(stage3_stage3_0_reshape_1_output_0); // [32, 1, 1]
        let stage4_stage4_0_branch1_branch1_2_conv_output_0 = self.stage4_stage4_0_branch1_branch1_2_conv(stage4_stage4_0_branch1_branch1_0_conv_output_0); // [32, 1, 1]
        let stage4_stage4_0_branch1_branch1_4_relu_output_0 = relu(stage4_stage4_0_branch1_branch1_2_conv_output_0); // [32, 1, 1]
        let stage4_stage4_0_branch2_branch2_0_conv_output_0 = self.stage4_stage4_0_branch2_branch2_0_conv(stage3_stage3_0_reshape_1_output_0); // [32, 2, 2]
        let stage4_stage4_0_branch2_branch2_2_relu_output_0 = relu(stage4_stage4_0_branch2_branch2_0_conv_output_0); // [32, 2, 2]
        let stage4_stage4_0_branch2_branch2_3_conv_output_0 = self.stage4_stage4_0_branch2_branch2_3_conv(stage4_stage4_0_branch2_branch2_2_relu_output_0); // [32, 1, 1]
        let stage4_stage4_0_branch2_branch2_5_conv_output_0 = self.stage4_stage4_0_branch2_branch2_5_conv(stage4_stage4_0_branch2_branch2_3_conv_output_0); // [32, 1, 1]
        let stage4_stage4_0_branch2_branch2_7_relu_output_0 = relu(stage4_stage4_0_branch2_branch2_5_conv_output_0); // [32, 1, 1]
        let stage4_stage4_0_concat_output_0 = cat([stage4_stage4_0_branch1_branch1_4_relu_output_0, stage4_stage4_0_branch2_branch2_7_relu_output_0], -3); // [64, 1, 1]
        let stage4_stage4_0_reshape_output_0 = stage4_stage4_0_concat_output_0.reshape([2, 32, 1, 1]); // [2, 32, 1, 1]
        let stage4_stage4_0_transpose_output_0 = stage4_stage4_0_reshape_output_0.transpose(-4, -3); // [32, 2, 1, 1]
        let stage4_stage4_0_reshape_1_output_0 = stage4_stage4_0_transpose_output_0.reshape([64, 1, 1]); // [64, 1, 1]
        let conv5_conv5_0_conv_output_0 = self.conv5_conv5_0_conv(stage4_stage4_0_reshape_1_output_0); // [96, 1, 1]
        let conv5_conv5_2_relu_output_0 = relu(conv5_conv5_0_conv_output_0); // [96, 1, 1]
        let reducemean_output_0 = self.global_avg_pool(conv5_conv5_2_relu_output_0); // [96]
        self.fc(reducemean_output_0) // [5]
    }
}
