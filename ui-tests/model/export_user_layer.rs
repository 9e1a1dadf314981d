// A model with a hand-written layer that does not implement `Export` does
// not export: the error names the layer.
use blaze::prelude::*;

#[path = "../common/double.rs"]
mod double;

use double::Double;

#[model(input = [4])]
pub struct Inner {
    fc: Linear<4, 8>,
    act: Gelu,
}

#[model(input = [4])]
pub struct Outer {
    inner: Inner,
    double: Double,
    norm: LayerNorm<8>,
    head: Linear<8, 2>,
}

fn main() {
    let m = Outer::<Cpu>::new_seeded(0, &CpuDevice);
    blaze::export::save_onnx(&m, "outer.onnx").unwrap();
}
