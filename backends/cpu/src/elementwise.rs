//! Elementwise kernels: unary maps, binary zips with NumPy broadcasting, and
//! selection. Contiguous inputs and the common broadcast patterns (a bias
//! row, a per-row scalar) take slice loops that the compiler vectorises;
//! anything else falls back to ndarray's strided `Zip`.

use std::mem::MaybeUninit;

use crate::parallel::{CHEAP_OP_MIN, CHUNK, COSTLY_OP_MIN, chunks_mut, chunks_mut2, fill, fork, should_fork};
use crate::pool::{self, Pooled};
use crate::rows::{Ahead, In, Out, Row as OpRow};
use crate::simd::{dispatch, dispatch_bound, dispatch_stream};
use crate::storage::Array;
use crate::storage::Float;
use crate::stream::Streamer;
use blaze_runtime::backend::{AdamStep, SoftmaxOptions, UnaryOp};
use blaze_runtime::kernel::{Elementwise, KernelFloat};
use blaze_runtime::shape::broadcast_shapes;
use blaze_runtime::unary::{MAX_UNARY_PARAMS, UnaryKernel, UnaryVisitor};
use blaze_spec::rows;
use ndarray::{ArrayView, IxDyn};
use rayon::prelude::*;

/// `f` applied to every element; parallel above `fork_min` elements.
#[inline]
pub(crate) fn map<T, U>(a: &Array<T>, fork_min: usize, f: impl Fn(T) -> U + Sync + Send) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    // A cheap op streams memory; a costly one computes.
    let memory_bound = fork_min >= CHEAP_OP_MIN;
    let run = |out: &mut [MaybeUninit<U>], src: &[T], writer: &Streamer| {
        dispatch_bound(
            memory_bound,
            #[inline(always)]
            || write_mapped(writer, out, src, &f),
        )
    };
    map_with(a, fork_min, &run)
}

/// [`map`] with the result laid out in memory as `a` is: a transposed
/// view maps to a transposed view, read and written in memory order (no
/// transposing copy). Dims that `a` broadcasts are made real first.
pub(crate) fn map_keeping_layout<T, U>(a: &Array<T>, fork_min: usize, f: impl Fn(T) -> U + Sync + Send) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    // The dims in memory order, outermost first: permuted so, `a` is
    // row-major whenever its values are contiguous.
    let mut order: Vec<usize> = (0..a.ndim()).collect();
    order.sort_by_key(|&d| std::cmp::Reverse(a.strides()[d]));
    let mut back = vec![0; order.len()];
    for (i, &d) in order.iter().enumerate() {
        back[d] = i;
    }
    map(&a.clone().permuted_axes(IxDyn(&order)), fork_min, f).permuted_axes(IxDyn(&back))
}

/// `x` rounded to the nearest f16 (ties to even; past f16's range to
/// infinity, below it to f16's subnormals) and kept in f32, without
/// branches, so that a map over it vectorises: what `f16::from_f32(x)
/// .to_f32()` gives, at the speed of a cheap op.
#[inline(always)]
pub(crate) fn f16_rounded(x: f32) -> f32 {
    let bits = x.to_bits();
    let (sign, magnitude) = (bits & 0x8000_0000, bits & 0x7fff_ffff);
    // A normal f16: 10 fraction bits of f32's 23, to nearest even.
    let normal = (magnitude + 0x0fff + ((magnitude >> 13) & 1)) & !0x1fff;
    let normal = if normal >= 0x4780_0000 { 0x7f80_0000 } else { normal };
    // Below 2^-14, multiples of 2^-24: adding 0.5 leaves a sum whose last
    // place is 2^-24, so the addition rounds there (to nearest even).
    let tiny = ((f32::from_bits(magnitude) + 0.5) - 0.5).to_bits();
    let rounded = if magnitude < 0x3880_0000 {
        tiny
    } else if magnitude >= 0x7f80_0000 {
        magnitude
    } else {
        normal
    };
    f32::from_bits(sign | rounded)
}

/// [`map`] compiled for the baseline ISA alone, without the AVX copies
/// every op of [`map`] has: for integer and boolean ops and casts from
/// them, which no training step runs over large tensors.
pub(crate) fn map_baseline<T, U>(a: &Array<T>, fork_min: usize, f: impl Fn(T) -> U + Sync + Send) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    let run = |out: &mut [MaybeUninit<U>], src: &[T], writer: &Streamer| write_mapped(writer, out, src, &f);
    map_with(a, fork_min, &run)
}

/// `out` as `f` of `src`'s values (as many), written through `writer`.
#[inline(always)]
fn write_mapped<T: Copy, U: Copy>(writer: &Streamer, out: &mut [MaybeUninit<U>], src: &[T], f: &impl Fn(T) -> U) {
    writer.write_lines(
        out,
        #[inline(always)]
        |at, out| {
            let n = out.len();
            for (o, &x) in out.iter_mut().zip(&src[at..at + n]) {
                o.write(f(x));
            }
        },
    )
}

/// The loops one map compiles: `out` as the op of a contiguous piece.
type PieceFn<'a, T, U> = dyn Fn(&mut [MaybeUninit<U>], &[T], &Streamer) + Sync + 'a;

/// [`map`] with the op behind a reference, so that what does not depend
/// on it is compiled once per pair of types: `run` writes the op of a
/// contiguous piece (`out.len()` values of `src`). A strided array is
/// made row-major first.
fn map_with<T, U>(a: &Array<T>, fork_min: usize, run: &PieceFn<'_, T, U>) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    let Some(s) = a.as_slice() else {
        return map_with(&pool::standard(a), fork_min, run);
    };
    let bytes = s.len() * size_of::<U>();
    fill(a.shape(), 1, should_fork(s.len(), fork_min), |start, out| {
        run(out, &s[start..start + out.len()], &Streamer::for_output(bytes));
    })
}

/// Op `K` of the op table as a function of one element, its parameters
/// bound: the function a fused group calls too.
#[inline(always)]
pub(crate) fn unary_fn<K: UnaryKernel, T: KernelFloat>(params: &[f64]) -> impl Fn(T) -> T + Copy + Send + Sync {
    let p: [T; MAX_UNARY_PARAMS] = std::array::from_fn(|i| T::lit(params.get(i).copied().unwrap_or(0.0)));
    // The kernel's arguments at one point: `x`, then the parameters.
    move |x| K::Value::at(&std::array::from_fn::<T, { MAX_UNARY_PARAMS + 1 }, _>(|i| if i == 0 { x } else { p[i - 1] }))
}

/// The size above which op `op` splits over threads, from its cost.
pub(crate) fn fork_min(op: UnaryOp) -> usize {
    if op.costly() { COSTLY_OP_MIN } else { CHEAP_OP_MIN }
}

/// `act(x + bias) + residual` with the bias along `dim`, in one pass over
/// `x`'s buffer. Returns false, leaving `x` alone, for a strided or shared
/// `x`, a residual not of `x`'s shape and row-major, or an activation
/// without a fused form here.
pub(crate) fn bias_act_in_place<T: Float + KernelFloat>(
    x: &mut Array<T>,
    bias: Option<&Array<T>>,
    dim: usize,
    act: Option<UnaryOp>,
    residual: Option<&Array<T>>,
) -> bool {
    let residual = match residual {
        None => None,
        Some(r) if r.shape() == x.shape() => match r.as_slice() {
            Some(r) => Some(r),
            None => return false,
        },
        Some(_) => return false,
    };
    /// The pass with the op table's kernel for the activation.
    struct Epilogue<'a, T> {
        x: &'a mut Array<T>,
        bias: Option<&'a Array<T>>,
        dim: usize,
        residual: Option<&'a [T]>,
        fork_min: usize,
    }
    impl<T: Float + KernelFloat> UnaryVisitor for Epilogue<'_, T> {
        type Out = bool;
        fn visit<K: UnaryKernel>(self, params: &[f64]) -> bool {
            bias_then(self.x, self.bias, self.dim, self.residual, self.fork_min, unary_fn::<K, T>(params))
        }
    }
    match act {
        None => bias_then(x, bias, dim, residual, CHEAP_OP_MIN, |v| v),
        Some(op) => op.visit(Epilogue { x, bias, dim, residual, fork_min: fork_min(op) }).unwrap_or(false),
    }
}

/// [`bias_act_in_place`] for one activation `f`.
fn bias_then<T: Float>(
    x: &mut Array<T>,
    bias: Option<&Array<T>>,
    dim: usize,
    residual: Option<&[T]>,
    fork_min: usize,
    f: impl Fn(T) -> T + Sync,
) -> bool {
    if !x.is_standard_layout() {
        return false;
    }
    let channels = x.shape()[dim];
    let inner: usize = x.shape()[dim + 1..].iter().product();
    let bias = match bias.map(|b| b.as_slice()) {
        None => None,
        Some(Some(b)) if b.len() == channels => Some(b),
        Some(_) => return false,
    };
    // Work in whole blocks of `channels * inner` values, where channel `c`
    // is the run `c * inner..(c + 1) * inner`; the residual, if any, is
    // added after the activation.
    let block = (channels * inner).max(1);
    let run = |xs: &mut [T], rs: Option<&[T]>| {
        dispatch_stream(
            #[inline(always)]
            || {
                for (k, block) in xs.chunks_exact_mut(block).enumerate() {
                    let bias_of = |v: &mut [T], c: usize| match bias {
                        Some(b) => {
                            let b = b[c];
                            v.iter_mut().for_each(|v| *v = f(*v + b));
                        }
                        None => v.iter_mut().for_each(|v| *v = f(*v)),
                    };
                    match bias {
                        // The bias runs along the last dim: add it as a vector.
                        Some(b) if inner == 1 => {
                            for (v, &b) in block.iter_mut().zip(b) {
                                *v = f(*v + b);
                            }
                        }
                        Some(_) => {
                            for (c, run) in block.chunks_exact_mut(inner).enumerate() {
                                bias_of(run, c);
                            }
                        }
                        None => bias_of(block, 0),
                    }
                    if let Some(rs) = rs {
                        let r = &rs[k * block.len()..][..block.len()];
                        block.iter_mut().zip(r).for_each(|(v, &r)| *v += r);
                    }
                }
            },
        )
    };
    pool::update_in_place(x, |xs| {
        let fork = should_fork(xs.len(), fork_min);
        in_pieces(xs, residual, CHUNK.div_ceil(block) * block, fork, &run);
    })
}

/// A piece's work, given the same piece of the residual, if any.
type ResidualFn<'a, T> = dyn Fn(&mut [T], Option<&[T]>) + Sync + 'a;

/// `run` over `xs` in pieces of `piece` values, each with the same piece
/// of `residual`, in parallel when `fork`: rayon's splitting compiled
/// once per type rather than once per activation.
fn in_pieces<T: Float>(xs: &mut [T], residual: Option<&[T]>, piece: usize, fork: bool, run: &ResidualFn<'_, T>) {
    match residual {
        _ if !fork => run(xs, residual),
        Some(r) => chunks_mut(xs, piece, 1, &|i, xs| run(xs, Some(&r[i * piece..][..xs.len()]))),
        None => chunks_mut(xs, piece, 1, &|_, xs| run(xs, None)),
    }
}

/// `y = a * y + b * x` in one pass over `y`'s buffer. Returns false (and
/// leaves `y` alone) unless both are contiguous row-major of the same shape
/// and no other array shares `y`'s buffer.
pub(crate) fn axpby_in_place<T: Float>(y: &mut Array<T>, a: T, x: &Array<T>, b: T) -> bool {
    if y.shape() != x.shape() || !y.is_standard_layout() {
        return false;
    }
    let Some(xs) = x.as_slice() else {
        return false;
    };
    let update = |ys: &mut [T], xs: &[T]| {
        dispatch_stream(
            #[inline(always)]
            || {
                for (y, &x) in ys.iter_mut().zip(xs) {
                    *y = a * *y + b * x;
                }
            },
        )
    };
    pool::update_in_place(y, |ys| {
        if should_fork(ys.len(), CHEAP_OP_MIN) {
            chunks_mut(ys, CHUNK, 1, &|i, ys| update(ys, &xs[i * CHUNK..][..ys.len()]));
        } else {
            update(ys, xs);
        }
    })
}

/// One Adam or AdamW update of `p` and its moments in one pass, in place
/// (see `AdamStep`). Returns false, leaving all alone, when a buffer is
/// strided or shared.
pub(crate) fn adam_in_place<T: Float>(
    p: &mut Array<T>,
    m: &mut Array<T>,
    v: &mut Array<T>,
    g: &Array<T>,
    o: AdamStep,
) -> bool {
    let n = p.len();
    let Some(gs) = g.as_slice() else { return false };
    if m.len() != n || v.len() != n || gs.len() != n {
        return false;
    }
    let (c1, c2) = o.corrections();
    let f = T::from_f64;
    let (b1, b2, eps, wd, keep) = (f(o.beta1), f(o.beta2), f(o.eps), f(o.weight_decay), f(o.keep()));
    let (step, inv_c2) = (f(o.lr / c1), f(1.0 / c2));
    let coupled = !o.decoupled && o.weight_decay != 0.0;
    let update = |ps: &mut [T], ms: &mut [T], vs: &mut [T], gs: &[T]| {
        dispatch_stream(
            #[inline(always)]
            || {
                for (((p, m), v), &g) in ps.iter_mut().zip(ms.iter_mut()).zip(vs.iter_mut()).zip(gs) {
                    let g = if coupled { g + wd * *p } else { g };
                    *m = b1 * *m + (T::ONE - b1) * g;
                    *v = b2 * *v + (T::ONE - b2) * (g * g);
                    *p = keep * *p - step * (*m / ((*v * inv_c2).sqrt() + eps));
                }
            },
        )
    };
    let mut done = false;
    pool::update_in_place(p, |ps| {
        pool::update_in_place(m, |ms| {
            pool::update_in_place(v, |vs| {
                if should_fork(n, CHEAP_OP_MIN) {
                    fork(|| {
                        ps.par_chunks_mut(CHUNK)
                            .zip(ms.par_chunks_mut(CHUNK))
                            .zip(vs.par_chunks_mut(CHUNK))
                            .zip(gs.par_chunks(CHUNK))
                            .for_each(|(((ps, ms), vs), gs)| update(ps, ms, vs, gs))
                    });
                } else {
                    update(ps, ms, vs, gs);
                }
                done = true;
            });
        });
    });
    done
}

/// How a broadcast operand lays over the output, seen as rows of `inner`.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a, T> {
    /// Row `r` is `s[r * inner..][..inner]`: a contiguous operand.
    Rows(&'a [T]),
    /// Every row is `s` (`s.len() == inner`): a broadcast trailing block.
    Same(&'a [T]),
    /// Row `r` is `inner` copies of `s[r]`: a broadcast per-row scalar.
    PerRow(&'a [T]),
}

/// Recognises a broadcast view as `Same` or `PerRow`, returning the row length.
pub(crate) fn classify<'a, T>(v: &ArrayView<'a, T, IxDyn>) -> Option<(Operand<'a, T>, usize)> {
    let shape = v.shape();
    let strides = v.strides();
    let n = shape.len();
    // Trailing dims that are contiguous row-major form the block.
    let mut expected = 1isize;
    let mut k = n;
    while k > 0 {
        let i = k - 1;
        if shape[i] != 1 {
            if strides[i] != expected {
                break;
            }
            expected *= shape[i] as isize;
        }
        k -= 1;
    }
    let inner: usize = shape[k..].iter().product();
    if (0..k).all(|i| shape[i] == 1 || strides[i] == 0) {
        // SAFETY: the trailing dims are row-major contiguous from `as_ptr`,
        // so `inner` elements there belong to the viewed array.
        let s = unsafe { std::slice::from_raw_parts(v.as_ptr(), inner) };
        return Some((Operand::Same(s), inner));
    }
    // Leading dims contiguous and trailing dims all broadcast: a per-row scalar.
    let mut m = n;
    while m > 0 && (shape[m - 1] == 1 || strides[m - 1] == 0) {
        m -= 1;
    }
    let mut expected = 1isize;
    for i in (0..m).rev() {
        if shape[i] != 1 {
            if strides[i] != expected {
                return None;
            }
            expected *= shape[i] as isize;
        }
    }
    let outer: usize = shape[..m].iter().product();
    let inner: usize = shape[m..].iter().product();
    // SAFETY: the leading dims are row-major contiguous from `as_ptr`.
    let s = unsafe { std::slice::from_raw_parts(v.as_ptr(), outer) };
    Some((Operand::PerRow(s), inner))
}

/// One row of an operand: a slice or a single repeated value.
enum Row<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

impl<T: Copy> Row<'_, T> {
    /// Values `at..at + n` of the row.
    #[inline(always)]
    fn part(&self, at: usize, n: usize) -> Row<'_, T> {
        match *self {
            Row::Slice(s) => Row::Slice(&s[at..at + n]),
            Row::Scalar(v) => Row::Scalar(v),
        }
    }
}

impl<'a, T: Copy> Operand<'a, T> {
    fn row(self, r: usize, inner: usize) -> Row<'a, T> {
        match self {
            Operand::Rows(s) => Row::Slice(&s[r * inner..(r + 1) * inner]),
            Operand::Same(s) => Row::Slice(s),
            Operand::PerRow(s) => Row::Scalar(s[r]),
        }
    }
}

#[inline(always)]
fn write_row<T: Copy, U: Copy>(
    writer: &Streamer,
    out: &mut [MaybeUninit<U>],
    a: Row<'_, T>,
    b: Row<'_, T>,
    f: &impl Fn(T, T) -> U,
) {
    dispatch_stream(
        #[inline(always)]
        || write_rows(writer, out, a, b, f),
    )
}

/// [`write_row`] in the caller's ISA.
#[inline(always)]
fn write_rows<T: Copy, U: Copy>(
    writer: &Streamer,
    out: &mut [MaybeUninit<U>],
    a: Row<'_, T>,
    b: Row<'_, T>,
    f: &impl Fn(T, T) -> U,
) {
    writer.write_lines(
        out,
        #[inline(always)]
        |at, out| write_row_inner(out, a.part(at, out.len()), b.part(at, out.len()), f),
    )
}

#[inline(always)]
fn write_row_inner<T: Copy, U>(out: &mut [MaybeUninit<U>], a: Row<'_, T>, b: Row<'_, T>, f: &impl Fn(T, T) -> U) {
    match (a, b) {
        (Row::Slice(x), Row::Slice(y)) => {
            for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                o.write(f(x, y));
            }
        }
        (Row::Slice(x), Row::Scalar(y)) => {
            for (o, &x) in out.iter_mut().zip(x) {
                o.write(f(x, y));
            }
        }
        (Row::Scalar(x), Row::Slice(y)) => {
            for (o, &y) in out.iter_mut().zip(y) {
                o.write(f(x, y));
            }
        }
        (Row::Scalar(x), Row::Scalar(y)) => {
            for o in out.iter_mut() {
                o.write(f(x, y));
            }
        }
    }
}

/// `f(a, b)` elementwise with NumPy broadcasting (equal ranks).
#[inline]
pub(crate) fn zip<T, U>(a: &Array<T>, b: &Array<T>, fork_min: usize, f: impl Fn(T, T) -> U + Sync + Send) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    let rows = |out: &mut [MaybeUninit<U>], x: Row<'_, T>, y: Row<'_, T>, writer: &Streamer| {
        write_row(writer, out, x, y, &f);
    };
    zip_with(a, b, fork_min, &rows)
}

/// [`zip`] compiled for the baseline ISA alone, as [`map_baseline`]: for
/// integer and boolean ops and integer comparisons.
pub(crate) fn zip_baseline<T, U>(
    a: &Array<T>,
    b: &Array<T>,
    fork_min: usize,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    let rows = |out: &mut [MaybeUninit<U>], x: Row<'_, T>, y: Row<'_, T>, writer: &Streamer| {
        write_rows(writer, out, x, y, &f);
    };
    zip_with(a, b, fork_min, &rows)
}

/// How an element type's maps and zips are compiled, by its kind: floats
/// vectorised for the CPU's ISA (a ReLU's backward compares every
/// activation), integers and booleans in baseline code.
pub(crate) trait Loops: Copy + Send + Sync + Sized {
    /// [`map`] or [`map_baseline`].
    fn map<U: Pooled>(a: &Array<Self>, fork_min: usize, f: impl Fn(Self) -> U + Sync + Send) -> Array<U>;
    /// [`zip`] or [`zip_baseline`].
    fn zip<U: Pooled>(
        a: &Array<Self>,
        b: &Array<Self>,
        fork_min: usize,
        f: impl Fn(Self, Self) -> U + Sync + Send,
    ) -> Array<U>;
}

macro_rules! loops {
    ($map:ident, $zip:ident: $($t:ty),*) => {$(
        impl Loops for $t {
            fn map<U: Pooled>(a: &Array<$t>, fork_min: usize, f: impl Fn($t) -> U + Sync + Send) -> Array<U> {
                $map(a, fork_min, f)
            }
            fn zip<U: Pooled>(a: &Array<$t>, b: &Array<$t>, fork_min: usize, f: impl Fn($t, $t) -> U + Sync + Send) -> Array<U> {
                $zip(a, b, fork_min, f)
            }
        }
    )*};
}
loops!(map, zip: f32, f64);
loops!(map_baseline, zip_baseline: i64, bool, blaze_runtime::f16, blaze_runtime::bf16);

/// The loops one binary op compiles: `out` as the op of two operand rows.
type RowsFn<'a, T, U> = dyn Fn(&mut [MaybeUninit<U>], Row<'_, T>, Row<'_, T>, &Streamer) + Sync + 'a;

/// [`zip`] with the op behind a reference, so that broadcasting, the pool
/// and the parallel split are compiled once per pair of types: `rows`
/// writes an output row. Operands laid out otherwise than the row loops
/// take are first copied row-major at the output's shape.
fn zip_with<T, U>(a: &Array<T>, b: &Array<T>, fork_min: usize, rows: &RowsFn<'_, T, U>) -> Array<U>
where
    T: Pooled,
    U: Pooled,
{
    let shape = broadcast_shapes(a.shape(), b.shape()).expect("the runtime checked that the shapes broadcast");
    let n: usize = shape.iter().product();
    let fork = should_fork(n, fork_min);
    let av = a.broadcast(IxDyn(&shape)).expect("broadcastable");
    let bv = b.broadcast(IxDyn(&shape)).expect("broadcastable");
    let bytes = n * size_of::<U>();
    // Operands that are contiguous or a single value: the output is one
    // row, split into pieces. (A contiguous broadcast view has the
    // output's shape.)
    let one = |t: &Array<T>| (t.len() == 1).then(|| Row::Scalar(*t.iter().next().expect("one element")));
    let flat = match (av.as_slice(), bv.as_slice()) {
        (Some(x), Some(y)) => Some((Row::Slice(x), Row::Slice(y))),
        (Some(x), None) => one(b).map(|y| (Row::Slice(x), y)),
        (None, Some(y)) => one(a).map(|x| (x, Row::Slice(y))),
        (None, None) => None,
    };
    if let Some((x, y)) = flat {
        return fill(&shape, 1, fork, |start, out| {
            let n = out.len();
            rows(out, x.part(start, n), y.part(start, n), &Streamer::for_output(bytes));
        });
    }
    let ops = match (av.as_slice(), bv.as_slice()) {
        (Some(x), None) => classify(&bv).map(|(o, inner)| (Operand::Rows(x), o, inner)),
        (None, Some(y)) => classify(&av).map(|(o, inner)| (o, Operand::Rows(y), inner)),
        _ => match (classify(&av), classify(&bv)) {
            (Some((oa, ia)), Some((ob, ib))) if ia == ib => Some((oa, ob, ia)),
            _ => None,
        },
    };
    if let Some((oa, ob, inner)) = ops
        && inner > 0
        && n > 0
    {
        return fill(&shape, inner, fork, |start, out| {
            let first = start / inner;
            let writer = Streamer::for_output(bytes);
            for (i, row) in out.chunks_mut(inner).enumerate() {
                rows(row, oa.row(first + i, inner), ob.row(first + i, inner), &writer);
            }
        });
    }
    let dense = |v: &ArrayView<'_, T, IxDyn>| pool::output(&shape, |out| pool::copy_to(out, v));
    zip_with(&dense(&av), &dense(&bv), fork_min, rows)
}

/// `cond ? a : b` with broadcasting over all three.
pub(crate) fn select<T>(cond: &Array<bool>, a: &Array<T>, b: &Array<T>) -> Array<T>
where
    T: Pooled,
{
    let ab = broadcast_shapes(a.shape(), b.shape()).expect("the runtime checked that the shapes broadcast");
    let shape = broadcast_shapes(cond.shape(), &ab).expect("the runtime checked that the shapes broadcast");
    let cv = cond.broadcast(IxDyn(&shape)).expect("broadcastable");
    let av = a.broadcast(IxDyn(&shape)).expect("broadcastable");
    let bv = b.broadcast(IxDyn(&shape)).expect("broadcastable");
    let n: usize = shape.iter().product();
    let fork = should_fork(n, CHEAP_OP_MIN);
    if let (Some(c), Some(x)) = (cv.as_slice(), av.as_slice()) {
        // A whole `b`, or a single value (masked_fill, a ReLU's zero).
        let y_all = bv.as_slice();
        let y_one = (b.len() == 1).then(|| *b.iter().next().expect("one element"));
        if y_all.is_some() || y_one.is_some() {
            return fill(&shape, 1, fork, |start, out| {
                let end = start + out.len();
                let (c, x) = (&c[start..end], &x[start..end]);
                dispatch(
                    #[inline(always)]
                    || match (y_all, y_one) {
                        (Some(y), _) => {
                            for (((o, &c), &x), &y) in out.iter_mut().zip(c).zip(x).zip(&y[start..end]) {
                                o.write(if c { x } else { y });
                            }
                        }
                        (None, Some(y)) => {
                            for ((o, &c), &x) in out.iter_mut().zip(c).zip(x) {
                                o.write(if c { x } else { y });
                            }
                        }
                        (None, None) => unreachable!("checked above"),
                    },
                )
            });
        }
    }
    pool::output(&shape, |out| {
        let out = ndarray::ArrayViewMut::from_shape(cv.raw_dim(), out).expect("the output fills the shape");
        ndarray::Zip::from(out).and(&cv).and(&av).and(&bv).for_each(|o, &c, &x, &y| *o = if c { x } else { y });
    })
}

/// How many leading entries of row `r` a softmax over the last dim of
/// `shape` sees: all of them, or with `causal` keys `0..=i` for query `i`
/// (the row's index in dim -2).
#[inline(always)]
fn visible(shape: &[usize], r: usize, causal: bool) -> usize {
    let n = shape[shape.len() - 1];
    if causal { (r % shape[shape.len() - 2] + 1).min(n) } else { n }
}

/// Softmax over the last dim of a row-major array in the form `o` says
/// (log, scaled, causal), one row at a time while it is in cache through
/// [`softmax_row`]; masked entries are written as 0 (`-inf` for the log).
/// `None` when the input is not row-major.
pub(crate) fn softmax_last<T: Float>(a: &Array<T>, o: SoftmaxOptions) -> Option<Array<T>> {
    let s = a.as_slice()?;
    let shape = a.shape();
    let n = *shape.last()?;
    if n == 0 || s.is_empty() {
        return None;
    }
    let scale = T::from_f64(o.scale);
    let out = fill(shape, n, should_fork(s.len(), COSTLY_OP_MIN), |start, out| {
        let rows = out.len() / n;
        for (r, slots) in out.chunks_mut(n).enumerate() {
            let at = start + r * n;
            let mut row = OpRow::new(visible(shape, at / n, o.causal));
            row.ahead(Ahead::after(r + 1 < rows, n, s[at..].as_ptr(), slots.as_ptr().cast()));
            let (x, y) = (row.input(&s[at..][..n]), row.output(slots));
            dispatch(
                #[inline(always)]
                || softmax_row(&mut row, x, y, scale, o.log),
            );
        }
    });
    Some(out)
}

/// [`blaze_spec::rows::softmax`] of `scale * x` into `out` (with `log`,
/// the log-softmax), for a positive `scale`, masked entries 0 (`-inf` for
/// the log): the op ([`softmax_last`]) and a fused group with a softmax
/// after it, which passes its evaluated row as `x` and `out`, run it.
/// Call inside [`dispatch`].
#[inline(always)]
pub(crate) fn softmax_row<'a, T: Float>(row: &mut OpRow<'a, T>, x: In<'a, T>, out: Out<'a, T>, scale: T, log: bool) {
    let masked = if log { T::neg_infinity() } else { T::ZERO };
    rows::softmax(row, rows::Softmax { x, out, scale, log, masked });
}

/// [`Composites::cross_entropy`](blaze_runtime::backend::Composites::cross_entropy)
/// in one pass per row while it is in cache: the max, the exponentials
/// (into the gradient's row) and their sum, then the loss and the
/// gradient. `None` unless both are row-major.
pub(crate) fn cross_entropy_rows<T: Float>(
    logits: &Array<T>,
    targets: &Array<i64>,
    smoothing: f64,
    ignore_index: i64,
    grad_scale: f64,
) -> Option<(Array<T>, Array<T>)> {
    let (zs, ts) = (logits.as_slice()?, targets.as_slice()?);
    let &[n, c] = logits.shape() else { return None };
    let (keep, spread, scale) =
        (T::from_f64(1.0 - smoothing), T::from_f64(smoothing / c as f64), T::from_f64(grad_scale));
    let row = |r: usize, grad: &mut [T], loss: &mut [T]| {
        let t = ts[r];
        let ignored = t == ignore_index;
        // The runtime checked the targets of the rows not left out.
        let target = if ignored { 0 } else { usize::try_from(t).expect("the runtime checked the targets") };
        let mut row = OpRow::new(c);
        let (z, loss, grad) = (row.input(&zs[r * c..][..c]), row.output_written(loss), row.output_written(grad));
        let nan = T::nan();
        let ce =
            rows::CrossEntropy { z, target, ignored, loss, grad, keep, spread, smoothing: smoothing > 0.0, scale, nan };
        dispatch(
            #[inline(always)]
            || rows::cross_entropy(&mut row, ce),
        );
    };
    let mut grads = None;
    let losses = pool::output(&[n], |losses| {
        grads = Some(pool::output(&[n, c], |grad| {
            if should_fork(n * c, COSTLY_OP_MIN) && c > 0 {
                let rows = (CHUNK / c).max(1);
                chunks_mut2(grad, rows * c, losses, rows, 1, &|k, grad, losses| {
                    for (i, (g, l)) in grad.chunks_mut(c).zip(losses.chunks_mut(1)).enumerate() {
                        row(k * rows + i, g, l);
                    }
                });
            } else {
                for (r, (g, l)) in grad.chunks_mut(c.max(1)).zip(losses.chunks_mut(1)).enumerate() {
                    row(r, g, l);
                }
            }
        }));
    });
    Some((losses, grads.expect("the gradient was made")))
}

/// The adjoint of [`softmax_last`] in one pass per row: `scale y (g -
/// sum(g y))`, or for the log form `scale (g - exp(y) sum(g))`, masked
/// entries 0. `None` unless both are row-major of one shape.
pub(crate) fn softmax_last_backward<T: Float>(g: &Array<T>, y: &Array<T>, o: SoftmaxOptions) -> Option<Array<T>> {
    let (gs, ys) = (g.as_slice()?, y.as_slice()?);
    let shape = g.shape();
    let n = *shape.last()?;
    if n == 0 || gs.is_empty() || shape != y.shape() {
        return None;
    }
    let scale = T::from_f64(o.scale);
    let out = fill(shape, n, should_fork(gs.len(), CHEAP_OP_MIN), |start, out| {
        for (r, slots) in out.chunks_mut(n).enumerate() {
            let at = start + r * n;
            let mut row = OpRow::new(visible(shape, at / n, o.causal));
            let (g, y) = (row.input(&gs[at..][..n]), row.input(&ys[at..][..n]));
            let out = row.output(slots);
            let p = rows::SoftmaxBackward { g, y, out, scale, log: o.log };
            dispatch(
                #[inline(always)]
                || rows::softmax_backward(&mut row, p),
            );
        }
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use blaze_runtime::f16;

    #[test]
    fn f16_rounding_matches_the_conversion() {
        // A million bit patterns spread over all of f32 (zeros, subnormals,
        // both signs, infinities, NaNs), and the edges: halfway between
        // f16 neighbours, f16's largest value and where rounding overflows.
        let spread = (0..=u32::MAX).step_by(4093).map(f32::from_bits);
        let edges = [65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-5, 6.1035152e-5, 2.9802322e-8, 2.9802326e-8]
            .into_iter()
            .chain((0..4096u32).map(|i| f32::from_bits(0x3880_0000 + (i << 12))));
        for x in spread.chain(edges) {
            let (got, want) = (super::f16_rounded(x), f16::from_f32(x).to_f32());
            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
            assert!(same, "{x:e} ({:#010x}): {got:e}, want {want:e}", x.to_bits());
        }
    }
}
