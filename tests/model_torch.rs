//! The generated LeNet agrees with PyTorch: same weights and input give the
//! same output and the same gradient for the input and every parameter, to
//! 1e-4 relative. The fixture comes from tests/fixtures/make_lenet_fixture.py.

mod common;

use common::LeNet;
use std::collections::HashMap;

use blaze::nn::{Ctx, ParamMapper};
use blaze::prelude::*;
use blaze::{DataVec, TensorData};

/// Reads the fixture's named tensors.
fn read_fixture() -> HashMap<String, TensorData> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lenet.bin");
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut at = 0;
    let u32_at = |at: &mut usize| {
        let v = u32::from_le_bytes(bytes[*at..*at + 4].try_into().expect("4 bytes"));
        *at += 4;
        v as usize
    };
    let count = u32_at(&mut at);
    let mut out = HashMap::new();
    for _ in 0..count {
        let len = u32_at(&mut at);
        let name = String::from_utf8(bytes[at..at + len].to_vec()).expect("utf-8 name");
        at += len;
        let rank = u32_at(&mut at);
        let shape: Vec<usize> = (0..rank).map(|_| u32_at(&mut at)).collect();
        let n: usize = shape.iter().product();
        let values: Vec<f32> =
            bytes[at..at + 4 * n].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        at += 4 * n;
        out.insert(name, TensorData::new(values, shape).expect("consistent"));
    }
    out
}

/// Loads every parameter from the fixture by its PyTorch name.
struct Load<'a>(&'a HashMap<String, TensorData>);

impl ParamMapper<Cpu> for Load<'_> {
    fn map<const D: usize>(&mut self, name: &str, t: Tensor<Cpu, D>) -> Tensor<Cpu, D> {
        let data = self.0.get(name).unwrap_or_else(|| panic!("fixture has no tensor {name}"));
        assert_eq!(data.shape, t.shape().to_vec(), "{name}: layout differs from PyTorch's");
        Tensor::from_data(data.clone(), &CpuDevice).expect("rank")
    }
}

#[track_caller]
fn assert_matches(name: &str, got: &TensorData, want: &TensorData) {
    assert_eq!(got.shape, want.shape, "{name}: shape");
    let (DataVec::F32(g), DataVec::F32(w)) = (&got.values, &want.values) else { panic!("{name}: f32 expected") };
    let scale = w.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-6);
    for (i, (a, b)) in g.iter().zip(w).enumerate() {
        // Relative to the tensor's largest entry: entries near zero carry
        // only rounding noise of the sums that produced them.
        assert!((a - b).abs() <= 1e-4 * scale, "{name}[{i}]: blaze {a}, pytorch {b} (scale {scale})");
    }
}

#[test]
fn lenet_output_and_gradients_match_pytorch() {
    let fx = read_fixture();
    let mut model = LeNet::new_seeded(0, &CpuDevice);
    blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
    let x = Tensor::<Cpu, 4>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 4");
    let r = Tensor::<Cpu, 2>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 2");

    assert_matches("output (inference)", &model.forward(&x).to_data(), &fx["output"]);
    let (y, cache) = model.forward_train(&x, &mut Ctx::eval());
    assert_matches("output (eval-mode training forward)", &y.to_data(), &fx["output"]);
    let (dx, grads) = model.backward(&cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    let named = blaze::nn::grads_dict::<Cpu, LeNet>(&grads);
    assert_eq!(named.len(), 8);
    for (name, g) in named {
        assert_matches(&format!("grad.{name}"), &g, &fx[&format!("grad.{name}")]);
    }
}
