//! The backend conformance suite: every op, checked against naive references
//! and hand-worked values, written once and run by every backend.
//!
//! A backend's test crate instantiates it with one line:
//!
//! ```text
//! blaze_conformance::conformance_suite!(blaze_cpu::Cpu, blaze_cpu::CpuDevice);
//! ```
//!
//! Tolerances: f32 results agree with the f64 references to a relative
//! error of 1e-5 (1e-4 for results summed over many terms: matmul, conv,
//! reductions of long rows) and an absolute error of 1e-6; f64 to 1e-12.
#![deny(missing_docs)]

pub mod autodiff;
mod conv;
mod int8;
mod precision;
mod rows;
pub mod props;
pub mod reference;
mod table;
mod tests;
mod training;

pub use autodiff::*;
pub use conv::*;
pub use int8::*;
pub use precision::*;
pub use rows::*;
pub use table::*;
pub use tests::*;
pub use training::*;

use blaze_runtime::{Backend, DType, DataVec, Tensor, TensorData};

/// Expands to one `#[test]` per conformance check for `$backend` on `$device`.
///
/// A backend whose device may be missing passes a guard: each test returns
/// early (having printed why) when it is false.
///
/// ```text
/// blaze_conformance::conformance_suite!(Wgpu, WgpuDevice::default(), if WgpuDevice::probe().is_some());
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($backend:ty, $device:expr) => {
        $crate::conformance_suite!($backend, $device, if true);
    };
    ($backend:ty, $device:expr, if $available:expr) => {
        $crate::conformance_suite!(@each $backend, $device, $available;
            creation_and_readback, random_is_seeded, unary_ops, unary_ops_match_pytorch, binary_ops_match_their_kernels, tape_binary_gradients_are_the_tables, comparisons_match_the_table, reductions_match_the_table, binary_broadcasting,
            binary_strided_inputs, scalar_ops_and_operators, integer_and_bool_ops,
            comparisons_where_and_masks, reductions, reductions_edge_cases, matmul,
            matmul_batched_and_strided, shape_ops, cat_stack_split_pad, indexing,
            softmax_family, masked_softmax_rows, normalisation, bias_and_activation, conv2d, conv_and_pool_gradients, layer_gradients, activation_gradients, norm_gradients, attention_gradients, lstm_gradients, gru_gradients, layer_modes, losses, optimizers, pooling, nan_propagation, casts, misuse_messages,
            prop_binary_broadcast, prop_reductions, prop_matmul, prop_conv2d,
            prop_movement_roundtrip, autodiff_elementwise, autodiff_reductions,
            autodiff_linear_algebra_and_movement, autodiff_conv_and_pool, autodiff_graph_semantics, autodiff_bias_act, autodiff_masked_softmax, kernels, half_precision, mixed_precision_products, mixed_precision_rounding, mixed_precision_convolutions, int8_products, int8_convolutions, int8_layers_match_float_layers);
    };
    (@each $backend:ty, $device:expr, $available:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                $crate::$name::<$backend>(&$device);
            }
        )*
    };
}

/// A tensor of `dtype` from f64 values.
pub fn tensor<B: Backend, const D: usize>(
    values: &[f64],
    shape: [usize; D],
    dtype: DType,
    dev: &B::Device,
) -> Tensor<B, D> {
    let data = TensorData::from_values(DataVec::F64(values.to_vec()).convert(dtype), shape)
        .unwrap_or_else(|e| panic!("conformance: bad test data: {e}"));
    Tensor::from_data(data, dev).unwrap_or_else(|e| panic!("conformance: bad test data: {e}"))
}

/// An f32 tensor of `0, 1, 2, ...` scaled by `scale` and shifted by `shift`.
pub fn ramp<B: Backend, const D: usize>(
    shape: [usize; D],
    scale: f64,
    shift: f64,
    dtype: DType,
    dev: &B::Device,
) -> Tensor<B, D> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| i as f64 * scale + shift).collect();
    tensor(&v, shape, dtype, dev)
}

/// Deterministic pseudo-random values in `[-1, 1)` (no backend involved).
pub fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = blaze_runtime::Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

/// The tolerance for `dtype` (`long`: a result summed over many terms).
pub fn tolerance(dtype: DType, long: bool) -> (f64, f64) {
    match (dtype, long) {
        (DType::F64, _) => (1e-12, 1e-12),
        (_, false) => (1e-5, 1e-6),
        (_, true) => (1e-4, 1e-5),
    }
}

/// Asserts shape, then values within `rtol`/`atol`; NaNs must match NaNs.
#[track_caller]
pub fn assert_close<B: Backend, const D: usize>(
    what: &str,
    actual: &Tensor<B, D>,
    expected: &[f64],
    shape: &[usize],
    (rtol, atol): (f64, f64),
) {
    assert_eq!(actual.shape().as_slice(), shape, "{what}: shape");
    let got = actual.to_data().values.to_f64_vec();
    assert_eq!(got.len(), expected.len(), "{what}: element count");
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() {
            g.is_nan()
        } else if e.is_infinite() {
            g == e
        } else {
            (g - e).abs() <= atol + rtol * e.abs()
        };
        assert!(
            ok,
            "{what}: element {i}: got {g}, expected {e} (rtol {rtol}, atol {atol})\n  got: {got:?}\n  expected: {expected:?}"
        );
    }
}

/// The values of a tensor as f64.
pub fn values<B: Backend, const D: usize>(t: &Tensor<B, D>) -> Vec<f64> {
    t.to_data().values.to_f64_vec()
}

/// Every activation of the op table (its entries with a layer), as the
/// ops `bias_act` fuses: a check over these covers an op added to the
/// table without naming it.
pub fn table_activations() -> impl Iterator<Item = blaze_runtime::UnaryOp> {
    blaze_spec::ops::UNARY.iter().filter(|op| op.layer).map(|op| {
        blaze_runtime::UnaryOp::from_name(op.name, &[])
            .unwrap_or_else(|| panic!("`{}`: a layer takes no parameters", op.name))
    })
}

/// The float dtypes every numeric check runs in.
pub const FLOATS: [DType; 2] = [DType::F32, DType::F64];

/// The panic message of `f`, or `None` if it returned.
pub fn panic_message(f: impl FnOnce()) -> Option<String> {
    // The default hook still prints the message; the test harness captures it.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}
