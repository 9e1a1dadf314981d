//! What a kernel is to a backend, below the backend traits: the
//! [`Elementwise`] trait `kernel!` implements (its loops, partials, WGSL
//! and ONNX forms), the float types kernels compute in, a general
//! kernel's [`Workgroups`] and its launch arguments, and the kernels the
//! runtime writes by hand ([`Builtin`]). Running a kernel on tensors is
//! [`crate::kernel`]'s.

use std::fmt;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

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
    /// Natural logarithm (vectorisable in f32, libm's in f64).
    fn log(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `1 / sqrt(x)`.
    fn rsqrt(self) -> Self;
    /// Hyperbolic tangent (vectorisable in f32, libm's in f64).
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
    ($t:ty, $exp:expr, $erf:expr, $tanh:expr, $log:expr) => {
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
                $log(self)
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
                $tanh(self)
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

kernel_float!(f32, crate::math::exp_f32, crate::math::erf_f32, crate::math::tanh_f32, crate::math::log_f32);
kernel_float!(f64, f64::exp, libm::erf, f64::tanh, f64::ln);

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

/// The most arguments a kernel takes (`kernel!` enforces it, with its own
/// copy of this number: a proc-macro crate cannot depend on the runtime).
pub const MAX_ARGS: usize = 8;
