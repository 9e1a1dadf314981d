// A model whose struct has errors still has its whole API, so the uses
// below add no errors of their own: each model reports its mistake alone.
use blaze::nn::Ctx;
use blaze::prelude::*;

#[model(input = [1, 8, 8])]
pub struct Shapes {
    conv: Conv2d<1, 4, 3>,
    flat: Flatten,
    fc: Linear<100, 10>,
}

#[model(input = [4])]
pub struct Options {
    #[layer(p = 2.0)]
    drop: Dropout,
    fc: Linear<4, 2>,
}

#[model(input = [4])]
pub struct Fields {
    fc: Linear<4, 2>,
    steps: usize,
}

fn main() {
    let device = CpuDevice;
    let mut shapes = Shapes::new(&device);
    let x = Tensor::<Cpu, 4>::rand_normal([2, 1, 8, 8], &device);
    let (y, cache) = shapes.forward_train(&x, &mut Ctx::train(0));
    let (_dx, grads) = shapes.backward(&cache, &y.ones_like());
    blaze::nn::sgd_step(&mut shapes, &grads, 0.01);
    println!("{} {}", shapes.summary(), Shapes::<Cpu>::NUM_PARAMS);
    let v = Tensor::<Cpu, 2>::zeros([1, 4], &device);
    let _ = Options::new_seeded(0, &device).forward(&v).shape();
    let _ = Fields::new(&device).forward(&v).shape();
}
