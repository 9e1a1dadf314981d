//! Elementwise arithmetic, comparisons, selection and matmul, with operator
//! overloads for `+ - * /` between tensors and with scalars.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{Tensor, check_same_device, fmt_shape};
use crate::backend::{Backend, BinaryOp, CmpOp, UnaryOp};
use crate::dtype::DType;
use crate::shape::broadcast_shapes;
use blaze_spec::rules;

/// Panics unless `a` and `b` broadcast; names the op and both shapes.
fn check_broadcast(op: &str, a: &[usize], b: &[usize]) {
    if let Err(e) = rules::broadcast(a, b) {
        panic!("{}", e.message(op, &[&fmt_shape(a), &fmt_shape(b)], usize::to_string));
    }
}

pub(super) fn check_same_dtype(op: &str, a: DType, b: DType) {
    assert!(a == b, "{op}: dtypes {a} and {b} differ (convert one with .to_dtype())");
}

impl<B: Backend, const D: usize> Tensor<B, D> {
    /// Applies a unary primitive after checking the dtype.
    pub fn unary(&self, op: UnaryOp) -> Self {
        let dtype = self.dtype();
        assert!(op.supports(dtype), "{}: not defined for dtype {dtype}", op.name());
        Self::wrap(B::unary(op, &self.storage))
    }

    /// Applies a binary primitive with broadcasting after checking both operands.
    pub fn binary(&self, op: BinaryOp, rhs: &Self) -> Self {
        let (da, db) = (self.dtype(), rhs.dtype());
        check_same_dtype(op.name(), da, db);
        assert!(op.supports(da), "{}: not defined for dtype {da}", op.name());
        check_broadcast(op.name(), &self.shape(), &rhs.shape());
        check_same_device::<B>(op.name(), &[&self.storage, &rhs.storage]);
        Self::wrap(B::binary(op, &self.storage, &rhs.storage))
    }

    /// Applies a binary primitive with a scalar right operand.
    pub fn binary_scalar(&self, op: BinaryOp, s: f64) -> Self {
        let dtype = self.dtype();
        assert!(op.supports(dtype), "{}: not defined for dtype {dtype}", op.name());
        Self::wrap(B::binary_scalar(op, &self.storage, s))
    }

    /// `self + rhs` with broadcasting.
    pub fn add(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Add, rhs)
    }
    /// `self - rhs` with broadcasting.
    pub fn sub(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Sub, rhs)
    }
    /// `self * rhs` with broadcasting.
    pub fn mul(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Mul, rhs)
    }
    /// `self / rhs` with broadcasting (i64 rounds toward zero).
    pub fn div(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Div, rhs)
    }
    /// `self ^ rhs` elementwise with broadcasting.
    pub fn pow(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Pow, rhs)
    }
    /// Elementwise maximum with broadcasting; NaN wins.
    pub fn maximum(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Maximum, rhs)
    }
    /// Elementwise minimum with broadcasting; NaN wins.
    pub fn minimum(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Minimum, rhs)
    }

    /// `act(self + bias)`, the bias (`[self.shape[dim]]`) added along `dim`:
    /// how a layer applies its bias and the activation after it, in one
    /// pass where the backend fuses them.
    pub fn bias_act(self, bias: Option<&Tensor<B, 1>>, dim: usize, act: Option<UnaryOp>) -> Self {
        self.check_bias("bias_act", bias, dim);
        Self::wrap(B::bias_act(self.storage, bias.map(|b| &b.storage), dim, act))
    }

    /// `act(self + bias) + residual`: [`Tensor::bias_act`] and then a
    /// residual connection of `self`'s shape, in the same pass where the
    /// backend fuses them (a block's `x + fc2(h)`).
    pub fn bias_act_add(self, bias: Option<&Tensor<B, 1>>, dim: usize, act: Option<UnaryOp>, residual: &Self) -> Self {
        self.check_bias("bias_act_add", bias, dim);
        assert!(
            residual.shape() == self.shape() && residual.dtype() == self.dtype(),
            "bias_act_add: residual {} ({}) for {} ({})",
            fmt_shape(&residual.shape()),
            residual.dtype(),
            fmt_shape(&self.shape()),
            self.dtype()
        );
        check_same_device::<B>("bias_act_add", &[&self.storage, &residual.storage]);
        Self::wrap(B::bias_act_add(self.storage, bias.map(|b| &b.storage), dim, act, &residual.storage))
    }

    /// `op`'s checks of a bias for dim `dim` of `self`.
    fn check_bias(&self, op: &str, bias: Option<&Tensor<B, 1>>, dim: usize) {
        let shape = self.shape();
        self.assert_float(op);
        assert!(dim < D, "{op}: dim {dim} out of range for shape {}", fmt_shape(&shape));
        if let Some(b) = bias {
            assert!(
                b.shape() == [shape[dim]] && b.dtype() == self.dtype(),
                "{op}: bias {} ({}) for dim {dim} of {} ({})",
                fmt_shape(&b.shape()),
                b.dtype(),
                fmt_shape(&shape),
                self.dtype()
            );
            check_same_device::<B>(op, &[&self.storage, &b.storage]);
        }
    }

    /// `self = a * self + b * x` in place (BLAS `axpby`): how optimizers
    /// update parameters. The buffer is reused when no other tensor shares
    /// it (PyTorch's `p.mul_(a).add_(x, alpha=b)`).
    pub fn axpby_(&mut self, a: f64, x: &Self, b: f64) {
        axpby_storage::<B>(&mut self.storage, a, &x.storage, b);
    }

    /// One Adam or AdamW update of this parameter in place, with its
    /// moments `m` and `v` (flat, as many values) and its gradient `g` (see
    /// [`AdamStep`](crate::AdamStep)); what `optim::Adam` runs for each
    /// parameter. Panics unless all are of one float dtype, device and
    /// element count.
    pub fn adam_(&mut self, m: &mut Tensor<B, 1>, v: &mut Tensor<B, 1>, g: &Self, o: crate::AdamStep) {
        adam_storage::<B>(&mut self.storage, m, v, &g.storage, o);
    }

    /// `self + s`.
    pub fn add_scalar(&self, s: f64) -> Self {
        self.binary_scalar(BinaryOp::Add, s)
    }
    /// `self - s`.
    pub fn sub_scalar(&self, s: f64) -> Self {
        self.binary_scalar(BinaryOp::Sub, s)
    }
    /// `self * s`.
    pub fn mul_scalar(&self, s: f64) -> Self {
        self.binary_scalar(BinaryOp::Mul, s)
    }
    /// `self / s`.
    pub fn div_scalar(&self, s: f64) -> Self {
        self.binary_scalar(BinaryOp::Div, s)
    }
    /// `s - self`.
    pub fn rsub_scalar(&self, s: f64) -> Self {
        self.neg().add_scalar(s)
    }
    /// `s / self`.
    pub fn rdiv_scalar(&self, s: f64) -> Self {
        if self.dtype().is_float() { self.recip().mul_scalar(s) } else { self.full_like(s).div(self) }
    }
    /// `self ^ exponent`, as `torch.pow(x, float)`.
    pub fn powf(&self, exponent: f64) -> Self {
        self.binary_scalar(BinaryOp::Pow, exponent)
    }
    /// Clamps into `[min, max]`, as `torch.clamp`.
    pub fn clamp(&self, min: f64, max: f64) -> Self {
        assert!(min <= max, "clamp: min {min} is greater than max {max}");
        self.clamp_min(min).clamp_max(max)
    }
    /// `max(self, min)`.
    pub fn clamp_min(&self, min: f64) -> Self {
        self.binary_scalar(BinaryOp::Maximum, min)
    }
    /// `min(self, max)`.
    pub fn clamp_max(&self, max: f64) -> Self {
        self.binary_scalar(BinaryOp::Minimum, max)
    }

    // The elementwise ops of one tensor (`neg`, `exp`, `sigmoid`, ...) are
    // generated from the op table, in `crate::unary`.

    /// `self * self`.
    pub fn square(&self) -> Self {
        self.mul(self)
    }

    // ---- comparisons and masks -----------------------------------------

    /// Compares with broadcasting, elementwise, as a bool tensor (the op
    /// table's comparison `op`).
    pub fn compare(&self, op: CmpOp, rhs: &Self) -> Self {
        check_same_dtype(op.name(), self.dtype(), rhs.dtype());
        check_broadcast(op.name(), &self.shape(), &rhs.shape());
        check_same_device::<B>(op.name(), &[&self.storage, &rhs.storage]);
        Self::wrap(B::compare(op, &self.storage, &rhs.storage))
    }

    /// Compares each element with `s`, as a bool tensor.
    pub fn compare_scalar(&self, op: CmpOp, s: f64) -> Self {
        Self::wrap(B::compare_scalar(op, &self.storage, s))
    }

    /// `self == rhs` as a bool tensor.
    pub fn eq(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Eq, rhs)
    }
    /// `self != rhs` as a bool tensor.
    pub fn ne(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Ne, rhs)
    }
    /// `self < rhs` as a bool tensor.
    pub fn lt(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Lt, rhs)
    }
    /// `self <= rhs` as a bool tensor.
    pub fn le(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Le, rhs)
    }
    /// `self > rhs` as a bool tensor.
    pub fn gt(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Gt, rhs)
    }
    /// `self >= rhs` as a bool tensor.
    pub fn ge(&self, rhs: &Self) -> Self {
        self.compare(CmpOp::Ge, rhs)
    }
    /// `self == s` as a bool tensor.
    pub fn eq_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Eq, s)
    }
    /// `self != s` as a bool tensor.
    pub fn ne_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Ne, s)
    }
    /// `self < s` as a bool tensor.
    pub fn lt_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Lt, s)
    }
    /// `self <= s` as a bool tensor.
    pub fn le_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Le, s)
    }
    /// `self > s` as a bool tensor.
    pub fn gt_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Gt, s)
    }
    /// `self >= s` as a bool tensor.
    pub fn ge_scalar(&self, s: f64) -> Self {
        self.compare_scalar(CmpOp::Ge, s)
    }

    /// Logical and of bool tensors, with broadcasting.
    pub fn logical_and(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::And, rhs)
    }
    /// Logical or of bool tensors, with broadcasting.
    pub fn logical_or(&self, rhs: &Self) -> Self {
        self.binary(BinaryOp::Or, rhs)
    }

    /// `cond ? a : b` elementwise with broadcasting, as `torch.where`.
    pub fn where_cond(cond: &Self, a: &Self, b: &Self) -> Self {
        assert!(cond.dtype() == DType::Bool, "where_cond: the condition has dtype {}, not bool", cond.dtype());
        check_same_dtype("where_cond", a.dtype(), b.dtype());
        check_broadcast("where_cond", &a.shape(), &b.shape());
        let ab = broadcast_shapes(&a.shape(), &b.shape()).unwrap_or_default();
        check_broadcast("where_cond", &cond.shape(), &ab);
        check_same_device::<B>("where_cond", &[&cond.storage, &a.storage, &b.storage]);
        Self::wrap(B::where_cond(&cond.storage, &a.storage, &b.storage))
    }

    /// Replaces the entries where `mask` is true by `value`, as
    /// `torch.Tensor.masked_fill`; `mask` broadcasts to this tensor's shape.
    pub fn masked_fill(&self, mask: &Self, value: f64) -> Self {
        let shape = self.shape();
        let mshape = mask.shape();
        let fits = broadcast_shapes(&mshape, &shape).is_some_and(|s| *s == shape);
        assert!(fits, "masked_fill: mask {} does not broadcast to {}", fmt_shape(&mshape), fmt_shape(&shape));
        let fill = Self::full_dtype([1; D], value, self.dtype(), &self.device());
        Self::where_cond(mask, &fill, self)
    }

    // ---- matmul ------------------------------------------------------------

    /// Matrix product over the last two dims, batch dims broadcasting, as
    /// `torch.matmul` for tensors of equal rank. f32 operands compute in
    /// the thread's [`crate::Precision`] (see [`crate::autocast`]).
    pub fn matmul(&self, rhs: &Self) -> Self {
        let (a, b) = (self.shape(), rhs.shape());
        if let Err(e) = rules::matmul(&a, &b) {
            panic!("{}", e.message("matmul", &[&fmt_shape(&a), &fmt_shape(&b)], usize::to_string));
        }
        let (da, db) = (self.dtype(), rhs.dtype());
        check_same_dtype("matmul", da, db);
        assert!(da.is_float(), "matmul: not defined for dtype {da}");
        check_same_device::<B>("matmul", &[&self.storage, &rhs.storage]);
        Self::wrap(crate::precision::matmul::<B>(&self.storage, &rhs.storage))
    }
}

// ---- operator overloads ----------------------------------------------------

/// A Rust number usable as the scalar side of `+ - * /` with a tensor.
/// Generic so that an unsuffixed literal (`x * 2`, `x * 0.5`) picks a type
/// by Rust's usual fallback; the value is converted to the tensor's dtype.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be combined with a tensor by an arithmetic operator",
    label = "not a number, and not a tensor of the same rank and backend",
    note = "tensors combine elementwise only at equal rank: use `.unsqueeze()`, `.reshape()` or `.squeeze()` to match ranks first"
)]
pub trait Scalar: Copy {
    /// The value as f64.
    fn to_f64(self) -> f64;
}

macro_rules! impl_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
impl_scalar!(f32, f64, i32, i64, u32, usize);

macro_rules! impl_tensor_ops {
    ($($Trait:ident $method:ident $scalar:ident $rscalar:expr;)*) => {$(
        impl<B: Backend, const D: usize> $Trait<&Tensor<B, D>> for &Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: &Tensor<B, D>) -> Tensor<B, D> {
                Tensor::$method(self, rhs)
            }
        }
        impl<B: Backend, const D: usize> $Trait<Tensor<B, D>> for &Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: Tensor<B, D>) -> Tensor<B, D> {
                Tensor::$method(self, &rhs)
            }
        }
        impl<B: Backend, const D: usize> $Trait<&Tensor<B, D>> for Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: &Tensor<B, D>) -> Tensor<B, D> {
                Tensor::$method(&self, rhs)
            }
        }
        impl<B: Backend, const D: usize> $Trait<Tensor<B, D>> for Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: Tensor<B, D>) -> Tensor<B, D> {
                Tensor::$method(&self, &rhs)
            }
        }
        impl<B: Backend, const D: usize, S: Scalar> $Trait<S> for &Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: S) -> Tensor<B, D> {
                self.$scalar(rhs.to_f64())
            }
        }
        impl<B: Backend, const D: usize, S: Scalar> $Trait<S> for Tensor<B, D> {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: S) -> Tensor<B, D> {
                self.$scalar(rhs.to_f64())
            }
        }
        impl_tensor_ops!(@scalars $Trait $method $rscalar; f32 f64 i32 i64);
    )*};
    (@scalars $Trait:ident $method:ident $rscalar:expr; $($s:ty)*) => {$(
        impl<B: Backend, const D: usize> $Trait<&Tensor<B, D>> for $s {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: &Tensor<B, D>) -> Tensor<B, D> {
                let f: fn(&Tensor<B, D>, f64) -> Tensor<B, D> = $rscalar;
                f(rhs, self as f64)
            }
        }
        impl<B: Backend, const D: usize> $Trait<Tensor<B, D>> for $s {
            type Output = Tensor<B, D>;
            fn $method(self, rhs: Tensor<B, D>) -> Tensor<B, D> {
                let f: fn(&Tensor<B, D>, f64) -> Tensor<B, D> = $rscalar;
                f(&rhs, self as f64)
            }
        }
    )*};
}

impl_tensor_ops! {
    Add add add_scalar |t, s| t.add_scalar(s);
    Sub sub sub_scalar |t, s| t.rsub_scalar(s);
    Mul mul mul_scalar |t, s| t.mul_scalar(s);
    Div div div_scalar |t, s| t.rdiv_scalar(s);
}

impl<B: Backend, const D: usize> Neg for &Tensor<B, D> {
    type Output = Tensor<B, D>;
    fn neg(self) -> Tensor<B, D> {
        Tensor::neg(self)
    }
}

impl<B: Backend, const D: usize> Neg for Tensor<B, D> {
    type Output = Tensor<B, D>;
    fn neg(self) -> Tensor<B, D> {
        Tensor::neg(&self)
    }
}

/// [`Tensor::axpby_`] of a tensor of any rank.
pub fn axpby_storage<B: Backend>(y: &mut B::Storage, a: f64, x: &B::Storage, b: f64) {
    let (sd, xd) = (B::dtype(y), B::dtype(x));
    assert!(sd.is_float() && sd == xd, "axpby_: dtypes {sd} and {xd} must be the same float type");
    let (ss, xs) = (B::shape(y), B::shape(x));
    assert!(ss == xs, "axpby_: shapes {} and {} differ", fmt_shape(ss), fmt_shape(xs));
    check_same_device::<B>("axpby_", &[y, x]);
    B::axpby(y, a, x, b);
}

/// [`Tensor::adam_`] of a parameter of any rank.
pub fn adam_storage<B: Backend>(
    p: &mut B::Storage,
    m: &mut Tensor<B, 1>,
    v: &mut Tensor<B, 1>,
    g: &B::Storage,
    o: crate::AdamStep,
) {
    let op = "adam_";
    let dtype = B::dtype(p);
    let n: usize = B::shape(p).iter().product();
    let fits = [m.dtype(), v.dtype(), B::dtype(g)].iter().all(|&d| d == dtype)
        && dtype.is_float()
        && m.numel() == n
        && v.numel() == n
        && B::shape(g) == B::shape(p);
    assert!(
        fits,
        "{op}: parameter {} {dtype}, gradient {} {}, moments {} and {} must share one float dtype and size",
        fmt_shape(B::shape(p)),
        fmt_shape(B::shape(g)),
        B::dtype(g),
        fmt_shape(&m.shape()),
        fmt_shape(&v.shape())
    );
    check_same_device::<B>(op, &[p, m.storage(), v.storage(), g]);
    B::adam(p, &mut m.storage, &mut v.storage, g, o);
}
