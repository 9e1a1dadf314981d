//! Symbolic partial derivatives of an elementwise kernel, by forward-mode
//! differentiation over its `let` bindings, simplified as they are built
//! (constants folded; zeros and ones of sums and products dropped).

use std::collections::HashMap;

use proc_macro2::Span;

use super::ir::{Bin, ExprIr, ExprKind, Intrinsic, Kernel, Let, Ty, Var};

/// The kernel computing `∂f/∂params[param]`: the original bindings, one
/// binding per non-zero derivative of a binding, and the derivative of the
/// result. `types` are the original bindings' types.
pub fn partial(k: &Kernel, types: &[Ty], param: usize) -> Kernel {
    let mut lets = k.lets.clone();
    // d[i]: the derivative of binding i, as a reference to its own binding.
    let mut d: Vec<Option<ExprIr>> = Vec::with_capacity(k.lets.len());
    for (i, l) in k.lets.iter().enumerate() {
        let di = if types[i] == Ty::F32 { derive(&l.value, param, &d) } else { None };
        d.push(di.map(|e| {
            let span = e.span;
            lets.push(Let { name: format!("d_{}", l.name), value: e });
            var(Var::Let(lets.len() - 1), span)
        }));
    }
    let result = derive(&k.result, param, &d).unwrap_or_else(|| float(0.0, k.result.span));
    Kernel { name: k.name.clone(), span: k.span, params: k.params.clone(), lets, result }
}

fn var(v: Var, span: Span) -> ExprIr {
    ExprIr::new(ExprKind::Var(v), span)
}

fn float(v: f64, span: Span) -> ExprIr {
    ExprIr::new(ExprKind::Float(v), span)
}

fn constant(e: &ExprIr) -> Option<f64> {
    match e.kind {
        ExprKind::Float(v) => Some(v),
        _ => None,
    }
}

fn call(f: Intrinsic, args: Vec<ExprIr>, span: Span) -> ExprIr {
    ExprIr::new(ExprKind::Call(f, args), span)
}

fn neg(a: ExprIr) -> ExprIr {
    let span = a.span;
    match a.kind {
        ExprKind::Float(v) => float(-v, span),
        ExprKind::Neg(inner) => *inner,
        kind => ExprIr::new(ExprKind::Neg(Box::new(ExprIr::new(kind, span))), span),
    }
}

/// `a op b`, folding constants and the identities of 0 and 1.
fn bin(op: Bin, a: ExprIr, b: ExprIr) -> ExprIr {
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
            ExprIr::new(ExprKind::Binary(flipped, Box::new(a), inner), span)
        }
        _ => ExprIr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), span),
    }
}

fn mul(a: ExprIr, b: ExprIr) -> ExprIr {
    bin(Bin::Mul, a, b)
}

/// `Some(a) + Some(b)` with `None` as zero.
fn add_opt(a: Option<ExprIr>, b: Option<ExprIr>) -> Option<ExprIr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(bin(Bin::Add, a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The derivative of `e` with respect to parameter `p`, `None` for zero;
/// `d[i]` is that of binding `i`.
fn derive(e: &ExprIr, p: usize, d: &[Option<ExprIr>]) -> Option<ExprIr> {
    let span = e.span;
    let de = |x: &ExprIr| derive(x, p, d);
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Not(_) => None,
        ExprKind::Var(Var::Param(q)) => (*q == p).then(|| float(1.0, span)),
        ExprKind::Var(Var::Let(i)) => d[*i].clone(),
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
                _ => None,
            }
        }
        ExprKind::Call(f, args) => derive_call(*f, args, e, p, d),
    }
}

fn derive_call(f: Intrinsic, args: &[ExprIr], e: &ExprIr, p: usize, d: &[Option<ExprIr>]) -> Option<ExprIr> {
    let span = e.span;
    let de = |x: &ExprIr| derive(x, p, d);
    let x = &args[0];
    let chain = |outer: ExprIr| de(x).map(|dx| mul(outer, dx));
    let c = |v: f64| float(v, span);
    let one = |f: Intrinsic, a: &ExprIr| call(f, vec![a.clone()], span);
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
        Intrinsic::Sin => chain(one(Intrinsic::Cos, x)),
        Intrinsic::Cos => chain(neg(one(Intrinsic::Sin, x))),
        Intrinsic::Abs => chain(one(Intrinsic::Sign, x)),
        Intrinsic::Sign | Intrinsic::Floor | Intrinsic::Ceil => None,
        // (x^y)' = y x^(y-1) x' + x^y ln(x) y'
        Intrinsic::Pow => {
            let y = &args[1];
            let lower = call(Intrinsic::Pow, vec![x.clone(), bin(Bin::Sub, y.clone(), c(1.0))], span);
            let by_x = de(x).map(|dx| mul(mul(y.clone(), lower), dx));
            let by_y = de(y).map(|dy| mul(mul(e.clone(), one(Intrinsic::Log, x)), dy));
            add_opt(by_x, by_y)
        }
        // The derivative follows the chosen argument (the first on ties).
        Intrinsic::Min | Intrinsic::Max => {
            let op = if f == Intrinsic::Min { Bin::Le } else { Bin::Ge };
            let cond = ExprIr::new(ExprKind::Binary(op, Box::new(x.clone()), Box::new(args[1].clone())), span);
            select(cond, de(x), de(&args[1]), span)
        }
        Intrinsic::Clamp => {
            let (lo, hi) = (&args[1], &args[2]);
            let below = ExprIr::new(ExprKind::Binary(Bin::Lt, Box::new(x.clone()), Box::new(lo.clone())), span);
            let above = ExprIr::new(ExprKind::Binary(Bin::Gt, Box::new(x.clone()), Box::new(hi.clone())), span);
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
fn select(cond: ExprIr, a: Option<ExprIr>, b: Option<ExprIr>, span: Span) -> Option<ExprIr> {
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
    for &i in &live {
        count(&k.lets[i].value, &mut counts);
    }
    count(&k.result, &mut counts);
    let mut out = Sharer { counts, memo: HashMap::new(), renamed: HashMap::new(), lets: Vec::new(), kernel: k };
    for &i in &live {
        let value = out.rebuild(&k.lets[i].value);
        let key = out.lets.len();
        out.lets.push(Let { name: k.lets[i].name.clone(), value });
        out.renamed.insert(i, key);
    }
    let result = out.rebuild(&k.result);
    Kernel { name: k.name.clone(), span: k.span, params: k.params.clone(), lets: out.lets, result }
}

/// A structural key of an expression (spans ignored).
fn key(e: &ExprIr) -> String {
    match &e.kind {
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Var(Var::Param(i)) => format!("p{i}"),
        ExprKind::Var(Var::Let(i)) => format!("l{i}"),
        ExprKind::Neg(x) => format!("(-{})", key(x)),
        ExprKind::Not(x) => format!("(!{})", key(x)),
        ExprKind::Binary(op, a, b) => format!("({} {} {})", key(a), op.symbol(), key(b)),
        ExprKind::Call(f, args) => format!("{}({})", f.name(), args.iter().map(key).collect::<Vec<_>>().join(",")),
    }
}

fn compound(e: &ExprIr) -> bool {
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Var(_) => false,
        // Negating a value is as cheap as reading a binding.
        ExprKind::Neg(x) | ExprKind::Not(x) => compound(x),
        _ => true,
    }
}

fn count(e: &ExprIr, counts: &mut HashMap<String, usize>) {
    if compound(e) {
        *counts.entry(key(e)).or_default() += 1;
    }
    match &e.kind {
        ExprKind::Neg(x) | ExprKind::Not(x) => count(x, counts),
        ExprKind::Binary(_, a, b) => {
            count(a, counts);
            count(b, counts);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| count(a, counts)),
        _ => {}
    }
}

/// The bindings the result reads, directly or through other bindings.
fn reachable(k: &Kernel) -> Vec<usize> {
    fn visit(e: &ExprIr, k: &Kernel, seen: &mut Vec<bool>) {
        match &e.kind {
            ExprKind::Var(Var::Let(i)) if !seen[*i] => {
                seen[*i] = true;
                visit(&k.lets[*i].value, k, seen);
            }
            ExprKind::Neg(x) | ExprKind::Not(x) => visit(x, k, seen),
            ExprKind::Binary(_, a, b) => {
                visit(a, k, seen);
                visit(b, k, seen);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| visit(a, k, seen)),
            _ => {}
        }
    }
    let mut seen = vec![false; k.lets.len()];
    visit(&k.result, k, &mut seen);
    (0..k.lets.len()).filter(|&i| seen[i]).collect()
}

struct Sharer<'k> {
    counts: HashMap<String, usize>,
    /// Key of a shared expression -> its new binding.
    memo: HashMap<String, usize>,
    /// Old binding -> new binding.
    renamed: HashMap<usize, usize>,
    lets: Vec<Let>,
    kernel: &'k Kernel,
}

impl Sharer<'_> {
    fn rebuild(&mut self, e: &ExprIr) -> ExprIr {
        let span = e.span;
        let k = key(e);
        if let Some(&i) = self.memo.get(&k) {
            return var(Var::Let(i), span);
        }
        let kind = match &e.kind {
            ExprKind::Var(Var::Let(i)) => ExprKind::Var(Var::Let(self.renamed[i])),
            ExprKind::Neg(x) => ExprKind::Neg(Box::new(self.rebuild(x))),
            ExprKind::Not(x) => ExprKind::Not(Box::new(self.rebuild(x))),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, Box::new(self.rebuild(a)), Box::new(self.rebuild(b))),
            ExprKind::Call(f, args) => ExprKind::Call(*f, args.iter().map(|a| self.rebuild(a)).collect()),
            other => other.clone(),
        };
        let rebuilt = ExprIr::new(kind, span);
        if compound(e) && self.counts.get(&k).copied().unwrap_or(0) >= 2 {
            let i = self.lets.len();
            self.lets.push(Let { name: format!("{}_{i}", self.kernel.name), value: rebuilt });
            self.memo.insert(k, i);
            return var(Var::Let(i), span);
        }
        rebuilt
    }
}
