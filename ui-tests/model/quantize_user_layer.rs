// A model with a hand-written layer that has no int8 form compiles, but
// does not quantize: the error says that a model quantizes when its fields
// do, and the two ways to give a layer of your own an int8 form.
use blaze::prelude::*;

#[path = "../common/double.rs"]
mod double;

use double::Double;

#[model(input = [4])]
pub struct Outer {
    fc: Linear<4, 8>,
    double: Double,
    head: Linear<8, 2>,
}

fn main() {
    let m = Outer::<Cpu>::new_seeded(0, &CpuDevice);
    let _ = m.forward(&Tensor::zeros([1, 4], &CpuDevice));
    let _ = blaze::quant::quantize_dynamic(&m);
}
