// A hand-written layer that says it stays in float (`KeepsFloat`) takes
// part in the int8 form of a model around it: the int8 model runs it as
// it is, between its int8 layers, and saves and loads.
use blaze::prelude::*;
use blaze::Backend;

#[path = "../common/double.rs"]
mod double;

use double::Double;

impl<B: Backend> blaze::quant::KeepsFloat for Double<B> {}

#[model(input = [4])]
pub struct Outer {
    fc: Linear<4, 8>,
    double: Double,
    head: Linear<8, 2>,
}

fn main() {
    let m = Outer::<Cpu>::new_seeded(0, &CpuDevice);
    let q = blaze::quant::quantize_dynamic(&m);
    let x = Tensor::<Cpu, 2>::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], [1, 4], &CpuDevice);
    let (want, got) = (m.forward(&x).to_vec::<f32>(), q.forward(&x).to_vec::<f32>());
    assert!(want.iter().zip(&got).all(|(a, b)| (a - b).abs() < 0.05), "{want:?} vs {got:?}");
    let path = std::env::temp_dir().join(format!("outer-int8-{}.safetensors", std::process::id()));
    q.save(&path).unwrap();
    let back = OuterInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), got);
    std::fs::remove_file(path).unwrap();
}
