// `RegnetDynamoFixed`, converted by blaze-onnx from `regnet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct RegnetDynamoFixed {
    #[layer(stride = 2, padding = 1)]
    stem_0: Conv2d<3, 8, 3>,
    #[layer(stride = 2)]
    trunk_output_block1_block1_0_proj_0: Conv2d<8, 8, 1>,
    trunk_output_block1_block1_0_f_a_0: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1)]
    trunk_output_block1_block1_0_f_b_0: Conv2d<8, 8, 3>,
    trunk_output_block1_block1_0_f_c_0: Conv2d<8, 8, 1>,
    #[layer(stride = 2)]
    trunk_output_block2_block2_0_proj_0: Conv2d<8, 16, 1>,
    trunk_output_block2_block2_0_f_a_0: Conv2d<8, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 2)]
    trunk_output_block2_block2_0_f_b_0: Conv2d<16, 16, 3>,
    trunk_output_block2_block2_0_f_c_0: Conv2d<16, 16, 1>,
    #[layer(stride = 2)]
    trunk_output_block3_block3_0_proj_0: Conv2d<16, 32, 1>,
    trunk_output_block3_block3_0_f_a_0: Conv2d<16, 32, 1>,
    #[layer(stride = 2, padding = 1, groups = 4)]
    trunk_output_block3_block3_0_f_b_0: Conv2d<32, 32, 3>,
    trunk_output_block3_block3_0_f_c_0: Conv2d<32, 32, 1>,
    trunk_output_block3_block3_1_f_a_0: Conv2d<32, 32, 1>,
    #[layer(padding = 1, groups = 4)]
    trunk_output_block3_block3_1_f_b_0: Conv2d<32, 32, 3>,
    trunk_output_block3_block3_1_f_c_0: Conv2d<32, 32, 1>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    fc: Linear<32, 5>,
}

#[model(input = [3, 32, 32])]
impl RegnetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.stem_0(input); // [8, 16, 16]
        let relu_out = relu(getitem); // [8, 16, 16]
        let getitem_3 = self.trunk_output_block1_block1_0_proj_0(relu_out); // [8, 8, 8]
        let getitem_6 = self.trunk_output_block1_block1_0_f_a_0(relu_out); // [8, 16, 16]
        let relu_1 = relu(getitem_6); // [8, 16, 16]
        let getitem_9 = self.trunk_output_block1_block1_0_f_b_0(relu_1); // [8, 8, 8]
        let relu_2 = relu(getitem_9); // [8, 8, 8]
        let getitem_12 = self.trunk_output_block1_block1_0_f_c_0(relu_2); // [8, 8, 8]
        let add = getitem_3 + getitem_12; // [8, 8, 8]
        let relu_3 = relu(add); // [8, 8, 8]
        let getitem_15 = self.trunk_output_block2_block2_0_proj_0(relu_3); // [16, 4, 4]
        let getitem_18 = self.trunk_output_block2_block2_0_f_a_0(relu_3); // [16, 8, 8]
        let relu_4 = relu(getitem_18); // [16, 8, 8]
        let getitem_21 = self.trunk_output_block2_block2_0_f_b_0(relu_4); // [16, 4, 4]
        let relu_5 = relu(getitem_21); // [16, 4, 4]
        let getitem_24 = self.trunk_output_block2_block2_0_f_c_0(relu_5); // [16, 4, 4]
        let add_1 = getitem_15 + getitem_24; // [16, 4, 4]
        let relu_6 = relu(add_1); // [16, 4, 4]
        let getitem_27 = self.trunk_output_block3_block3_0_proj_0(relu_6); // [32, 2, 2]
        let getitem_30 = self.trunk_output_block3_block3_0_f_a_0(relu_6); // [32, 4, 4]
        let relu_7 = relu(getitem_30); // [32, 4, 4]
        let getitem_33 = self.trunk_output_block3_block3_0_f_b_0(relu_7); // [32, 2, 2]
        let relu_8 = relu(getitem_33); // [32, 2, 2]
        let getitem_36 = self.trunk_output_block3_block3_0_f_c_0(relu_8); // [32, 2, 2]
        let add_2 = getitem_27 + getitem_36; // [32, 2, 2]
        let relu_9 = relu(add_2); // [32, 2, 2]
        let getitem_39 = self.trunk_output_block3_block3_1_f_a_0(relu_9); // [32, 2, 2]
        let relu_10 = relu(getitem_39); // [32, 2, 2]
        let getitem_42 = self.trunk_output_block3_block3_1_f_b_0(relu_10); // [32, 2, 2]
        let relu_11 = relu(getitem_42); // [32, 2, 2]
        let getitem_45 = self.trunk_output_block3_block3_1_f_c_0(relu_11); // [32, 2, 2]
        let add_3 = relu_9 + getitem_45; // [32, 2, 2]
        let relu_12 = relu(add_3); // [32, 2, 2]
        let mean = self.avg_pool(relu_12); // [32, 1, 1]
        let view = mean.flatten(); // [32]
        self.fc(view) // [5]
    }
}
