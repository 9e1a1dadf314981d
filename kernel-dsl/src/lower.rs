//! Lowering of an elementwise kernel from Rust syntax to the IR,
//! rejecting every construct the elementwise form lacks at its tokens;
//! `check` then types what is left. The syntax-to-operator tables both
//! lowerings use are here too: `syn` ends at the lowering stages.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr as SynExpr, FnArg, Lit, Pat, ReturnType, Stmt as SynStmt, UnOp};

use super::ir::{Bin, CONSTANTS, Expr, ExprKind, Intrinsic, Kernel, Kind, MAX_ARGS, Stmt, Ty};
use crate::errors::Errors;

/// The operator of a Rust binary expression, if the DSL has it.
pub fn bin_op(op: &BinOp) -> Option<Bin> {
    Some(match op {
        BinOp::Add(_) => Bin::Add,
        BinOp::Sub(_) => Bin::Sub,
        BinOp::Mul(_) => Bin::Mul,
        BinOp::Div(_) => Bin::Div,
        BinOp::Rem(_) => Bin::Rem,
        BinOp::Lt(_) => Bin::Lt,
        BinOp::Le(_) => Bin::Le,
        BinOp::Gt(_) => Bin::Gt,
        BinOp::Ge(_) => Bin::Ge,
        BinOp::Eq(_) => Bin::Eq,
        BinOp::Ne(_) => Bin::Ne,
        BinOp::And(_) => Bin::And,
        BinOp::Or(_) => Bin::Or,
        BinOp::Shl(_) => Bin::Shl,
        BinOp::Shr(_) => Bin::Shr,
        BinOp::BitAnd(_) => Bin::BitAnd,
        BinOp::BitOr(_) => Bin::BitOr,
        BinOp::BitXor(_) => Bin::BitXor,
        _ => return None,
    })
}

/// The operator of a compound assignment (`+=`, `<<=`, ...).
pub fn assign_op(op: &BinOp) -> Option<Bin> {
    Some(match op {
        BinOp::AddAssign(_) => Bin::Add,
        BinOp::SubAssign(_) => Bin::Sub,
        BinOp::MulAssign(_) => Bin::Mul,
        BinOp::DivAssign(_) => Bin::Div,
        BinOp::RemAssign(_) => Bin::Rem,
        BinOp::ShlAssign(_) => Bin::Shl,
        BinOp::ShrAssign(_) => Bin::Shr,
        BinOp::BitAndAssign(_) => Bin::BitAnd,
        BinOp::BitOrAssign(_) => Bin::BitOr,
        BinOp::BitXorAssign(_) => Bin::BitXor,
        _ => return None,
    })
}

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

const SUPPORTED: &str = "elementwise kernels support `let` bindings, arithmetic (+ - * / %), comparisons, \
                         `&&` `||` `!`, if/else expressions, `select`, and the intrinsics";

/// Lowers a function to the IR, collecting every error.
pub fn lower(f: &syn::ItemFn, errors: &mut Errors) -> Option<Kernel> {
    let sig = &f.sig;
    if let Some(t) = sig.generics.lt_token {
        errors.push(err(t.span(), "kernels take no generic parameters: they are written in f32"));
    }
    for (what, present) in [
        ("const", sig.constness.map(|t| t.span())),
        ("async", sig.asyncness.map(|t| t.span())),
        (
            "unsafe",
            match &sig.safety {
                syn::Safety::Unsafe(t) => Some(t.span()),
                _ => None,
            },
        ),
    ] {
        if let Some(span) = present {
            errors.push(err(span, format!("a kernel cannot be `{what}`")));
        }
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Typed(p) => {
                let ty_ok = matches!(&*p.ty, syn::Type::Path(tp) if tp.path.is_ident("f32"));
                if !ty_ok {
                    errors.push(err(
                        p.ty.span(),
                        "elementwise kernel parameters are `f32`: each takes a tensor or a scalar at the call",
                    ));
                }
                match &*p.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.mutability.is_none() && pi.subpat.is_none() => {
                        params.push(pi.ident.to_string());
                    }
                    other => errors.push(err(other.span(), "a kernel parameter is a plain name")),
                }
            }
            FnArg::Receiver(r) => errors.push(err(r.span(), "a kernel is a free function, not a method")),
        }
    }
    if params.is_empty() {
        errors.push(err(sig.ident.span(), "an elementwise kernel takes at least one `f32` parameter"));
    }
    if params.len() > MAX_ARGS {
        errors.push(err(
            sig.inputs.span(),
            format!("a kernel takes at most {MAX_ARGS} parameters, this one {}", params.len()),
        ));
    }
    match &sig.output {
        ReturnType::Type(_, ty) if matches!(&**ty, syn::Type::Path(tp) if tp.path.is_ident("f32")) => {}
        ReturnType::Type(_, ty) => errors.push(err(ty.span(), "an elementwise kernel returns `f32`")),
        ReturnType::Default => errors.push(err(sig.ident.span(), "an elementwise kernel returns `f32`: add `-> f32`")),
    }

    let mut k = Kernel::new(sig.ident.to_string(), sig.ident.span(), None);
    for (index, name) in params.into_iter().enumerate() {
        let v = k.declare(name, Ty::F32, Kind::Element { index });
        k.params.push(v);
    }
    let mut lower = Lowerer { k, errors };
    let stmts = &f.block.stmts;
    let Some((last, init)) = stmts.split_last() else {
        lower.errors.push(err(f.block.span(), "a kernel's body ends with the value it returns"));
        return None;
    };
    for stmt in init {
        match stmt {
            SynStmt::Local(local) => lower.local(local),
            other => lower.errors.push(err(other.span(), format!("unsupported statement: {SUPPORTED}"))),
        }
    }
    let result = match last {
        SynStmt::Expr(e, None) => lower.expr(e),
        SynStmt::Expr(SynExpr::Return(r), _) => match &r.expr {
            Some(e) => lower.expr(e),
            None => {
                lower.errors.push(err(r.span(), "return a value"));
                None
            }
        },
        other => {
            lower.errors.push(err(other.span(), "a kernel's body ends with the value it returns (no `;`)"));
            None
        }
    };
    let mut k = lower.k;
    k.result = Some(result?);
    Some(k)
}

struct Lowerer<'e> {
    k: Kernel,
    errors: &'e mut Errors,
}

impl Lowerer<'_> {
    fn local(&mut self, local: &syn::Local) {
        let name = match &local.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                // Bound all the same, so later uses do not report it unknown.
                if let Some(m) = pi.mutability {
                    self.errors.push(err(
                        m.span(),
                        "elementwise kernels bind values once: write a new `let` instead of `let mut`",
                    ));
                }
                pi.ident.to_string()
            }
            Pat::Type(pt) => {
                self.errors.push(err(pt.ty.span(), "leave the type out: kernel values are typed by inference"));
                return;
            }
            other => {
                self.errors.push(err(other.span(), "a `let` in a kernel binds one plain name"));
                return;
            }
        };
        let Some(init) = &local.init else {
            self.errors.push(err(local.span(), "a `let` in a kernel needs a value"));
            return;
        };
        if let Some((_, d)) = &init.diverge {
            self.errors.push(err(d.span(), format!("unsupported `else`: {SUPPORTED}")));
        }
        if let Some(value) = self.expr(&init.expr) {
            // Typed by the checker from the value.
            let v = self.k.declare(name, Ty::F32, Kind::Local { mutable: false });
            self.k.body.push(Stmt::Let(v, value));
        }
    }

    /// The latest variable of that name: a `let` shadows what came before.
    fn lookup(&self, name: &str) -> Option<usize> {
        self.k.vars.iter().rposition(|v| v.name == name)
    }

    fn expr(&mut self, e: &SynExpr) -> Option<Expr> {
        let span = e.span();
        let kind = match e {
            SynExpr::Paren(p) => return self.expr(&p.expr),
            SynExpr::Group(g) => return self.expr(&g.expr),
            SynExpr::Lit(l) => match &l.lit {
                Lit::Float(f) => ExprKind::Float(f.base10_parse().ok()?),
                Lit::Bool(b) => ExprKind::Bool(b.value),
                Lit::Int(i) => {
                    self.errors.push(err(
                        i.span(),
                        format!(
                            "type mismatch: `{}` is an integer, and kernels compute in f32: write `{}.0`",
                            i,
                            i.base10_digits()
                        ),
                    ));
                    return None;
                }
                other => {
                    self.errors.push(err(other.span(), "kernels take f32 and bool literals"));
                    return None;
                }
            },
            SynExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                if let Some(v) = self.lookup(&name) {
                    ExprKind::Var(v)
                } else if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| *c == name) {
                    ExprKind::Float(*v)
                } else {
                    let known = self.k.vars.iter().map(|v| v.name.clone());
                    let known: Vec<String> = known.chain(CONSTANTS.iter().map(|(c, _)| c.to_string())).collect();
                    let hint = crate::errors::closest(&name, known.iter().map(String::as_str))
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                    self.errors.push(err(span, format!("unknown value `{name}`{hint}")));
                    return None;
                }
            }
            SynExpr::Unary(u) => {
                let inner = Box::new(self.expr(&u.expr)?);
                match u.op {
                    UnOp::Neg(_) => ExprKind::Neg(inner),
                    UnOp::Not(_) => ExprKind::Not(inner),
                    _ => {
                        self.errors.push(err(u.op.span(), format!("unsupported operator: {SUPPORTED}")));
                        return None;
                    }
                }
            }
            SynExpr::Binary(b) => {
                let Some(op) = bin_op(&b.op) else {
                    self.errors.push(err(b.op.span(), format!("unsupported operator: {SUPPORTED}")));
                    return None;
                };
                let (l, r) = (self.expr(&b.left), self.expr(&b.right));
                ExprKind::Binary(op, Box::new(l?), Box::new(r?))
            }
            SynExpr::If(i) => {
                let cond = self.expr(&i.cond);
                let then = self.block_value(&i.then_branch);
                let other = match &i.else_branch {
                    Some((_, e)) => match &**e {
                        SynExpr::Block(b) => self.block_value(&b.block),
                        e => self.expr(e),
                    },
                    None => {
                        self.errors.push(err(span, "an `if` in a kernel is an expression: it needs an `else`"));
                        None
                    }
                };
                ExprKind::Call(Intrinsic::Select, vec![cond?, then?, other?])
            }
            SynExpr::Call(c) => {
                let name = match &*c.func {
                    SynExpr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident()?.to_string(),
                    other => {
                        self.errors.push(err(other.span(), "call an intrinsic by its plain name"));
                        return None;
                    }
                };
                if name == self.k.name {
                    self.errors.push(err(c.func.span(), format!("`{name}` calls itself: kernels cannot recurse")));
                    return None;
                }
                let Some(intrinsic) = Intrinsic::from_name(&name) else {
                    let hint = crate::errors::closest(&name, Intrinsic::ALL.iter().map(|i| i.name()))
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                    let all: Vec<&str> = Intrinsic::ALL.iter().map(|i| i.name()).collect();
                    self.errors.push(err(
                        c.func.span(),
                        format!("unknown intrinsic `{name}`{hint} (kernels can call {})", all.join(", ")),
                    ));
                    return None;
                };
                if c.args.len() != intrinsic.arity() {
                    self.errors.push(err(
                        c.span(),
                        format!(
                            "`{name}` takes {} argument(s), got {}: {}",
                            intrinsic.arity(),
                            c.args.len(),
                            intrinsic.signature()
                        ),
                    ));
                    return None;
                }
                let args: Vec<Option<Expr>> = c.args.iter().map(|a| self.expr(a)).collect();
                ExprKind::Call(intrinsic, args.into_iter().collect::<Option<Vec<_>>>()?)
            }
            SynExpr::MethodCall(m) => {
                let receiver = quote::ToTokens::to_token_stream(&m.receiver).to_string();
                let (method, more) = (&m.method, if m.args.is_empty() { "" } else { ", .." });
                self.errors.push(err(
                    m.method.span(),
                    format!("kernels call intrinsics as functions: write `{method}({receiver}{more})`"),
                ));
                return None;
            }
            SynExpr::Block(b) => return self.block_value(&b.block),
            other => {
                self.errors.push(err(other.span(), format!("unsupported syntax: {SUPPORTED}")));
                return None;
            }
        };
        Some(Expr::new(kind, span))
    }

    /// A block used as a value: `{ expr }`.
    fn block_value(&mut self, b: &syn::Block) -> Option<Expr> {
        match b.stmts.as_slice() {
            [SynStmt::Expr(e, None)] => self.expr(e),
            _ => {
                self.errors.push(err(b.span(), "a branch of a kernel's `if` is one expression"));
                None
            }
        }
    }
}
