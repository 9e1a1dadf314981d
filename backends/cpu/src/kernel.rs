//! `kernel!` kernels on the CPU. An elementwise kernel's generated loop
//! runs over pieces of the output, in parallel for large outputs, compiled
//! for the widest vector ISA the CPU has; a general kernel's workgroups run
//! in parallel, each on one thread.
//!
//! Of an elementwise kernel, only its loop over one piece ([`eval`]) is
//! compiled per kernel; everything around it (reading the arguments,
//! splitting the output, the row sums, softmaxes and norms) is compiled
//! once per dtype, here, through [`KernelLoops`]. A release build compiles
//! generic code in the crate that uses it, so this keeps what each model's
//! crate compiles to the kernels' own loops.

use blaze_runtime::DType;
use blaze_runtime::kernel::{
    Elementwise, KernelArg, KernelFloat, KernelFn, LaunchBuffer, MAX_ARGS, RawBuffer, ScalarArg, Workgroups,
    check_launch,
};
use blaze_runtime::rng::counter_uniform;
use ndarray::{ArrayView, IxDyn};
use rayon::prelude::*;

use std::mem::MaybeUninit;

use crate::elementwise::{Operand, classify, softmax_row};
use crate::norm::{Affine, norm_row, stats_shape};
use crate::parallel::{CHUNK, COSTLY_OP_MIN, chunks_mut, fill, for_each_index, fork, should_fork};
use crate::pool::{self, with_scratch};
use crate::reduce::sum_slice;
use crate::rows::Row;
use crate::simd::dispatch;
use crate::storage::{Array, CpuStorage, Float};
use blaze_spec::rows::Rows as _;

/// Kernel `K`'s loop over one piece (`K::map`, or the partial `f` names),
/// compiled for the widest ISA the CPU has.
pub(crate) fn eval<K: Elementwise, T: KernelFloat>(f: KernelFn, args: &[&[T]], out: &mut [MaybeUninit<T>]) {
    dispatch(
        #[inline(always)]
        || match f {
            KernelFn::Value => K::map(args, out),
            KernelFn::Partial(i) => K::map_partial(i, args, out),
        },
    );
}

/// An elementwise kernel as the loops of this module see it: its name for
/// messages, the function of it to evaluate, and its loop over a piece of
/// `T`s ([`eval`]).
#[derive(Clone, Copy)]
pub(crate) struct Kernel<T> {
    name: &'static str,
    f: KernelFn,
    eval: Eval<T>,
}

/// [`eval`] of one kernel.
type Eval<T> = fn(KernelFn, &[&[T]], &mut [MaybeUninit<T>]);

impl<T: KernelFloat> Kernel<T> {
    /// `f` of kernel `K`.
    pub(crate) fn new<K: Elementwise>(f: KernelFn) -> Self {
        Kernel { name: K::NAME, f, eval: eval::<K, T> }
    }
}

/// Elements per call of the kernel's loop: its inputs' pieces and the
/// splatted scalars stay in L1.
const PIECE: usize = 1024;

/// Where a kernel argument's values come from, piece by piece.
#[derive(Clone, Copy)]
enum Source<'a, T> {
    /// A tensor, indexed like the output.
    Tensor(&'a [T]),
    /// One piece of a repeated scalar.
    Splat(&'a [T]),
    /// A block repeated along the leading dims: element `e` is
    /// `values[e % values.len()]` (a bias, an affine, a position table
    /// broadcast over the batch).
    Tiled(&'a [T]),
    /// Values each repeated `inner` times in a row: element `e` is
    /// `values[e / inner]` (per-row statistics broadcast along the last
    /// dims).
    Spread(&'a [T], usize),
    /// Noise drawn from this seed for each piece.
    Uniform(u64),
}

/// `a` (a broadcast view of the output's shape) as a [`Source::Tiled`] or
/// [`Source::Spread`] over its own values, when it repeats one contiguous
/// block along its leading dims or each value along its trailing ones
/// (the layouts the binary ops' [`classify`] recognises).
fn broadcast_source<'a, T>(a: &ArrayView<'a, T, IxDyn>) -> Option<Source<'a, T>> {
    classify(a).map(|(operand, inner)| match operand {
        Operand::Rows(values) => Source::Tensor(values),
        Operand::Same(values) => Source::Tiled(values),
        Operand::PerRow(values) => Source::Spread(values, inner),
    })
}

/// Calls `body` with kernel `K`'s inputs as sources over an output of
/// `shape`: tensors that have the shape are read in place, and so are
/// operands that broadcast to it by repeating a block or spreading values
/// (the CPU's `kernel_operand` leaves them unexpanded; each piece lays out
/// its window in a task's scratch); other views are copied out into
/// pooled arrays, so a kernel call does not allocate.
fn with_sources<T: KernelLoops, R>(
    name: &str,
    inputs: &[KernelArg<CpuStorage>],
    shape: &[usize],
    body: impl FnOnce(&[Source<'_, T>]) -> R,
) -> R {
    assert!(inputs.len() <= MAX_ARGS, "{name}: more than {MAX_ARGS} arguments");
    let n: usize = shape.iter().product();
    let splat_len = n.min(PIECE);
    let view = |s| argument_view::<T>(name, s, shape);
    // Each argument read where it is, if it can be: a tensor of the shape,
    // a repeated block or spread values, or noise.
    let direct: [Option<Source<'_, T>>; MAX_ARGS] = std::array::from_fn(|i| match inputs.get(i)? {
        KernelArg::Tensor(s) => {
            let v = view(s);
            v.to_slice().map(Source::Tensor).or_else(|| broadcast_source(&v))
        }
        KernelArg::Number(_) => None,
        KernelArg::Uniform(seed) => Some(Source::Uniform(*seed)),
    });
    let copies: [Option<Array<T>>; MAX_ARGS] = std::array::from_fn(|i| match inputs.get(i)? {
        KernelArg::Tensor(s) if direct[i].is_none() => Some(pool::output(shape, |o| pool::copy_to(o, &view(s)))),
        KernelArg::Number(v) => Some(pool::filled(&[splat_len], <T as KernelFloat>::lit(*v), |_| {})),
        KernelArg::Tensor(_) | KernelArg::Uniform(_) => None,
    });
    let sources: [Source<'_, T>; MAX_ARGS] = std::array::from_fn(|i| {
        let copy = || copies[i].as_ref().and_then(|c| c.as_slice()).expect("a pooled array is contiguous");
        match (direct[i], inputs.get(i)) {
            (Some(source), _) => source,
            (None, Some(KernelArg::Tensor(_))) => Source::Tensor(copy()),
            (None, Some(KernelArg::Number(_))) => Source::Splat(copy()),
            (None, _) => Source::Splat(&[]),
        }
    });
    body(&sources[..inputs.len()])
}

/// A tensor argument of kernel `name` as a view of the output's `shape`.
fn argument_view<'a, T: KernelLoops>(name: &str, s: &'a CpuStorage, shape: &[usize]) -> ArrayView<'a, T, IxDyn> {
    let Some(a) = T::values(s) else {
        panic!("{name}: a {} tensor among {} ones", s.dtype(), T::DTYPE);
    };
    a.broadcast(IxDyn(shape))
        .unwrap_or_else(|| panic!("{name}: an argument of shape {:?} does not broadcast to {shape:?}", a.shape()))
}

/// Buffers for the arguments of one piece that are laid out for it (noise
/// drawn, a broadcast operand's window): made once per task, not per
/// piece (a piece's vector code would otherwise probe a frame this large
/// on every call).
type Noise<T> = [MaybeUninit<[T; PIECE]>; MAX_ARGS];

/// Fresh [`Noise`] buffers.
fn noise<T>() -> Noise<T> {
    [const { MaybeUninit::uninit() }; MAX_ARGS]
}

/// Evaluates kernel `k` on the `len` elements from `start` into `out`, at
/// most [`PIECE`] of them; noise is drawn into `noise`.
#[inline(always)]
fn piece<T: Float + KernelFloat>(
    k: Kernel<T>,
    sources: &[Source<'_, T>],
    start: usize,
    out: &mut [MaybeUninit<T>],
    noise: &mut Noise<T>,
) {
    let len = out.len();
    let mut noise = noise.iter_mut();
    let mut buffer = || {
        let buf = noise.next().expect("a buffer per argument");
        // SAFETY: `MaybeUninit<[T; N]>` has the layout of `[MaybeUninit<T>; N]`.
        let buf = unsafe { &mut *buf.as_mut_ptr().cast::<[MaybeUninit<T>; PIECE]>() };
        &mut buf[..len]
    };
    let mut args: [&[T]; MAX_ARGS] = [&[]; MAX_ARGS];
    for (arg, src) in args.iter_mut().zip(sources) {
        *arg = match *src {
            Source::Tensor(values) => &values[start..start + len],
            Source::Splat(values) => &values[..len],
            Source::Tiled(values) => {
                let at = start % values.len();
                if at + len <= values.len() { &values[at..at + len] } else { tile(values, at, buffer()) }
            }
            Source::Spread(values, inner) => spread(values, inner, start, buffer()),
            Source::Uniform(seed) => draw(seed, start, buffer()),
        };
    }
    (k.eval)(k.f, &args[..sources.len()], out);
}

/// Evaluates kernel `k` on the row of `out.len()` elements from `at`
/// into `out`, a piece at a time, and returns its values.
#[inline(always)]
fn row_values<'a, T: Float + KernelFloat>(
    k: Kernel<T>,
    sources: &[Source<'_, T>],
    at: usize,
    out: &'a mut [MaybeUninit<T>],
    noise: &mut Noise<T>,
) -> &'a mut [T] {
    for (i, p) in out.chunks_mut(PIECE).enumerate() {
        piece::<T>(k, sources, at + i * PIECE, p, noise);
    }
    // SAFETY: the kernel wrote every slot of the row.
    unsafe { pool::written(out) }
}

/// `out[j]` = `values[(at + j) % values.len()]`: a window of a repeated
/// block, wrapping around its end.
#[inline(always)]
fn tile<'a, T: Copy>(values: &[T], mut at: usize, out: &'a mut [MaybeUninit<T>]) -> &'a [T] {
    let mut done = 0;
    while done < out.len() {
        let take = (values.len() - at).min(out.len() - done);
        for (o, &v) in out[done..done + take].iter_mut().zip(&values[at..at + take]) {
            o.write(v);
        }
        (done, at) = (done + take, 0);
    }
    // SAFETY: the loop wrote every slot.
    unsafe { pool::written(out) }
}

/// `out[j]` = `values[(start + j) / inner]`: runs of each value.
#[inline(always)]
fn spread<'a, T: Copy>(values: &[T], inner: usize, start: usize, out: &'a mut [MaybeUninit<T>]) -> &'a [T] {
    let (mut k, mut left) = (start / inner, inner - start % inner);
    let mut done = 0;
    while done < out.len() {
        let take = left.min(out.len() - done);
        for o in &mut out[done..done + take] {
            o.write(values[k]);
        }
        (done, k, left) = (done + take, k + 1, inner);
    }
    // SAFETY: the loop wrote every slot.
    unsafe { pool::written(out) }
}

/// `out[j]` = the noise of element `start + j` under `seed`.
#[inline(always)]
fn draw<T: KernelFloat>(seed: u64, start: usize, out: &mut [MaybeUninit<T>]) -> &[T] {
    for (j, o) in out.iter_mut().enumerate() {
        // The caller checked that indices fit in 32 bits.
        o.write(T::lit(f64::from(counter_uniform(seed, (start + j) as u32))));
    }
    // SAFETY: every slot was written above.
    unsafe { pool::written(out) }
}

/// Evaluates kernel `k` over `shape` (every tensor input broadcasts to it).
fn run<T: KernelLoops>(k: Kernel<T>, inputs: &[KernelArg<CpuStorage>], shape: &[usize]) -> Array<T> {
    let n: usize = shape.iter().product();
    with_sources::<T, _>(k.name, inputs, shape, |sources| {
        // The kernel writes every slot of each piece (the `Elementwise`
        // contract), so the output starts uninitialised.
        fill(shape, 1, should_fork(n, COSTLY_OP_MIN), |start, out| {
            let mut noise = noise::<T>();
            for (i, out) in out.chunks_mut(PIECE).enumerate() {
                dispatch(
                    #[inline(always)]
                    || piece::<T>(k, sources, start + i * PIECE, out, &mut noise),
                );
            }
        })
    })
}

/// `scale` times the sum over the last dim of kernel `k` over `shape`,
/// that dim kept with size 1: each row evaluated a piece at a time into a
/// buffer on the stack and summed from there, so the whole is never held.
fn run_sum<T: KernelLoops>(k: Kernel<T>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], scale: f64) -> Array<T> {
    let n: usize = shape.iter().product();
    let row = shape.last().copied().unwrap_or(1);
    let mut out_shape = shape.to_vec();
    if let Some(last) = out_shape.last_mut() {
        *last = 1;
    }
    let scale = T::from_f64(scale);
    with_sources::<T, _>(k.name, inputs, shape, |sources| {
        let sum_rows = |first: usize, out: &mut [MaybeUninit<T>]| {
            let mut buf = [MaybeUninit::<T>::uninit(); PIECE];
            let mut noise = noise::<T>();
            for (r, o) in out.iter_mut().enumerate() {
                let at = (first + r) * row;
                let mut total = T::ZERO;
                for start in (at..at + row).step_by(PIECE) {
                    let len = PIECE.min(at + row - start);
                    let values = &mut buf[..len];
                    dispatch(
                        #[inline(always)]
                        || {
                            piece::<T>(k, sources, start, values, &mut noise);
                            // SAFETY: the kernel wrote every slot of `values`.
                            let values = unsafe { pool::written(values) };
                            total += sum_slice(values);
                        },
                    );
                }
                o.write(total * scale);
            }
        };
        pool::output_uninit(&out_shape, |out| {
            if should_fork(n, COSTLY_OP_MIN) && out.len() > 1 {
                let rows = (CHUNK / row.max(1)).max(1);
                chunks_mut(out, rows, 1, &|i, out| sum_rows(i * rows, out));
            } else {
                sum_rows(0, out);
            }
        })
    })
}

/// The softmax (with `log`, the log-softmax) over the last dim of kernel
/// `k` over `shape`: each row evaluated into the output a piece at a time,
/// then its softmax run there while it is in cache.
fn run_softmax<T: KernelLoops>(k: Kernel<T>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], log: bool) -> Array<T> {
    let n: usize = shape.iter().product();
    let row = shape.last().copied().unwrap_or(1).max(1);
    with_sources::<T, _>(k.name, inputs, shape, |sources| {
        fill(shape, row, should_fork(n, COSTLY_OP_MIN), |start, out| {
            let mut noise = noise::<T>();
            for (r, out) in out.chunks_mut(row).enumerate() {
                let at = start + r * row;
                dispatch(
                    #[inline(always)]
                    || {
                        let values = row_values::<T>(k, sources, at, out, &mut noise);
                        let mut row = Row::new(values.len());
                        let out = row.output_written(values);
                        let x = row.written(out);
                        softmax_row(&mut row, x, out, T::ONE, log);
                    },
                );
            }
        })
    })
}

/// A normalisation's output, statistics and kept input.
pub(crate) type Normed<T> = (Array<T>, Array<T>, Option<Array<T>>);

/// The loops around elementwise kernels for one dtype, compiled here once
/// (each impl's methods are not generic) whichever kernel they run.
pub(crate) trait KernelLoops: Float + KernelFloat {
    /// The dtype, for messages.
    const DTYPE: DType;
    /// The values of a tensor of this dtype.
    fn values(s: &CpuStorage) -> Option<&Array<Self>>;
    /// Kernel `k` over `shape`.
    fn run(k: Kernel<Self>, inputs: &[KernelArg<CpuStorage>], shape: &[usize]) -> Array<Self>;
    /// `scale` times the row sums of kernel `k` over `shape`.
    fn run_sum(k: Kernel<Self>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], scale: f64) -> Array<Self>;
    /// The row softmax (or log-softmax) of kernel `k` over `shape`.
    fn run_softmax(k: Kernel<Self>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], log: bool) -> Array<Self>;
    /// The row normalisation of kernel `k` over `shape`.
    fn run_norm(
        k: Kernel<Self>,
        inputs: &[KernelArg<CpuStorage>],
        shape: &[usize],
        affine: Affine<'_, Self>,
        keep: bool,
    ) -> Normed<Self>;
}

macro_rules! kernel_loops {
    ($t:ty, $dtype:expr, $values:path) => {
        impl KernelLoops for $t {
            const DTYPE: DType = $dtype;
            fn values(s: &CpuStorage) -> Option<&Array<$t>> {
                $values(s)
            }
            fn run(k: Kernel<$t>, inputs: &[KernelArg<CpuStorage>], shape: &[usize]) -> Array<$t> {
                run(k, inputs, shape)
            }
            fn run_sum(k: Kernel<$t>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], scale: f64) -> Array<$t> {
                run_sum(k, inputs, shape, scale)
            }
            fn run_softmax(k: Kernel<$t>, inputs: &[KernelArg<CpuStorage>], shape: &[usize], log: bool) -> Array<$t> {
                run_softmax(k, inputs, shape, log)
            }
            fn run_norm(
                k: Kernel<$t>,
                inputs: &[KernelArg<CpuStorage>],
                shape: &[usize],
                affine: Affine<'_, $t>,
                keep: bool,
            ) -> Normed<$t> {
                run_norm(k, inputs, shape, affine, keep)
            }
        }
    };
}
kernel_loops!(f32, DType::F32, CpuStorage::f32s);
kernel_loops!(f64, DType::F64, CpuStorage::f64s);

/// The normalisation over the last dim of kernel `k` over `shape`
/// (`affine`'s parameters): each row evaluated a piece at a time, then its
/// statistics and output computed while it is in cache. Returns the
/// output, the `[.., 2]` statistics and, with `keep`, the kernel's values;
/// without, a row goes through this thread's scratch space and is never
/// written out.
fn run_norm<T: KernelLoops>(
    k: Kernel<T>,
    inputs: &[KernelArg<CpuStorage>],
    shape: &[usize],
    affine: Affine<'_, T>,
    keep: bool,
) -> Normed<T> {
    let n: usize = shape.iter().product();
    let row = shape.last().copied().unwrap_or(1).max(1);
    with_sources::<T, _>(k.name, inputs, shape, |sources| {
        type Slots<'a, T> = &'a mut [MaybeUninit<T>];
        let rows = |first: usize, out: Slots<'_, T>, stats: Slots<'_, T>, mut kept: Option<Slots<'_, T>>| {
            let mut noise = noise::<T>();
            with_scratch(if kept.is_some() { 0 } else { row }, |scratch: &mut [T]| {
                for (r, (o, pair)) in out.chunks_mut(row).zip(stats.chunks_mut(2)).enumerate() {
                    let at = (first + r) * row;
                    let values: Slots<'_, T> = match kept.as_deref_mut() {
                        Some(kept) => &mut kept[r * row..][..row],
                        // SAFETY: only the kernel's values are written
                        // through it.
                        None => unsafe { pool::slots(scratch) },
                    };
                    dispatch(
                        #[inline(always)]
                        || norm_row(row_values::<T>(k, sources, at, values, &mut noise), o, pair, affine, None),
                    );
                }
            })
        };
        let all = |out: Slots<'_, T>, stats: Slots<'_, T>, kept: Option<Slots<'_, T>>| {
            if should_fork(n, COSTLY_OP_MIN) && out.len() > row {
                let per = (CHUNK / row).max(1);
                let pairs = out.par_chunks_mut(per * row).zip(stats.par_chunks_mut(per * 2));
                fork(|| match kept {
                    Some(kept) => pairs
                        .zip(kept.par_chunks_mut(per * row))
                        .enumerate()
                        .for_each(|(i, ((o, s), k))| rows(i * per, o, s, Some(k))),
                    None => pairs.enumerate().for_each(|(i, (o, s))| rows(i * per, o, s, None)),
                });
            } else {
                rows(0, out, stats, kept);
            }
        };
        let (mut stats, mut kept) = (None, None);
        let y = pool::output_uninit(shape, |out| {
            stats = Some(pool::output_uninit(&stats_shape(shape), |st| {
                if keep {
                    kept = Some(pool::output_uninit(shape, |k| all(out, st, Some(k))));
                } else {
                    all(out, st, None);
                }
            }));
        });
        (y, stats.expect("written above"), kept)
    })
}

/// Buffers a general kernel may take on the CPU (GPUs offer 8 to 16).
const MAX_BUFFERS: usize = 16;

/// Runs general kernel `K`: each workgroup on one thread, workgroups in
/// parallel. Inputs that are not contiguous are copied out first; an
/// output is written in place, through the buffer pool when it came from
/// there (no copy, no allocation), copied first only if another tensor
/// shares it.
pub(crate) fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, CpuStorage>], scalars: &[ScalarArg]) {
    check_launch::<K, _>(buffers, scalars);
    assert!(
        buffers.len() <= MAX_BUFFERS,
        "{}: {} buffers; a kernel takes at most {MAX_BUFFERS}",
        K::NAME,
        buffers.len()
    );
    // SAFETY: an empty buffer is never dereferenced (every access checks
    // the index against the length 0 first).
    let unused = unsafe { RawBuffer::new(std::ptr::null_mut(), 0, false) };
    bind(K::NAME, buffers, 0, &mut [unused; MAX_BUFFERS], &mut |raw| {
        let run = |g: u32| K::run_workgroup(g, groups, raw, scalars);
        if groups > 1 && rayon::current_num_threads() > 1 {
            for_each_index(groups as usize, 1, &|g| run(g as u32));
        } else {
            (0..groups).for_each(run);
        }
    });
}

/// Views `buffers` as `raw[at..]`, then calls `run` with every view. Each
/// view lives only for the call: an output is borrowed by the pool's
/// in-place update, which hands it back afterwards.
fn bind(
    name: &str,
    buffers: &mut [LaunchBuffer<'_, CpuStorage>],
    at: usize,
    raw: &mut [RawBuffer; MAX_BUFFERS],
    run: &mut dyn FnMut(&[RawBuffer]),
) {
    let Some((first, rest)) = buffers.split_first_mut() else {
        return run(&raw[..at]);
    };
    let what = |s: &CpuStorage| format!("{name}: buffer {at} is {}, kernels take f32 tensors", s.dtype());
    match first {
        LaunchBuffer::Input(CpuStorage::F32(a)) => {
            let copy: Vec<f32>;
            let values = match a.as_slice() {
                Some(s) => s,
                None => {
                    copy = a.iter().copied().collect();
                    &copy
                }
            };
            // SAFETY: `a` (or its copy) outlives the call below and is only read.
            raw[at] = unsafe { RawBuffer::new(values.as_ptr().cast_mut(), values.len(), false) };
            bind(name, rest, at + 1, raw, run);
        }
        LaunchBuffer::Output(CpuStorage::F32(a)) => {
            // SAFETY (both views): the slice outlives the call that uses
            // it, and `buffers` holds it mutably borrowed, so nothing else
            // reads or writes it meanwhile.
            let in_place = pool::update_in_place(a, |s| {
                raw[at] = unsafe { RawBuffer::new(s.as_mut_ptr(), s.len(), true) };
                bind(name, rest, at + 1, raw, run);
            });
            if !in_place {
                // Shared with another tensor: copied on write, so it does
                // not see the kernel's writes.
                let Some(s) = a.as_slice_mut() else {
                    panic!("{name}: output buffer {at} must be contiguous (make it with .contiguous())")
                };
                raw[at] = unsafe { RawBuffer::new(s.as_mut_ptr(), s.len(), true) };
                bind(name, rest, at + 1, raw, run);
            }
        }
        LaunchBuffer::Input(s) => panic!("{}", what(s)),
        LaunchBuffer::Output(s) => panic!("{}", what(s)),
    }
}
