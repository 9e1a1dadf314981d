//! Symbolic partial derivatives of an elementwise kernel, by forward-mode
//! differentiation over its `let` bindings, simplified as they are built
//! (constants folded; zeros and ones of sums and products dropped).

use std::collections::HashMap;

use proc_macro2::Span;

use super::ir::{Bin, Expr, ExprKind, Extern, Intrinsic, Kernel, Kind, Stmt, Ty};

/// The kernel computing `∂f/∂params[param]` of a checked elementwise
/// kernel: the original bindings, one binding per non-zero derivative of a
/// binding, and the derivative of the result.
pub fn partial(k: &Kernel, param: usize) -> Kernel {
    let mut out = k.clone();
    let wrt = k.params[param];
    // d[v]: the derivative of binding v, as a reference to its own binding.
    let mut d: Vec<Option<Expr>> = vec![None; k.vars.len()];
    for (v, value) in k.bindings() {
        if k.vars[v].ty != Ty::F32 {
            continue;
        }
        d[v] = derive(value, wrt, &d).map(|e| {
            let span = e.span;
            let dv = out.declare(format!("d_{}", k.vars[v].name), Ty::F32, Kind::Local { mutable: false });
            out.body.push(Stmt::Let(dv, e));
            var(dv, span)
        });
    }
    out.result = k.result.as_ref().map(|r| derive(r, wrt, &d).unwrap_or_else(|| float(0.0, r.span)));
    out
}

fn var(v: usize, span: Span) -> Expr {
    Expr::new(ExprKind::Var(v), span)
}

fn float(v: f64, span: Span) -> Expr {
    Expr::new(ExprKind::Float(v), span)
}

fn constant(e: &Expr) -> Option<f64> {
    match e.kind {
        ExprKind::Float(v) => Some(v),
        _ => None,
    }
}

fn call(f: Intrinsic, args: Vec<Expr>, span: Span) -> Expr {
    Expr::new(ExprKind::Call(f, args), span)
}

fn neg(a: Expr) -> Expr {
    let span = a.span;
    match a.kind {
        ExprKind::Float(v) => float(-v, span),
        ExprKind::Neg(inner) => *inner,
        kind => Expr::new(ExprKind::Neg(Box::new(Expr::new(kind, span))), span),
    }
}

/// `a op b`, folding constants and the identities of 0 and 1.
fn bin(op: Bin, a: Expr, b: Expr) -> Expr {
    let span = a.span;
    match (op, constant(&a), constant(&b)) {
        (Bin::Add, Some(x), Some(y)) => float(x + y, span),
        (Bin::Sub, Some(x), Some(y)) => float(x - y, span),
        (Bin::Mul, Some(x), Some(y)) => float(x * y, span),
        (Bin::Div, Some(x), Some(y)) if y != 0.0 => float(x / y, span),
        (Bin::Add, Some(0.0), _) => b,
        (Bin::Add | Bin::Sub, _, Some(0.0)) => a,
        (Bin::Sub, Some(0.0), _) => neg(b),
        (Bin::Mul, Some(1.0), _) => b,
        (Bin::Mul | Bin::Div, _, Some(1.0)) => a,
        (Bin::Mul, Some(-1.0), _) => neg(b),
        (Bin::Mul | Bin::Div, _, Some(-1.0)) => neg(a),
        // a + (-b) = a - b and a - (-b) = a + b.
        (Bin::Add | Bin::Sub, _, _) if matches!(b.kind, ExprKind::Neg(_)) => {
            let ExprKind::Neg(inner) = b.kind else { unreachable!("matched above") };
            let flipped = if op == Bin::Add { Bin::Sub } else { Bin::Add };
            Expr::new(ExprKind::Binary(flipped, Box::new(a), inner), span)
        }
        _ => Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), span),
    }
}

fn mul(a: Expr, b: Expr) -> Expr {
    bin(Bin::Mul, a, b)
}

/// `Some(a) + Some(b)` with `None` as zero.
fn add_opt(a: Option<Expr>, b: Option<Expr>) -> Option<Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(bin(Bin::Add, a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The derivative of `e` with respect to the parameter variable `p`,
/// `None` for zero; `d[v]` is that of binding `v`.
fn derive(e: &Expr, p: usize, d: &[Option<Expr>]) -> Option<Expr> {
    let span = e.span;
    let de = |x: &Expr| derive(x, p, d);
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Not(_) => None,
        ExprKind::Var(v) if *v == p => Some(float(1.0, span)),
        ExprKind::Var(v) => d.get(*v).cloned().flatten(),
        // Integers, ids, loads and casts are not elementwise: constants here.
        ExprKind::Int(..) | ExprKind::Index(..) | ExprKind::Id(_) | ExprKind::Cast(..) => None,
        ExprKind::Neg(x) => de(x).map(neg),
        ExprKind::Binary(op, a, b) => {
            let (da, db) = (de(a), de(b));
            let (a, b) = (&**a, &**b);
            match op {
                Bin::Add => add_opt(da, db),
                Bin::Sub => add_opt(da, db.map(neg)),
                // (ab)' = a'b + ab'
                Bin::Mul => add_opt(da.map(|da| mul(da, b.clone())), db.map(|db| mul(a.clone(), db))),
                // (a/b)' = a'/b - a b' / b²
                Bin::Div => add_opt(
                    da.map(|da| bin(Bin::Div, da, b.clone())),
                    db.map(|db| neg(bin(Bin::Div, mul(a.clone(), db), mul(b.clone(), b.clone())))),
                ),
                // a % b = a - b * trunc(a / b): the quotient is piecewise constant.
                Bin::Rem => da,
                // Comparisons, logic and bit operations: piecewise constant,
                // or not of floats.
                Bin::Lt
                | Bin::Le
                | Bin::Gt
                | Bin::Ge
                | Bin::Eq
                | Bin::Ne
                | Bin::And
                | Bin::Or
                | Bin::Shl
                | Bin::Shr
                | Bin::BitAnd
                | Bin::BitOr
                | Bin::BitXor => None,
            }
        }
        ExprKind::Call(f, args) => derive_call(*f, args, e, p, d),
        // Σ_i ∂f/∂a_i · a_i': the called kernel's own partials.
        ExprKind::Extern(f, args) => {
            assert!(f.partial.is_none(), "fused groups differentiate once: `{}` has no second derivative", f.name);
            args.iter().enumerate().fold(None, |acc, (i, a)| {
                let partial = Extern { partial: Some(i), ..(**f).clone() };
                let term = de(a).map(|da| mul(Expr::new(ExprKind::Extern(Box::new(partial), args.clone()), span), da));
                add_opt(acc, term)
            })
        }
    }
}

fn derive_call(f: Intrinsic, args: &[Expr], e: &Expr, p: usize, d: &[Option<Expr>]) -> Option<Expr> {
    let span = e.span;
    let de = |x: &Expr| derive(x, p, d);
    let x = &args[0];
    let chain = |outer: Expr| de(x).map(|dx| mul(outer, dx));
    let c = |v: f64| float(v, span);
    let one = |f: Intrinsic, a: &Expr| call(f, vec![a.clone()], span);
    // `a op b` as it stands, a comparison or a logic op (no folding).
    let test =
        |op: Bin, a: &Expr, b: &Expr| Expr::new(ExprKind::Binary(op, Box::new(a.clone()), Box::new(b.clone())), span);
    match f {
        Intrinsic::Exp => chain(e.clone()),
        Intrinsic::Exp2 => chain(mul(e.clone(), c(std::f64::consts::LN_2))),
        Intrinsic::Log => de(x).map(|dx| bin(Bin::Div, dx, x.clone())),
        Intrinsic::Log2 => de(x).map(|dx| bin(Bin::Div, dx, mul(x.clone(), c(std::f64::consts::LN_2)))),
        // sqrt' = 1 / (2 sqrt x)
        Intrinsic::Sqrt => de(x).map(|dx| bin(Bin::Div, dx, mul(c(2.0), e.clone()))),
        // rsqrt' = -rsqrt(x) / (2 x)
        Intrinsic::Rsqrt => chain(neg(bin(Bin::Div, e.clone(), mul(c(2.0), x.clone())))),
        Intrinsic::Tanh => chain(bin(Bin::Sub, c(1.0), mul(e.clone(), e.clone()))),
        // erf' = 2 / sqrt(pi) exp(-x²)
        Intrinsic::Erf => {
            chain(mul(c(std::f64::consts::FRAC_2_SQRT_PI), one(Intrinsic::Exp, &neg(mul(x.clone(), x.clone())))))
        }
        Intrinsic::Sin => chain(one(Intrinsic::Cos, x)),
        Intrinsic::Cos => chain(neg(one(Intrinsic::Sin, x))),
        Intrinsic::Abs => chain(one(Intrinsic::Sign, x)),
        Intrinsic::Sign | Intrinsic::Floor | Intrinsic::Ceil => None,
        // (x^y)' = y x^(y-1) x' + x^y ln(x) y', with PyTorch's zeros where
        // these are NaN: the first term where y = 0 (not 0 x^-1 at x = 0),
        // the second where x = 0 and y >= 0 (not 0 ln 0).
        Intrinsic::Pow => {
            let y = &args[1];
            let lower = call(Intrinsic::Pow, vec![x.clone(), bin(Bin::Sub, y.clone(), c(1.0))], span);
            let by_x = de(x).and_then(|dx| {
                let term = mul(mul(y.clone(), lower), dx);
                match constant(y) {
                    Some(v) if v != 0.0 => Some(term),
                    _ => select(test(Bin::Eq, y, &c(0.0)), None, Some(term), span),
                }
            });
            let by_y = de(y).and_then(|dy| {
                let at_zero = test(Bin::And, &test(Bin::Eq, x, &c(0.0)), &test(Bin::Ge, y, &c(0.0)));
                select(at_zero, None, Some(mul(mul(e.clone(), one(Intrinsic::Log, x)), dy)), span)
            });
            add_opt(by_x, by_y)
        }
        // PyTorch's (`torch.maximum`, and the op table's `grads`): the
        // chosen argument's, half each on a tie, both in full with NaN.
        Intrinsic::Min | Intrinsic::Max => {
            let y = &args[1];
            let (loses, beats) = if f == Intrinsic::Max { (Bin::Lt, Bin::Gt) } else { (Bin::Gt, Bin::Lt) };
            let share = |lost: Expr| {
                let rest = call(Intrinsic::Select, vec![lost, c(0.0), c(1.0)], span);
                call(Intrinsic::Select, vec![test(Bin::Eq, x, y), c(0.5), rest], span)
            };
            let by_x = de(x).map(|dx| mul(share(test(loses, x, y)), dx));
            let by_y = de(y).map(|dy| mul(share(test(beats, x, y)), dy));
            add_opt(by_x, by_y)
        }
        Intrinsic::Clamp => {
            let (lo, hi) = (&args[1], &args[2]);
            let (below, above) = (test(Bin::Lt, x, lo), test(Bin::Gt, x, hi));
            let inner = select(above, de(hi), de(x), span);
            select(below, de(lo), inner, span)
        }
        Intrinsic::Fma => add_opt(
            add_opt(de(x).map(|dx| mul(dx, args[1].clone())), de(&args[1]).map(|db| mul(x.clone(), db))),
            de(&args[2]),
        ),
        Intrinsic::Select => select(args[0].clone(), de(&args[1]), de(&args[2]), span),
    }
}

/// `cond ? a : b` over derivatives, `None` when both are zero.
fn select(cond: Expr, a: Option<Expr>, b: Option<Expr>, span: Span) -> Option<Expr> {
    if a.is_none() && b.is_none() {
        return None;
    }
    let zero = || float(0.0, span);
    Some(call(Intrinsic::Select, vec![cond, a.unwrap_or_else(zero), b.unwrap_or_else(zero)], span))
}

/// Common subexpressions of `k` bound once: every compound expression that
/// occurs twice or more (derivatives repeat the primal's terms) becomes a
/// `let`, emitted before its first use. Only what the result reads stays.
pub fn share_common(k: &Kernel) -> Kernel {
    let mut counts = HashMap::new();
    let live = reachable(k);
    for (_, value) in &live {
        count(value, &mut counts);
    }
    if let Some(r) = &k.result {
        count(r, &mut counts);
    }
    let mut out = Kernel::new(k.name.clone(), k.span, k.workgroup);
    out.home = k.home;
    let mut renamed = HashMap::new();
    for &p in &k.params {
        let v = k.vars[p].clone();
        let new = out.declare(v.name, v.ty, v.kind);
        out.params.push(new);
        renamed.insert(p, new);
    }
    let mut sharer = Sharer { counts, memo: HashMap::new(), renamed, out };
    for (v, value) in live {
        let value = sharer.rebuild(value);
        let old = &k.vars[v];
        let new = sharer.out.declare(old.name.clone(), old.ty, old.kind);
        sharer.out.body.push(Stmt::Let(new, value));
        sharer.renamed.insert(v, new);
    }
    let result = k.result.as_ref().map(|r| sharer.rebuild(r));
    let mut out = sharer.out;
    out.result = result;
    out
}

/// A structural key of an expression (spans ignored).
fn key(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Int(v, t, _) => format!("{v}{}", t.get().name()),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Var(v) => format!("v{v}"),
        ExprKind::Index(v, i) => format!("v{v}[{}]", key(i)),
        ExprKind::Neg(x) => format!("(-{})", key(x)),
        ExprKind::Not(x) => format!("(!{})", key(x)),
        ExprKind::Binary(op, a, b) => format!("({} {} {})", key(a), op.symbol(), key(b)),
        ExprKind::Call(f, args) => format!("{}({})", f.name(), args.iter().map(key).collect::<Vec<_>>().join(",")),
        ExprKind::Extern(f, args) => {
            format!("{}({})", f.wgsl_name(), args.iter().map(key).collect::<Vec<_>>().join(","))
        }
        ExprKind::Id(id) => id.name().to_owned(),
        ExprKind::Cast(x, t) => format!("({} as {})", key(x), t.name()),
    }
}

fn compound(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) | ExprKind::Var(_) | ExprKind::Id(_) => false,
        // Negating a value is as cheap as reading a binding.
        ExprKind::Neg(x) | ExprKind::Not(x) => compound(x),
        ExprKind::Index(..) | ExprKind::Binary(..) | ExprKind::Call(..) | ExprKind::Extern(..) | ExprKind::Cast(..) => {
            true
        }
    }
}

/// The expressions `e` is made of, directly.
fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x, _) | ExprKind::Index(_, x) => vec![x],
        ExprKind::Binary(_, a, b) => vec![a, b],
        ExprKind::Call(_, args) | ExprKind::Extern(_, args) => args.iter().collect(),
        ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) | ExprKind::Var(_) | ExprKind::Id(_) => vec![],
    }
}

fn count(e: &Expr, counts: &mut HashMap<String, usize>) {
    if compound(e) {
        *counts.entry(key(e)).or_default() += 1;
    }
    for c in children(e) {
        count(c, counts);
    }
}

/// The bindings the result reads, directly or through other bindings, in
/// order.
fn reachable(k: &Kernel) -> Vec<(usize, &Expr)> {
    fn visit(e: &Expr, values: &HashMap<usize, &Expr>, seen: &mut Vec<bool>) {
        if let ExprKind::Var(v) = e.kind
            && let Some(value) = values.get(&v).filter(|_| !seen[v])
        {
            seen[v] = true;
            visit(value, values, seen);
        }
        for c in children(e) {
            visit(c, values, seen);
        }
    }
    let values: HashMap<usize, &Expr> = k.bindings().collect();
    let mut seen = vec![false; k.vars.len()];
    if let Some(r) = &k.result {
        visit(r, &values, &mut seen);
    }
    k.bindings().filter(|(v, _)| seen[*v]).collect()
}

struct Sharer {
    counts: HashMap<String, usize>,
    /// Key of a shared expression -> its new binding.
    memo: HashMap<String, usize>,
    /// Old variable -> new variable.
    renamed: HashMap<usize, usize>,
    out: Kernel,
}

impl Sharer {
    fn rebuild(&mut self, e: &Expr) -> Expr {
        let span = e.span;
        let k = key(e);
        if let Some(&v) = self.memo.get(&k) {
            return var(v, span);
        }
        let kind = match &e.kind {
            ExprKind::Var(v) => ExprKind::Var(self.renamed[v]),
            ExprKind::Neg(x) => ExprKind::Neg(Box::new(self.rebuild(x))),
            ExprKind::Not(x) => ExprKind::Not(Box::new(self.rebuild(x))),
            ExprKind::Cast(x, t) => ExprKind::Cast(Box::new(self.rebuild(x)), *t),
            ExprKind::Index(v, i) => ExprKind::Index(self.renamed[v], Box::new(self.rebuild(i))),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, Box::new(self.rebuild(a)), Box::new(self.rebuild(b))),
            ExprKind::Call(f, args) => ExprKind::Call(*f, args.iter().map(|a| self.rebuild(a)).collect()),
            ExprKind::Extern(f, args) => ExprKind::Extern(f.clone(), args.iter().map(|a| self.rebuild(a)).collect()),
            other @ (ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) | ExprKind::Id(_)) => other.clone(),
        };
        let rebuilt = Expr::new(kind, span);
        if compound(e) && self.counts.get(&k).copied().unwrap_or(0) >= 2 {
            let ty = self.out.ty(&rebuilt);
            // Unnamed: printed as `v{index}`.
            let v = self.out.declare("_".into(), ty, Kind::Local { mutable: false });
            self.out.body.push(Stmt::Let(v, rebuilt));
            self.memo.insert(k, v);
            return var(v, span);
        }
        rebuilt
    }
}
