//! Layer and RMS normalisation over the last dim, fused: the forward reads
//! each row for its statistics and once more to write the output; the
//! backward makes one pass per row for the input's gradient and one over
//! all rows for the weight's and bias's. The composed forms take about ten
//! passes each way.

use std::mem::MaybeUninit;

use crate::parallel::{CHEAP_OP_MIN, fill, should_fork};
use crate::pool;
use crate::reduce::sum_slice;
use crate::simd::dispatch;
use crate::storage::{Array, Float};
use blaze_runtime::shape::Dims;

/// The shape of the statistics of `shape`: the last dim becomes 2.
fn stats_shape(shape: &[usize]) -> Dims {
    let mut s = Dims::from(shape);
    if let Some(last) = s.last_mut() {
        *last = 2;
    }
    s
}

/// `sum((x - c)²)` over a row, in 16 lanes that vectorise.
#[inline(always)]
fn sum_sq_dev<T: Float>(x: &[T], c: T) -> T {
    let mut lanes = [T::ZERO; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks.remainder();
    for ch in chunks {
        for i in 0..16 {
            let d = ch[i] - c;
            lanes[i] += d * d;
        }
    }
    let mut total = sum_slice(&lanes);
    for &v in rest {
        total += (v - c) * (v - c);
    }
    total
}

/// `(sum(a), sum(a * (b - c)))` over a row, in 16 lanes each.
#[inline(always)]
fn sum_and_dot<T: Float>(a: &[T], b: &[T], c: T) -> (T, T) {
    let (mut s, mut d) = ([T::ZERO; 16], [T::ZERO; 16]);
    let (ac, bc) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for i in 0..16 {
            s[i] += x[i];
            d[i] += x[i] * (y[i] - c);
        }
    }
    let (mut s, mut d) = (sum_slice(&s), sum_slice(&d));
    for (&x, &y) in ar.iter().zip(br) {
        s += x;
        d += x * (y - c);
    }
    (s, d)
}

/// Contiguous values of an optional parameter, or `None` for "absent";
/// `Err` when present but strided (the caller then composes).
fn param<T: Float>(p: Option<&Array<T>>) -> Result<Option<&[T]>, ()> {
    match p {
        None => Ok(None),
        Some(a) => a.as_slice().map(Some).ok_or(()),
    }
}

/// [`blaze_runtime::Composites::norm`]: the output and `[.., 2]` statistics
/// (mean, `1 / sqrt(var + eps)`). `None` when an operand is strided.
pub(crate) fn norm<T: Float>(
    x: &Array<T>,
    weight: Option<&Array<T>>,
    bias: Option<&Array<T>>,
    eps: f64,
    centre: bool,
) -> Option<[Array<T>; 2]> {
    let xs = x.as_slice()?;
    let (w, b) = (param(weight).ok()?, param(bias).ok()?);
    let shape = x.shape();
    let n = *shape.last()?;
    if n == 0 {
        return None;
    }
    let (eps, count) = (T::from_f64(eps), T::from_f64(n as f64));
    let fork = should_fork(xs.len(), CHEAP_OP_MIN);
    let stats = fill(&stats_shape(shape), 2, fork, |start, out| {
        for (r, pair) in out.chunks_mut(2).enumerate() {
            let row = &xs[(start / 2 + r) * n..][..n];
            dispatch(
                #[inline(always)]
                || {
                    let mean = if centre { sum_slice(row) / count } else { T::ZERO };
                    let var = sum_sq_dev(row, mean) / count;
                    pair[0].write(mean);
                    pair[1].write(T::ONE / (var + eps).sqrt());
                },
            );
        }
    });
    let st = stats.as_slice().expect("a pooled array is contiguous");
    let y = fill(shape, n, fork, |start, out| {
        for (r, o) in out.chunks_mut(n).enumerate() {
            let at = start / n + r;
            let (row, mean, rstd) = (&xs[at * n..][..n], st[2 * at], st[2 * at + 1]);
            dispatch(
                #[inline(always)]
                || write_row(o, row, mean, rstd, w, b),
            );
        }
    });
    Some([y, stats])
}

/// One output row: `(x - mean) rstd weight + bias`.
#[inline(always)]
fn write_row<T: Float>(o: &mut [MaybeUninit<T>], x: &[T], mean: T, rstd: T, w: Option<&[T]>, b: Option<&[T]>) {
    match (w, b) {
        (Some(w), Some(b)) => {
            for (((o, &v), &w), &b) in o.iter_mut().zip(x).zip(w).zip(b) {
                o.write((v - mean) * rstd * w + b);
            }
        }
        (Some(w), None) => {
            for ((o, &v), &w) in o.iter_mut().zip(x).zip(w) {
                o.write((v - mean) * rstd * w);
            }
        }
        (None, Some(b)) => {
            for ((o, &v), &b) in o.iter_mut().zip(x).zip(b) {
                o.write((v - mean) * rstd + b);
            }
        }
        (None, None) => {
            for (o, &v) in o.iter_mut().zip(x) {
                o.write((v - mean) * rstd);
            }
        }
    }
}

/// [`blaze_runtime::Composites::norm_backward`]: the input's, weight's and
/// bias's gradients. `None` when an operand is strided.
pub(crate) fn norm_backward<T: Float>(
    g: &Array<T>,
    x: &Array<T>,
    stats: &Array<T>,
    weight: Option<&Array<T>>,
    centre: bool,
) -> Option<[Array<T>; 3]> {
    let (gs, xs, st) = (g.as_slice()?, x.as_slice()?, stats.as_slice()?);
    let w = param(weight).ok()?;
    let shape = x.shape();
    let n = *shape.last()?;
    if n == 0 {
        return None;
    }
    let count = T::from_f64(n as f64);
    let dx = fill(shape, n, should_fork(xs.len(), CHEAP_OP_MIN), |start, out| {
        for (r, o) in out.chunks_mut(n).enumerate() {
            let at = start / n + r;
            let (g, x) = (&gs[at * n..][..n], &xs[at * n..][..n]);
            let (mean, rstd) = (st[2 * at], st[2 * at + 1]);
            dispatch(
                #[inline(always)]
                || {
                    // gx = g w, written into `o` first; then the row's sums,
                    // with x̂ = (x - mean) rstd; then `o` updated in place.
                    for (i, o) in o.iter_mut().enumerate() {
                        o.write(match w {
                            Some(w) => g[i] * w[i],
                            None => g[i],
                        });
                    }
                    // SAFETY: every slot of `o` was written just above.
                    let gx = unsafe { &mut *(std::ptr::from_mut::<[MaybeUninit<T>]>(o) as *mut [T]) };
                    // mean(gx) and mean(gx x̂).
                    let (sum_gx, dot) = sum_and_dot(gx, x, mean);
                    let a = if centre { sum_gx / count } else { T::ZERO };
                    let b = dot * rstd / count;
                    for (o, &xi) in gx.iter_mut().zip(x) {
                        *o = rstd * (*o - a - (xi - mean) * rstd * b);
                    }
                },
            );
        }
    });
    // The parameters' gradients: sums over rows, in one pass, written
    // into pooled buffers in place.
    let mut db = None;
    let dw = pool::filled(&[n], T::ZERO, |dws| {
        db = Some(pool::filled(&[n], T::ZERO, |dbs| {
            dispatch(
                #[inline(always)]
                || {
                    for (at, (g, x)) in gs.chunks_exact(n).zip(xs.chunks_exact(n)).enumerate() {
                        let (mean, rstd) = (st[2 * at], st[2 * at + 1]);
                        for j in 0..n {
                            dws[j] += g[j] * (x[j] - mean) * rstd;
                            dbs[j] += g[j];
                        }
                    }
                },
            )
        }))
    });
    Some([dx, dw, db.expect("written above")])
}
