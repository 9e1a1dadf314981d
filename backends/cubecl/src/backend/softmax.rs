//! Softmax and its gradient in one launch each: a cube per row, its
//! units sharing the row's max and sum through a tree in shared memory,
//! the scale, the causal mask and the log form applied as the row is
//! read and written (the composed form takes six passes and, for a
//! causal mask, an index tensor the device does not hold). cubek has no
//! softmax kernel outside its attention: Burn composes softmax from
//! cubek's reductions and elementwise kernels, the six passes this
//! kernel fuses.

use blaze_runtime::{DType, SoftmaxOptions};
use cubecl::prelude::*;

use super::kernels::is_nan;
use super::{CubeStorage, u32_of};

/// Units per row. Shared-memory sizes in `#[cube]` code are literals:
/// an expression of this constant there fails CubeCL's IR check.
const UNITS: u32 = 256;

/// The row's `(base, stride, valid)`: where it starts, its stride, and
/// how many of its leading entries the causal mask keeps (all of them
/// without one).
#[cube]
fn row(r: usize, n: usize, inner: usize, queries: usize, #[comptime] causal: bool) -> (usize, usize, usize) {
    let base = (r / inner) * n * inner + r % inner;
    let mut valid = n;
    if comptime!(causal) {
        // Causal rows run over the last dim (inner = 1): row r is query r % queries.
        valid = r % queries + 1;
    }
    (base, inner, valid)
}

/// The sum (`max` false) or the NaN-propagating max of the units' `v`.
#[cube]
fn combine(v: f32, #[comptime] max: bool) -> f32 {
    let mut sh = Shared::<[f32]>::new_slice(256usize);
    let unit = UNIT_POS as usize;
    sh[unit] = v;
    sync_cube();
    let mut half = 128usize;
    while half > 0 {
        if unit < half {
            let a = sh[unit];
            let b = sh[unit + half];
            let mut c = a + b;
            if comptime!(max) {
                c = select(is_nan(a) || is_nan(b), a + b, f32::max(a, b));
            }
            sh[unit] = c;
        }
        sync_cube();
        half /= 2;
    }
    let total = sh[0];
    sync_cube();
    total
}

#[cube(launch)]
fn softmax_kernel(
    x: &Tensor<f32>,
    out: &mut Tensor<f32>,
    rows: usize,
    n: usize,
    inner: usize,
    queries: usize,
    scale: f32,
    #[comptime] log: bool,
    #[comptime] causal: bool,
) {
    if CUBE_POS >= rows {
        terminate!();
    }
    let (base, stride, valid) = row(CUBE_POS, n, inner, queries, causal);
    let unit = UNIT_POS as usize;
    let mut m = f32::reinterpret(0xff80_0000u32);
    let mut j = unit;
    while j < valid {
        let v = x[base + j * stride] * scale;
        m = select(is_nan(v) || is_nan(m), v + m, f32::max(m, v));
        j += 256usize;
    }
    let m = combine(m, true);
    let mut s = 0.0f32;
    j = unit;
    while j < valid {
        s += f32::exp(x[base + j * stride] * scale - m);
        j += 256usize;
    }
    let s = combine(s, false);
    let ls = f32::ln(s);
    // A row whose max is -inf has every entry masked and weighs nothing.
    let empty = m == f32::reinterpret(0xff80_0000u32);
    j = unit;
    while j < n {
        let at = base + j * stride;
        let v = x[at] * scale - m;
        let mut y = f32::exp(v) / s;
        if comptime!(log) {
            y = v - ls;
        }
        let mut masked = 0.0f32;
        if comptime!(log) {
            masked = f32::reinterpret(0xff80_0000u32);
        }
        out[at] = select(j < valid && !empty, y, masked);
        j += 256usize;
    }
}

#[cube(launch)]
fn softmax_backward_kernel(
    g: &Tensor<f32>,
    y: &Tensor<f32>,
    out: &mut Tensor<f32>,
    rows: usize,
    n: usize,
    inner: usize,
    queries: usize,
    scale: f32,
    #[comptime] log: bool,
    #[comptime] causal: bool,
) {
    if CUBE_POS >= rows {
        terminate!();
    }
    let (base, stride, valid) = row(CUBE_POS, n, inner, queries, causal);
    let unit = UNIT_POS as usize;
    let mut s = 0.0f32;
    let mut j = unit;
    while j < valid {
        let at = base + j * stride;
        let mut t = g[at] * y[at];
        if comptime!(log) {
            t = g[at];
        }
        s += t;
        j += 256usize;
    }
    let s = combine(s, false);
    j = unit;
    while j < n {
        let at = base + j * stride;
        let mut d = y[at] * (g[at] - s);
        if comptime!(log) {
            d = g[at] - f32::exp(y[at]) * s;
        }
        out[at] = select(j < valid, d * scale, 0.0);
        j += 256usize;
    }
}

/// `(rows, n, inner, queries)` of a softmax over `dim` of `shape`.
fn geometry(shape: &[usize], dim: usize, o: SoftmaxOptions) -> (usize, usize, usize, usize) {
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let rows = shape.iter().product::<usize>() / n.max(1);
    let queries = if o.causal { shape[shape.len() - 2] } else { 1 };
    (rows, n, inner, queries.max(1))
}

fn cubes(rows: usize) -> CubeCount {
    let c = u32_of(rows);
    if c <= 65_535 { CubeCount::Static(c, 1, 1) } else { CubeCount::Static(65_535, c.div_ceil(65_535), 1) }
}

pub(super) fn softmax(x: &CubeStorage, dim: usize, o: SoftmaxOptions) -> CubeStorage {
    let out = CubeStorage::empty(&x.device, &x.shape, DType::F32);
    let (rows, n, inner, queries) = geometry(&x.shape, dim, o);
    if rows > 0 && n > 0 {
        let (log, causal, scale) = (o.log, o.causal, o.scale as f32);
        softmax_kernel::launch(
            x.client(),
            cubes(rows),
            CubeDim::new_1d(UNITS),
            x.arg(),
            out.arg(),
            rows,
            n,
            inner,
            queries,
            scale,
            log,
            causal,
        );
    }
    out
}

pub(super) fn softmax_backward(g: &CubeStorage, y: &CubeStorage, dim: usize, o: SoftmaxOptions) -> CubeStorage {
    let out = CubeStorage::empty(&g.device, &g.shape, DType::F32);
    let (rows, n, inner, queries) = geometry(&g.shape, dim, o);
    if rows > 0 && n > 0 {
        let (log, causal, scale) = (o.log, o.causal, o.scale as f32);
        softmax_backward_kernel::launch(
            g.client(),
            cubes(rows),
            CubeDim::new_1d(UNITS),
            g.arg(),
            y.arg(),
            out.arg(),
            rows,
            n,
            inner,
            queries,
            scale,
            log,
            causal,
        );
    }
    out
}
