use blaze::prelude::*;

#[model]
pub struct NotABool {
    fc: Linear<8, 8>,
}

#[model(input = [8], fuse = "no")]
impl NotABool {
    fn forward(&self, x: Tensor) -> Tensor {
        relu(self.fc(x)) * 2.0
    }
}

#[model]
pub struct UnknownKey {
    fc: Linear<8, 8>,
}

#[model(input = [8], fusion = false)]
impl UnknownKey {
    fn forward(&self, x: Tensor) -> Tensor {
        relu(self.fc(x)) * 2.0
    }
}

#[model]
pub struct OnlyFuse {
    fc: Linear<8, 8>,
}

#[model(fuse = false)]
impl OnlyFuse {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

fn main() {
    // The model with a bad `fuse` is still whole: no errors follow from using it.
    let m = NotABool::<Cpu>::new_seeded(0, &CpuDevice);
    let _ = m.forward(&Tensor::zeros([2, 8], &CpuDevice));
    let _ = NotABool::<Cpu>::FUSION;
}
