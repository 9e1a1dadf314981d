//! Opening a device ([`CubeDevice::open`]), and the self-check a device
//! runs when it opens: a few of the backend's own
//! ops on values where translations go wrong (NaN, infinities, negative
//! zero, negative bases), compared with what the CPU computes. A device
//! that disagrees would give wrong answers without a word, so it is
//! refused (unless `BLAZE_CUBECL_ALLOW_DIVERGENT=1`).

use blaze_runtime::{BinaryOp, CmpOp, DType, DataVec, Primitives, ReduceOp, TensorData, UnaryOp};

use blaze_gpu_host::{GpuBackend, OpenError};

use crate::backend::CubeNative;
use crate::{CubeDevice, CubeOptions};

impl CubeDevice {
    /// The best adapter present (hardware before software), or the first
    /// whose name contains `BLAZE_CUBECL_ADAPTER` (case-insensitively);
    /// `WGPU_BACKEND=vulkan|gl|metal|dx12` limits the APIs searched. The
    /// device must pass a self-check against the CPU's results unless
    /// `BLAZE_CUBECL_ALLOW_DIVERGENT=1`.
    pub fn new() -> Result<Self, OpenError> {
        Self::open(CubeOptions::default())
    }

    /// A device as `options` say.
    pub fn open(options: CubeOptions) -> Result<Self, OpenError> {
        let dev = Self::open_unchecked(&options)?;
        let check = run(&dev);
        GpuBackend::CubeCl.admit(dev, options.allow_divergent, check)
    }
}

const X: [f32; 8] = [1.0, f32::NAN, -2.5, 3.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, 0.5];

fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn floats(d: TensorData) -> Vec<f32> {
    match d.values {
        DataVec::F32(v) => v,
        DataVec::Bool(v) => v.into_iter().map(|b| f32::from(u8::from(b))).collect(),
        DataVec::I64(v) => v.into_iter().map(|i| i as f32).collect(),
        other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
    }
}

pub(crate) fn run(dev: &CubeDevice) -> Result<(), OpenError> {
    type B = CubeNative;
    let x = B::from_data(TensorData { shape: vec![8], values: DataVec::F32(X.to_vec()) }, dev);
    let rows = B::reshape(&x, &[2, 4]);
    let b = |v: bool| f32::from(u8::from(v));
    let max_row = |r: &[f32]| {
        r.iter().copied().fold(f32::NEG_INFINITY, |a, v| if a.is_nan() || v.is_nan() { f32::NAN } else { a.max(v) })
    };
    let cases: Vec<(&str, blaze_runtime::TensorData, Vec<f32>)> = vec![
        (
            "sign (NaN passes)",
            B::to_data(&B::unary(UnaryOp::Sign, &x)),
            X.map(|v| {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    v
                }
            })
            .to_vec(),
        ),
        ("x < 0.5 (NaN is false)", B::to_data(&B::compare_scalar(CmpOp::Lt, &x, 0.5)), X.map(|v| b(v < 0.5)).to_vec()),
        ("x != x (NaN is true)", B::to_data(&B::compare(CmpOp::Ne, &x, &x)), X.map(|v| b(v.is_nan())).to_vec()),
        ("x as bool (NaN is true)", B::to_data(&B::cast(&x, DType::Bool)), X.map(|v| b(v != 0.0)).to_vec()),
        (
            "maximum(x, 0) (NaN wins)",
            B::to_data(&B::binary(BinaryOp::Maximum, &x, &B::full(&[8], 0.0, DType::F32, dev))),
            X.map(|v| if v.is_nan() { v } else { v.max(0.0) }).to_vec(),
        ),
        ("pow(x, 3)", B::to_data(&B::binary_scalar(BinaryOp::Pow, &x, 3.0)), X.map(|v| v.powi(3)).to_vec()),
        ("floor", B::to_data(&B::unary(UnaryOp::Floor, &x)), X.map(f32::floor).to_vec()),
        (
            "max of each row (NaN wins)",
            B::to_data(&B::reduce(ReduceOp::Max, &rows, 1)),
            vec![max_row(&X[..4]), max_row(&X[4..])],
        ),
        ("argmax of each row (NaN wins)", B::to_data(&B::reduce(ReduceOp::ArgMax, &rows, 1)), vec![1.0, 1.0]),
        (
            "sum of each column",
            B::to_data(&B::reduce(ReduceOp::Sum, &rows, 0)),
            (0..4).map(|c| X[c] + X[c + 4]).collect(),
        ),
    ];
    dev.synchronize().map_err(|e| OpenError::Device { adapter: dev.adapter_name(), message: e.message })?;
    for (check, got, want) in cases {
        let got = floats(got);
        if got.len() != want.len() || !got.iter().zip(&want).all(|(&g, &w)| same(g, w)) {
            return Err(OpenError::Divergent {
                backend: GpuBackend::CubeCl,
                adapter: dev.adapter_name(),
                check: format!("{check} of {X:?}"),
                got: format!("{got:?}"),
                want: format!("{want:?}"),
            });
        }
    }
    // A product the tuned matmul computes (small, so tuning is cheap).
    let a: Vec<f32> = (0..12).map(|i| i as f32 * 0.25 - 1.0).collect();
    let w: Vec<f32> = (0..12).map(|i| 1.5 - i as f32 * 0.125).collect();
    let at = B::from_data(TensorData { shape: vec![3, 4], values: DataVec::F32(a.clone()) }, dev);
    let wt = B::from_data(TensorData { shape: vec![4, 3], values: DataVec::F32(w.clone()) }, dev);
    let got = floats(B::to_data(&B::matmul(&at, &wt)));
    let want: Vec<f32> = (0..9).map(|ij| (0..4).map(|k| a[ij / 3 * 4 + k] * w[k * 3 + ij % 3]).sum()).collect();
    if !got.iter().zip(&want).all(|(&g, &w)| same(g, w)) || got.len() != want.len() {
        return Err(OpenError::Divergent {
            backend: GpuBackend::CubeCl,
            adapter: dev.adapter_name(),
            check: "a [3, 4] x [4, 3] matmul".into(),
            got: format!("{got:?}"),
            want: format!("{want:?}"),
        });
    }
    Ok(())
}
