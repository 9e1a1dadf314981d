// `RegnetLegacyFixed`, converted by blaze-onnx from `regnet_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct RegnetLegacyFixed {
    #[layer(stride = 2, padding = 1)]
    stem_stem_0_conv: Conv2d<3, 8, 3>,
    #[layer(stride = 2)]
    trunk_output_block1_block1_0_proj_proj_0_conv: Conv2d<8, 8, 1>,
    trunk_output_block1_block1_0_f_a_a_0_conv: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1)]
    trunk_output_block1_block1_0_f_b_b_0_conv: Conv2d<8, 8, 3>,
    trunk_output_block1_block1_0_f_c_c_0_conv: Conv2d<8, 8, 1>,
    #[layer(stride = 2)]
    trunk_output_block2_block2_0_proj_proj_0_conv: Conv2d<8, 16, 1>,
    trunk_output_block2_block2_0_f_a_a_0_conv: Conv2d<8, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 2)]
    trunk_output_block2_block2_0_f_b_b_0_conv: Conv2d<16, 16, 3>,
    trunk_output_block2_block2_0_f_c_c_0_conv: Conv2d<16, 16, 1>,
    #[layer(stride = 2)]
    trunk_output_block3_block3_0_proj_proj_0_conv: Conv2d<16, 32, 1>,
    trunk_output_block3_block3_0_f_a_a_0_conv: Conv2d<16, 32, 1>,
    #[layer(stride = 2, padding = 1, groups = 4)]
    trunk_output_block3_block3_0_f_b_b_0_conv: Conv2d<32, 32, 3>,
    trunk_output_block3_block3_0_f_c_c_0_conv: Conv2d<32, 32, 1>,
    trunk_output_block3_block3_1_f_a_a_0_conv: Conv2d<32, 32, 1>,
    #[layer(padding = 1, groups = 4)]
    trunk_output_block3_block3_1_f_b_b_0_conv: Conv2d<32, 32, 3>,
    trunk_output_block3_block3_1_f_c_c_0_conv: Conv2d<32, 32, 1>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    fc: Linear<32, 5>,
}

#[model(input = [3, 32, 32])]
impl RegnetLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let stem_stem_0_conv_output_0 = self.stem_stem_0_conv(input); // [8, 16, 16]
        let stem_stem_2_relu_output_0 = relu(stem_stem_0_conv_output_0); // [8, 16, 16]
        let trunk_output_block1_block1_0_proj_proj_0_conv_output_0 = self.trunk_output_block1_block1_0_proj_proj_0_conv(stem_stem_2_relu_output_0); // [8, 8, 8]
        let trunk_output_block1_block1_0_f_a_a_0_conv_output_0 = self.trunk_output_block1_block1_0_f_a_a_0_conv(stem_stem_2_relu_output_0); // [8, 16, 16]
        let trunk_output_block1_block1_0_f_a_a_2_relu_output_0 = relu(trunk_output_block1_block1_0_f_a_a_0_conv_output_0); // [8, 16, 16]
        let trunk_output_block1_block1_0_f_b_b_0_conv_output_0 = self.trunk_output_block1_block1_0_f_b_b_0_conv(trunk_output_block1_block1_0_f_a_a_2_relu_output_0); // [8, 8, 8]
        let trunk_output_block1_block1_0_f_b_b_2_relu_output_0 = relu(trunk_output_block1_block1_0_f_b_b_0_conv_output_0); // [8, 8, 8]
        let trunk_output_block1_block1_0_f_c_c_0_conv_output_0 = self.trunk_output_block1_block1_0_f_c_c_0_conv(trunk_output_block1_block1_0_f_b_b_2_relu_output_0); // [8, 8, 8]
        let trunk_output_block1_block1_0_add_output_0 = trunk_output_block1_block1_0_proj_proj_0_conv_output_0 + trunk_output_block1_block1_0_f_c_c_0_conv_output_0; // [8, 8, 8]
        let trunk_output_block1_block1_0_activation_relu_output_0 = relu(trunk_output_block1_block1_0_add_output_0); // [8, 8, 8]
        let trunk_output_block2_block2_0_proj_proj_0_conv_output_0 = self.trunk_output_block2_block2_0_proj_proj_0_conv(trunk_output_block1_block1_0_activation_relu_output_0); // [16, 4, 4]
        let trunk_output_block2_block2_0_f_a_a_0_conv_output_0 = self.trunk_output_block2_block2_0_f_a_a_0_conv(trunk_output_block1_block1_0_activation_relu_output_0); // [16, 8, 8]
        let trunk_output_block2_block2_0_f_a_a_2_relu_output_0 = relu(trunk_output_block2_block2_0_f_a_a_0_conv_output_0); // [16, 8, 8]
        let trunk_output_block2_block2_0_f_b_b_0_conv_output_0 = self.trunk_output_block2_block2_0_f_b_b_0_conv(trunk_output_block2_block2_0_f_a_a_2_relu_output_0); // [16, 4, 4]
        let trunk_output_block2_block2_0_f_b_b_2_relu_output_0 = relu(trunk_output_block2_block2_0_f_b_b_0_conv_output_0); // [16, 4, 4]
        let trunk_output_block2_block2_0_f_c_c_0_conv_output_0 = self.trunk_output_block2_block2_0_f_c_c_0_conv(trunk_output_block2_block2_0_f_b_b_2_relu_output_0); // [16, 4, 4]
        let trunk_output_block2_block2_0_add_output_0 = trunk_output_block2_block2_0_proj_proj_0_conv_output_0 + trunk_output_block2_block2_0_f_c_c_0_conv_output_0; // [16, 4, 4]
        let trunk_output_block2_block2_0_activation_relu_output_0 = relu(trunk_output_block2_block2_0_add_output_0); // [16, 4, 4]
        let trunk_output_block3_block3_0_proj_proj_0_conv_output_0 = self.trunk_output_block3_block3_0_proj_proj_0_conv(trunk_output_block2_block2_0_activation_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_0_f_a_a_0_conv_output_0 = self.trunk_output_block3_block3_0_f_a_a_0_conv(trunk_output_block2_block2_0_activation_relu_output_0); // [32, 4, 4]
        let trunk_output_block3_block3_0_f_a_a_2_relu_output_0 = relu(trunk_output_block3_block3_0_f_a_a_0_conv_output_0); // [32, 4, 4]
        let trunk_output_block3_block3_0_f_b_b_0_conv_output_0 = self.trunk_output_block3_block3_0_f_b_b_0_conv(trunk_output_block3_block3_0_f_a_a_2_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_0_f_b_b_2_relu_output_0 = relu(trunk_output_block3_block3_0_f_b_b_0_conv_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_0_f_c_c_0_conv_output_0 = self.trunk_output_block3_block3_0_f_c_c_0_conv(trunk_output_block3_block3_0_f_b_b_2_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_0_add_output_0 = trunk_output_block3_block3_0_proj_proj_0_conv_output_0 + trunk_output_block3_block3_0_f_c_c_0_conv_output_0; // [32, 2, 2]
        let trunk_output_block3_block3_0_activation_relu_output_0 = relu(trunk_output_block3_block3_0_add_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_f_a_a_0_conv_output_0 = self.trunk_output_block3_block3_1_f_a_a_0_conv(trunk_output_block3_block3_0_activation_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_f_a_a_2_relu_output_0 = relu(trunk_output_block3_block3_1_f_a_a_0_conv_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_f_b_b_0_conv_output_0 = self.trunk_output_block3_block3_1_f_b_b_0_conv(trunk_output_block3_block3_1_f_a_a_2_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_f_b_b_2_relu_output_0 = relu(trunk_output_block3_block3_1_f_b_b_0_conv_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_f_c_c_0_conv_output_0 = self.trunk_output_block3_block3_1_f_c_c_0_conv(trunk_output_block3_block3_1_f_b_b_2_relu_output_0); // [32, 2, 2]
        let trunk_output_block3_block3_1_add_output_0 = trunk_output_block3_block3_0_activation_relu_output_0 + trunk_output_block3_block3_1_f_c_c_0_conv_output_0; // [32, 2, 2]
        let trunk_output_block3_block3_1_activation_relu_output_0 = relu(trunk_output_block3_block3_1_add_output_0); // [32, 2, 2]
        let avgpool_globalaveragepool_output_0 = self.global_avg_pool(trunk_output_block3_block3_1_activation_relu_output_0); // [32, 1, 1]
        let flatten_output_0 = avgpool_globalaveragepool_output_0.flatten(); // [32]
        self.fc(flatten_output_0) // [5]
    }
}
