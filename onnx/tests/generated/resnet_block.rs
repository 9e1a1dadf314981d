// `ResnetBlock`, converted by blaze-onnx from `resnet_block.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct ResnetBlock {
    #[layer(padding = 1)]
    stem: Conv2d<3, 8, 3>,
    #[layer(padding = 1)]
    conv1: Conv2d<8, 8, 3>,
    #[layer(padding = 1)]
    conv2: Conv2d<8, 8, 3>,
    bn_out: BatchNorm2d<8>,
    avg_pool: AdaptiveAvgPool2d<1, 1>,
    fc: Linear<8, 10>,
}

#[model(input = [3, 12, 12])]
impl ResnetBlock {
    fn forward(&self, input: Tensor) -> Tensor {
        let getitem = self.stem(input); // [8, 12, 12]
        let relu_out = relu(getitem); // [8, 12, 12]
        let getitem_3 = self.conv1(relu_out); // [8, 12, 12]
        let relu_1 = relu(getitem_3); // [8, 12, 12]
        let getitem_6 = self.conv2(relu_1); // [8, 12, 12]
        let add = relu_out + getitem_6; // [8, 12, 12]
        let relu_2 = relu(add); // [8, 12, 12]
        let getitem_9 = self.bn_out(relu_2); // [8, 12, 12]
        let mean = self.avg_pool(getitem_9); // [8, 1, 1]
        let view = mean.flatten(); // [8]
        self.fc(view) // [10]
    }
}
