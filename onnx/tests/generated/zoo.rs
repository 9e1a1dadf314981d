// `Zoo`, converted by blaze-onnx from `zoo.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct Zoo {
    #[layer(stride = 2, padding = 1)]
    down: Conv2d<3, 4, 3>,
    #[layer(negative_slope = 0.2)]
    leaky_relu: LeakyRelu,
    #[layer(stride = 2)]
    up: ConvTranspose2d<4, 4, 2>,
    avg_pool: AvgPool2d<2>,
    #[layer(padding = 1)]
    seq: Conv1d<8, 6, 3>,
    fc: Linear<288, 10>,
}

#[model(input = [3, 16, 16])]
impl Zoo {
    fn forward(&self, input: Tensor) -> Tensor {
        let conv2d = self.down(input); // [4, 8, 8]
        let leaky_relu = self.leaky_relu(conv2d); // [4, 8, 8]
        let convolution = self.up(leaky_relu); // [4, 16, 16]
        let avg_pool2d = self.avg_pool(convolution); // [4, 8, 8]
        let sigmoid_out = sigmoid(avg_pool2d); // [4, 8, 8]
        let mul = sigmoid_out * 0.5; // [4, 8, 8]
        let sub = avg_pool2d - mul; // [4, 8, 8]
        let add = sigmoid_out + 1.0; // [4, 8, 8]
        let div = sub / add; // [4, 8, 8]
        let cat_out = cat([sub, div], -3); // [8, 8, 8]
        let slice_1 = cat_out.narrow(-2, 1, 6); // [8, 6, 8]
        let view = slice_1.reshape([8, 48]); // [8, 48]
        let conv1d = self.seq(view); // [6, 48]
        let view_1 = conv1d.flatten(); // [288]
        let linear = self.fc(view_1); // [10]
        linear.softmax(-1) // [10]
    }
}
