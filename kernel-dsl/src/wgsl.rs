//! WGSL that both kernel forms share: the expression printer (variables,
//! literals, operators, intrinsic calls, casts), the naga check, and the
//! helper functions that pin down what WGSL leaves to the adapter.
//!
//! WGSL defines integer division by zero, shifts by 32 or more and
//! float-to-int conversion, but naga's GLSL output passes `/`, `%`, `<<`
//! and `int(x)` through to GLSL, where negative operands, zero divisors,
//! large shifts and out-of-range floats are undefined (Mesa's GL driver
//! computes `-7 % 5` as an unsigned remainder). WGSL's `max` and `min`
//! may drop a NaN on any backend. So the generated code never relies on
//! those operators where they are undefined: it calls helpers written only
//! with operations every backend defines, and the CPU code computes the
//! same values. Helpers are emitted once per kernel, named after it, so
//! the WGSL of several kernels can share one shader.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::ir::{Bin, Expr, ExprKind, Id, Intrinsic, Kernel, Kind, Ty};

/// A helper function a kernel's WGSL calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Helper {
    IsNan,
    Max,
    Min,
    Clamp,
    DivI32,
    RemI32,
    DivU32,
    RemU32,
    RemF32,
    F32ToI32,
    F32ToU32,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Erf,
    Tanh,
    Pow,
}

impl Helper {
    fn suffix(self) -> &'static str {
        match self {
            Helper::IsNan => "isnan",
            Helper::Max => "max",
            Helper::Min => "min",
            Helper::Clamp => "clamp",
            Helper::DivI32 => "div_i32",
            Helper::RemI32 => "rem_i32",
            Helper::DivU32 => "div_u32",
            Helper::RemU32 => "rem_u32",
            Helper::RemF32 => "rem_f32",
            Helper::F32ToI32 => "f32_to_i32",
            Helper::F32ToU32 => "f32_to_u32",
            Helper::Lt => "lt",
            Helper::Le => "le",
            Helper::Gt => "gt",
            Helper::Ge => "ge",
            Helper::Eq => "eq",
            Helper::Ne => "ne",
            Helper::Erf => "erf",
            Helper::Tanh => "tanh",
            Helper::Pow => "pow",
        }
    }

    /// Helpers this one calls.
    fn needs(self) -> &'static [Helper] {
        match self {
            Helper::Max
            | Helper::Min
            | Helper::F32ToI32
            | Helper::F32ToU32
            | Helper::Lt
            | Helper::Le
            | Helper::Gt
            | Helper::Ge
            | Helper::Eq
            | Helper::Ne
            | Helper::Erf
            | Helper::Pow => &[Helper::IsNan],
            Helper::Clamp => &[Helper::Max, Helper::Min],
            Helper::IsNan
            | Helper::DivI32
            | Helper::RemI32
            | Helper::DivU32
            | Helper::RemU32
            | Helper::RemF32
            | Helper::Tanh => &[],
        }
    }

    /// The body, with `P` standing for the kernel's prefix.
    fn body(self) -> &'static str {
        match self {
            // A bit test: comparisons with NaN may be folded away.
            Helper::IsNan => "fn P_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
            // NaN in, NaN out (as PyTorch's maximum and minimum).
            Helper::Max => {
                "fn P_max(a: f32, b: f32) -> f32 { return select(max(a, b), a + b, P_isnan(a) || P_isnan(b)); }"
            }
            Helper::Min => {
                "fn P_min(a: f32, b: f32) -> f32 { return select(min(a, b), a + b, P_isnan(a) || P_isnan(b)); }"
            }
            Helper::Clamp => "fn P_clamp(x: f32, lo: f32, hi: f32) -> f32 { return P_min(P_max(x, lo), hi); }",
            // Toward zero on the magnitudes, which unsigned division defines
            // everywhere; a / 0 = a, and MIN / -1 = MIN by wrapping.
            Helper::DivI32 => {
                "fn P_div_i32(a: i32, b: i32) -> i32 {\n    if (b == 0i) { return a; }\n    \
                 let ua = select(u32(a), 0u - u32(a), a < 0i);\n    \
                 let ub = select(u32(b), 0u - u32(b), b < 0i);\n    let q = ua / ub;\n    \
                 return select(i32(q), i32(0u - q), (a < 0i) != (b < 0i));\n}"
            }
            // The sign of the dividend; a % 0 = 0.
            Helper::RemI32 => {
                "fn P_rem_i32(a: i32, b: i32) -> i32 {\n    if (b == 0i) { return 0i; }\n    \
                 let ua = select(u32(a), 0u - u32(a), a < 0i);\n    \
                 let ub = select(u32(b), 0u - u32(b), b < 0i);\n    let r = ua % ub;\n    \
                 return select(i32(r), i32(0u - r), a < 0i);\n}"
            }
            Helper::DivU32 => "fn P_div_u32(a: u32, b: u32) -> u32 { return select(a / max(b, 1u), a, b == 0u); }",
            Helper::RemU32 => "fn P_rem_u32(a: u32, b: u32) -> u32 { return select(a % max(b, 1u), 0u, b == 0u); }",
            // WGSL's definition, which SPIR-V's `OpFRem` and MSL's `fmod`
            // need not follow at infinities.
            Helper::RemF32 => "fn P_rem_f32(a: f32, b: f32) -> f32 { return a - b * trunc(a / b); }",
            // WGSL lets a compiler assume no NaN (Mesa's Vulkan driver
            // compiles `a != a` to false): NaN is decided by the bits, and
            // every comparison with it is false but `!=`, as on the CPU.
            Helper::Lt => "fn P_lt(a: f32, b: f32) -> bool { return a < b && !P_isnan(a) && !P_isnan(b); }",
            Helper::Le => "fn P_le(a: f32, b: f32) -> bool { return a <= b && !P_isnan(a) && !P_isnan(b); }",
            Helper::Gt => "fn P_gt(a: f32, b: f32) -> bool { return a > b && !P_isnan(a) && !P_isnan(b); }",
            Helper::Ge => "fn P_ge(a: f32, b: f32) -> bool { return a >= b && !P_isnan(a) && !P_isnan(b); }",
            Helper::Eq => "fn P_eq(a: f32, b: f32) -> bool { return a == b && !P_isnan(a) && !P_isnan(b); }",
            Helper::Ne => "fn P_ne(a: f32, b: f32) -> bool { return a != b || P_isnan(a) || P_isnan(b); }",
            // As Rust's `as`: toward zero, saturating, NaN to 0.
            Helper::F32ToI32 => {
                "fn P_f32_to_i32(x: f32) -> i32 {\n    if (P_isnan(x)) { return 0i; }\n    \
                 if (x >= 2147483648.0) { return 2147483647i; }\n    \
                 if (x <= -2147483648.0) { return -2147483647i - 1i; }\n    return i32(x);\n}"
            }
            // WGSL has no erf: the rational approximation the CPU runs in
            // f32 (`blaze_runtime::math::erf_f32`, which fuses its
            // multiply-adds), NaN kept.
            Helper::Erf => {
                "fn P_erf(x0: f32) -> f32 {\n    if (P_isnan(x0)) { return x0; }\n    \
                 let x = clamp(x0, -4.0, 4.0);\n    let x2 = x * x;\n    \
                 var p = -2.7261423e-10;\n    p = p * x2 + 2.7706814e-8;\n    p = p * x2 - 2.101024e-6;\n    \
                 p = p * x2 - 5.6925064e-5;\n    p = p * x2 - 7.3499063e-4;\n    p = p * x2 - 2.9546001e-3;\n    \
                 p = p * x2 - 1.6096033e-2;\n    var q = -1.4566072e-5;\n    q = q * x2 - 2.1337406e-4;\n    \
                 q = q * x2 - 1.682827e-3;\n    q = q * x2 - 7.373329e-3;\n    q = q * x2 - 1.426474e-2;\n    \
                 return select(x * p / q, sign(x), abs(x) >= 3.9);\n}"
            }
            // From one exponential of a non-positive number: WGSL's `tanh`
            // may be `sinh / cosh`, which is inf / inf past |x| ≈ 89.
            Helper::Tanh => {
                "fn P_tanh(x: f32) -> f32 {\n    let e = exp(-2.0 * abs(x));\n    \
                 let t = (1.0 - e) / (1.0 + e);\n    return select(-t, t, x >= 0.0);\n}"
            }
            // C's `pow`, as the CPU computes it: WGSL's is undefined for a
            // negative base, and a compiler may assume no NaN or infinity,
            // so those cases are decided by the bits first. `x^0` and
            // `1^y` are 1 even for NaN; a negative base to an integer power
            // keeps its sign, to any other is NaN.
            Helper::Pow => {
                "fn P_pow(a: f32, b: f32) -> f32 {\n    \
                 if (b == 0.0 || a == 1.0) { return 1.0; }\n    \
                 if (P_isnan(a) || P_isnan(b)) { return bitcast<f32>(0x7fc00000u); }\n    \
                 let inf = bitcast<f32>(0x7f800000u);\n    \
                 let ua = bitcast<u32>(a) & 0x7fffffffu;\n    let ub = bitcast<u32>(b) & 0x7fffffffu;\n    \
                 let negative = (bitcast<u32>(a) >> 31u) == 1u;\n    \
                 let integer = ub >= 0x4b000000u || b == floor(b);\n    \
                 let odd = ub < 0x4b800000u && b == floor(b) && abs(b - 2.0 * floor(b * 0.5)) == 1.0;\n    \
                 if (ub == 0x7f800000u) {\n        if (ua == 0x3f800000u) { return 1.0; }\n        \
                 return select(0.0, inf, (ua > 0x3f800000u) == (b > 0.0));\n    }\n    \
                 if (ua == 0u || ua == 0x7f800000u) {\n        \
                 let m = select(0.0, inf, (ua == 0u) == (b < 0.0));\n        return select(m, -m, negative && odd);\n    }\n    \
                 let r = pow(abs(a), b);\n    if (!negative) { return r; }\n    \
                 if (!integer) { return bitcast<f32>(0x7fc00000u); }\n    return select(r, -r, odd);\n}"
            }
            Helper::F32ToU32 => {
                "fn P_f32_to_u32(x: f32) -> u32 {\n    if (P_isnan(x) || x <= 0.0) { return 0u; }\n    \
                 if (x >= 4294967296.0) { return 4294967295u; }\n    return u32(x);\n}"
            }
        }
    }
}

/// The WGSL text of a kernel in the making, and the helpers it calls.
#[derive(Debug)]
pub struct Wgsl {
    /// Prefix of the helpers' names: the kernel's name.
    prefix: String,
    /// The text so far.
    pub out: String,
    used: BTreeSet<Helper>,
}

impl Wgsl {
    pub fn new(kernel: &str) -> Self {
        Wgsl { prefix: kernel.to_owned(), out: String::new(), used: BTreeSet::new() }
    }

    /// Writes the name of helper `h` (to be called) and records its use.
    pub fn helper(&mut self, h: Helper) {
        let _ = write!(self.out, "{}__{}", self.prefix, h.suffix());
        self.used.insert(h);
    }

    /// The helpers' definitions, callees first, then the text.
    pub fn finish(self) -> String {
        let mut all = BTreeSet::new();
        let mut stack: Vec<Helper> = self.used.iter().copied().collect();
        while let Some(h) = stack.pop() {
            if all.insert(h) {
                stack.extend_from_slice(h.needs());
            }
        }
        let mut s = String::new();
        // `IsNan` sorts first, `Clamp` after `Max` and `Min`: callees lead.
        for h in all {
            s += &h.body().replace("P_", &format!("{}__", self.prefix));
            s.push('\n');
        }
        if !s.is_empty() {
            s.push('\n');
        }
        s + &self.out
    }

    /// `a op b`, through a helper where `op` compares floats.
    pub fn binary(&mut self, op: Bin, float: bool, a: impl FnOnce(&mut Self), b: impl FnOnce(&mut Self)) {
        // On floats, comparisons decide NaN by its bits and `%` is Rust's;
        // the other operators are WGSL's own.
        let helper = match op {
            Bin::Lt => Some(Helper::Lt),
            Bin::Le => Some(Helper::Le),
            Bin::Gt => Some(Helper::Gt),
            Bin::Ge => Some(Helper::Ge),
            Bin::Eq => Some(Helper::Eq),
            Bin::Ne => Some(Helper::Ne),
            Bin::Rem => Some(Helper::RemF32),
            Bin::Add
            | Bin::Sub
            | Bin::Mul
            | Bin::Div
            | Bin::And
            | Bin::Or
            | Bin::Shl
            | Bin::Shr
            | Bin::BitAnd
            | Bin::BitOr
            | Bin::BitXor => None,
        };
        if let (true, Some(helper)) = (float, helper) {
            self.helper(helper);
            self.out.push('(');
            a(self);
            self.out.push_str(", ");
            b(self);
            self.out.push(')');
        } else {
            self.out.push('(');
            a(self);
            self.out.push_str(&format!(" {} ", op.symbol()));
            b(self);
            self.out.push(')');
        }
    }

    pub fn push(&mut self, c: char) {
        self.out.push(c);
    }

    pub fn push_str(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// A float literal. Rust prints `1.0`, `0.5`, `1e-7`: all WGSL float
    /// literals; the suffix guards the integral case.
    pub fn float(&mut self, v: f64) {
        let text = format!("{v:?}");
        self.out.push_str(&text);
        if !text.contains(['.', 'e']) {
            self.out.push_str(".0");
        }
    }

    /// A call of intrinsic `f`, `arg(i, self)` printing argument `i`. The
    /// DSL's `select(cond, if_true, if_false)` is WGSL's
    /// `select(if_false, if_true, cond)`, `rsqrt` is `inverseSqrt`, and
    /// `min`, `max` and `clamp` are helpers that keep NaN.
    pub fn call(&mut self, f: Intrinsic, mut arg: impl FnMut(usize, &mut Self)) {
        let order: &[usize] = match f {
            Intrinsic::Select => {
                self.out.push_str("select");
                &[2, 1, 0]
            }
            Intrinsic::Rsqrt => {
                self.out.push_str("inverseSqrt");
                &[0]
            }
            Intrinsic::Erf => {
                self.helper(Helper::Erf);
                &[0]
            }
            Intrinsic::Tanh => {
                self.helper(Helper::Tanh);
                &[0]
            }
            Intrinsic::Pow => {
                self.helper(Helper::Pow);
                &[0, 1]
            }
            Intrinsic::Min => {
                self.helper(Helper::Min);
                &[0, 1]
            }
            Intrinsic::Max => {
                self.helper(Helper::Max);
                &[0, 1]
            }
            Intrinsic::Clamp => {
                self.helper(Helper::Clamp);
                &[0, 1, 2]
            }
            // WGSL's builtins of the same name and arguments.
            Intrinsic::Exp
            | Intrinsic::Exp2
            | Intrinsic::Log
            | Intrinsic::Log2
            | Intrinsic::Sqrt
            | Intrinsic::Sin
            | Intrinsic::Cos
            | Intrinsic::Abs
            | Intrinsic::Sign
            | Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Fma => {
                self.out.push_str(f.name());
                &[0, 1, 2][..f.arity()]
            }
        };
        self.out.push('(');
        for (n, &i) in order.iter().enumerate() {
            if n > 0 {
                self.out.push_str(", ");
            }
            arg(i, self);
        }
        self.out.push(')');
    }
}

/// A variable's WGSL name: the Rust name with its id, so no WGSL keyword or
/// builtin can clash with it; a general kernel's scalars are fields of its
/// uniform `params`.
pub fn name(k: &Kernel, v: usize) -> String {
    if let Kind::Scalar { index } = k.vars[v].kind {
        return format!("params.s{index}");
    }
    let name = crate::plain(&k.vars[v].name);
    if name.starts_with('_') { format!("v{v}") } else { format!("{name}_{v}") }
}

/// WGSL for an expression of either kernel form.
pub fn expr(k: &Kernel, e: &Expr, out: &mut Wgsl) {
    match &e.kind {
        ExprKind::Float(v) => out.float(*v),
        ExprKind::Int(v, ty, _) => match ty.get() {
            // -2^31 has no positive literal: write it as an expression.
            Ty::I32 if *v == 1 << 31 => out.push_str("(-2147483647i - 1i)"),
            Ty::I32 => out.push_str(&format!("{v}i")),
            _ => out.push_str(&format!("{v}u")),
        },
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Var(v) => out.push_str(&name(k, *v)),
        ExprKind::Index(v, i) => {
            out.push_str(&format!("{}[", name(k, *v)));
            expr(k, i, out);
            out.push(']');
        }
        ExprKind::Neg(x) | ExprKind::Not(x) => {
            out.push_str(if matches!(e.kind, ExprKind::Neg(_)) { "(-" } else { "(!" });
            expr(k, x, out);
            out.push(')');
        }
        // u32 by a non-zero literal is defined everywhere: no helper.
        ExprKind::Binary(op @ (Bin::Div | Bin::Rem), a, b)
            if k.ty(a) == Ty::U32 && matches!(b.kind, ExprKind::Int(v, _, _) if v > 0) =>
        {
            out.push('(');
            expr(k, a, out);
            out.push_str(&format!(" {} ", op.symbol()));
            expr(k, b, out);
            out.push(')');
        }
        ExprKind::Binary(op, a, b) => binary(*op, k.ty(a), out, |out| expr(k, a, out), |out| expr(k, b, out)),
        ExprKind::Call(f, args) => out.call(*f, |i, out| expr(k, &args[i], out)),
        // The called kernel's function, compiled before this one (its
        // `Elementwise::DEPS`).
        ExprKind::Extern(f, args) => {
            out.push_str(&format!("{}(", f.wgsl_name()));
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(k, a, out);
            }
            out.push(')');
        }
        ExprKind::Id(id) => out.push_str(match id {
            Id::Global => "gid.x",
            Id::Local => "lid.x",
            Id::Workgroup => "wid.x",
            Id::Workgroups => "nwg.x",
        }),
        ExprKind::Cast(x, t) => {
            match (k.ty(x), t) {
                (Ty::F32, Ty::I32) => out.helper(Helper::F32ToI32),
                (Ty::F32, Ty::U32) => out.helper(Helper::F32ToU32),
                _ => out.push_str(t.name()),
            }
            out.push('(');
            expr(k, x, out);
            out.push(')');
        }
    }
}

/// Whether `a op= b`, `a` of type `ty`, is written other than `a op= b`.
pub fn needs_helper(op: Bin, ty: Ty) -> bool {
    matches!((op, ty), (Bin::Div, Ty::I32 | Ty::U32) | (Bin::Rem, _) | (Bin::Shl | Bin::Shr, _))
}

/// `a op b` in WGSL, with `a` of type `ty`: integer division and remainder
/// through helpers that define them on every backend, shift amounts masked
/// to five bits as WGSL defines (GLSL leaves larger shifts undefined).
pub fn binary(op: Bin, ty: Ty, out: &mut Wgsl, a: impl FnOnce(&mut Wgsl), b: impl FnOnce(&mut Wgsl)) {
    let helper = match (op, ty) {
        (Bin::Div, Ty::I32) => Some(Helper::DivI32),
        (Bin::Rem, Ty::I32) => Some(Helper::RemI32),
        (Bin::Div, Ty::U32) => Some(Helper::DivU32),
        (Bin::Rem, Ty::U32) => Some(Helper::RemU32),
        _ => None,
    };
    if let Some(h) = helper {
        out.helper(h);
        out.push('(');
        a(out);
        out.push_str(", ");
        b(out);
        out.push(')');
        return;
    }
    if !matches!(op, Bin::Shl | Bin::Shr) {
        // Float comparisons and remainder take helpers there.
        out.binary(op, ty == Ty::F32, a, b);
        return;
    }
    out.push('(');
    a(out);
    out.push_str(&format!(" {} ", op.symbol()));
    if matches!(op, Bin::Shl | Bin::Shr) {
        out.push_str("(u32(");
        b(out);
        out.push_str(") & 31u)");
    } else {
        b(out);
    }
    out.push(')');
}

/// Validates WGSL with naga: the text of any error.
pub fn validate(wgsl: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty());
    validator.validate(&module).map(|_| ()).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_helper_validates_with_its_callees() {
        let all = [
            Helper::IsNan,
            Helper::Max,
            Helper::Min,
            Helper::Clamp,
            Helper::DivI32,
            Helper::RemI32,
            Helper::DivU32,
            Helper::RemU32,
            Helper::RemF32,
            Helper::F32ToI32,
            Helper::F32ToU32,
            Helper::Lt,
            Helper::Le,
            Helper::Gt,
            Helper::Ge,
            Helper::Eq,
            Helper::Ne,
            Helper::Erf,
            Helper::Tanh,
            Helper::Pow,
        ];
        for h in all {
            let mut w = Wgsl::new("k");
            w.push_str("fn use_it() { let f = &");
            w.helper(h);
            w.push_str("; }\n");
            // A function's name is not a value in WGSL: validate the
            // definitions alone, which must include every callee.
            let text = w.finish();
            let defs = text.split("fn use_it").next().unwrap_or_default();
            validate(defs).unwrap_or_else(|e| panic!("{h:?}: {e}\n{defs}"));
            assert!(defs.contains(&format!("fn k__{}(", h.suffix())), "{defs}");
        }
    }
}
