//! Layer and RMS normalisation over the last dim, fused: the forward reads
//! each row for its statistics and once more to write the output; the
//! backward makes one pass per row for the input's gradient and one over
//! all rows for the weight's and bias's. The composed forms take about ten
//! passes each way.

use std::mem::MaybeUninit;

use crate::parallel::{CHEAP_OP_MIN, CHUNK, chunks_mut2, should_fork};
use crate::pool;
use crate::reduce::{sum_map, sum_map2, sum_slice};
use crate::simd::dispatch;
use crate::storage::{Array, Float};
use blaze_runtime::shape::Dims;

/// The shape of the statistics of `shape`: the last dim becomes 2.
pub(crate) fn stats_shape(shape: &[usize]) -> Dims {
    let mut s = Dims::from(shape);
    if let Some(last) = s.last_mut() {
        *last = 2;
    }
    s
}

/// `sum((x - c)²)` over a row.
#[inline(always)]
fn sum_sq_dev<T: Float>(x: &[T], c: T) -> T {
    sum_map(x, |v| (v - c) * (v - c))
}

/// `(sum(a), sum(a * (b - c)))` over a row (two passes over a row in cache).
#[inline(always)]
fn sum_and_dot<T: Float>(a: &[T], b: &[T], c: T) -> (T, T) {
    (sum_slice(a), sum_map2(a, b, |x, y| x * (y - c)))
}

/// Contiguous values of an optional parameter, or `None` for "absent";
/// `Err` when present but strided (the caller then composes).
pub(crate) fn param<T: Float>(p: Option<&Array<T>>) -> Result<Option<&[T]>, ()> {
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
    let affine = Affine { w, b, eps: T::from_f64(eps), centre };
    // Each row once from memory: its statistics, then its output while it
    // is in cache; pieces of whole rows of both outputs in parallel.
    let rows = |first: usize, out: &mut [MaybeUninit<T>], stats: &mut [MaybeUninit<T>]| {
        for (r, (o, pair)) in out.chunks_mut(n).zip(stats.chunks_mut(2)).enumerate() {
            let x = &xs[(first + r) * n..][..n];
            dispatch(
                #[inline(always)]
                || norm_row(x, o, pair, affine),
            );
        }
    };
    let mut stats = None;
    let y = pool::output_uninit(shape, |out| {
        stats = Some(pool::output_uninit(&stats_shape(shape), |st| {
            if should_fork(xs.len(), CHEAP_OP_MIN) {
                let per = (CHUNK / n).max(1);
                chunks_mut2(out, per * n, st, per * 2, 1, &|i, out, st| rows(i * per, out, st));
            } else {
                rows(0, out, st);
            }
        }));
    });
    Some([y, stats.expect("written above")])
}

/// A normalisation's parameters as one row reads them.
#[derive(Clone, Copy)]
pub(crate) struct Affine<'a, T> {
    pub w: Option<&'a [T]>,
    pub b: Option<&'a [T]>,
    pub eps: T,
    pub centre: bool,
}

/// Row `x`'s statistics (mean, or 0 without centring, and
/// `1 / sqrt(var + eps)`) into `pair`, and its output into `o`: two
/// passes over a row in cache.
#[inline(always)]
pub(crate) fn norm_row<T: Float>(x: &[T], o: &mut [MaybeUninit<T>], pair: &mut [MaybeUninit<T>], a: Affine<'_, T>) {
    let count = T::from_f64(x.len() as f64);
    let mean = if a.centre { sum_slice(x) / count } else { T::ZERO };
    let rstd = T::ONE / (sum_sq_dev(x, mean) / count + a.eps).sqrt();
    pair[0].write(mean);
    pair[1].write(rstd);
    write_row(o, x, mean, rstd, a.w, a.b);
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
    let rows = xs.len() / n;
    // The rows split into one block per thread, each accumulating its own
    // partial sums of the parameters' gradients in row order; the blocks'
    // sums are then added in block order, so every run gives the same.
    let threads = rayon::current_num_threads();
    let blocks = if should_fork(xs.len(), CHEAP_OP_MIN) { threads.min(rows).max(1) } else { 1 };
    let per = rows.div_ceil(blocks);
    // One block: the input's gradient row by row, and `partial` (weight's
    // sums, then bias's) from rows `first..`.
    let block = |first: usize, out: &mut [MaybeUninit<T>], partial: &mut [T]| {
        let (pw, pb) = partial.split_at_mut(n);
        for (r, o) in out.chunks_mut(n).enumerate() {
            let at = first + r;
            let (g, x) = (&gs[at * n..][..n], &xs[at * n..][..n]);
            let (mean, rstd) = (st[2 * at], st[2 * at + 1]);
            dispatch(
                #[inline(always)]
                || {
                    // gx = g w, written into `o` first; then the row's sums,
                    // with x̂ = (x - mean) rstd; then `o` updated in place.
                    match w {
                        Some(w) => {
                            for ((o, &g), &w) in o.iter_mut().zip(g).zip(w) {
                                o.write(g * w);
                            }
                        }
                        None => {
                            for (o, &g) in o.iter_mut().zip(g) {
                                o.write(g);
                            }
                        }
                    }
                    // SAFETY: every slot of `o` was written just above.
                    let gx = unsafe { crate::pool::written(o) };
                    // mean(gx) and mean(gx x̂).
                    let (sum_gx, dot) = sum_and_dot(gx, x, mean);
                    let a = if centre { sum_gx / count } else { T::ZERO };
                    let b = dot * rstd / count;
                    for (((o, &xi), &gi), (pw, pb)) in gx.iter_mut().zip(x).zip(g).zip(pw.iter_mut().zip(pb.iter_mut()))
                    {
                        let x_hat = (xi - mean) * rstd;
                        *o = rstd * (*o - a) - x_hat * rstd * b;
                        *pw += gi * x_hat;
                        *pb += gi;
                    }
                },
            );
        }
    };
    let mut partials = None;
    let dx = pool::output_uninit(shape, |out| {
        partials = Some(pool::filled(&[blocks, 2 * n], T::ZERO, |partial| {
            if blocks > 1 {
                chunks_mut2(out, per * n, partial, 2 * n, 1, &|i, out, partial| block(i * per, out, partial));
            } else {
                block(0, out, partial);
            }
        }));
    });
    let partials = partials.expect("written above");
    let sums = partials.as_slice().expect("a pooled array is contiguous");
    let total = |offset: usize| {
        pool::output(&[n], |out: &mut [T]| {
            out.copy_from_slice(&sums[offset..offset + n]);
            for b in 1..blocks {
                for (o, &v) in out.iter_mut().zip(&sums[b * 2 * n + offset..][..n]) {
                    *o += v;
                }
            }
        })
    };
    Some([dx, total(0), total(n)])
}
