//! What the backend's unit tests share: a device, test data, and the
//! check of a forced tuning candidate against the CPU's result.

use blaze_runtime::TensorData;

use crate::{CubeDevice, CubeOptions};

/// A device measuring nothing, or `None` (after saying why) without an adapter.
pub(super) fn device() -> Option<CubeDevice> {
    CubeDevice::probe_with(CubeOptions { autotune: Some(false), ..CubeOptions::default() })
}

/// Values in `[-1, 1)` from a fixed sequence.
pub(super) fn data(shape: &[usize], seed: u64) -> TensorData {
    let n = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let values = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect::<Vec<f32>>();
    TensorData::new(values, shape).expect("values fill the shape")
}

/// Checks what candidate `name` of `op` gave: `want`, unless it
/// refused, which only a candidate that needs a feature this device
/// lacks may do (`may_refuse`).
pub(super) fn check(op: &str, name: &str, got: Result<TensorData, String>, want: &TensorData, may_refuse: bool) {
    match got {
        Ok(got) => close(op, name, &got, want),
        Err(why) if may_refuse => println!("{op}: {name} refused on this device: {why}"),
        Err(why) => panic!("{op}: {name} refused: {why}"),
    }
}

/// Asserts `got` is `want` within a relative 1e-4.
fn close(op: &str, name: &str, got: &TensorData, want: &TensorData) {
    assert_eq!(got.shape, want.shape, "{op} {name}: shape");
    let (got, want) = (got.values.to_f64_vec(), want.values.to_f64_vec());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{op} {name}: element {i} is {g}, the CPU's {w}");
    }
}
