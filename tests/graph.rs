//! Models with a `forward` body: shapes, generated backward passes against
//! finite differences (f64), and the parameter-only backward.

use blaze::nn::gradcheck::check_model;
use blaze::prelude::*;

#[model]
pub struct ResBlock {
    norm: LayerNorm<16>,
    fc1: Linear<16, 32>,
    fc2: Linear<32, 16>,
}

#[model(input = [T, 16])]
impl ResBlock {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.norm(x);
        let h = gelu(self.fc1(h));
        x + self.fc2(h)
    }
}

#[test]
fn resblock_backward_matches_finite_differences() {
    let device = CpuDevice::default();
    let m = ResBlock::new_seeded(1, &device);
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 16], &device);
    check_model(&m, &x, true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    let y = m.forward(&x);
    assert_eq!(y.shape(), [2, 5, 16]);
}
