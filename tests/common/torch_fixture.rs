//! Fixtures written by the PyTorch scripts in tests/fixtures (the format
//! of make_lenet_fixture.py): reading them, loading their weights into a
//! model by PyTorch name, and comparing tensors to 1e-4 relative.

use std::collections::HashMap;

use blaze::nn::ParamMapper;
use blaze::prelude::*;
use blaze::{DataVec, TensorData};

/// Reads the fixture's named tensors.
pub fn read_fixture(file: &str) -> HashMap<String, TensorData> {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
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
pub struct Load<'a>(pub &'a HashMap<String, TensorData>);

impl ParamMapper<Cpu> for Load<'_> {
    fn map<const D: usize>(&mut self, name: &str, t: Tensor<Cpu, D>) -> Tensor<Cpu, D> {
        let data = self.0.get(name).unwrap_or_else(|| panic!("fixture has no tensor {name}"));
        assert_eq!(data.shape, t.shape().to_vec(), "{name}: layout differs from PyTorch's");
        Tensor::from_data(data.clone(), &CpuDevice).expect("rank")
    }
}

#[track_caller]
pub fn assert_matches(name: &str, got: &TensorData, want: &TensorData) {
    assert_eq!(got.shape, want.shape, "{name}: shape");
    let (DataVec::F32(g), DataVec::F32(w)) = (&got.values, &want.values) else { panic!("{name}: f32 expected") };
    let scale = w.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-6);
    for (i, (a, b)) in g.iter().zip(w).enumerate() {
        // Relative to the tensor's largest entry: entries near zero carry
        // only rounding noise of the sums that produced them.
        assert!((a - b).abs() <= 1e-4 * scale, "{name}[{i}]: blaze {a}, pytorch {b} (scale {scale})");
    }
}
