//! The one checker of both kernel forms: types (settling unsuffixed
//! literals), writes to inputs, a uniformity analysis for barriers in
//! divergent control flow, and an elementwise kernel's result. A mismatch
//! is an error at the offending expression; messages name only the types
//! the kernel's form has (elementwise kernels compute in f32).

use proc_macro2::Span;

use super::ir::{Bin, Expr, ExprKind, Id, Intrinsic, Kernel, Kind, Stmt, Ty};
use crate::errors::Errors;

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

/// Types `k`, recording each local's type; reports every type error, and
/// for a general kernel barriers in divergent control flow. True if `k`
/// checked without errors.
pub fn check(k: &mut Kernel, errors: &mut Errors) -> bool {
    let before = errors.len();
    let body = std::mem::take(&mut k.body);
    let result = k.result.take();
    let mut check = Check { k, errors };
    check.block(&body);
    if let Some(result) = &result {
        match check.ty(result) {
            Some(Ty::F32) | None => {}
            Some(t) => {
                check.mismatch(result.span, format!("the kernel returns f32, this is {}", t.name()));
            }
        }
    }
    if !check.k.is_elementwise() {
        check.uniformity(&body);
        check.barriers(&body, None);
    }
    k.body = body;
    k.result = result;
    errors.len() == before
}

/// Gives an unsuffixed integer literal the integer type `ty`; true if `e`
/// is one (and so now has that type).
fn settle(e: &Expr, ty: Ty) -> bool {
    match &e.kind {
        ExprKind::Int(_, t, true) if ty.int() => {
            t.set(ty);
            true
        }
        _ => false,
    }
}

struct Check<'a> {
    k: &'a mut Kernel,
    errors: &'a mut Errors,
}

impl<'a> Check<'a> {
    fn mismatch(&mut self, span: Span, msg: String) -> Option<Ty> {
        self.errors.push(err(span, format!("type mismatch: {msg}")));
        None
    }

    fn ty(&mut self, e: &Expr) -> Option<Ty> {
        match &e.kind {
            ExprKind::Float(_) => Some(Ty::F32),
            ExprKind::Int(_, ty, _) => Some(ty.get()),
            ExprKind::Id(_) => Some(Ty::U32),
            ExprKind::Bool(_) => Some(Ty::Bool),
            ExprKind::Var(v) => {
                let var = &self.k.vars[*v];
                match var.kind {
                    Kind::Buffer { .. } | Kind::Shared { .. } => {
                        let msg = format!("`{}` is an array: index it, `{}[i]`", var.name, var.name);
                        self.errors.push(err(e.span, msg));
                        None
                    }
                    _ => Some(var.ty),
                }
            }
            ExprKind::Index(v, i) => {
                let var = self.k.vars[*v].clone();
                if !matches!(var.kind, Kind::Buffer { .. } | Kind::Shared { .. }) {
                    self.errors.push(err(e.span, format!("`{}` is not a buffer or shared array", var.name)));
                    return None;
                }
                match self.ty(i)? {
                    Ty::U32 => Some(Ty::F32),
                    t => self.mismatch(i.span, format!("an index is u32, found {}", t.name())),
                }
            }
            ExprKind::Neg(x) => {
                settle(x, Ty::I32);
                match self.ty(x)? {
                    t @ (Ty::F32 | Ty::I32) => Some(t),
                    t => {
                        let takes = if self.k.is_elementwise() { "f32" } else { "f32 or i32" };
                        self.mismatch(e.span, format!("`-` takes {takes}, found {}", t.name()))
                    }
                }
            }
            ExprKind::Not(x) => match self.ty(x)? {
                Ty::Bool => Some(Ty::Bool),
                t => self.mismatch(e.span, format!("`!` takes bool, found {}", t.name())),
            },
            ExprKind::Binary(op, a, b) => {
                let (l, r) = (self.ty(a), self.ty(b));
                self.binary(*op, (a, l?), (b, r?), e.span)
            }
            ExprKind::Extern(f, args) => {
                let tys: Vec<Option<Ty>> = args.iter().map(|a| self.ty(a)).collect();
                let tys: Vec<Ty> = tys.into_iter().collect::<Option<_>>()?;
                match tys.iter().position(|t| *t != Ty::F32) {
                    None => Some(Ty::F32),
                    Some(i) => self.mismatch(
                        args[i].span,
                        format!("`{}` takes f32 arguments, argument {} is {}", f.name, i + 1, tys[i].name()),
                    ),
                }
            }
            ExprKind::Call(f, args) => {
                let tys: Vec<Option<Ty>> = args.iter().map(|a| self.ty(a)).collect();
                let tys: Vec<Ty> = tys.into_iter().collect::<Option<_>>()?;
                if *f == Intrinsic::Select {
                    return match (tys[0], tys[1], tys[2]) {
                        (Ty::Bool, a, b) if a == b => Some(a),
                        (Ty::Bool, a, b) => self.mismatch(
                            e.span,
                            format!("the branches of a select or `if` differ: {} and {}", a.name(), b.name()),
                        ),
                        (c, _, _) => self.mismatch(e.span, format!("a condition is bool, found {}", c.name())),
                    };
                }
                match tys.iter().position(|t| *t != Ty::F32) {
                    None => Some(Ty::F32),
                    Some(i) => self.mismatch(
                        args[i].span,
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
            ExprKind::Cast(x, to) => match self.ty(x)? {
                Ty::Bool => self.mismatch(x.span, "casts take f32, u32 or i32".into()),
                _ => Some(*to),
            },
        }
    }

    /// The type of `a op b`, given the operands' types.
    fn binary(&mut self, op: Bin, (a, mut l): (&Expr, Ty), (b, mut r): (&Expr, Ty), span: Span) -> Option<Ty> {
        let s = op.symbol();
        if self.k.is_elementwise() {
            return self.elementwise_binary(op, l, r, span);
        }
        if matches!(op, Bin::Shl | Bin::Shr) {
            // Any integer amount; only its low five bits count, as in WGSL.
            if !l.int() {
                return self.mismatch(a.span, format!("`{s}` shifts u32 or i32, found {}", l.name()));
            }
            if !r.int() {
                return self.mismatch(b.span, format!("a shift amount is u32 or i32, found {}", r.name()));
            }
            return Some(l);
        }
        // An unsuffixed literal takes the other operand's integer type.
        if l != r && r == Ty::I32 && settle(a, Ty::I32) {
            l = Ty::I32;
        }
        if l != r && l == Ty::I32 && settle(b, Ty::I32) {
            r = Ty::I32;
        }
        if op.is_logic() {
            return match (l, r) {
                (Ty::Bool, Ty::Bool) => Some(Ty::Bool),
                _ => self.mismatch(span, format!("`{s}` takes bool operands, found {} and {}", l.name(), r.name())),
            };
        }
        if op.is_bitwise() && (l != r || !l.int()) {
            return self.mismatch(
                span,
                format!("`{s}` takes two integers of one type (u32 or i32), found {} and {}", l.name(), r.name()),
            );
        }
        if l != r || l == Ty::Bool && op.is_arithmetic() {
            return self.mismatch(
                span,
                format!("`{s}` takes two values of one type (f32, u32 or i32), found {} and {}", l.name(), r.name()),
            );
        }
        if l == Ty::Bool && op.is_ordering() {
            return self.mismatch(span, format!("`{s}` compares f32, u32 or i32 values, found bool and bool"));
        }
        Some(if op.is_arithmetic() || op.is_bitwise() { l } else { Ty::Bool })
    }

    /// `a op b` where values are f32 or bool.
    fn elementwise_binary(&mut self, op: Bin, l: Ty, r: Ty, span: Span) -> Option<Ty> {
        let s = op.symbol();
        let (ln, rn) = (l.name(), r.name());
        if op.is_bitwise() {
            let msg =
                format!("`{s}` takes integers; elementwise kernels compute in f32 (general kernels have u32 and i32)");
            return self.mismatch(span, msg);
        }
        if op.is_logic() {
            return match (l, r) {
                (Ty::Bool, Ty::Bool) => Some(Ty::Bool),
                _ => self.mismatch(span, format!("`{s}` takes bool operands, found {ln} and {rn}")),
            };
        }
        if op.is_arithmetic() {
            return match (l, r) {
                (Ty::F32, Ty::F32) => Some(Ty::F32),
                _ => self.mismatch(span, format!("`{s}` takes f32 operands, found {ln} and {rn}")),
            };
        }
        match (op, l, r) {
            (Bin::Eq | Bin::Ne, _, _) if l == r => Some(Ty::Bool),
            (_, Ty::F32, Ty::F32) => Some(Ty::Bool),
            _ => self.mismatch(span, format!("`{s}` compares f32 values, found {ln} and {rn}")),
        }
    }

    fn block(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let(v, value) => {
                if let Some(t) = self.ty(value) {
                    self.k.vars[*v].ty = t;
                }
            }
            Stmt::Barrier(..) => {}
            Stmt::Assign(v, index, op, value, span) => {
                let var = self.k.vars[*v].clone();
                let vt = self.ty(value);
                match (var.kind, index) {
                    (Kind::Buffer { output: false, .. }, Some(_)) => self.errors.push(err(
                        *span,
                        format!(
                            "`{}` is an input (`&[f32]`): a kernel writes only `&mut [f32]` buffers and shared arrays",
                            var.name
                        ),
                    )),
                    (Kind::Buffer { .. } | Kind::Shared { .. }, Some(i)) => {
                        if let Some(t) = self.ty(i).filter(|t| *t != Ty::U32) {
                            self.mismatch(i.span, format!("an index is u32, found {}", t.name()));
                        }
                        match (op, vt) {
                            // `x[i] op= v` types as `x[i] op v`.
                            (Some(op), Some(t)) => {
                                self.binary(*op, (value, Ty::F32), (value, t), *span);
                            }
                            (None, Some(t)) if t != Ty::F32 => {
                                self.mismatch(value.span, format!("`{}` holds f32, found {}", var.name, t.name()));
                            }
                            _ => {}
                        }
                    }
                    (Kind::Local { mutable: true }, None) => {
                        let vt = if settle(value, var.ty) { Some(var.ty) } else { vt };
                        match (op, vt) {
                            // A shift's amount is any integer.
                            (Some(shift @ (Bin::Shl | Bin::Shr)), Some(t)) => {
                                self.binary(*shift, (value, var.ty), (value, t), *span);
                            }
                            (_, Some(t)) if t != var.ty => {
                                self.mismatch(
                                    value.span,
                                    format!("`{}` is {}, found {}", var.name, var.ty.name(), t.name()),
                                );
                            }
                            (Some(op), Some(t)) => {
                                if var.ty == Ty::Bool {
                                    self.mismatch(*span, "compound assignment takes f32, u32 or i32".into());
                                } else {
                                    self.binary(*op, (value, var.ty), (value, t), *span);
                                }
                            }
                            _ => {}
                        }
                    }
                    (Kind::Local { mutable: false }, None) => {
                        self.errors.push(err(*span, format!("`{}` is not `let mut`", var.name)));
                    }
                    (Kind::Scalar { .. } | Kind::Element { .. }, _) => {
                        self.errors
                            .push(err(*span, format!("`{}` is a parameter: copy it into a `let mut`", var.name)));
                    }
                    _ => self.errors.push(err(*span, format!("`{}` is indexed as `{}[i]`", var.name, var.name))),
                }
            }
            Stmt::If(c, a, b) => {
                self.cond(c);
                self.block(a);
                self.block(b);
            }
            Stmt::While(c, body) => {
                self.cond(c);
                self.block(body);
            }
            Stmt::For(_, a, b, body) => {
                for e in [a, b] {
                    if let Some(t) = self.ty(e).filter(|t| *t != Ty::U32) {
                        self.mismatch(e.span, format!("a range runs over u32, found {}", t.name()));
                    }
                }
                self.block(body);
            }
        }
    }

    fn cond(&mut self, c: &Expr) {
        if let Some(t) = self.ty(c).filter(|t| *t != Ty::Bool) {
            self.mismatch(c.span, format!("a condition is bool, found {}", t.name()));
        }
    }

    /// Whether `e` has one value across a workgroup.
    fn uniform(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) => true,
            ExprKind::Id(id) => matches!(id, Id::Workgroup | Id::Workgroups),
            ExprKind::Var(v) => self.k.vars[*v].uniform,
            ExprKind::Index(..) => false,
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x, _) => self.uniform(x),
            ExprKind::Binary(_, a, b) => self.uniform(a) && self.uniform(b),
            ExprKind::Call(_, args) | ExprKind::Extern(_, args) => args.iter().all(|a| self.uniform(a)),
        }
    }

    /// Marks the locals that may differ between invocations: those given a
    /// varying value, or assigned under varying control flow, to a fixpoint.
    fn uniformity(&mut self, body: &[Stmt]) {
        loop {
            let before: Vec<bool> = self.k.vars.iter().map(|v| v.uniform).collect();
            self.mark(body, true);
            if self.k.vars.iter().map(|v| v.uniform).eq(before) {
                return;
            }
        }
    }

    fn mark(&mut self, stmts: &[Stmt], uniform_flow: bool) {
        for s in stmts {
            match s {
                Stmt::Let(v, e) => {
                    let u = uniform_flow && self.uniform(e);
                    self.k.vars[*v].uniform &= u;
                }
                Stmt::Assign(v, None, _, e, _) => {
                    let u = uniform_flow && self.uniform(e);
                    self.k.vars[*v].uniform &= u;
                }
                Stmt::If(c, a, b) => {
                    let u = uniform_flow && self.uniform(c);
                    self.mark(a, u);
                    self.mark(b, u);
                }
                Stmt::While(c, body) => {
                    let u = uniform_flow && self.uniform(c);
                    self.mark(body, u);
                }
                Stmt::For(v, a, b, body) => {
                    let u = uniform_flow && self.uniform(a) && self.uniform(b);
                    self.k.vars[*v].uniform &= u;
                    self.mark(body, u);
                }
                _ => {}
            }
        }
    }

    /// Reports barriers under control flow that depends on a varying
    /// value; `divergent` is the span of the innermost such condition.
    fn barriers(&mut self, stmts: &[Stmt], divergent: Option<Span>) {
        for s in stmts {
            match s {
                Stmt::Barrier(span, what) => {
                    if let Some(at) = divergent {
                        let mut e = err(
                            *span,
                            format!(
                                "{what} in divergent control flow: every invocation of a workgroup must reach the same \
                                 barriers, and this one sits under a condition that differs between invocations"
                            ),
                        );
                        e.combine(err(at, "this condition depends on the invocation (an id, a loaded value)"));
                        self.errors.push(e);
                    }
                }
                Stmt::If(c, a, b) => {
                    let d = divergent.or((!self.uniform(c)).then_some(c.span));
                    self.barriers(a, d);
                    self.barriers(b, d);
                }
                Stmt::While(c, body) => {
                    let d = divergent.or((!self.uniform(c)).then_some(c.span));
                    self.barriers(body, d);
                }
                Stmt::For(_, a, b, body) => {
                    let d = divergent.or((!(self.uniform(a) && self.uniform(b))).then_some(a.span));
                    self.barriers(body, d);
                }
                _ => {}
            }
        }
    }
}
