//! The kernel pipeline on plain values: kernels of both forms built by
//! hand as IR (no tokens, no parsing), typed by `check`, differentiated
//! by `diff` (each partial compared with a central difference by a small
//! evaluator of the IR) and printed as WGSL that naga validates.

use std::cell::Cell;

use proc_macro2::Span;

use super::ir::{Bin, Expr, ExprKind, Id, Intrinsic, Kernel, Kind, Stmt, Ty};
use super::{check, codegen, diff, wgsl};
use crate::errors::Errors;

fn at(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::call_site())
}

/// Variable `v`: in the kernels below, the parameters and then the
/// bindings in order.
fn var(v: usize) -> Expr {
    at(ExprKind::Var(v))
}

fn float(v: f64) -> Expr {
    at(ExprKind::Float(v))
}

fn bin(op: Bin, a: Expr, b: Expr) -> Expr {
    at(ExprKind::Binary(op, Box::new(a), Box::new(b)))
}

fn call(f: Intrinsic, args: Vec<Expr>) -> Expr {
    at(ExprKind::Call(f, args))
}

/// An elementwise kernel.
fn kernel(params: &[&str], lets: Vec<(&str, Expr)>, result: Expr) -> Kernel {
    let mut k = Kernel::new("k".into(), Span::call_site(), None);
    for (index, p) in params.iter().enumerate() {
        let v = k.declare(p.to_string(), Ty::F32, Kind::Element { index });
        k.params.push(v);
    }
    for (name, value) in lets {
        let v = k.declare(name.into(), Ty::F32, Kind::Local { mutable: false });
        k.body.push(Stmt::Let(v, value));
    }
    k.result = Some(result);
    k
}

fn checked(mut k: Kernel) -> Kernel {
    let mut errors = Errors::default();
    assert!(check::check(&mut k, &mut errors), "{errors:?}");
    k
}

/// A value of the DSL.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Float(f64),
    Bool(bool),
}

impl Value {
    fn float(self) -> f64 {
        match self {
            Value::Float(v) => v,
            Value::Bool(b) => panic!("expected a float, got {b}"),
        }
    }

    fn bool(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Float(v) => panic!("expected a bool, got {v}"),
        }
    }
}

/// The IR's value at `params`, with the bindings evaluated in order.
fn eval_kernel(k: &Kernel, params: &[f64]) -> f64 {
    let mut vars = vec![Value::Float(f64::NAN); k.vars.len()];
    for (&p, &x) in k.params.iter().zip(params) {
        vars[p] = Value::Float(x);
    }
    for (v, value) in k.bindings() {
        vars[v] = eval(value, &vars);
    }
    eval(k.result.as_ref().expect("an elementwise kernel"), &vars).float()
}

fn eval(e: &Expr, vars: &[Value]) -> Value {
    let f = |e: &Expr| eval(e, vars).float();
    match &e.kind {
        ExprKind::Float(v) => Value::Float(*v),
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::Var(v) => vars[*v],
        ExprKind::Neg(x) => Value::Float(-f(x)),
        ExprKind::Not(x) => Value::Bool(!eval(x, vars).bool()),
        ExprKind::Int(..) | ExprKind::Index(..) | ExprKind::Id(_) | ExprKind::Cast(..) => {
            panic!("not elementwise: {e:?}")
        }
        // These kernels call no `kernel!` functions.
        ExprKind::Extern(..) => {
            panic!("a call of another kernel: {e:?}")
        }
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (eval(a, vars), eval(b, vars));
            let (fl, bl) = (|v: Value| v.float(), |v: Value| v.bool());
            match op {
                Bin::Add => Value::Float(fl(x) + fl(y)),
                Bin::Sub => Value::Float(fl(x) - fl(y)),
                Bin::Mul => Value::Float(fl(x) * fl(y)),
                Bin::Div => Value::Float(fl(x) / fl(y)),
                Bin::Rem => Value::Float(fl(x) % fl(y)),
                Bin::Lt => Value::Bool(fl(x) < fl(y)),
                Bin::Le => Value::Bool(fl(x) <= fl(y)),
                Bin::Gt => Value::Bool(fl(x) > fl(y)),
                Bin::Ge => Value::Bool(fl(x) >= fl(y)),
                Bin::Eq => Value::Bool(x == y),
                Bin::Ne => Value::Bool(x != y),
                Bin::And => Value::Bool(bl(x) && bl(y)),
                Bin::Or => Value::Bool(bl(x) || bl(y)),
                Bin::Shl | Bin::Shr | Bin::BitAnd | Bin::BitOr | Bin::BitXor => {
                    panic!("`{}` is not elementwise", op.symbol())
                }
            }
        }
        ExprKind::Call(i, args) => {
            let a: Vec<f64> = args.iter().skip(usize::from(*i == Intrinsic::Select)).map(f).collect();
            Value::Float(match i {
                Intrinsic::Exp => a[0].exp(),
                Intrinsic::Exp2 => a[0].exp2(),
                Intrinsic::Log => a[0].ln(),
                Intrinsic::Log2 => a[0].log2(),
                Intrinsic::Sqrt => a[0].sqrt(),
                Intrinsic::Rsqrt => 1.0 / a[0].sqrt(),
                Intrinsic::Tanh => a[0].tanh(),
                Intrinsic::Erf => erf(a[0]),
                Intrinsic::Sin => a[0].sin(),
                Intrinsic::Cos => a[0].cos(),
                Intrinsic::Pow => a[0].powf(a[1]),
                Intrinsic::Abs => a[0].abs(),
                Intrinsic::Sign => {
                    if a[0] == 0.0 {
                        0.0
                    } else {
                        a[0].signum()
                    }
                }
                Intrinsic::Min => a[0].min(a[1]),
                Intrinsic::Max => a[0].max(a[1]),
                Intrinsic::Clamp => a[0].max(a[1]).min(a[2]),
                Intrinsic::Floor => a[0].floor(),
                Intrinsic::Ceil => a[0].ceil(),
                Intrinsic::Fma => a[0].mul_add(a[1], a[2]),
                Intrinsic::Select => {
                    if eval(&args[0], vars).bool() {
                        a[0]
                    } else {
                        a[1]
                    }
                }
            })
        }
    }
}

/// `k`'s partial in each parameter against a central difference at `at`.
fn assert_partials(k: &Kernel, at: &[f64]) {
    let k = checked(k.clone());
    for p in 0..k.params.len() {
        let d = diff::share_common(&diff::partial(&k, p));
        let h = 1e-6;
        let (mut up, mut down) = (at.to_vec(), at.to_vec());
        up[p] += h;
        down[p] -= h;
        let want = (eval_kernel(&k, &up) - eval_kernel(&k, &down)) / (2.0 * h);
        let got = eval_kernel(&d, at);
        assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "d/d{}: {got} vs {want}", k.vars[p].name);
    }
}

#[test]
fn check_types_bindings_and_refuses_a_bool_result() {
    // let c = x < y; select(c, x, y)
    let lt = bin(Bin::Lt, var(0), var(1));
    let k =
        checked(kernel(&["x", "y"], vec![("c", lt.clone())], call(Intrinsic::Select, vec![var(2), var(0), var(1)])));
    assert_eq!(k.vars[2].ty, Ty::Bool);
    let mut errors = Errors::default();
    let mut k = kernel(&["x", "y"], vec![], lt);
    assert!(!check::check(&mut k, &mut errors));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors.messages()[0], "type mismatch: the kernel returns f32, this is bool");
    let mut k = kernel(&["x"], vec![], bin(Bin::Add, var(0), at(ExprKind::Bool(true))));
    let mut errors = Errors::default();
    assert!(!check::check(&mut k, &mut errors));
    assert_eq!(errors.messages()[0], "type mismatch: `+` takes f32 operands, found f32 and bool");
}

#[test]
fn partials_match_central_differences() {
    // Products through a binding: let s = x * y; s * s + x / y.
    let s = bin(Bin::Mul, var(0), var(1));
    let body = bin(Bin::Add, bin(Bin::Mul, var(2), var(2)), bin(Bin::Div, var(0), var(1)));
    assert_partials(&kernel(&["x", "y"], vec![("s", s)], body), &[0.7, -1.3]);
    // The chain rule through intrinsics: tanh(exp(x) * sin(y)) + pow(x, y).
    let inner = bin(Bin::Mul, call(Intrinsic::Exp, vec![var(0)]), call(Intrinsic::Sin, vec![var(1)]));
    let body = bin(Bin::Add, call(Intrinsic::Tanh, vec![inner]), call(Intrinsic::Pow, vec![var(0), var(1)]));
    assert_partials(&kernel(&["x", "y"], vec![], body), &[0.4, 1.1]);
    // A branch: select(x > 0, sqrt(x) * y, -x), on both sides.
    let cond = bin(Bin::Gt, var(0), float(0.0));
    let then = bin(Bin::Mul, call(Intrinsic::Sqrt, vec![var(0)]), var(1));
    let neg = at(ExprKind::Neg(Box::new(var(0))));
    let k = kernel(&["x", "y"], vec![("c", cond)], call(Intrinsic::Select, vec![var(2), then, neg]));
    assert_partials(&k, &[2.0, 3.0]);
    assert_partials(&k, &[-2.0, 3.0]);
    // erf, as the exact GELU uses it: x (1 + erf(x y)) / 2.
    let cdf = bin(Bin::Add, float(1.0), call(Intrinsic::Erf, vec![bin(Bin::Mul, var(0), var(1))]));
    let k = kernel(&["x", "y"], vec![], bin(Bin::Mul, bin(Bin::Mul, float(0.5), var(0)), cdf));
    assert_partials(&k, &[0.9, 0.7]);
    assert_partials(&k, &[-1.4, 0.7]);
    // A parameter the result does not read has a zero partial.
    let k = kernel(&["x", "unused"], vec![], call(Intrinsic::Log, vec![var(0)]));
    assert_partials(&k, &[1.5, 9.0]);
}

#[test]
fn printed_wgsl_validates_for_a_kernel_and_its_partials() {
    let body = call(Intrinsic::Max, vec![bin(Bin::Mul, var(0), var(1)), call(Intrinsic::Erf, vec![float(0.0)])]);
    let k = checked(kernel(&["x", "r#type"], vec![], body));
    let mut w = wgsl::Wgsl::new("k");
    codegen::wgsl_fn(&k, "k", &mut w);
    for p in 0..k.params.len() {
        codegen::wgsl_fn(&diff::partial(&k, p), &format!("k_d_{p}"), &mut w);
    }
    let text = w.finish();
    wgsl::validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // A raw parameter name loses its prefix in WGSL.
    assert!(text.contains("fn k(x_0: f32, type_1: f32) -> f32"), "{text}");
}

/// A general kernel by hand: `fn scale(x: &[f32], y: &mut [f32], n: u32)`
/// with `let i = global_id();` and then `body` (variable 3 is `i`).
fn general(body: Vec<Stmt>) -> Kernel {
    let mut k = Kernel::new("scale".into(), Span::call_site(), Some(64));
    for (name, ty, kind) in [
        ("x", Ty::F32, Kind::Buffer { index: 0, output: false }),
        ("y", Ty::F32, Kind::Buffer { index: 1, output: true }),
        ("n", Ty::U32, Kind::Scalar { index: 0 }),
    ] {
        let v = k.declare(name.into(), ty, kind);
        k.params.push(v);
    }
    let i = k.declare("i".into(), Ty::U32, Kind::Local { mutable: false });
    k.body.push(Stmt::Let(i, at(ExprKind::Id(Id::Global))));
    k.body.extend(body);
    k
}

fn index(v: usize, i: Expr) -> Expr {
    at(ExprKind::Index(v, Box::new(i)))
}

#[test]
fn a_general_kernel_checks_and_prints_valid_wgsl() {
    // if i < n { y[i] = x[i] * 2.0 + f32(n) }
    let value =
        bin(Bin::Add, bin(Bin::Mul, index(0, var(3)), float(2.0)), at(ExprKind::Cast(Box::new(var(2)), Ty::F32)));
    let store = Stmt::Assign(1, Some(var(3)), None, value, Span::call_site());
    let k = checked(general(vec![Stmt::If(bin(Bin::Lt, var(3), var(2)), vec![store], vec![])]));
    assert!(!k.vars[3].uniform, "global_id differs between invocations");
    let text = super::general::shader(&k);
    wgsl::validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(text.contains("if ((i_3 < params.s0))"), "{text}");
    assert!(text.contains("y_1[i_3] = ((x_0[i_3] * 2.0) + f32(params.s0));"), "{text}");
}

#[test]
fn the_checker_reports_general_misuse_with_the_form_s_types() {
    // A barrier under a condition on the invocation id.
    let mut k = general(vec![Stmt::If(
        bin(Bin::Lt, var(3), var(2)),
        vec![Stmt::Barrier(Span::call_site(), "`barrier()`")],
        vec![],
    )]);
    let mut errors = Errors::default();
    assert!(!check::check(&mut k, &mut errors));
    assert!(errors.messages()[0].starts_with("`barrier()` in divergent control flow"), "{errors:?}");
    // An input written, an unsuffixed literal settled to i32, and bools
    // that cannot be ordered.
    let minus_five = at(ExprKind::Neg(Box::new(at(ExprKind::Int(5, Cell::new(Ty::U32), true)))));
    let mut k = general(vec![
        Stmt::Assign(0, Some(var(3)), None, float(1.0), Span::call_site()),
        Stmt::If(bin(Bin::Lt, at(ExprKind::Bool(true)), at(ExprKind::Bool(false))), vec![], vec![]),
    ]);
    let m = k.declare("m".into(), Ty::F32, Kind::Local { mutable: false });
    k.body.push(Stmt::Let(m, minus_five));
    let mut errors = Errors::default();
    assert!(!check::check(&mut k, &mut errors));
    let messages = errors.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("`x` is an input"), "{messages:?}");
    assert_eq!(messages[1], "type mismatch: `<` compares f32, u32 or i32 values, found bool and bool");
    assert_eq!(k.vars[m].ty, Ty::I32);
    // The same operator in an elementwise kernel names only f32.
    let mut k = kernel(&["x"], vec![], at(ExprKind::Neg(Box::new(at(ExprKind::Bool(true))))));
    let mut errors = Errors::default();
    assert!(!check::check(&mut k, &mut errors));
    assert_eq!(errors.messages()[0], "type mismatch: `-` takes f32, found bool");
}

/// The error function to f64 precision (Abramowitz and Stegun 7.1.26 is
/// too coarse for central differences): its Maclaurin series, which
/// converges quickly for the |x| < 3 the tests use.
fn erf(x: f64) -> f64 {
    let (mut term, mut sum, mut n) = (x, x, 0.0);
    while term.abs() > 1e-17 * sum.abs().max(1e-300) {
        n += 1.0;
        term *= -x * x / n;
        sum += term / (2.0 * n + 1.0);
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}
