//! The Rust of kernel expressions, for both forms: the CPU computes what
//! the WGSL printer (`wgsl.rs`) makes every adapter compute.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{Bin, Expr, ExprKind, Id, Intrinsic, Kernel, Kind, Ty};

/// The float type of `k`'s Rust: elementwise kernels are generic over it
/// (`T: KernelFloat`, f32 or f64), general kernels compute in f32.
pub fn float(k: &Kernel) -> TokenStream {
    if k.is_elementwise() { quote!(T) } else { quote!(f32) }
}

/// The Rust name of variable `v`: `s{index}` for a general scalar,
/// `v{v}` otherwise (in a general kernel an array over the invocations).
pub fn var(k: &Kernel, v: usize) -> TokenStream {
    match k.vars[v].kind {
        Kind::Scalar { index } => {
            let s = format_ident!("s{}", index);
            quote!(#s)
        }
        Kind::Local { .. } if !k.is_elementwise() => {
            let id = format_ident!("v{}", v);
            quote!(#id[lane])
        }
        Kind::Element { .. } | Kind::Local { .. } | Kind::Buffer { .. } | Kind::Shared { .. } => {
            let id = format_ident!("v{}", v);
            quote!(#id)
        }
    }
}

/// Rust for an expression: of one element for an elementwise kernel, of
/// invocation `lane` inside the loop over a workgroup for a general one.
pub fn expr(k: &Kernel, e: &Expr) -> TokenStream {
    let name = &k.name;
    let float = float(k);
    let rt = k.home.runtime();
    let kf = quote!(#rt::kernel::KernelFloat);
    match &e.kind {
        // Literals are parenthesised: a negative one would otherwise bind
        // looser than the method calls (`wrapping_add`) applied to it.
        ExprKind::Float(v) if k.is_elementwise() => quote!(<T as #kf>::lit(#v)),
        ExprKind::Float(v) => {
            let v = *v as f32;
            quote!((#v))
        }
        ExprKind::Int(v, ty, _) => match ty.get() {
            Ty::I32 => {
                let v = *v as i32;
                quote!((#v))
            }
            _ => {
                let v = *v as u32;
                quote!((#v))
            }
        },
        ExprKind::Bool(b) => quote!(#b),
        ExprKind::Var(v) => var(k, *v),
        ExprKind::Index(v, i) => {
            let i = expr(k, i);
            let var = &k.vars[*v];
            match var.kind {
                Kind::Buffer { index, .. } => {
                    let label = format!("{name}: `{}`", var.name);
                    quote!(buffers[#index].load(#i, #label))
                }
                _ => {
                    let id = format_ident!("v{}", v);
                    quote!(#id[(#i) as usize])
                }
            }
        }
        ExprKind::Neg(x) if k.ty(x).int() => {
            let x = expr(k, x);
            quote!(#x.wrapping_neg())
        }
        ExprKind::Neg(x) => {
            let x = expr(k, x);
            quote!((-#x))
        }
        ExprKind::Not(x) => {
            let x = expr(k, x);
            quote!((!#x))
        }
        ExprKind::Binary(op, a, b) => binary(&rt, &float, *op, k.ty(a), expr(k, a), expr(k, b)),
        ExprKind::Call(Intrinsic::Select, args) => {
            let (c, a, b) = (expr(k, &args[0]), expr(k, &args[1]), expr(k, &args[2]));
            quote!((if #c { #a } else { #b }))
        }
        ExprKind::Call(f, args) => {
            let f = format_ident!("{}", f.name());
            let args = args.iter().map(|a| expr(k, a));
            quote!(<#float as #kf>::#f(#(#args),*))
        }
        // A `kernel!` function at this point, inlined into the loop.
        ExprKind::Extern(f, args) => {
            let (path, args) = (&f.path, args.iter().map(|a| expr(k, a)));
            let ew = quote!(<#path::Kernel as #rt::kernel::Elementwise>);
            match f.partial {
                None => quote!(#ew::at::<#float>(&[#(#args),*])),
                Some(i) => quote!(#ew::partial_at::<#float>(#i, &[#(#args),*])),
            }
        }
        ExprKind::Id(id) => match id {
            Id::Global => quote!((group * WORKGROUP + lane as u32)),
            Id::Local => quote!((lane as u32)),
            Id::Workgroup => quote!(group),
            Id::Workgroups => quote!(groups),
        },
        ExprKind::Cast(x, t) => {
            let (x, t) = (expr(k, x), t.rust());
            quote!(((#x) as #t))
        }
    }
}

/// `a op b` in Rust with `a` of type `ty` (`float` the float type, `rt`
/// the runtime's path),
/// computing what WGSL defines: integers wrap, `x / 0 = x`,
/// `MIN / -1 = MIN`, `x % 0 = 0`, a shift uses the low five bits of its
/// amount, and a float remainder is `a - b * trunc(a / b)`.
pub fn binary(rt: &TokenStream, float: &TokenStream, op: Bin, ty: Ty, a: TokenStream, b: TokenStream) -> TokenStream {
    if ty == Ty::F32 && op == Bin::Rem {
        return quote!(<#float as #rt::kernel::KernelFloat>::wgsl_rem(#a, #b));
    }
    if !ty.int() {
        let op = op.tokens();
        return quote!((#a #op #b));
    }
    match op {
        Bin::Add => quote!(#a.wrapping_add(#b)),
        Bin::Sub => quote!(#a.wrapping_sub(#b)),
        Bin::Mul => quote!(#a.wrapping_mul(#b)),
        Bin::Div => quote!({ let a = #a; a.checked_div(#b).unwrap_or(a) }),
        Bin::Rem => quote!(#a.checked_rem(#b).unwrap_or(0)),
        Bin::Shl => quote!(#a.wrapping_shl((#b) as u32)),
        Bin::Shr => quote!(#a.wrapping_shr((#b) as u32)),
        Bin::BitAnd | Bin::BitOr | Bin::BitXor | Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge | Bin::Eq | Bin::Ne => {
            let op = op.tokens();
            quote!((#a #op #b))
        }
        // Logic takes bools, which the checker made sure of.
        Bin::And | Bin::Or => {
            let op = op.tokens();
            quote!((#a #op #b))
        }
    }
}
