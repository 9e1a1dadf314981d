//! Reductions over one dim, kept with size 1. The input is viewed as
//! `[outer, n, inner]` (copied to row-major first if it is strided).

use blaze_runtime::reduction::{Reduction, max, sum};
use blaze_runtime::shape::Dims;

use crate::parallel::{CHEAP_OP_MIN, CHUNK, chunks_mut, should_fork};
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

/// Elements a row reduction takes per step: four vectors of 16 f32
/// (AVX-512), each with its own accumulator. One vector accumulator is one
/// chain of dependent adds, which waits on the adder's latency at every
/// step and reads a row from L3 at two thirds of the rate four chains
/// reach. Four separate 16-lane arrays, each updated by a loop the
/// compiler unrolls, stay in registers (one array of 64 goes through the
/// stack).
pub(crate) const LANES: usize = 64;

/// Four accumulators of 16 lanes (see [`LANES`]).
#[derive(Clone, Copy)]
pub(crate) struct Lanes<T>([T; 16], [T; 16], [T; 16], [T; 16]);

impl<T: Copy> Lanes<T> {
    #[inline(always)]
    pub(crate) fn splat(v: T) -> Self {
        Lanes([v; 16], [v; 16], [v; 16], [v; 16])
    }

    /// Folds the [`LANES`] elements of `chunk` (mapped by `f`) into the
    /// lanes with `op`.
    #[inline(always)]
    pub(crate) fn fold(&mut self, chunk: &[T], f: impl Fn(T) -> T, op: impl Fn(T, T) -> T) {
        let c: &[T; LANES] = chunk.try_into().expect("a chunk of LANES");
        let Lanes(a0, a1, a2, a3) = self;
        for i in 0..16 {
            a0[i] = op(a0[i], f(c[i]));
            a1[i] = op(a1[i], f(c[i + 16]));
            a2[i] = op(a2[i], f(c[i + 32]));
            a3[i] = op(a3[i], f(c[i + 48]));
        }
    }

    /// Folds `f(a_i, b_i)` over two chunks of [`LANES`] elements.
    #[inline(always)]
    pub(crate) fn fold2(&mut self, a: &[T], b: &[T], f: impl Fn(T, T) -> T, op: impl Fn(T, T) -> T) {
        let a: &[T; LANES] = a.try_into().expect("a chunk of LANES");
        let b: &[T; LANES] = b.try_into().expect("a chunk of LANES");
        let Lanes(a0, a1, a2, a3) = self;
        for i in 0..16 {
            a0[i] = op(a0[i], f(a[i], b[i]));
            a1[i] = op(a1[i], f(a[i + 16], b[i + 16]));
            a2[i] = op(a2[i], f(a[i + 32], b[i + 32]));
            a3[i] = op(a3[i], f(a[i + 48], b[i + 48]));
        }
    }

    /// The lanes combined pairwise by `op` (associative and commutative):
    /// the four vectors into one, then halves of it, as a horizontal
    /// vector reduction does.
    #[inline(always)]
    pub(crate) fn reduce(self, op: impl Fn(T, T) -> T) -> T {
        let mut v = self.0;
        for i in 0..16 {
            v[i] = op(op(self.0[i], self.1[i]), op(self.2[i], self.3[i]));
        }
        reduce16(v, op)
    }
}

/// One vector of 16 lanes combined pairwise by `op`: halves, then halves.
#[inline(always)]
pub(crate) fn reduce16<T: Copy>(v: [T; 16], op: impl Fn(T, T) -> T) -> T {
    let mut eight = [v[0]; 8];
    for i in 0..8 {
        eight[i] = op(v[i], v[i + 8]);
    }
    let mut four = [v[0]; 4];
    for i in 0..4 {
        four[i] = op(eight[i], eight[i + 4]);
    }
    op(op(four[0], four[2]), op(four[1], four[3]))
}

/// The reduction `R` of `f(a_i)` over a contiguous run, from `init` (a
/// fold's 0, a selection's first element): [`LANES`] at a time, then 16
/// at a time (short rows, a causal softmax's, are mostly this), then one
/// at a time. Each phase keeps its own accumulators, and the loops are
/// written out here: behind one more generic helper, or with one array
/// touched by two loops of different shapes, the accumulators went
/// through the stack.
#[inline(always)]
pub(crate) fn reduce_map<R: Reduction, T: Num>(s: &[T], init: T, f: impl Fn(T) -> T) -> T {
    let mut acc = Lanes::splat(init);
    let chunks = s.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        acc.fold(c, &f, R::step);
    }
    let mut total = acc.reduce(R::step);
    let sixteens = rest.chunks_exact(16);
    let tail = sixteens.remainder();
    if sixteens.len() > 0 {
        let mut v = [init; 16];
        for c in sixteens {
            for i in 0..16 {
                v[i] = R::step(v[i], f(c[i]));
            }
        }
        total = R::step(total, reduce16(v, R::step));
    }
    for &x in tail {
        total = R::step(total, f(x));
    }
    total
}

/// `sum(f(a_i))` over a contiguous run ([`reduce_map`]).
#[inline(always)]
pub(crate) fn sum_map<T: Num>(s: &[T], f: impl Fn(T) -> T) -> T {
    reduce_map::<sum::Kernel, T>(s, T::ZERO, f)
}

/// The largest element of a non-empty run; a NaN wins ([`reduce_map`]).
#[inline(always)]
pub(crate) fn max_slice<T: Num>(s: &[T]) -> T {
    reduce_map::<max::Kernel, T>(s, s[0], |v| v)
}

/// `sum(f(a_i, b_i))` over two runs of one length.
#[inline(always)]
pub(crate) fn sum_map2<T: Num>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut acc = Lanes::splat(T::ZERO);
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        acc.fold2(x, y, &f, |a, b| a + b);
    }
    let mut total = acc.reduce(|a, b| a + b);
    let (a16, b16) = (ar.chunks_exact(16), br.chunks_exact(16));
    let (at, bt) = (a16.remainder(), b16.remainder());
    if a16.len() > 0 {
        let mut v = [T::ZERO; 16];
        for (x, y) in a16.zip(b16) {
            for i in 0..16 {
                v[i] += f(x[i], y[i]);
            }
        }
        total += reduce16(v, |a, b| a + b);
    }
    for (&x, &y) in at.iter().zip(bt) {
        total += f(x, y);
    }
    total
}

/// Both of `f`'s values summed over two runs of one length in one pass:
/// each sum keeps two chains of 16 lanes (four each would take every
/// vector register of AVX2), written out as [`Lanes`] is.
#[inline(always)]
pub(crate) fn sum_map2_pair<T: Num>(a: &[T], b: &[T], f: impl Fn(T, T) -> [T; 2]) -> [T; 2] {
    let (mut p0, mut p1, mut q0, mut q1) = ([T::ZERO; 16], [T::ZERO; 16], [T::ZERO; 16], [T::ZERO; 16]);
    let (ac, bc) = (a.chunks_exact(32), b.chunks_exact(32));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        let x: &[T; 32] = x.try_into().expect("a chunk of 32");
        let y: &[T; 32] = y.try_into().expect("a chunk of 32");
        for i in 0..16 {
            let [p, q] = f(x[i], y[i]);
            p0[i] += p;
            q0[i] += q;
            let [p, q] = f(x[i + 16], y[i + 16]);
            p1[i] += p;
            q1[i] += q;
        }
    }
    let add = |a: T, b: T| a + b;
    let mut total =
        [reduce16(std::array::from_fn(|i| p0[i] + p1[i]), add), reduce16(std::array::from_fn(|i| q0[i] + q1[i]), add)];
    for (&x, &y) in ar.iter().zip(br) {
        let [p, q] = f(x, y);
        total[0] += p;
        total[1] += q;
    }
    total
}

/// Sum of a contiguous run.
#[inline(always)]
pub(crate) fn sum_slice<T: Num>(s: &[T]) -> T {
    sum_map(s, |x| x)
}

/// The sum of the squares of `a`'s elements as a rank-0 array: one pass,
/// no temporary.
pub(crate) fn sum_squares<T: Num>(a: &Array<T>) -> Array<T> {
    let a = pool::standard(a);
    let s = a.as_slice().expect("standard layout is contiguous");
    let total = dispatch(
        #[inline(always)]
        || sum_map(s, |x| x * x),
    );
    pool::filled(&[], total, |_| {})
}

/// The value of the reduction `R` (a fold, or a selection's winner) over
/// `dim`.
pub(crate) fn fold<R: Reduction, T: Num>(a: &Array<T>, dim: usize) -> Array<T> {
    let a = pool::standard(a);
    let s = a.as_slice().expect("standard layout is contiguous");
    let (outer, n, inner) = dims(a.shape(), dim);
    let shape = out_shape(a.shape(), dim);
    let fork = should_fork(s.len(), CHEAP_OP_MIN) && outer * inner > 1;
    pool::filled(&shape, T::ZERO, |out| {
        if inner == 1 {
            // Rows in runs of about `CHUNK` values, each run in one call
            // of the vector code (not one call, nor one task, per row).
            let rows = |first: usize, out: &mut [T]| {
                dispatch(
                    #[inline(always)]
                    || {
                        for (o, x) in out.iter_mut().enumerate() {
                            let r = &s[(first + o) * n..][..n];
                            // A fold from its 0, a selection from the first value.
                            *x = reduce_map::<R, T>(r, if R::SELECTS { r[0] } else { T::ZERO }, |v| v);
                        }
                    },
                )
            };
            if fork {
                let per_task = (CHUNK / n.max(1)).max(1);
                chunks_mut(out, per_task, 1, &|i, out| rows(i * per_task, out));
            } else {
                rows(0, out);
            }
        } else {
            let plane = |(o, acc): (usize, &mut [T])| {
                let base = &s[o * n * inner..(o + 1) * n * inner];
                // A selection from the first row, a fold from its 0 (so a
                // sum of -0 is +0, as along the last dim and in PyTorch).
                let first = if R::SELECTS {
                    acc.copy_from_slice(&base[..inner]);
                    1
                } else {
                    acc.fill(T::ZERO);
                    0
                };
                dispatch(
                    #[inline(always)]
                    || {
                        for j in first..n {
                            let r = &base[j * inner..(j + 1) * inner];
                            acc.iter_mut().zip(r).for_each(|(a, &v)| *a = R::step(*a, v));
                        }
                    },
                );
            };
            if n == 0 {
                // Only a sum reaches here with an empty dim (the runtime checks
                // the others); the zeros are the answer.
            } else if fork && outer > 1 {
                chunks_mut(out, inner, 1, &|o, acc| plane((o, acc)));
            } else {
                out.chunks_mut(inner).enumerate().for_each(plane);
            }
        }
    })
}

/// The position of the first winner of the selection `R` over `dim`; NaN
/// wins.
pub(crate) fn position<R: Reduction, T: Num>(a: &Array<T>, dim: usize) -> Array<i64> {
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
                    if R::beats(v, best) {
                        best = v;
                        best_j = j;
                    }
                }
                out[o * inner + i] = best_j as i64;
            }
        }
    })
}
