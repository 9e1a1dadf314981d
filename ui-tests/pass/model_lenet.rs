// The LeNet, trained one step with the generated backward.
use blaze::nn::Ctx;
use blaze::prelude::*;

#[model(input = [1, 28, 28])] // per-sample shape; the batch dim is implicit
pub struct LeNet {
    #[layer(padding = 2)]
    conv1: Conv2d<1, 6, 5>, // -> [6, 28, 28]
    act1: Relu,
    pool1: MaxPool2d<2>, // -> [6, 14, 14]
    conv2: Conv2d<6, 16, 5>, // -> [16, 10, 10]
    act2: Relu,
    pool2: MaxPool2d<2>, // -> [16, 5, 5]
    flat: Flatten,       // -> [400]
    fc1: Linear<400, 120>,
    act3: Relu,
    #[layer(p = 0.1)]
    drop: Dropout,
    fc2: Linear<120, 10>,
}

fn main() {
    let device = CpuDevice;
    let mut model = LeNet::new(&device);
    let x = Tensor::<Cpu, 4>::rand_normal([2, 1, 28, 28], &device);
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    let (dx, grads) = model.backward(&cache, &y.ones_like());
    assert_eq!(dx.shape(), [2, 1, 28, 28]);
    blaze::nn::sgd_step(&mut model, &grads, 0.01);
    println!("{}", model.summary());
}
