// `ShufflenetDynamoFixed`, converted by blaze-onnx from `shufflenet_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ShufflenetDynamoFixed {
    #[layer(stride = 2, padding = 1)]
    conv1_0: Conv2d<3, 8, 3>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    stage2_0_branch1_0: Conv2d<8, 8, 3>,
    stage2_0_branch1_2: Conv2d<8, 8, 1>,
    stage2_0_branch2_0: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 8)]
    stage2_0_branch2_3: Conv2d<8, 8, 3>,
    stage2_0_branch2_5: Conv2d<8, 8, 1>,
    stage2_1_branch2_0: Conv2d<8, 8, 1>,
    #[layer(padding = 1, groups = 8)]
    stage2_1_branch2_3: Conv2d<8, 8, 3>,
    stage2_1_branch2_5: Conv2d<8, 8, 1>,
    #[layer(stride = 2, padding = 1, groups = 16)]
    stage3_0_branch1_0: Conv2d<16, 16, 3>,
    stage3_0_branch1_2: Conv2d<16, 16, 1>,
    stage3_0_branch2_0: Conv2d<16, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 16)]
    stage3_0_branch2_3: Conv2d<16, 16, 3>,
    stage3_0_branch2_5: Conv2d<16, 16, 1>,
    #[layer(stride = 2, padding = 1, groups = 32)]
    stage4_0_branch1_0: Conv2d<32, 32, 3>,
    stage4_0_branch1_2: Conv2d<32, 32, 1>,
    stage4_0_branch2_0: Conv2d<32, 32, 1>,
    #[layer(stride = 2, padding = 1, groups = 32)]
    stage4_0_branch2_3: Conv2d<32, 32, 3>,
    stage4_0_branch2_5: Conv2d<32, 32, 1>,
    conv5_0: Conv2d<64, 96, 1>,
    global_avg_pool: GlobalAvgPool,
    fc: Linear<96, 5>,
}

#[model(input = [3, 32, 32])]
impl ShufflenetDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.conv1_0(input); // [8, 16, 16]
        let relu_out = relu(getitem); // [8, 16, 16]
        let max_pool2d = self.max_pool(relu_out); // [8, 8, 8]
        let getitem_3 = self.stage2_0_branch1_0(max_pool2d); // [8, 4, 4]
        let getitem_6 = self.stage2_0_branch1_2(getitem_3); // [8, 4, 4]
        let relu_1 = relu(getitem_6); // [8, 4, 4]
        let getitem_9 = self.stage2_0_branch2_0(max_pool2d); // [8, 8, 8]
        let relu_2 = relu(getitem_9); // [8, 8, 8]
        let getitem_12 = self.stage2_0_branch2_3(relu_2); // [8, 4, 4]
        let getitem_15 = self.stage2_0_branch2_5(getitem_12); // [8, 4, 4]
        let relu_3 = relu(getitem_15); // [8, 4, 4]
        let cat_out = cat([relu_1, relu_3], -3); // [16, 4, 4]
        let view = cat_out.reshape([2, 8, 4, 4]); // [2, 8, 4, 4]
        let transpose = view.transpose(-4, -3); // [8, 2, 4, 4]
        let view_1 = transpose.reshape([16, 4, 4]); // [16, 4, 4]
        let [split_split_0, split_split_1] = view_1.split(8, -3); // [8, 4, 4], [8, 4, 4]
        let getitem_20 = self.stage2_1_branch2_0(split_split_1); // [8, 4, 4]
        let relu_4 = relu(getitem_20); // [8, 4, 4]
        let getitem_23 = self.stage2_1_branch2_3(relu_4); // [8, 4, 4]
        let getitem_26 = self.stage2_1_branch2_5(getitem_23); // [8, 4, 4]
        let relu_5 = relu(getitem_26); // [8, 4, 4]
        let cat_1 = cat([split_split_0, relu_5], -3); // [16, 4, 4]
        let view_2 = cat_1.reshape([2, 8, 4, 4]); // [2, 8, 4, 4]
        let transpose_1 = view_2.transpose(-4, -3); // [8, 2, 4, 4]
        let view_3 = transpose_1.reshape([16, 4, 4]); // [16, 4, 4]
        let getitem_29 = self.stage3_0_branch1_0(view_3); // [16, 2, 2]
        let getitem_32 = self.stage3_0_branch1_2(getitem_29); // [16, 2, 2]
        let relu_6 = relu(getitem_32); // [16, 2, 2]
        let getitem_35 = self.stage3_0_branch2_0(view_3); // [16, 4, 4]
        let relu_7 = relu(getitem_35); // [16, 4, 4]
        let getitem_38 = self.stage3_0_branch2_3(relu_7); // [16, 2, 2]
        let getitem_41 = self.stage3_0_branch2_5(getitem_38); // [16, 2, 2]
        let relu_8 = relu(getitem_41); // [16, 2, 2]
        let cat_2 = cat([relu_6, relu_8], -3); // [32, 2, 2]
        let view_4 = cat_2.reshape([2, 16, 2, 2]); // [2, 16, 2, 2]
        let transpose_2 = view_4.transpose(-4, -3); // [16, 2, 2, 2]
        let view_5 = transpose_2.reshape([32, 2, 2]); // [32, 2, 2]
        let getitem_44 = self.stage4_0_branch1_0(view_5); // [32, 1, 1]
        let getitem_47 = self.stage4_0_branch1_2(getitem_44); // [32, 1, 1]
        let relu_9 = relu(getitem_47); // [32, 1, 1]
        let getitem_50 = self.stage4_0_branch2_0(view_5); // [32, 2, 2]
        let relu_10 = relu(getitem_50); // [32, 2, 2]
        let getitem_53 = self.stage4_0_branch2_3(relu_10); // [32, 1, 1]
        let getitem_56 = self.stage4_0_branch2_5(getitem_53); // [32, 1, 1]
        let relu_11 = relu(getitem_56); // [32, 1, 1]
        let cat_3 = cat([relu_9, relu_11], -3); // [64, 1, 1]
        let view_6 = cat_3.reshape([2, 32, 1, 1]); // [2, 32, 1, 1]
        let transpose_3 = view_6.transpose(-4, -3); // [32, 2, 1, 1]
        let view_7 = transpose_3.reshape([64, 1, 1]); // [64, 1, 1]
        let getitem_59 = self.conv5_0(view_7); // [96, 1, 1]
        let relu_12 = relu(getitem_59); // [96, 1, 1]
        let mean = self.global_avg_pool(relu_12); // [96]
        self.fc(mean) // [5]
    }
}
