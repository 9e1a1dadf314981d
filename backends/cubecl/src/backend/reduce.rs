//! Reductions over one dim. Sums go through cubek's reduce, its routine
//! (a unit, a plane or a cube per row) autotuned per shape class with
//! this file's own kernels among the candidates. The other reductions
//! (the op table's selections: max, min, argmax, argmin) run this file's
//! kernels: they propagate NaN (argmax and argmin pick the first NaN, ties
//! take the first index), as the CPU does and cubek's do not. The
//! kernels' steps are the table's (`__private::reduce`: `fold`, `beats`).

use blaze_runtime::{DType, ReduceOp};
use cubecl::config::autotune::AutotuneLevel;
use cubecl::prelude::*;
use cubek_reduce::components::instructions::ReduceOperationConfig;
use cubek_reduce::launch::{ReduceDtypes, ReduceStrategy, RoutineStrategy, VectorizationStrategy};
use cubek_reduce::routines::{BlueprintStrategy, cube::CubeStrategy, plane::PlaneStrategy, unit::UnitStrategy};

use super::{CubeNative, CubeStorage, grid, indices};
use crate::__private::reduce::{beats, fold};
use super::tune::Candidate;
use crate::tune::class;

/// Units of the cube that reduces one long row. Shared-memory sizes and
/// steps in `#[cube]` code are written as literals (256): an expression
/// of this constant there fails CubeCL's IR check.
const TREE: u32 = 256;

/// One unit per output: the row `x[o / inner, .., o % inner]` of `n`
/// values, stride `inner`.
#[cube(launch)]
fn rows_kernel(
    x: &Tensor<f32>,
    out: &mut Tensor<f32>,
    at: &mut Tensor<u32>,
    n: usize,
    inner: usize,
    #[comptime] op: u32,
    #[comptime] selects: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let base = (ABSOLUTE_POS / inner) * n * inner + ABSOLUTE_POS % inner;
    let mut acc = 0.0f32;
    let mut best = 0u32;
    if comptime!(selects) {
        acc = x[base];
    }
    for j in 0..n {
        let v = x[base + j * inner];
        if comptime!(!selects) {
            acc = fold(acc, v, op);
        } else if beats(v, j as u32, acc, best, op) {
            acc = v;
            best = j as u32;
        }
    }
    out[ABSOLUTE_POS] = acc;
    if comptime!(selects) {
        at[ABSOLUTE_POS] = best;
    }
}

/// One cube per output: each unit folds a strided share of the row, then
/// a tree in shared memory folds the units' results.
#[cube(launch)]
fn tree_kernel(
    x: &Tensor<f32>,
    out: &mut Tensor<f32>,
    at: &mut Tensor<u32>,
    n: usize,
    inner: usize,
    #[comptime] op: u32,
    #[comptime] selects: bool,
) {
    let o = CUBE_POS;
    if o >= out.len() {
        terminate!();
    }
    let unit = UNIT_POS as usize;
    let base = (o / inner) * n * inner + o % inner;
    let mut vals = Shared::<[f32]>::new_slice(256usize);
    let mut idxs = Shared::<[u32]>::new_slice(256usize);
    let mut acc = 0.0f32;
    let mut best = 0xffff_ffffu32;
    if comptime!(selects) {
        acc = x[base];
        best = 0u32;
    }
    let mut j = unit;
    while j < n {
        let v = x[base + j * inner];
        if comptime!(!selects) {
            acc = fold(acc, v, op);
        } else if beats(v, j as u32, acc, best, op) {
            acc = v;
            best = j as u32;
        }
        j += 256usize;
    }
    vals[unit] = acc;
    idxs[unit] = best;
    sync_cube();
    let mut half = 128usize;
    while half > 0 {
        if unit < half {
            let other = unit + half;
            let b = vals[other];
            let k = idxs[other];
            let a = vals[unit];
            let i = idxs[unit];
            let mut v = a;
            let mut w = i;
            if comptime!(!selects) {
                v = fold(a, b, op);
            } else if beats(b, k, a, i, op) {
                v = b;
                w = k;
            }
            vals[unit] = v;
            idxs[unit] = w;
        }
        sync_cube();
        half /= 2;
    }
    if unit == 0 {
        out[o] = vals[0];
        if comptime!(selects) {
            at[o] = idxs[0];
        }
    }
}

/// The reductions' own kernel over `[outer, n, inner]`, into `out` (and
/// the indices into `at`).
fn own(x: &CubeStorage, out: &CubeStorage, at: &CubeStorage, n: usize, inner: usize, op: ReduceOp) {
    let outputs = out.numel();
    let (code, selects) = (op.index(), op.selects());
    let client = x.client();
    if n <= TREE as usize {
        let (count, cube) = grid(outputs);
        rows_kernel::launch(client, count, cube, x.arg(), out.arg(), at.arg(), n, inner, code, selects);
    } else {
        let cubes = u32::try_from(outputs).expect("outputs fit a launch");
        let count = if cubes <= 65_535 {
            CubeCount::Static(cubes, 1, 1)
        } else {
            CubeCount::Static(65_535, cubes.div_ceil(65_535), 1)
        };
        tree_kernel::launch(
            client,
            count,
            CubeDim::new_1d(TREE),
            x.arg(),
            out.arg(),
            at.arg(),
            n,
            inner,
            code,
            selects,
        );
    }
}

fn cubek_strategy(routine: RoutineStrategy) -> ReduceStrategy {
    ReduceStrategy {
        routine,
        vectorization: VectorizationStrategy { parallel_output_vectorization: false },
        autotune_level: AutotuneLevel::Balanced,
    }
}

pub(super) fn reduce(op: ReduceOp, x: &CubeStorage, dim: usize) -> CubeStorage {
    assert!(x.dtype == DType::F32, "cubecl reduce: a {} tensor; the device reduces f32", x.dtype);
    let n = x.shape[dim];
    let inner: usize = x.shape[dim + 1..].iter().product();
    let mut shape = x.shape.clone();
    shape[dim] = 1;
    let device = &x.device;
    let out = CubeStorage::empty(device, &shape, DType::F32);
    let outputs = out.numel();
    let arg = op.position();
    // The index output; a fold binds one word it never writes.
    let at = CubeStorage::empty(device, if op.selects() { &shape } else { &[1] }, DType::Bool);
    if outputs == 0 {
        return if arg { indices(at) } else { out };
    }
    if n == 0 {
        // Only a fold reaches here (the runtime refuses empty selections).
        return <CubeNative as blaze_runtime::Primitives>::full(&shape, 0.0, DType::F32, device);
    }
    if op != ReduceOp::Sum {
        // cubek's candidates are for the sum alone.
        own(x, &out, &at, n, inner, op);
        return if arg { indices(at) } else { out };
    }
    let dt = f32::elem_type_native();
    let dtypes = ReduceDtypes { input: dt, output: dt, accumulation: dt };
    let client = device.client();
    let cubek = |routine: RoutineStrategy| {
        move |out: &CubeStorage| -> Result<(), String> {
            let strategy = cubek_strategy(routine.clone());
            let (input, output) = (x.binding(), out.binding());
            cubek_reduce::reduce(client, input, output, dim, strategy, ReduceOperationConfig::Sum, dtypes)
                .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())
        }
    };
    let unit = cubek(RoutineStrategy::Unit(BlueprintStrategy::Inferred(UnitStrategy)));
    let cube = cubek(RoutineStrategy::Cube(BlueprintStrategy::Inferred(CubeStrategy { use_planes: false })));
    let plane = cubek(RoutineStrategy::Plane(BlueprintStrategy::Inferred(PlaneStrategy { independent: true })));
    let mine = |out: &CubeStorage| {
        own(x, out, &at, n, inner, op);
        Ok(())
    };
    // This file's kernel is the reference; cubek's routines run when
    // measured faster and in agreement with it.
    let candidates: [Candidate<'_>; 4] =
        [("blaze_rows", &mine), ("cubek_unit", &unit), ("cubek_cube", &cube), ("cubek_plane", &plane)];
    let key = format!("sum:o{}:n{}:i{}", class(outputs / inner), class(n), class(inner));
    super::tune::run(device, "sum", &key, &out, &candidates, 0);
    out
}

#[cfg(test)]
mod tests {
    //! Every sum candidate on its own, against the CPU backend.

    use blaze_cpu::Cpu;
    use blaze_runtime::{Primitives, ReduceOp};

    use crate::CubeNative;
    use crate::backend::testing::{check, data, device};
    use super::super::tune::forcing;

    #[test]
    fn every_sum_candidate_agrees_with_the_cpu() {
        let Some(dev) = device() else { return };
        let cpu = Default::default();
        for (i, (shape, dim)) in
            [(vec![3, 200], 1), (vec![5, 70, 6], 1), (vec![4096], 0), (vec![33, 9], 0)].into_iter().enumerate()
        {
            let xd = data(&shape, 90 + i as u64);
            let want = Cpu::to_data(&Cpu::reduce(ReduceOp::Sum, &Cpu::from_data(xd.clone(), &cpu), dim));
            let x = CubeNative::from_data(xd, &dev);
            for name in ["blaze_rows", "cubek_unit", "cubek_cube", "cubek_plane"] {
                let got = forcing("sum", name, || CubeNative::to_data(&CubeNative::reduce(ReduceOp::Sum, &x, dim)));
                // Plane routines need subgroup operations, which not every adapter has.
                check(&format!("sum #{i}"), name, got, &want, name == "cubek_plane");
            }
        }
    }
}
