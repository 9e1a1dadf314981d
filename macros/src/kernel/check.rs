//! Types every expression of a kernel; a mismatch is an error at the
//! offending expression.

use super::ir::{Bin, ExprIr, ExprKind, Intrinsic, Kernel, Ty, Var};

/// The type of each `let`, or `None` after reporting errors.
pub fn check(k: &Kernel, errors: &mut Vec<syn::Error>) -> Option<Vec<Ty>> {
    let before = errors.len();
    let mut lets = Vec::new();
    for l in &k.lets {
        // An ill-typed binding is reported once; later uses see it as f32.
        lets.push(type_of(&l.value, &lets, errors).unwrap_or(Ty::F32));
    }
    match type_of(&k.result, &lets, errors) {
        Some(Ty::F32) | None => {}
        Some(t) => errors.push(syn::Error::new(
            k.result.span,
            format!("type mismatch: the kernel returns f32, this is {}", t.name()),
        )),
    }
    (errors.len() == before).then_some(lets)
}

fn type_of(e: &ExprIr, lets: &[Ty], errors: &mut Vec<syn::Error>) -> Option<Ty> {
    let span = e.span;
    let mismatch = |errors: &mut Vec<syn::Error>, msg: String| {
        errors.push(syn::Error::new(span, format!("type mismatch: {msg}")));
        None
    };
    match &e.kind {
        ExprKind::Float(_) => Some(Ty::F32),
        ExprKind::Bool(_) => Some(Ty::Bool),
        ExprKind::Var(Var::Param(_)) => Some(Ty::F32),
        ExprKind::Var(Var::Let(i)) => Some(lets[*i]),
        ExprKind::Neg(x) => match type_of(x, lets, errors)? {
            Ty::F32 => Some(Ty::F32),
            t => mismatch(errors, format!("`-` takes f32, found {}", t.name())),
        },
        ExprKind::Not(x) => match type_of(x, lets, errors)? {
            Ty::Bool => Some(Ty::Bool),
            t => mismatch(errors, format!("`!` takes bool, found {}", t.name())),
        },
        ExprKind::Binary(op, l, r) => {
            let (l, r) = (type_of(l, lets, errors), type_of(r, lets, errors));
            let (l, r) = (l?, r?);
            let s = op.symbol();
            match op {
                _ if op.is_arithmetic() => match (l, r) {
                    (Ty::F32, Ty::F32) => Some(Ty::F32),
                    _ => mismatch(errors, format!("`{s}` takes f32 operands, found {} and {}", l.name(), r.name())),
                },
                _ if op.is_bitwise() => mismatch(
                    errors,
                    format!(
                        "`{s}` takes integers; elementwise kernels compute in f32 (general kernels have u32 and i32)"
                    ),
                ),
                _ if op.is_logic() => match (l, r) {
                    (Ty::Bool, Ty::Bool) => Some(Ty::Bool),
                    _ => mismatch(errors, format!("`{s}` takes bool operands, found {} and {}", l.name(), r.name())),
                },
                Bin::Eq | Bin::Ne if l == r => Some(Ty::Bool),
                _ => match (l, r) {
                    (Ty::F32, Ty::F32) => Some(Ty::Bool),
                    _ => mismatch(errors, format!("`{s}` compares f32 values, found {} and {}", l.name(), r.name())),
                },
            }
        }
        ExprKind::Call(f, args) => {
            let tys: Vec<Option<Ty>> = args.iter().map(|a| type_of(a, lets, errors)).collect();
            let tys: Vec<Ty> = tys.into_iter().collect::<Option<_>>()?;
            if *f == Intrinsic::Select {
                return match (tys[0], tys[1], tys[2]) {
                    (Ty::Bool, a, b) if a == b => Some(a),
                    (Ty::Bool, a, b) => mismatch(
                        errors,
                        format!("the branches of a select or `if` differ: {} and {}", a.name(), b.name()),
                    ),
                    (c, _, _) => mismatch(errors, format!("a condition is bool, found {}", c.name())),
                };
            }
            match tys.iter().position(|t| *t != Ty::F32) {
                None => Some(Ty::F32),
                Some(i) => mismatch(
                    errors,
                    format!(
                        "`{}` takes f32 arguments, argument {} is {}: {}",
                        f.name(),
                        i + 1,
                        tys[i].name(),
                        f.signature()
                    ),
                ),
            }
        }
    }
}
