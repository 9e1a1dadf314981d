//! The elementwise pipeline on plain values: kernels built by hand as IR
//! (no tokens, no parsing), typed by `check`, differentiated by `diff`
//! (each partial compared with a central difference by a small evaluator
//! of the IR) and printed as WGSL that naga validates.

use proc_macro2::Span;

use super::ir::{Bin, ExprIr, ExprKind, Intrinsic, Kernel, Let, Ty, Var};
use super::{check, codegen, diff, wgsl};

fn at(kind: ExprKind) -> ExprIr {
    ExprIr::new(kind, Span::call_site())
}

fn param(i: usize) -> ExprIr {
    at(ExprKind::Var(Var::Param(i)))
}

fn binding(i: usize) -> ExprIr {
    at(ExprKind::Var(Var::Let(i)))
}

fn float(v: f64) -> ExprIr {
    at(ExprKind::Float(v))
}

fn bin(op: Bin, a: ExprIr, b: ExprIr) -> ExprIr {
    at(ExprKind::Binary(op, Box::new(a), Box::new(b)))
}

fn call(f: Intrinsic, args: Vec<ExprIr>) -> ExprIr {
    at(ExprKind::Call(f, args))
}

fn kernel(params: &[&str], lets: Vec<(&str, ExprIr)>, result: ExprIr) -> Kernel {
    Kernel {
        name: "k".into(),
        span: Span::call_site(),
        params: params.iter().map(|p| p.to_string()).collect(),
        lets: lets.into_iter().map(|(name, value)| Let { name: name.into(), value }).collect(),
        result,
    }
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
    let mut lets = Vec::new();
    for l in &k.lets {
        let v = eval(&l.value, params, &lets);
        lets.push(v);
    }
    eval(&k.result, params, &lets).float()
}

fn eval(e: &ExprIr, params: &[f64], lets: &[Value]) -> Value {
    let f = |e: &ExprIr| eval(e, params, lets).float();
    match &e.kind {
        ExprKind::Float(v) => Value::Float(*v),
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::Var(Var::Param(i)) => Value::Float(params[*i]),
        ExprKind::Var(Var::Let(i)) => lets[*i],
        ExprKind::Neg(x) => Value::Float(-f(x)),
        ExprKind::Not(x) => Value::Bool(!eval(x, params, lets).bool()),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (eval(a, params, lets), eval(b, params, lets));
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
                    if eval(&args[0], params, lets).bool() {
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
    let mut errors = Vec::new();
    let types = check::check(k, &mut errors).expect("the kernel types");
    for p in 0..k.params.len() {
        let d = diff::share_common(&diff::partial(k, &types, p));
        let h = 1e-6;
        let (mut up, mut down) = (at.to_vec(), at.to_vec());
        up[p] += h;
        down[p] -= h;
        let want = (eval_kernel(k, &up) - eval_kernel(k, &down)) / (2.0 * h);
        let got = eval_kernel(&d, at);
        assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "d/d{}: {got} vs {want}", k.params[p]);
    }
}

#[test]
fn check_types_bindings_and_refuses_a_bool_result() {
    // let c = x < y; select(c, x, y)
    let lt = bin(Bin::Lt, param(0), param(1));
    let k = kernel(&["x", "y"], vec![("c", lt.clone())], call(Intrinsic::Select, vec![binding(0), param(0), param(1)]));
    let mut errors = Vec::new();
    assert_eq!(check::check(&k, &mut errors), Some(vec![Ty::Bool]));
    let k = kernel(&["x", "y"], vec![], lt);
    assert_eq!(check::check(&k, &mut errors), None);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), "type mismatch: the kernel returns f32, this is bool");
    let k = kernel(&["x"], vec![], bin(Bin::Add, param(0), at(ExprKind::Bool(true))));
    let mut errors = Vec::new();
    assert_eq!(check::check(&k, &mut errors), None);
    assert_eq!(errors[0].to_string(), "type mismatch: `+` takes f32 operands, found f32 and bool");
}

#[test]
fn partials_match_central_differences() {
    // Products through a binding: let s = x * y; s * s + x / y.
    let s = bin(Bin::Mul, param(0), param(1));
    let body = bin(Bin::Add, bin(Bin::Mul, binding(0), binding(0)), bin(Bin::Div, param(0), param(1)));
    assert_partials(&kernel(&["x", "y"], vec![("s", s)], body), &[0.7, -1.3]);
    // The chain rule through intrinsics: tanh(exp(x) * sin(y)) + pow(x, y).
    let inner = bin(Bin::Mul, call(Intrinsic::Exp, vec![param(0)]), call(Intrinsic::Sin, vec![param(1)]));
    let body = bin(Bin::Add, call(Intrinsic::Tanh, vec![inner]), call(Intrinsic::Pow, vec![param(0), param(1)]));
    assert_partials(&kernel(&["x", "y"], vec![], body), &[0.4, 1.1]);
    // A branch: select(x > 0, sqrt(x) * y, -x), on both sides.
    let cond = bin(Bin::Gt, param(0), float(0.0));
    let then = bin(Bin::Mul, call(Intrinsic::Sqrt, vec![param(0)]), param(1));
    let neg = at(ExprKind::Neg(Box::new(param(0))));
    let k = kernel(&["x", "y"], vec![("c", cond)], call(Intrinsic::Select, vec![binding(0), then, neg]));
    assert_partials(&k, &[2.0, 3.0]);
    assert_partials(&k, &[-2.0, 3.0]);
    // A parameter the result does not read has a zero partial.
    let k = kernel(&["x", "unused"], vec![], call(Intrinsic::Log, vec![param(0)]));
    assert_partials(&k, &[1.5, 9.0]);
}

#[test]
fn printed_wgsl_validates_for_a_kernel_and_its_partials() {
    let body = call(Intrinsic::Max, vec![bin(Bin::Mul, param(0), param(1)), float(0.0)]);
    let k = kernel(&["x", "r#type"], vec![], body);
    let mut errors = Vec::new();
    let types = check::check(&k, &mut errors).expect("types");
    let mut w = wgsl::Wgsl::new("k");
    codegen::wgsl_fn(&k, "k", &mut w);
    for p in 0..k.params.len() {
        codegen::wgsl_fn(&diff::partial(&k, &types, p), &format!("k_d_{p}"), &mut w);
    }
    let text = w.finish();
    wgsl::validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // A raw parameter name loses its prefix in WGSL.
    assert!(text.contains("fn k(a_x: f32, a_type: f32) -> f32"), "{text}");
}
