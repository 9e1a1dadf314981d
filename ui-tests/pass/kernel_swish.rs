use blaze::prelude::*;

kernel! {
    /// Swish activation.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

fn main() {
    let x = Tensor::<Cpu, 2>::from_vec(vec![-1.0f32, 0.0, 1.0, 2.0], [2, 2], &CpuDevice);
    let y = swish(&x, 1.0);
    assert_eq!(y.shape(), [2, 2]);
    assert!(swish::WGSL.contains("fn swish_d_beta("));
}
