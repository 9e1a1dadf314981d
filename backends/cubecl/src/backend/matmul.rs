//! The batched matmul through cubek, its strategy autotuned per shape
//! class, dtype and device (`tune.rs`), with a one-unit-per-output kernel
//! of its own among the candidates. f16 operands multiply as f16 and
//! accumulate in f32, their result f16, or f32 for a product of f32
//! tensors under an f16 precision (`matmul_rounded`).

use blaze_runtime::DType;
use cubecl::prelude::*;
use cubek_matmul::definition::{MatmulElems, MatmulGlobalElems};
use cubek_matmul::launch::launch_ref;
use cubek_matmul::multi_level;
use cubek_matmul::multi_level::routines::TileSizeSelection;
use cubek_matmul::multi_level::routines::batch::double_unit::DoubleUnitSelectionArgs;
use cubek_matmul::multi_level::routines::batch::simple_unit::SimpleUnitSelectionArgs;
use cubek_matmul::routine::BlueprintStrategy;
use cubek_matmul::strategy::Strategy;
use cubek_std::InputBinding;

use super::{CubeStorage, strides};
use super::tune::{Candidate, Launch};
use crate::tune::class;

/// The strategies tuned among: cubek's unit matmuls, each with its
/// smallest and its largest tiles. They need no tensor cores (WGSL has
/// none) and no 64-bit integers, so they run on every adapter. cubek's
/// `gemm` and `naive` routines copy their operands with 64-bit indices,
/// which an adapter without `SHADER_INT64` refuses (a refused launch
/// leaves CubeCL's memory marked failed), and `gemm` failed to launch on
/// llvmpipe's Vulkan adapter even with it, so neither is a candidate.
fn strategies() -> [(&'static str, Strategy); 4] {
    let simple = |tile_size| {
        Strategy::MultiLevel(multi_level::Strategy::SimpleUnit(BlueprintStrategy::Inferred(SimpleUnitSelectionArgs {
            tile_size,
        })))
    };
    let double = |tile_size| {
        Strategy::MultiLevel(multi_level::Strategy::DoubleUnit(BlueprintStrategy::Inferred(DoubleUnitSelectionArgs {
            tile_size,
        })))
    };
    [
        ("simple_unit_max", simple(TileSizeSelection::MaxTileSize)),
        ("simple_unit_min", simple(TileSizeSelection::MinTileSize)),
        ("double_unit_max", double(TileSizeSelection::MaxTileSize)),
        ("double_unit_min", double(TileSizeSelection::MinTileSize)),
    ]
}

/// One unit per output element, the batch dims broadcast through strides
/// of 0: compiled once for every shape, and for small products faster
/// than a tiled kernel's setup. Sums in f32 whatever `F` is, and stores
/// them as `O`.
#[cube(launch)]
fn unit_kernel<F: Float, O: Float>(a: &Tensor<F>, b: &Tensor<F>, out: &mut Tensor<O>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let rank = out.rank();
    let n = out.shape(rank - 1);
    let m = out.shape(rank - 2);
    let k = a.shape(rank - 1);
    let j = ABSOLUTE_POS % n;
    let i = (ABSOLUTE_POS / n) % m;
    let mut rem = ABSOLUTE_POS / (n * m);
    let mut oa = i * a.stride(rank - 2);
    let mut ob = j * b.stride(rank - 1);
    for t in 0..rank - 2 {
        let d = rank - 3 - t;
        let c = rem % out.shape(d);
        rem /= out.shape(d);
        oa += c * a.stride(d);
        ob += c * b.stride(d);
    }
    let (sa, sb) = (a.stride(rank - 1), b.stride(rank - 2));
    let mut acc = 0.0f32;
    for p in 0..k {
        acc += f32::cast_from(a[oa + p * sa]) * f32::cast_from(b[ob + p * sb]);
    }
    out[ABSOLUTE_POS] = O::cast_from(acc);
}

/// `t` seen with the output's batch dims: stride 0 where it broadcasts.
fn batch_view(t: &CubeStorage, out_shape: &[usize]) -> TensorArg {
    let r = t.shape.len();
    let st = strides(&t.shape);
    let st = (0..r).map(|d| if d < r - 2 && t.shape[d] == 1 && out_shape[d] != 1 { 0 } else { st[d] }).collect();
    let mut shape = out_shape.to_vec();
    shape[r - 2..].copy_from_slice(&t.shape[r - 2..]);
    t.view(st, shape)
}

/// Products up to this many multiply-adds stay on the unit kernel when
/// not measuring.
const SMALL: usize = 1 << 18;

/// `[..., m, k] x [..., k, n]`, the batch dims broadcast.
pub(crate) fn matmul(a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
    product(a, b, a.dtype, matmul_into)
}

/// A product of f32 tensors under an f16 precision: both rounded to f16
/// on the device, multiplied as f16 with f32 sums, the result f32.
pub(crate) fn matmul_f16_to_f32(a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
    product(a, b, DType::F32, matmul_f16_into)
}

/// The product of `a` and `b` in a new `dtype` tensor, written by `into`
/// (zeros for an empty sum).
fn product(
    a: &CubeStorage,
    b: &CubeStorage,
    dtype: DType,
    into: fn(&CubeStorage, &CubeStorage, &CubeStorage),
) -> CubeStorage {
    let r = a.shape.len();
    let (m, k, n) = (a.shape[r - 2], a.shape[r - 1], b.shape[r - 1]);
    let mut shape: Vec<usize> =
        a.shape[..r - 2].iter().zip(&b.shape[..r - 2]).map(|(&x, &y)| if x == 1 { y } else { x }).collect();
    shape.extend([m, n]);
    if k == 0 && m * n > 0 {
        return <super::CubeNative as blaze_runtime::Primitives>::full(&shape, 0.0, dtype, &a.device);
    }
    let out = CubeStorage::empty(&a.device, &shape, dtype);
    into(a, b, &out);
    out
}

/// [`matmul_into`] of f32 `a` and `b` rounded to f16 on the device, into
/// an f32 `out`.
pub(crate) fn matmul_f16_into(a: &CubeStorage, b: &CubeStorage, out: &CubeStorage) {
    let half = |x: &CubeStorage| <super::CubeNative as blaze_runtime::Primitives>::cast(x, DType::F16);
    matmul_into(&half(a), &half(b), out);
}

/// `[..., m, k] x [..., k, n]` written into `out`, whose shape is the
/// product's (the batch dims broadcast) and `k > 0` unless `out` is empty;
/// `out` is of the operands' dtype, or f32 for f16 operands.
pub(crate) fn matmul_into(a: &CubeStorage, b: &CubeStorage, out: &CubeStorage) {
    let r = a.shape.len();
    let (m, k, n) = (a.shape[r - 2], a.shape[r - 1], b.shape[r - 1]);
    if out.numel() == 0 {
        return;
    }
    debug_assert!(k > 0, "matmul_into: an empty sum");
    let batch = out.numel() / (m * n);
    let device = &a.device;
    let elem =
        |d: DType| if d == DType::F16 { blaze_runtime::f16::elem_type_native() } else { f32::elem_type_native() };
    let (half, half_out) = (a.dtype == DType::F16, out.dtype == DType::F16);
    debug_assert!(
        out.dtype == a.dtype || (half && out.dtype == DType::F32),
        "matmul_into: {} into {}",
        a.dtype,
        out.dtype
    );
    let (dt, out_dt) = (elem(a.dtype), elem(out.dtype));
    // Accumulates in f32 for f16 operands.
    let elems = MatmulElems::from_globals(&MatmulGlobalElems { lhs: dt, rhs: dt, out: out_dt });
    let client = device.client();
    let run = |strategy: &Strategy, out: &CubeStorage| -> Result<(), String> {
        let (lhs, rhs) = (InputBinding::new(a.binding(), dt), InputBinding::new(b.binding(), dt));
        launch_ref(strategy, client, lhs, rhs, out.binding(), &mut elems.clone())
            .map_err(|e| format!("{e:?}").lines().next().unwrap_or_default().to_owned())
    };
    let unit = |out: &CubeStorage| -> Result<(), String> {
        let (count, cube) = super::grid(out.numel());
        let (va, vb) = (batch_view(a, &out.shape), batch_view(b, &out.shape));
        match (half, half_out) {
            (true, true) => {
                unit_kernel::launch::<blaze_runtime::f16, blaze_runtime::f16>(client, count, cube, va, vb, out.arg())
            }
            (true, false) => unit_kernel::launch::<blaze_runtime::f16, f32>(client, count, cube, va, vb, out.arg()),
            _ => unit_kernel::launch::<f32, f32>(client, count, cube, va, vb, out.arg()),
        }
        Ok(())
    };
    let strategies = strategies();
    let launches: Vec<Launch<'_>> =
        strategies.iter().map(|(_, s)| Box::new(move |out: &CubeStorage| run(s, out)) as Launch<'_>).collect();
    let mut candidates: Vec<Candidate<'_>> =
        strategies.iter().zip(&launches).map(|((name, _), l)| (*name, &**l)).collect();
    // The unit kernel is the reference the others must agree with; without
    // measuring, small products stay on it (it compiles once for every
    // shape) and larger ones take cubek's first.
    candidates.insert(0, ("blaze_unit", &unit));
    let preferred = usize::from(batch * m * n * k > SMALL);
    let types = match (half, half_out) {
        (true, true) => "f16:",
        (true, false) => "f16-f32:",
        _ => "",
    };
    let key = format!("matmul:{types}b{}:m{}:k{}:n{}", class(batch), class(m), class(k), class(n));
    super::tune::run(device, "matmul", &key, out, &candidates, preferred);
}

#[cfg(test)]
mod tests {
    //! Every matmul candidate on its own, against the CPU backend.

    use blaze_cpu::Cpu;
    use blaze_runtime::Primitives;

    use super::strategies;
    use crate::backend::testing::{check, data, device};
    use super::super::tune::forcing;
    use crate::{CubeNative, CubeStorage};

    #[test]
    fn every_matmul_candidate_agrees_with_the_cpu() {
        let Some(dev) = device() else { return };
        let cpu = Default::default();
        let mut names = vec!["blaze_unit"];
        names.extend(strategies().iter().map(|(name, _)| *name));
        // `[batch, m, k, n]`, and whether the right side broadcasts over the batch.
        for (i, ([b, m, k, n], shared)) in
            [([1, 48, 40, 24], false), ([3, 64, 64, 64], false), ([2, 33, 17, 65], true), ([1, 1, 128, 1], false)]
                .into_iter()
                .enumerate()
        {
            let (ad, bd) =
                (data(&[b, m, k], 7 * i as u64), data(&[if shared { 1 } else { b }, k, n], 7 * i as u64 + 1));
            let want = Cpu::to_data(&Cpu::matmul(&Cpu::from_data(ad.clone(), &cpu), &Cpu::from_data(bd.clone(), &cpu)));
            let (x, y): (CubeStorage, CubeStorage) = (CubeNative::from_data(ad, &dev), CubeNative::from_data(bd, &dev));
            for name in &names {
                let got = forcing("matmul", name, || CubeNative::to_data(&CubeNative::matmul(&x, &y)));
                check(&format!("matmul #{i}"), name, got, &want, false);
            }
            // f32 operands rounded to f16, f32 results: as the CPU's
            // product of the rounded operands (on the two shapes that
            // cover the tiles' edges, the batch and the broadcast, which
            // keeps the kernels this compiles few).
            if !dev.holds(blaze_runtime::DType::F16) || !matches!(i, 1 | 2) {
                continue;
            }
            let rounded = |d: &blaze_runtime::TensorData| {
                let t = Cpu::from_data(d.clone(), &cpu);
                Cpu::cast(&Cpu::cast(&t, blaze_runtime::DType::F16), blaze_runtime::DType::F32)
            };
            let want =
                Cpu::to_data(&Cpu::matmul(&rounded(&CubeNative::to_data(&x)), &rounded(&CubeNative::to_data(&y))));
            for name in &names {
                let got = forcing("matmul", name, || CubeNative::to_data(&super::matmul_f16_to_f32(&x, &y)));
                check(&format!("f16 matmul #{i} into f32"), name, got, &want, false);
            }
        }
    }
}
