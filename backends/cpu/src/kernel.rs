//! `kernel!` elementwise kernels on the CPU: the kernel's generated loop
//! runs over pieces of the output, in parallel for large outputs, compiled
//! for the widest vector ISA the CPU has.

use std::borrow::Cow;

use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFloat, KernelFn};

use crate::elementwise::build;
use crate::parallel::{COSTLY_OP_MIN, fill, should_fork};
use crate::simd::dispatch;
use crate::storage::{Array, Float};

/// Elements per call of the kernel's loop: its inputs' pieces and the
/// splatted scalars stay in L1.
const PIECE: usize = 1024;

/// The most arguments a kernel takes (`kernel!` enforces it).
pub const MAX_ARGS: usize = 8;

/// Evaluates `f` of kernel `K` over `shape`; `array` picks the `T` array out
/// of a tensor input (every one has `shape`).
pub(crate) fn run<K: Elementwise, T: Float + KernelFloat, S>(
    f: KernelFn,
    inputs: &[KernelArg<S>],
    shape: &[usize],
    array: impl Fn(&S) -> &Array<T>,
) -> Array<T> {
    assert!(inputs.len() <= MAX_ARGS, "{}: more than {MAX_ARGS} arguments", K::NAME);
    let n: usize = shape.iter().product();
    // Tensor inputs as contiguous slices (broadcast views are copied out),
    // scalars as one piece of the repeated value.
    let splat_len = n.min(PIECE);
    let sources: Vec<(Cow<'_, [T]>, bool)> = inputs
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(s) => {
                let a = array(s);
                match a.as_slice() {
                    Some(v) => (Cow::Borrowed(v), true),
                    None => (Cow::Owned(a.iter().copied().collect()), true),
                }
            }
            KernelArg::Number(v) => (Cow::Owned(vec![<T as KernelFloat>::lit(*v); splat_len]), false),
        })
        .collect();
    // The kernel writes every slot of each piece (the `Elementwise`
    // contract), so the output starts uninitialised.
    let out = fill(n, 1, should_fork(n, COSTLY_OP_MIN), |start, out| {
        for (i, out) in out.chunks_mut(PIECE).enumerate() {
            let start = start + i * PIECE;
            let len = out.len();
            let mut args: [&[T]; MAX_ARGS] = [&[]; MAX_ARGS];
            for (arg, (src, tensor)) in args.iter_mut().zip(&sources) {
                *arg = if *tensor { &src[start..start + len] } else { &src[..len] };
            }
            let args = &args[..sources.len()];
            dispatch(
                #[inline(always)]
                || match f {
                    KernelFn::Value => K::map(args, out),
                    KernelFn::Partial(i) => K::map_partial(i, args, out),
                },
            );
        }
    });
    build(shape, out)
}
