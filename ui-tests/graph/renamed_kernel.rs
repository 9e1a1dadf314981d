use blaze::prelude::*;

mod kernels {
    blaze::kernel! {
        pub fn twice(x: f32) -> f32 {
            x * 2.0
        }
    }
}

// A fused group calls a `kernel!` function by the name its WGSL has: one
// imported under another name is a compile error that says so.
use kernels::twice as doubled;

#[model]
pub struct Renamed {
    fc: Linear<4, 4>,
}

#[model(input = [4])]
impl Renamed {
    fn forward(&self, x: Tensor) -> Tensor {
        doubled(self.fc(x) * 2.0) + x
    }
}

fn main() {}
