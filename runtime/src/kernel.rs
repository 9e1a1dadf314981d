//! Elementwise kernels written once with `kernel!` and run on every backend.
//!
//! `kernel!` turns a small Rust function over scalars into a type that
//! implements [`Elementwise`]: the function as a loop body for the CPU, as
//! WGSL for the GPU (validated by naga when the kernel compiles), and its
//! partial derivative with respect to each argument, derived symbolically.
//! The generated function takes tensors and scalars in any mix, broadcasts
//! the tensors, and is differentiable under [`Autodiff`](crate::autodiff::Autodiff).

use std::fmt;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::Tensor;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::shape::broadcast_shapes;

mod builtin;
mod launch;
pub use builtin::*;
pub use launch::*;

/// The float types kernels compute in, with the intrinsics `kernel!`
/// offers. Kernels are written in `f32`; the CPU also runs them in `f64`
/// (gradient checks do).
pub trait KernelFloat:
    Copy
    + PartialOrd
    + fmt::Debug
    + Send
    + Sync
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
    + std::ops::Neg<Output = Self>
    + 'static
{
    /// The value of an `f64` literal or argument.
    fn lit(v: f64) -> Self;
    /// `e^x`, vectorisable.
    fn exp(self) -> Self;
    /// `2^x`.
    fn exp2(self) -> Self;
    /// Natural logarithm.
    fn log(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `1 / sqrt(x)`.
    fn rsqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// `x^y`.
    fn pow(self, y: Self) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// `x * y + z`.
    fn fma(self, y: Self, z: Self) -> Self;
    /// The error function (vectorisable in f32, libm's in f64).
    fn erf(self) -> Self;
    /// The smaller of two; NaN if either is (as `torch.minimum`; the
    /// generated WGSL keeps NaN the same way).
    fn min(self, y: Self) -> Self {
        // `y != y` holds for NaN only; a NaN `self` fails `y < self`.
        #[allow(clippy::eq_op)]
        if y < self || y != y { y } else { self }
    }
    /// The larger of two; NaN if either is.
    fn max(self, y: Self) -> Self {
        #[allow(clippy::eq_op)]
        if y > self || y != y { y } else { self }
    }
    /// `x % y` as WGSL defines it for floats, `x - y * trunc(x / y)`
    /// (so `3 % inf` is NaN, where C's `fmod` gives 3), which every
    /// adapter computes too.
    fn wgsl_rem(self, y: Self) -> Self {
        let q = self / y;
        let zero = Self::lit(0.0);
        self - y * if q < zero { q.ceil() } else { q.floor() }
    }
    /// `min(max(x, lo), hi)`: NaN stays NaN.
    fn clamp(self, lo: Self, hi: Self) -> Self {
        self.max(lo).min(hi)
    }
    /// `1` for positive, `-1` for negative, `0` for zero.
    fn sign(self) -> Self {
        let zero = Self::lit(0.0);
        if self > zero {
            Self::lit(1.0)
        } else if self < zero {
            Self::lit(-1.0)
        } else {
            zero
        }
    }
}

macro_rules! kernel_float {
    ($t:ty, $exp:expr, $erf:expr) => {
        impl KernelFloat for $t {
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn lit(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            #[inline(always)]
            fn log(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                1.0 / <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn pow(self, y: Self) -> Self {
                <$t>::powf(self, y)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn fma(self, y: Self, z: Self) -> Self {
                self * y + z
            }
        }
    };
}

kernel_float!(f32, crate::math::exp_f32, crate::math::erf_f32);
kernel_float!(f64, f64::exp, libm::erf);

/// The element types of a kernel's values in ONNX (`TensorProto`'s
/// codes): what [`OnnxExpr::constant`] and [`OnnxExpr::cast`] make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnnxType {
    /// `f32`.
    Float = 1,
    /// `i32`.
    Int32 = 6,
    /// `u32`.
    Uint32 = 12,
    /// `bool`.
    Bool = 9,
}

/// What a kernel's ONNX form is written with: operators of the default
/// domain over tensors that broadcast (numpy's rules), as `blaze::export`'s
/// graph builds them. `kernel!` prints each kernel's expression through it
/// ([`Elementwise::onnx`]), so a model that calls a kernel exports.
pub trait OnnxExpr {
    /// A value of the graph.
    type Value: Clone;
    /// Operator `op` of `args` with integer attributes `attrs`.
    fn op_with(&mut self, op: &'static str, args: &[&Self::Value], attrs: &[(&'static str, i64)]) -> Self::Value;
    /// Operator `op` of `args`.
    fn op(&mut self, op: &'static str, args: &[&Self::Value]) -> Self::Value {
        self.op_with(op, args, &[])
    }
    /// A scalar constant of type `ty` (`value` is exact for every
    /// constant a kernel holds).
    fn constant(&mut self, value: f64, ty: OnnxType) -> Self::Value;
    /// `x` converted to `ty`.
    fn cast(&mut self, x: &Self::Value, ty: OnnxType) -> Self::Value;
}

/// An elementwise kernel `f(a_0, .., a_{ARITY-1})`, as `kernel!` generates
/// it. The CPU runs [`Elementwise::map`]; the GPU runs [`Elementwise::WGSL`].
pub trait Elementwise: Copy + fmt::Debug + Send + Sync + 'static {
    /// The kernel's name, for messages.
    const NAME: &'static str;
    /// The names of its arguments, in order.
    const ARGS: &'static [&'static str];
    /// The WGSL of `f` as a function of `f32` scalars named like the
    /// kernel, and of each partial derivative (`NAME_d_ARG`), validated by
    /// naga when the kernel compiled.
    const WGSL: &'static str;
    /// `out[i] = f(args[0][i], ..)`; every slice has `out`'s length, and
    /// every slot of `out` is written. Mark implementations (and
    /// `map_partial`) `#[inline(always)]`: a backend calls them inside a
    /// function compiled for the widest vector ISA the CPU has, and only an
    /// inlined loop is vectorised for it.
    fn map<T: KernelFloat>(args: &[&[T]], out: &mut [MaybeUninit<T>]);
    /// `out[i] = ∂f/∂a_arg (args[0][i], ..)`, every slot written.
    fn map_partial<T: KernelFloat>(arg: usize, args: &[&[T]], out: &mut [MaybeUninit<T>]);
    /// The WGSL of the kernels this one calls (a fused group calling a
    /// `kernel!` function): a device compiles them before [`Self::WGSL`].
    const DEPS: &'static [&'static str] = &[];

    /// The kernel for a backend whose kernels are compiled Rust rather
    /// than WGSL: a table of that backend's own type, which it downcasts.
    /// `kernel!` fills it with the CubeCL backend's `#[cube]` launcher
    /// when the `blaze` facade's `cubecl` feature is on; `None` otherwise.
    const DEVICE: Option<&'static (dyn std::any::Any + Send + Sync)> = None;

    /// `f(args[0], ..)` as ONNX operators: `args` are the kernel's
    /// arguments in order (float tensors that broadcast).
    fn onnx<G: OnnxExpr>(g: &mut G, args: &[G::Value]) -> G::Value;
    /// `∂f/∂a_arg (args[0], ..)` as ONNX operators.
    fn onnx_partial<G: OnnxExpr>(g: &mut G, arg: usize, args: &[G::Value]) -> G::Value;

    /// `f(args[0], ..)` at one point: how a fused group that calls this
    /// kernel evaluates it inside its own loop.
    #[inline(always)]
    fn at<T: KernelFloat>(args: &[T]) -> T {
        at_point::<T>(args, |a, o| Self::map(a, o))
    }

    /// `∂f/∂a_arg (args[0], ..)` at one point.
    #[inline(always)]
    fn partial_at<T: KernelFloat>(arg: usize, args: &[T]) -> T {
        at_point::<T>(args, |a, o| Self::map_partial(arg, a, o))
    }
}

/// Whether two names are equal, in a const context: a fused group checks
/// while compiling that a `kernel!` function it calls goes by its own name
/// (the name its WGSL function has).
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A kernel's loop `run` over one element: the arguments as slices of one.
#[inline(always)]
fn at_point<T: KernelFloat>(args: &[T], run: impl FnOnce(&[&[T]], &mut [MaybeUninit<T>])) -> T {
    let slices: [&[T]; MAX_ARGS] = std::array::from_fn(|i| args.get(i).map_or(&[][..], std::slice::from_ref));
    let mut out = [MaybeUninit::uninit()];
    run(&slices[..args.len()], &mut out);
    // SAFETY: the loop writes every slot of `out` (the `map` contract).
    unsafe { out[0].assume_init() }
}

/// One argument of a kernel call: a tensor (broadcast against the others),
/// a scalar, or noise drawn where the kernel runs.
#[derive(Clone, Debug)]
pub enum KernelArg<S> {
    /// A tensor, already broadcast to the output shape.
    Tensor(S),
    /// The same value at every element.
    Number(f64),
    /// At each element, a number uniform in `[0, 1)` drawn from this seed
    /// and the element's index by [`crate::rng::counter_uniform`]: the
    /// backend draws it inside the kernel's pass, so it is never stored,
    /// and the same seed draws the same values again (a dropout's backward
    /// redraws its forward's mask).
    Uniform(u64),
}

impl<S> KernelArg<S> {
    /// The argument with its tensor, if it is one, mapped by `f`.
    pub fn map<R>(&self, f: impl FnOnce(&S) -> R) -> KernelArg<R> {
        match self {
            KernelArg::Tensor(t) => KernelArg::Tensor(f(t)),
            KernelArg::Number(v) => KernelArg::Number(*v),
            KernelArg::Uniform(seed) => KernelArg::Uniform(*seed),
        }
    }

    /// The tensor, if the argument is one.
    pub fn tensor(&self) -> Option<&S> {
        match self {
            KernelArg::Tensor(t) => Some(t),
            KernelArg::Number(_) | KernelArg::Uniform(_) => None,
        }
    }
}

/// Which function of a kernel to evaluate: the kernel or one partial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelFn {
    /// `f` itself.
    Value,
    /// `∂f/∂a_i`.
    Partial(usize),
}

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

/// The most arguments a kernel takes (`kernel!` enforces it, with its own
/// copy of this number: a proc-macro crate cannot depend on the runtime).
pub const MAX_ARGS: usize = 8;

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

/// `f` of `K` at `args`: what [`call`] and [`partial`] run.
pub(crate) fn eval<K: Elementwise, B: Backend, const D: usize>(f: KernelFn, args: &[Arg<'_, B, D>]) -> Tensor<B, D> {
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
