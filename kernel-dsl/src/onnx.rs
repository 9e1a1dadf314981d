//! The fourth printer of elementwise kernels: ONNX operators, built at run
//! time through the runtime's `kernel::OnnxExpr` when a model that calls
//! the kernel is exported. Each expression becomes a block that builds its
//! operands first, then its operator, so the builder is borrowed once at a
//! time.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{Bin, Expr, ExprKind, Intrinsic, Kernel, Ty};

/// The body of `fn onnx(g, args)` for kernel `k`: its arguments bound by
/// position, its bindings in order, then its result. `Err` names what an
/// elementwise kernel cannot hold (only general kernels index buffers or
/// shift bits, and those are never printed here).
pub fn body(k: &Kernel) -> Result<TokenStream, String> {
    let params = k.params.iter().enumerate().map(|(i, &p)| {
        let v = format_ident!("v{}", p);
        quote!(let #v = ::core::clone::Clone::clone(&args[#i]);)
    });
    let mut lets = Vec::new();
    for (v, value) in k.bindings() {
        let (name, value) = (format_ident!("v{}", v), expr(k, value)?);
        lets.push(quote!(let #name = #value;));
    }
    let rt = k.home.runtime();
    let result = match &k.result {
        Some(r) => expr(k, r)?,
        None => quote!(g.constant(0.0, #rt::kernel::OnnxType::Float)),
    };
    let params: Vec<TokenStream> = params.collect();
    Ok(quote! {
        #(#params)*
        #(#lets)*
        #result
    })
}

fn onnx_type(rt: &TokenStream, ty: Ty) -> TokenStream {
    match ty {
        Ty::F32 => quote!(#rt::kernel::OnnxType::Float),
        Ty::U32 => quote!(#rt::kernel::OnnxType::Uint32),
        Ty::I32 => quote!(#rt::kernel::OnnxType::Int32),
        Ty::Bool => quote!(#rt::kernel::OnnxType::Bool),
    }
}

/// `op` of the printed `args`, built in order.
fn node(op: &str, args: Vec<TokenStream>, attrs: TokenStream) -> TokenStream {
    let names: Vec<syn::Ident> = (0..args.len()).map(|i| format_ident!("a{}", i)).collect();
    quote!({
        #(let #names = #args;)*
        g.op_with(#op, &[#(&#names),*], &[#attrs])
    })
}

fn expr(k: &Kernel, e: &Expr) -> Result<TokenStream, String> {
    let rt = k.home.runtime();
    let each = |args: &[Expr]| args.iter().map(|a| expr(k, a)).collect::<Result<Vec<_>, String>>();
    Ok(match &e.kind {
        ExprKind::Float(v) => quote!(g.constant(#v, #rt::kernel::OnnxType::Float)),
        ExprKind::Int(v, ty, _) => {
            let (v, ty) = (*v as f64, onnx_type(&rt, ty.get()));
            quote!(g.constant(#v, #ty))
        }
        ExprKind::Bool(b) => {
            let v = if *b { 1.0 } else { 0.0 };
            quote!(g.constant(#v, #rt::kernel::OnnxType::Bool))
        }
        ExprKind::Var(v) => {
            let v = format_ident!("v{}", v);
            quote!(::core::clone::Clone::clone(&#v))
        }
        ExprKind::Neg(x) => node("Neg", vec![expr(k, x)?], quote!()),
        ExprKind::Not(x) => node("Not", vec![expr(k, x)?], quote!()),
        ExprKind::Binary(op, a, b) => {
            let ab = vec![expr(k, a)?, expr(k, b)?];
            match op {
                Bin::Add => node("Add", ab, quote!()),
                Bin::Sub => node("Sub", ab, quote!()),
                Bin::Mul => node("Mul", ab, quote!()),
                Bin::Div => node("Div", ab, quote!()),
                // WGSL's float remainder truncates, as C's fmod.
                Bin::Rem if k.ty(a) == Ty::F32 => node("Mod", ab, quote!(("fmod", 1))),
                Bin::Rem => node("Mod", ab, quote!()),
                Bin::Lt => node("Less", ab, quote!()),
                Bin::Le => node("LessOrEqual", ab, quote!()),
                Bin::Gt => node("Greater", ab, quote!()),
                Bin::Ge => node("GreaterOrEqual", ab, quote!()),
                Bin::Eq => node("Equal", ab, quote!()),
                Bin::Ne => node("Not", vec![node("Equal", ab, quote!())], quote!()),
                Bin::And => node("And", ab, quote!()),
                Bin::Or => node("Or", ab, quote!()),
                Bin::Shl | Bin::Shr | Bin::BitAnd | Bin::BitOr | Bin::BitXor => {
                    return Err(format!("`{}` has no ONNX form in an elementwise kernel", op.symbol()));
                }
            }
        }
        ExprKind::Call(f, args) => {
            let a = each(args)?;
            let one = |op: &str, a: Vec<TokenStream>| node(op, a, quote!());
            match f {
                Intrinsic::Exp => one("Exp", a),
                Intrinsic::Log => one("Log", a),
                Intrinsic::Sqrt => one("Sqrt", a),
                Intrinsic::Tanh => one("Tanh", a),
                Intrinsic::Sin => one("Sin", a),
                Intrinsic::Cos => one("Cos", a),
                Intrinsic::Pow => one("Pow", a),
                Intrinsic::Abs => one("Abs", a),
                Intrinsic::Sign => one("Sign", a),
                Intrinsic::Min => one("Min", a),
                Intrinsic::Max => one("Max", a),
                Intrinsic::Floor => one("Floor", a),
                Intrinsic::Ceil => one("Ceil", a),
                Intrinsic::Erf => one("Erf", a),
                Intrinsic::Select => one("Where", a),
                Intrinsic::Exp2 => {
                    let two = quote!(g.constant(2.0, #rt::kernel::OnnxType::Float));
                    one("Pow", vec![two, a[0].clone()])
                }
                Intrinsic::Log2 => {
                    let ln2 = std::f64::consts::LN_2;
                    let ln2 = quote!(g.constant(#ln2, #rt::kernel::OnnxType::Float));
                    one("Div", vec![one("Log", a), ln2])
                }
                Intrinsic::Rsqrt => one("Reciprocal", vec![one("Sqrt", a)]),
                Intrinsic::Clamp => {
                    let (x, lo, hi) = (a[0].clone(), a[1].clone(), a[2].clone());
                    one("Min", vec![one("Max", vec![x, lo]), hi])
                }
                Intrinsic::Fma => {
                    let (x, y, z) = (a[0].clone(), a[1].clone(), a[2].clone());
                    one("Add", vec![one("Mul", vec![x, y]), z])
                }
            }
        }
        // Another `kernel!` function: its own ONNX form.
        ExprKind::Extern(f, args) => {
            let path = &f.path;
            let a = each(args)?;
            let names: Vec<syn::Ident> = (0..a.len()).map(|i| format_ident!("a{}", i)).collect();
            let ew = quote!(<#path::Kernel as #rt::kernel::Elementwise>);
            let call = match f.partial {
                None => quote!(#ew::onnx(g, &[#(#names),*])),
                Some(i) => quote!(#ew::onnx_partial(g, #i, &[#(#names),*])),
            };
            quote!({
                #(let #names = #a;)*
                #call
            })
        }
        ExprKind::Cast(x, t) => {
            let (x, t) = (expr(k, x)?, onnx_type(&rt, *t));
            quote!({
                let a = #x;
                g.cast(&a, #t)
            })
        }
        ExprKind::Index(..) | ExprKind::Id(_) => {
            return Err("an elementwise kernel reads no buffers or invocation ids".to_string());
        }
    })
}
