// `DensenetLegacyFixed`, converted by blaze-onnx from `densenet_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct DensenetLegacyFixed {
    #[layer(stride = 2, padding = 3)]
    features_conv0_conv: Conv2d<3, 8, 7>,
    #[layer(stride = 2, padding = 1)]
    max_pool: MaxPool2d<3>,
    features_denseblock1_denselayer1_norm1: BatchNorm2d<8>,
    features_denseblock1_denselayer1_conv1_conv: Conv2d<8, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock1_denselayer1_conv2: Conv2d<8, 4, 3>,
    features_denseblock1_denselayer2_norm1: BatchNorm2d<12>,
    features_denseblock1_denselayer2_conv1_conv: Conv2d<12, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock1_denselayer2_conv2: Conv2d<8, 4, 3>,
    features_transition1_norm: BatchNorm2d<16>,
    #[layer(bias = false)]
    features_transition1_conv: Conv2d<16, 8, 1>,
    avg_pool: AvgPool2d<2>,
    features_denseblock2_denselayer1_norm1: BatchNorm2d<8>,
    features_denseblock2_denselayer1_conv1_conv: Conv2d<8, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock2_denselayer1_conv2: Conv2d<8, 4, 3>,
    features_denseblock2_denselayer2_norm1: BatchNorm2d<12>,
    features_denseblock2_denselayer2_conv1_conv: Conv2d<12, 8, 1>,
    #[layer(padding = 1, bias = false)]
    features_denseblock2_denselayer2_conv2: Conv2d<8, 4, 3>,
    features_norm5: BatchNorm2d<16>,
    global_avg_pool: AdaptiveAvgPool2d<1, 1>,
    classifier: Linear<16, 5>,
}

#[model(input = [3, 32, 32])]
impl DensenetLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let features_conv0_conv_output_0 = self.features_conv0_conv(input); // [8, 16, 16]
        let features_relu0_relu_output_0 = relu(features_conv0_conv_output_0); // [8, 16, 16]
        let features_pool0_maxpool_output_0 = self.max_pool(features_relu0_relu_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer1_concat_output_0 = cat([features_pool0_maxpool_output_0], -3); // [8, 8, 8]
        let features_denseblock1_denselayer1_norm1_batchnormalization_output_0 = self.features_denseblock1_denselayer1_norm1(features_denseblock1_denselayer1_concat_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer1_relu1_relu_output_0 = relu(features_denseblock1_denselayer1_norm1_batchnormalization_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer1_conv1_conv_output_0 = self.features_denseblock1_denselayer1_conv1_conv(features_denseblock1_denselayer1_relu1_relu_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer1_relu2_relu_output_0 = relu(features_denseblock1_denselayer1_conv1_conv_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer1_conv2_conv_output_0 = self.features_denseblock1_denselayer1_conv2(features_denseblock1_denselayer1_relu2_relu_output_0); // [4, 8, 8]
        let features_denseblock1_denselayer2_concat_output_0 = cat([features_pool0_maxpool_output_0, features_denseblock1_denselayer1_conv2_conv_output_0], -3); // [12, 8, 8]
        let features_denseblock1_denselayer2_norm1_batchnormalization_output_0 = self.features_denseblock1_denselayer2_norm1(features_denseblock1_denselayer2_concat_output_0); // [12, 8, 8]
        let features_denseblock1_denselayer2_relu1_relu_output_0 = relu(features_denseblock1_denselayer2_norm1_batchnormalization_output_0); // [12, 8, 8]
        let features_denseblock1_denselayer2_conv1_conv_output_0 = self.features_denseblock1_denselayer2_conv1_conv(features_denseblock1_denselayer2_relu1_relu_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer2_relu2_relu_output_0 = relu(features_denseblock1_denselayer2_conv1_conv_output_0); // [8, 8, 8]
        let features_denseblock1_denselayer2_conv2_conv_output_0 = self.features_denseblock1_denselayer2_conv2(features_denseblock1_denselayer2_relu2_relu_output_0); // [4, 8, 8]
        let features_denseblock1_concat_output_0 = cat([features_pool0_maxpool_output_0, features_denseblock1_denselayer1_conv2_conv_output_0, features_denseblock1_denselayer2_conv2_conv_output_0], -3); // [16, 8, 8]
        let features_transition1_norm_batchnormalization_output_0 = self.features_transition1_norm(features_denseblock1_concat_output_0); // [16, 8, 8]
        let features_transition1_relu_relu_output_0 = relu(features_transition1_norm_batchnormalization_output_0); // [16, 8, 8]
        let features_transition1_conv_conv_output_0 = self.features_transition1_conv(features_transition1_relu_relu_output_0); // [8, 8, 8]
        let features_transition1_pool_averagepool_output_0 = self.avg_pool(features_transition1_conv_conv_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer1_concat_output_0 = cat([features_transition1_pool_averagepool_output_0], -3); // [8, 4, 4]
        let features_denseblock2_denselayer1_norm1_batchnormalization_output_0 = self.features_denseblock2_denselayer1_norm1(features_denseblock2_denselayer1_concat_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer1_relu1_relu_output_0 = relu(features_denseblock2_denselayer1_norm1_batchnormalization_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer1_conv1_conv_output_0 = self.features_denseblock2_denselayer1_conv1_conv(features_denseblock2_denselayer1_relu1_relu_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer1_relu2_relu_output_0 = relu(features_denseblock2_denselayer1_conv1_conv_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer1_conv2_conv_output_0 = self.features_denseblock2_denselayer1_conv2(features_denseblock2_denselayer1_relu2_relu_output_0); // [4, 4, 4]
        let features_denseblock2_denselayer2_concat_output_0 = cat([features_transition1_pool_averagepool_output_0, features_denseblock2_denselayer1_conv2_conv_output_0], -3); // [12, 4, 4]
        let features_denseblock2_denselayer2_norm1_batchnormalization_output_0 = self.features_denseblock2_denselayer2_norm1(features_denseblock2_denselayer2_concat_output_0); // [12, 4, 4]
        let features_denseblock2_denselayer2_relu1_relu_output_0 = relu(features_denseblock2_denselayer2_norm1_batchnormalization_output_0); // [12, 4, 4]
        let features_denseblock2_denselayer2_conv1_conv_output_0 = self.features_denseblock2_denselayer2_conv1_conv(features_denseblock2_denselayer2_relu1_relu_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer2_relu2_relu_output_0 = relu(features_denseblock2_denselayer2_conv1_conv_output_0); // [8, 4, 4]
        let features_denseblock2_denselayer2_conv2_conv_output_0 = self.features_denseblock2_denselayer2_conv2(features_denseblock2_denselayer2_relu2_relu_output_0); // [4, 4, 4]
        let features_denseblock2_concat_output_0 = cat([features_transition1_pool_averagepool_output_0, features_denseblock2_denselayer1_conv2_conv_output_0, features_denseblock2_denselayer2_conv2_conv_output_0], -3); // [16, 4, 4]
        let features_norm5_batchnormalization_output_0 = self.features_norm5(features_denseblock2_concat_output_0); // [16, 4, 4]
        let relu_output_0 = relu(features_norm5_batchnormalization_output_0); // [16, 4, 4]
        let globalaveragepool_output_0 = self.global_avg_pool(relu_output_0); // [16, 1, 1]
        let flatten_output_0 = globalaveragepool_output_0.flatten(); // [16]
        self.classifier(flatten_output_0) // [5]
    }
}
