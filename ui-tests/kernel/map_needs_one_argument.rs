use blaze::prelude::*;

kernel! {
    fn scaled(x: f32, s: f32) -> f32 {
        x * s
    }
}

#[model(input = [4])]
pub struct Net {
    fc: Linear<4, 4>,
    act: Map<scaled::Kernel>,
}

fn main() {
    let model = Net::<Cpu>::new_seeded(0, &CpuDevice);
    let _ = model.forward(&Tensor::zeros([1, 4], &CpuDevice));
}
