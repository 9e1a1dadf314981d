//! Models shared by the integration tests.

use blaze::prelude::*;

/// The LeNet of the `#[model]` issue, layer for layer the PyTorch model in
/// `tests/fixtures/make_lenet_fixture.py`.
#[model(input = [1, 28, 28])]
pub struct LeNet {
    #[layer(padding = 2)]
    pub conv1: Conv2d<1, 6, 5>,
    pub act1: Relu,
    pub pool1: MaxPool2d<2>,
    pub conv2: Conv2d<6, 16, 5>,
    pub act2: Relu,
    pub pool2: MaxPool2d<2>,
    pub flat: Flatten,
    pub fc1: Linear<400, 120>,
    pub act3: Relu,
    #[layer(p = 0.1)]
    pub drop: Dropout,
    pub fc2: Linear<120, 10>,
}
