//! The optimizers' updates write a buffer in place only when nothing else
//! holds it. Without an adapter the test prints a notice and passes,
//! unless `BLAZE_REQUIRE_CUBECL=1`.

use blaze_cubecl::{CubeDevice, CubeNative};
use blaze_runtime::{AdamStep, Composites, DataVec, Primitives, TensorData};

fn tensor(v: &[f32], dev: &CubeDevice) -> blaze_cubecl::CubeStorage {
    CubeNative::from_data(TensorData { shape: vec![v.len()], values: DataVec::F32(v.to_vec()) }, dev)
}

fn values(t: &blaze_cubecl::CubeStorage) -> Vec<f64> {
    CubeNative::to_data(t).values.to_f64_vec()
}

#[test]
fn shared_buffers_are_never_written() {
    let Some(dev) = CubeDevice::probe() else { return };
    let x = tensor(&[1.0, 2.0, 3.0], &dev);
    // Alone: updated (in its own buffer).
    let mut y = tensor(&[10.0, 20.0, 30.0], &dev);
    CubeNative::axpby(&mut y, 0.5, &x, 2.0);
    assert_eq!(values(&y), [7.0, 14.0, 21.0]);
    // Shared: the other holder keeps its values.
    let mut y = tensor(&[10.0, 20.0, 30.0], &dev);
    let kept = y.clone();
    CubeNative::axpby(&mut y, 0.5, &x, 2.0);
    assert_eq!(values(&y), [7.0, 14.0, 21.0]);
    assert_eq!(values(&kept), [10.0, 20.0, 30.0]);

    let step = AdamStep { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0, decoupled: true, t: 1 };
    let (mut p, mut m, mut v) = (tensor(&[1.0, -1.0], &dev), tensor(&[0.0, 0.0], &dev), tensor(&[0.0, 0.0], &dev));
    let (p0, m0) = (p.clone(), m.clone());
    let g = tensor(&[0.5, -2.0], &dev);
    CubeNative::adam(&mut p, &mut m, &mut v, &g, step);
    // The first step moves each weight by lr against its gradient's sign.
    let got = values(&p);
    assert!((got[0] - 0.9).abs() < 1e-5 && (got[1] + 0.9).abs() < 1e-5, "{got:?}");
    assert_eq!(values(&p0), [1.0, -1.0]);
    assert_eq!(values(&m0), [0.0, 0.0]);
    assert!((values(&m)[1] + 0.2).abs() < 1e-6);
}
