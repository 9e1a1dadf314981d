//! Layer and RMS normalisation over the last dim, fused: each row runs
//! `blaze_spec::rows::norm` (its statistics, then its output, while it is
//! in cache) and `norm_backward` (the input's gradient, and the
//! parameters' gradients summed per block of rows). The composed forms
//! take about ten passes each way.

use std::mem::MaybeUninit;

use crate::parallel::{CHEAP_OP_MIN, CHUNK, chunks_mut2, should_fork};
use crate::pool;
use crate::rows::{Ahead, Row};
use crate::simd::dispatch;
use crate::storage::{Array, Float};
use blaze_runtime::shape::Dims;
use blaze_spec::rows;

/// The shape of the statistics of `shape`: the last dim becomes 2.
pub(crate) fn stats_shape(shape: &[usize]) -> Dims {
    let mut s = Dims::from(shape);
    if let Some(last) = s.last_mut() {
        *last = 2;
    }
    s
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
        let count = out.len() / n;
        for (r, (o, pair)) in out.chunks_mut(n).zip(stats.chunks_mut(2)).enumerate() {
            let x = &xs[(first + r) * n..][..n];
            let next = Ahead::after(r + 1 < count, n, x.as_ptr(), o.as_ptr().cast());
            dispatch(
                #[inline(always)]
                || norm_row(x, o, pair, affine, next),
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
/// `1 / sqrt(var + eps)`) into `pair`, and its output into `o`:
/// [`blaze_spec::rows::norm`], two passes over a row in cache, the
/// second prefetching the `next` row's operands if given.
#[inline(always)]
pub(crate) fn norm_row<T: Float>(
    x: &[T],
    o: &mut [MaybeUninit<T>],
    pair: &mut [MaybeUninit<T>],
    a: Affine<'_, T>,
    next: Option<Ahead>,
) {
    let mut row = Row::new(x.len());
    row.ahead(next);
    // An absent parameter stands in as the input; the flags say not to read it.
    let (w, b) = (row.input(a.w.unwrap_or(x)), row.input(a.b.unwrap_or(x)));
    let (x, out, stats) = (row.input(x), row.output(o), row.output(pair));
    let (eps, centre, has_w, has_b) = (a.eps, a.centre, a.w.is_some(), a.b.is_some());
    rows::norm(&mut row, rows::Norm { x, w, b, out, stats, eps, centre, has_w, has_b });
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
            let mut row = Row::new(n);
            let (g, x) = (row.input(g), row.input(x));
            let w = row.input(w.unwrap_or(&gs[at * n..][..n]));
            let (dx, dw, db) = (row.output(o), row.output_written(pw), row.output_written(pb));
            let p = rows::NormBackward { g, x, w, dx, dw, db, mean, rstd, centre, has_w: weight.is_some() };
            dispatch(
                #[inline(always)]
                || rows::norm_backward(&mut row, p),
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
