//! Reductions over one dim, kept with size 1. The input is viewed as
//! `[outer, n, inner]` (copied to row-major first if it is strided).

use rayon::prelude::*;

use blaze_runtime::shape::Dims;

use crate::parallel::{CHEAP_OP_MIN, should_fork};
use crate::pool;
use crate::simd::dispatch;
use crate::storage::{Array, Num};

fn dims(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    let outer = shape[..dim].iter().product();
    let inner = shape[dim + 1..].iter().product();
    (outer, shape[dim], inner)
}

fn out_shape(shape: &[usize], dim: usize) -> Dims {
    let mut s = Dims::from(shape);
    s[dim] = 1;
    s
}

/// Sum of a contiguous run with 16 independent accumulators, so the loop
/// vectorises (a single running sum is a serial dependency chain).
#[inline(always)]
pub(crate) fn sum_slice<T: Num>(s: &[T]) -> T {
    let mut acc = [T::ZERO; 16];
    let chunks = s.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..16 {
            acc[i] += c[i];
        }
    }
    let mut total = T::ZERO;
    for a in acc {
        total += a;
    }
    for &x in rest {
        total += x;
    }
    total
}

/// The sum of the squares of `a`'s elements as a rank-0 array: one pass,
/// 16 independent accumulators, no temporary.
pub(crate) fn sum_squares<T: Num>(a: &Array<T>) -> Array<T> {
    let a = pool::standard(a);
    let s = a.as_slice().expect("standard layout is contiguous");
    let total = dispatch(
        #[inline(always)]
        || {
            let mut acc = [T::ZERO; 16];
            let chunks = s.chunks_exact(16);
            let rest = chunks.remainder();
            for c in chunks {
                for i in 0..16 {
                    acc[i] += c[i] * c[i];
                }
            }
            let mut total = T::ZERO;
            for a in acc {
                total += a;
            }
            for &x in rest {
                total += x * x;
            }
            total
        },
    );
    pool::filled(&[], total, |_| {})
}

/// True when `v` should replace `best` for a max (`greater`) or a min: NaN
/// wins and stays.
#[inline]
fn better<T: Num>(v: T, best: T, greater: bool) -> bool {
    !best.is_nan() && (v.is_nan() || if greater { v > best } else { v < best })
}

/// Sum, max or min over `dim`.
pub(crate) fn fold<T: Num>(a: &Array<T>, dim: usize, kind: Fold) -> Array<T> {
    let a = pool::standard(a);
    let s = a.as_slice().expect("standard layout is contiguous");
    let (outer, n, inner) = dims(a.shape(), dim);
    let shape = out_shape(a.shape(), dim);
    let fork = should_fork(s.len(), CHEAP_OP_MIN) && outer * inner > 1;
    let greater = kind == Fold::Max;
    pool::filled(&shape, T::ZERO, |out| {
        if inner == 1 {
            let row = |(o, x): (usize, &mut T)| {
                let r = &s[o * n..(o + 1) * n];
                *x = dispatch(
                    #[inline(always)]
                    || match kind {
                        Fold::Sum => sum_slice(r),
                        _ => r.iter().copied().fold(r[0], |best, v| if better(v, best, greater) { v } else { best }),
                    },
                );
            };
            if fork {
                out.par_iter_mut().enumerate().for_each(row);
            } else {
                out.iter_mut().enumerate().for_each(row);
            }
        } else {
            let plane = |(o, acc): (usize, &mut [T])| {
                let base = &s[o * n * inner..(o + 1) * n * inner];
                acc.copy_from_slice(&base[..inner]);
                dispatch(
                    #[inline(always)]
                    || {
                        for j in 1..n {
                            let r = &base[j * inner..(j + 1) * inner];
                            match kind {
                                Fold::Sum => acc.iter_mut().zip(r).for_each(|(a, &v)| *a += v),
                                _ => acc.iter_mut().zip(r).for_each(|(a, &v)| {
                                    if better(v, *a, greater) {
                                        *a = v
                                    }
                                }),
                            }
                        }
                    },
                );
            };
            if n == 0 {
                // Only a sum reaches here with an empty dim (the runtime checks
                // the others); the zeros are the answer.
            } else if fork && outer > 1 {
                out.par_chunks_mut(inner).enumerate().for_each(plane);
            } else {
                out.chunks_mut(inner).enumerate().for_each(plane);
            }
        }
    })
}

/// Which fold to run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fold {
    Sum,
    Max,
    Min,
}

/// Index of the first maximum (`greater`) or minimum over `dim`; NaN wins.
pub(crate) fn arg<T: Num>(a: &Array<T>, dim: usize, greater: bool) -> Array<i64> {
    let a = pool::standard(a);
    let s = a.as_slice().expect("standard layout is contiguous");
    let (outer, n, inner) = dims(a.shape(), dim);
    pool::output(&out_shape(a.shape(), dim), |out| {
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| s[(o * n + j) * inner + i];
                let mut best = at(0);
                let mut best_j = 0;
                for j in 1..n {
                    let v = at(j);
                    if better(v, best, greater) {
                        best = v;
                        best_j = j;
                    }
                }
                out[o * inner + i] = best_j as i64;
            }
        }
    })
}
