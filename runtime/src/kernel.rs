//! Elementwise kernels written once with `kernel!` and run on every backend.
//!
//! `kernel!` turns a small Rust function over scalars into a type that
//! implements [`Elementwise`]: the function as a loop body for the CPU, as
//! WGSL for the GPU (validated by naga when the kernel compiles), and its
//! partial derivative with respect to each argument, derived symbolically.
//! The generated function takes tensors and scalars in any mix, broadcasts
//! the tensors, and is differentiable under [`Autodiff`](crate::autodiff::Autodiff).

//!
//! The kernel types themselves (what a backend runs) are
//! [`crate::kernel_def`]'s, re-exported here.

use crate::Tensor;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::shape::broadcast_shapes;

pub use crate::kernel_def::*;

/// An argument of a generated kernel function: `&Tensor`, a number, or
/// per-element noise.
#[derive(Debug)]
pub enum Arg<'a, B: Backend, const D: usize> {
    /// A tensor argument.
    Tensor(&'a Tensor<B, D>),
    /// A scalar argument.
    Number(f64),
    /// At each element, a number uniform in `[0, 1)` drawn inside the
    /// kernel from this seed and the element's index
    /// ([`KernelArg::Uniform`]).
    Uniform(u64),
}

impl<'a, B: Backend, const D: usize> From<&'a Tensor<B, D>> for Arg<'a, B, D> {
    fn from(t: &'a Tensor<B, D>) -> Self {
        Arg::Tensor(t)
    }
}

macro_rules! scalar_arg {
    ($($t:ty),*) => {$(
        impl<B: Backend, const D: usize> From<$t> for Arg<'_, B, D> {
            fn from(v: $t) -> Self {
                Arg::Number(v as f64)
            }
        }
    )*};
}
scalar_arg!(f32, f64, i32);

/// Calls kernel `K` on `args`, broadcasting the tensors among them: what
/// the function `kernel!` generates does. Panics, naming the kernel, when
/// no argument is a tensor, the tensors' shapes do not broadcast, or their
/// dtypes differ or are not float.
pub fn call<K: Elementwise, B: Backend, const D: usize>(args: &[Arg<'_, B, D>]) -> Tensor<B, D> {
    eval::<K, B, D>(KernelFn::Value, args)
}

/// `∂K/∂a_arg` at `args`, broadcast like [`call`]: the factor a kernel's
/// input gradient is the output gradient times.
pub fn partial<K: Elementwise, B: Backend, const D: usize>(arg: usize, args: &[Arg<'_, B, D>]) -> Tensor<B, D> {
    assert!(arg < K::ARGS.len(), "{}: no argument {arg} (it has {})", K::NAME, K::ARGS.len());
    eval::<K, B, D>(KernelFn::Partial(arg), args)
}

/// [`call`] summed over the last dim (kept with size 1), or with `mean`
/// averaged, in one pass where the backend fuses it: a fused group with a
/// reduction after it never holds the group's whole output.
pub fn call_sum<K: Elementwise, B: Backend, const D: usize>(args: &[Arg<'_, B, D>], mean: bool) -> Tensor<B, D> {
    eval_with::<K, B, D>(KernelFn::Value, args, Some(Rows::Sum { mean }))
}

/// The softmax (with `log`, the log-softmax) over the last dim of
/// [`call`], in one pass per row where the backend fuses it: a fused
/// group with a softmax after it never holds the group's output.
pub fn call_softmax<K: Elementwise, B: Backend, const D: usize>(args: &[Arg<'_, B, D>], log: bool) -> Tensor<B, D> {
    eval_with::<K, B, D>(KernelFn::Value, args, Some(Rows::Softmax { log }))
}

/// A LayerNorm's or RMSNorm's parameters, for [`call_norm`]: the optional
/// weight and bias (`[n]`, the last dim's size), `eps`, and whether it
/// centres (LayerNorm) or only scales by the root mean square (RMSNorm).
#[derive(Debug)]
pub struct Norm<'a, B: Backend> {
    /// The per-feature scale, if any.
    pub weight: Option<&'a Tensor<B, 1>>,
    /// The per-feature shift, if any.
    pub bias: Option<&'a Tensor<B, 1>>,
    /// Added to the variance (or mean square).
    pub eps: f64,
    /// LayerNorm (subtract the mean) rather than RMSNorm.
    pub centre: bool,
}

/// The normalisation over the last dim of [`call`] (as
/// [`Tensor::norm_with_stats`] makes it), in one pass per row where the
/// backend fuses it: a fused group with a LayerNorm or RMSNorm after it.
/// Returns the output, each row's statistics (`[.., 2]`) and, with `keep`,
/// the kernel's values, which the norm's backward reads; without, they are
/// never written. Panics, naming the kernel, as [`call`] does, and when a
/// weight or bias is not `[n]` of the kernel's dtype.
pub fn call_norm<K: Elementwise, B: Backend, const D: usize>(
    args: &[Arg<'_, B, D>],
    norm: Norm<'_, B>,
    keep: bool,
) -> (Tensor<B, D>, Tensor<B, D>, Option<Tensor<B, D>>) {
    with_inputs::<K, B, D, _>(args, |inputs, shape, dtype| {
        let name = K::NAME;
        assert!(D > 0, "{name}: a normalisation over the last dim needs a dim");
        let n = shape[D - 1];
        assert!(n > 0, "{name}: a normalisation over an empty last dim ({shape:?})");
        for (what, p) in [("weight", norm.weight), ("bias", norm.bias)] {
            if let Some(p) = p {
                assert!(
                    p.shape() == [n] && p.dtype() == dtype,
                    "{name}: the norm's {what} is {:?} {}, but the rows are {n} values of {dtype}",
                    p.shape(),
                    p.dtype()
                );
            }
        }
        let row = crate::backend::RowNorm {
            weight: norm.weight.map(Tensor::storage),
            bias: norm.bias.map(Tensor::storage),
            eps: norm.eps,
            centre: norm.centre,
        };
        let (y, stats, x) = B::elementwise_norm::<K>(KernelFn::Value, inputs, &shape, dtype, row, keep);
        (Tensor::wrap(y), Tensor::wrap(stats), x.map(Tensor::wrap))
    })
}

impl Builtin {
    /// `f` of the kernel at `args`, broadcast as [`call`] does.
    pub fn eval<B: Backend, const D: usize>(self, f: KernelFn, args: &[Arg<'_, B, D>]) -> Tensor<B, D> {
        struct Eval<'a, 'b, B: Backend, const D: usize>(KernelFn, &'a [Arg<'b, B, D>]);
        impl<B: Backend, const D: usize> BuiltinVisitor for Eval<'_, '_, B, D> {
            type Output = Tensor<B, D>;
            fn visit<K: Elementwise>(self) -> Tensor<B, D> {
                eval::<K, B, D>(self.0, self.1)
            }
        }
        self.visit(Eval(f, args))
    }
}

/// `f` of `K` at `args`: what [`call`] and [`partial`] run.
#[doc(hidden)]
pub fn eval<K: Elementwise, B: Backend, const D: usize>(f: KernelFn, args: &[Arg<'_, B, D>]) -> Tensor<B, D> {
    eval_with::<K, B, D>(f, args, None)
}

/// What runs over each row of a kernel's output in its pass.
#[derive(Clone, Copy)]
enum Rows {
    Sum { mean: bool },
    Softmax { log: bool },
}

/// `f` of `K` at `args`, or with `rows` that reduction of each row of it
/// (over the last dim).
fn eval_with<K: Elementwise, B: Backend, const D: usize>(
    f: KernelFn,
    args: &[Arg<'_, B, D>],
    rows: Option<Rows>,
) -> Tensor<B, D> {
    with_inputs::<K, B, D, _>(args, |inputs, shape, dtype| {
        assert!(D > 0 || rows.is_none(), "{}: a reduction over the last dim needs a dim", K::NAME);
        Tensor::wrap(match rows {
            None => B::elementwise::<K>(f, inputs, &shape, dtype),
            Some(Rows::Sum { mean }) => {
                let n = shape[D - 1];
                let scale = if mean { 1.0 / n as f64 } else { 1.0 };
                B::elementwise_sum::<K>(f, inputs, &shape, dtype, scale)
            }
            Some(Rows::Softmax { log }) => B::elementwise_softmax::<K>(f, inputs, &shape, dtype, log),
        })
    })
}

/// Checks `args` against `K` and runs `body` on them as backend arguments,
/// the tensors broadcast to the output's shape, with that shape and the
/// dtype.
fn with_inputs<K: Elementwise, B: Backend, const D: usize, R>(
    args: &[Arg<'_, B, D>],
    body: impl FnOnce(&[KernelArg<B::Storage>], [usize; D], DType) -> R,
) -> R {
    let name = K::NAME;
    assert_eq!(args.len(), K::ARGS.len(), "{name}: {} arguments for {} parameters", args.len(), K::ARGS.len());
    assert!(args.len() <= MAX_ARGS, "{name}: more than {MAX_ARGS} arguments");
    fn tensor<'a, B: Backend, const D: usize>(a: &Arg<'a, B, D>) -> Option<&'a Tensor<B, D>> {
        match a {
            Arg::Tensor(t) => Some(*t),
            Arg::Number(_) | Arg::Uniform(_) => None,
        }
    }
    let Some(first) = args.iter().find_map(tensor) else {
        panic!("{name}: at least one argument must be a tensor");
    };
    let dtype = first.dtype();
    let mut shape = first.shape();
    for (arg, t) in K::ARGS.iter().zip(args).filter_map(|(n, a)| Some((n, tensor(a)?))) {
        assert!(
            t.dtype() == dtype && dtype.is_float(),
            "{name}: argument `{arg}` is {}, but kernels take tensors of one float dtype ({dtype} first)",
            t.dtype()
        );
        crate::tensor::check_same_device::<B>(name, &[first.storage(), t.storage()]);
        let Some(joint) = broadcast_shapes(&shape, &t.shape()) else {
            let all: Vec<String> =
                K::ARGS.iter().zip(args).filter_map(|(n, a)| Some(format!("`{n}` {:?}", tensor(a)?.shape()))).collect();
            panic!("{name}: argument shapes do not broadcast: {}", all.join(", "))
        };
        shape.copy_from_slice(&joint);
    }
    let n: usize = shape.iter().product();
    assert!(
        !args.iter().any(|a| matches!(a, Arg::Uniform(_))) || n <= 1 << 32,
        "{name}: noise is drawn for at most 2^32 elements, not {n} ({shape:?})"
    );
    // A fixed array rather than a Vec: a training step calls kernels and
    // must not allocate.
    let inputs: [KernelArg<B::Storage>; MAX_ARGS] = std::array::from_fn(|i| match args.get(i) {
        Some(Arg::Tensor(t)) => KernelArg::Tensor(B::kernel_operand(t.storage(), &shape)),
        Some(Arg::Number(v)) => KernelArg::Number(*v),
        Some(Arg::Uniform(seed)) => KernelArg::Uniform(*seed),
        None => KernelArg::Number(0.0),
    });
    body(&inputs[..args.len()], shape, dtype)
}

/// Runs general kernel `K` over `groups` workgroups on the backend of its
/// buffers: what a `kernel!`'s generated `launch` calls. Panics, naming
/// the kernel, unless the arguments match its parameters, every buffer is
/// an f32 tensor, and all live on one device.
pub fn launch<K: Workgroups, B: Backend>(
    groups: u32,
    buffers: &mut [LaunchBuffer<'_, B::Storage>],
    scalars: &[ScalarArg],
) {
    check_launch::<K, _>(buffers, scalars);
    if let Some(first) = buffers.first() {
        for (i, b) in buffers.iter().enumerate() {
            let dtype = B::dtype(b.storage());
            assert!(dtype == DType::F32, "{}: buffer {i} is {dtype}; kernels take f32 tensors", K::NAME);
            crate::tensor::check_same_device::<B>(K::NAME, &[first.storage(), b.storage()]);
        }
    }
    B::launch::<K>(groups, buffers, scalars);
}
