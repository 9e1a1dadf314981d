//! The elementwise kernels the runtime writes by hand (`Builtin`), here
//! at the kernel layer, so that the layers above use them and nothing
//! here names a layer.

use std::mem::MaybeUninit;

use super::*;

/// The elementwise kernels the runtime writes by hand against
/// [`Elementwise`] rather than with `kernel!` (the runtime cannot use its
/// own macro), so they carry no [`Elementwise::DEVICE`] launcher. A
/// backend whose kernels are compiled Rust recognises them with
/// [`Builtin::of`] and runs its own version of each, computing what the
/// kernel's WGSL computes; `Builtin::eval` runs one on any backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// Dropout's mask, `dropout(x, p, scale, u)`: `0` where the draw `u`
    /// is below `p`, else `x * scale`.
    Dropout,
}

/// What [`Builtin::visit`] hands a builtin's kernel type to.
pub trait BuiltinVisitor {
    /// What the visit returns.
    type Output;
    /// Called with the kernel's type.
    fn visit<K: Elementwise>(self) -> Self::Output;
}

/// `Builtin`'s methods from one list of its variants and their types.
macro_rules! builtins {
    ($($variant:ident => $kernel:ty),* $(,)?) => {
        impl Builtin {
            /// Every builtin kernel.
            pub const ALL: &'static [Builtin] = &[$(Builtin::$variant),*];

            /// Which builtin kernel `K` is, if it is one.
            pub fn of<K: Elementwise>() -> Option<Self> {
                let k = std::any::TypeId::of::<K>();
                $(if k == std::any::TypeId::of::<$kernel>() {
                    return Some(Builtin::$variant);
                })*
                None
            }

            /// Calls `visitor` with the kernel's type.
            pub fn visit<V: BuiltinVisitor>(self, visitor: V) -> V::Output {
                match self {
                    $(Builtin::$variant => visitor.visit::<$kernel>(),)*
                }
            }

            /// The kernel's argument names, in order (its [`Elementwise::ARGS`]).
            pub fn args(self) -> &'static [&'static str] {
                match self {
                    $(Builtin::$variant => <$kernel as Elementwise>::ARGS,)*
                }
            }
        }
    };
}

builtins! {
    Dropout => DropoutMask,
}

/// `dropout(x, p, scale, u) = u < p ? 0 : x * scale`, with `u` the
/// element's draw: `nn::Dropout::apply`'s kernel.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct DropoutMask;

impl Elementwise for DropoutMask {
    const NAME: &'static str = "dropout";
    const ARGS: &'static [&'static str] = &["x", "p", "scale", "u"];
    const WGSL: &'static str = "
fn dropout(x: f32, p: f32, scale: f32, u: f32) -> f32 {
    return select(x * scale, 0.0, u < p);
}
fn dropout_d_x(x: f32, p: f32, scale: f32, u: f32) -> f32 {
    return select(scale, 0.0, u < p);
}
fn dropout_d_p(x: f32, p: f32, scale: f32, u: f32) -> f32 {
    return 0.0;
}
fn dropout_d_scale(x: f32, p: f32, scale: f32, u: f32) -> f32 {
    return select(x, 0.0, u < p);
}
fn dropout_d_u(x: f32, p: f32, scale: f32, u: f32) -> f32 {
    return 0.0;
}
";

    #[inline(always)]
    fn map<T: KernelFloat>(args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        let (p, scale) = (args[1], args[2]);
        for (((o, &x), (&p, &s)), &u) in out.iter_mut().zip(args[0]).zip(p.iter().zip(scale)).zip(args[3]) {
            o.write(if u < p { T::lit(0.0) } else { x * s });
        }
    }

    #[inline(always)]
    fn map_partial<T: KernelFloat>(arg: usize, args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        let zero = T::lit(0.0);
        for (j, o) in out.iter_mut().enumerate() {
            let (x, p, s, u) = (args[0][j], args[1][j], args[2][j], args[3][j]);
            // Kept exactly where `map` keeps (a NaN draw too, as in the WGSL).
            let dropped = u < p;
            o.write(match arg {
                0 if !dropped => s,
                2 if !dropped => x,
                _ => zero,
            });
        }
    }

    fn onnx<G: OnnxExpr>(g: &mut G, args: &[G::Value]) -> G::Value {
        let (x, p, s, u) = (&args[0], &args[1], &args[2], &args[3]);
        let (dropped, zero, kept) = (g.op("Less", &[u, p]), g.constant(0.0, OnnxType::Float), g.op("Mul", &[x, s]));
        g.op("Where", &[&dropped, &zero, &kept])
    }

    fn onnx_partial<G: OnnxExpr>(g: &mut G, arg: usize, args: &[G::Value]) -> G::Value {
        let zero = g.constant(0.0, OnnxType::Float);
        let kept = match arg {
            0 => &args[2],
            2 => &args[0],
            _ => return zero,
        };
        let dropped = g.op("Less", &[&args[3], &args[1]]);
        g.op("Where", &[&dropped, &zero, kept])
    }
}

#[cfg(test)]
mod tests {
    use super::{Builtin, DropoutMask};

    #[test]
    fn builtins_are_found_by_type() {
        assert_eq!(Builtin::of::<DropoutMask>(), Some(Builtin::Dropout));
        let args: Vec<_> = Builtin::ALL.iter().map(|b| b.args()).collect();
        assert_eq!(args, [&["x", "p", "scale", "u"][..]]);
    }
}
