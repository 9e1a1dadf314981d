//! Mixed precision: the precision the products of f32 tensors compute in.
//!
//! Under [`Precision::Bf16`] (or [`Precision::F16`]) a matrix product, a
//! linear layer or a convolution of f32 tensors, forward and backward,
//! rounds its operands to 16 bits and sums their products in f32; its
//! result is f32. Every other op (reductions, softmax, norms, losses, the
//! optimizer and its master weights) keeps computing in f32, so
//! parameters, activations and checkpoints stay f32, as under
//! `torch.autocast` on the CPU. A backend runs the rounded product on its
//! 16-bit units where it has them (the CPU: AMX or AVX512-BF16, after one
//! rounding pass over each operand; CubeCL: f16 with `SHADER_F16`), else
//! rounds and multiplies in f32, which gives the same products (a product
//! of two bf16 or two f16 is exact in f32).
//!
//! A product shallower than 32 (its summed dim; an attention head of 16
//! dims, a convolution over one channel's 3 x 3 window) stays f32 under
//! every policy: too little work per value for the rounding to pay
//! (`blaze_spec::precision`).
//!
//! The policy is a scope on the current thread, as `torch.autocast` is:
//! [`autocast`] runs a closure under it, and what it calls, the tape's
//! backward included ([`crate::autodiff`] records each product's
//! precision), follows it. `#[model(precision = bf16)]` sets it for the
//! passes it generates and decides per product, at compile time, which
//! run in 16 bits; `FitConfig::precision` sets it for a training run.

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;

use crate::{Backend, Conv2dOptions, DType};

/// The precision products of f32 tensors compute in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f32 operands and sums: no rounding.
    #[default]
    F32,
    /// Operands rounded to bf16 (8 significant bits, f32's range), f32 sums.
    Bf16,
    /// Operands rounded to f16 (11 significant bits, values up to 65504),
    /// f32 sums. Gradients below f16's range vanish: train with loss
    /// scaling (`FitConfig::precision = F16` does).
    F16,
}

impl Precision {
    /// Every precision, in the order of [`Precision::name`]'s table.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::Bf16, Precision::F16];

    /// The dtype operands round to; `None` for f32.
    pub fn rounds_to(self) -> Option<DType> {
        match self {
            Precision::F32 => None,
            Precision::Bf16 => Some(DType::BF16),
            Precision::F16 => Some(DType::F16),
        }
    }

    /// The precision whose operands round to `dtype` (bf16 or f16).
    pub fn rounding_to(dtype: DType) -> Precision {
        match dtype {
            DType::BF16 => Precision::Bf16,
            DType::F16 => Precision::F16,
            other => panic!("matmul_rounded: operands round to bf16 or f16, not {other}"),
        }
    }

    /// The name `--precision` and `#[model(precision = ..)]` take.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// The precision products run in on this thread now.
    pub fn current() -> Precision {
        CURRENT.get()
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Precision::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<_> = Precision::ALL.iter().map(|p| p.name()).collect();
            format!("unknown precision `{s}`: expected one of {}", names.join(", "))
        })
    }
}

/// `a @ b` of storages (as [`crate::Primitives::matmul`]) in the
/// thread's precision: f32 operands under a 16-bit policy go to
/// [`crate::Composites::matmul_rounded`]. Every product of the runtime,
/// the layers' and the adjoints', comes here.
///
/// A product shallower than [`blaze_spec::precision::MIN_ROUNDED_DEPTH`]
/// stays f32 (`#[model]` lists which of a model's do).
pub fn matmul<B: Backend>(a: &B::Storage, b: &B::Storage) -> B::Storage {
    match rounding::<B>(a, B::shape(a).last().copied().unwrap_or(0)) {
        Some(dtype) => B::matmul_rounded(a, b, dtype),
        None => B::matmul(a, b),
    }
}

/// The dtype a product of depth `depth` of `operand`'s dtype rounds to
/// now: none for f32 products, shallow ones, and non-f32 operands.
fn rounding<B: Backend>(operand: &B::Storage, depth: usize) -> Option<DType> {
    Precision::current().rounds_to().filter(|_| B::dtype(operand) == DType::F32 && blaze_spec::precision::rounds(depth))
}

/// [`crate::Primitives::conv2d`] in the thread's precision, as [`matmul`]:
/// its products' depth is the input channels of a group times the
/// window.
pub fn conv2d<B: Backend>(x: &B::Storage, w: &B::Storage, bias: Option<&B::Storage>, o: &Conv2dOptions) -> B::Storage {
    let [_, cg, kh, kw]: [usize; 4] = B::shape(w).try_into().expect("conv2d: a rank-4 weight");
    match rounding::<B>(x, cg * kh * kw) {
        Some(dtype) => B::conv2d_rounded(x, w, bias, o, dtype),
        None => B::conv2d(x, w, bias, o),
    }
}

/// [`crate::Primitives::conv2d_input_grad`] in the thread's precision: its
/// products' depth is the output channels of a group.
pub fn conv2d_input_grad<B: Backend>(
    g: &B::Storage,
    w: &B::Storage,
    input: [usize; 4],
    o: &Conv2dOptions,
) -> B::Storage {
    let out_channels = B::shape(w)[0];
    match rounding::<B>(g, out_channels / o.groups.max(1)) {
        Some(dtype) => B::conv2d_input_grad_rounded(g, w, input, o, dtype),
        None => B::conv2d_input_grad(g, w, input, o),
    }
}

/// [`crate::Primitives::conv2d_weight_grad`] in the thread's precision:
/// its products' depth is the output plane.
pub fn conv2d_weight_grad<B: Backend>(x: &B::Storage, g: &B::Storage, w: [usize; 4], o: &Conv2dOptions) -> B::Storage {
    let plane = B::shape(g)[2] * B::shape(g)[3];
    match rounding::<B>(x, plane) {
        Some(dtype) => B::conv2d_weight_grad_rounded(x, g, w, o, dtype),
        None => B::conv2d_weight_grad(x, g, w, o),
    }
}

thread_local! {
    static CURRENT: Cell<Precision> = const { Cell::new(Precision::F32) };
}

/// Runs `f` with products of f32 tensors in `precision` on this thread,
/// then restores the precision before (also when `f` panics).
pub fn autocast<R>(precision: Precision, f: impl FnOnce() -> R) -> R {
    /// Puts the outer precision back when dropped.
    struct Restore(Precision);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.set(self.0);
        }
    }
    let _restore = Restore(CURRENT.replace(precision));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autocast_nests_and_restores() {
        assert_eq!(Precision::current(), Precision::F32);
        autocast(Precision::Bf16, || {
            assert_eq!(Precision::current(), Precision::Bf16);
            autocast(Precision::F32, || assert_eq!(Precision::current(), Precision::F32));
            assert_eq!(Precision::current(), Precision::Bf16);
            let caught = std::panic::catch_unwind(|| autocast(Precision::F16, || panic!("inside")));
            assert!(caught.is_err());
            assert_eq!(Precision::current(), Precision::Bf16);
        });
        assert_eq!(Precision::current(), Precision::F32);
    }

    #[test]
    fn names_round_trip() {
        for p in Precision::ALL {
            assert_eq!(p.name().parse::<Precision>(), Ok(p));
        }
        let err = "fp8".parse::<Precision>().unwrap_err();
        assert!(err.contains("`fp8`") && err.contains("f32, bf16, f16"), "{err}");
    }
}
