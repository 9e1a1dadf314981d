//! Lowering: a general kernel's Rust syntax to the IR, rejecting what
//! the DSL lacks at its tokens.

use std::cell::Cell;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, Lit, Pat, UnOp};

use super::{SHARED_F32_MAX, SUPPORTED, err};
use crate::errors::Errors;
use crate::ir::{Bin, CONSTANTS, Expr, ExprKind, Id, Intrinsic, Kernel, Kind, Stmt, Ty};
use crate::lower::{assign_op, bin_op};

pub(super) struct Lower<'a> {
    k: &'a mut Kernel,
    /// What a `barrier()` lowered now stands for in messages: itself, or
    /// the reduction being expanded.
    barrier_name: &'static str,
    scopes: Vec<Vec<(String, usize)>>,
    errors: &'a mut Errors,
}

impl<'a> Lower<'a> {
    pub(super) fn new(k: &'a mut Kernel, errors: &'a mut Errors) -> Self {
        Lower { k, barrier_name: "`barrier()`", scopes: vec![Vec::new()], errors }
    }

    fn declare(&mut self, name: String, ty: Ty, kind: Kind) -> usize {
        let id = self.k.declare(name.clone(), ty, kind);
        // The parameters' scope is never popped, so there always is one.
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, id));
        }
        id
    }

    fn lookup(&mut self, name: &str, span: Span) -> Option<usize> {
        let found = self.scopes.iter().rev().flat_map(|s| s.iter().rev()).find(|(n, _)| n == name);
        if found.is_none() {
            let known: Vec<&str> = self.scopes.iter().flatten().map(|(n, _)| n.as_str()).collect();
            let hint = crate::errors::closest(name, known).map(|c| format!("; did you mean `{c}`?"));
            self.errors.push(err(span, format!("unknown value `{name}`{}", hint.unwrap_or_default())));
        }
        found.map(|(_, id)| *id)
    }

    pub(super) fn signature(&mut self, f: &syn::ItemFn) {
        let sig = &f.sig;
        if let Some(t) = sig.generics.lt_token {
            self.errors.push(err(t.span(), "kernels take no generic parameters"));
        }
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            self.errors.push(err(ty.span(), "a general kernel returns nothing: it writes its `&mut [f32]` buffers"));
        }
        let (mut buffers, mut scalars) = (0, 0);
        for arg in &sig.inputs {
            let FnArg::Typed(p) = arg else {
                self.errors.push(err(arg.span(), "a kernel is a free function, not a method"));
                continue;
            };
            let Pat::Ident(pi) = &*p.pat else {
                self.errors.push(err(p.pat.span(), "a kernel parameter is a plain name"));
                continue;
            };
            let is = |ty: &syn::Type, name: &str| matches!(ty, syn::Type::Path(tp) if tp.path.is_ident(name));
            let kind = match &*p.ty {
                syn::Type::Reference(r) => match &*r.elem {
                    syn::Type::Slice(s) if is(&s.elem, "f32") => {
                        buffers += 1;
                        Some((Ty::F32, Kind::Buffer { index: buffers - 1, output: r.mutability.is_some() }))
                    }
                    _ => None,
                },
                syn::Type::Path(tp) if tp.path.get_ident().is_some() => {
                    let ty = Ty::from_name(&tp.path.get_ident().map(ToString::to_string).unwrap_or_default());
                    ty.filter(|t| *t != Ty::Bool).map(|t| {
                        scalars += 1;
                        (t, Kind::Scalar { index: scalars - 1 })
                    })
                }
                _ => None,
            };
            match kind {
                Some((ty, kind)) => {
                    let id = self.declare(pi.ident.to_string(), ty, kind);
                    self.k.params.push(id);
                }
                None => self.errors.push(err(
                    p.ty.span(),
                    "a general kernel takes buffers (`&[f32]`, `&mut [f32]`) and scalars (`f32`, `u32`, `i32`)",
                )),
            }
        }
    }

    pub(super) fn block(&mut self, stmts: &[syn::Stmt]) -> Vec<Stmt> {
        self.scopes.push(Vec::new());
        let out = self.stmts(stmts);
        self.scopes.pop();
        out
    }

    /// Statements in the current scope; a workgroup reduction
    /// (`let t = workgroup_sum(v);`) becomes the statements it stands for.
    fn stmts(&mut self, stmts: &[syn::Stmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            match reduction(s) {
                Some((name, kind, value, call)) => out.extend(self.reduce(name, kind, value, call)),
                None => out.extend(self.stmt(s)),
            }
        }
        out
    }

    /// `let name = workgroup_sum(value);` (or `workgroup_max`) as a tree in
    /// a shared array of the workgroup's size: each invocation's value,
    /// then halving strides, each step behind a barrier, then the total
    /// for all and a barrier before the array is used again. The
    /// barriers are checked as written ones: a reduction sits in uniform
    /// control flow.
    fn reduce(&mut self, name: &syn::Ident, kind: Reduce, value: &syn::Expr, span: Span) -> Vec<Stmt> {
        let size = self.k.workgroup.unwrap_or(1);
        if !size.is_power_of_two() {
            let msg = format!("`{}` needs a workgroup size that is a power of two, not {size}", kind.name());
            self.errors.push(err(span, msg));
            // Bound all the same, so that its uses raise nothing more.
            let v = self.expr(value);
            let id = self.declare(name.to_string(), Ty::F32, Kind::Local { mutable: false });
            return v.map(|v| Stmt::Let(id, v)).into_iter().collect();
        }
        // One array for every reduction of the kernel, declared with the
        // parameters so that every scope sees it.
        let array = "__reduce";
        if !self.scopes[0].iter().any(|(n, _)| n == array) {
            let id = self.k.declare(array.to_owned(), Ty::F32, Kind::Shared { len: size });
            self.scopes[0].push((array.to_owned(), id));
        }
        let a = syn::Ident::new(array, span);
        let half = syn::LitInt::new(&(size / 2).to_string(), span);
        let step = match kind {
            Reduce::Sum => quote::quote_spanned!(span=> #a[local_id()] += #a[local_id() + __stride];),
            Reduce::Max => quote::quote_spanned!(span=>
                #a[local_id()] = max(#a[local_id()], #a[local_id() + __stride]);
            ),
        };
        let block: syn::Block = syn::parse_quote_spanned! {span=> {
            #a[local_id()] = #value;
            barrier();
            let mut __stride = #half;
            while __stride > 0 {
                if local_id() < __stride {
                    #step
                }
                barrier();
                __stride = __stride / 2;
            }
            let #name = #a[0];
            barrier();
        }};
        // In the current scope: `name` is bound after it.
        self.barrier_name = kind.quoted();
        let out = self.stmts(&block.stmts);
        self.barrier_name = "`barrier()`";
        out
    }

    fn branch(&mut self, b: &syn::Block) -> Vec<Stmt> {
        self.block(&b.stmts)
    }

    fn stmt(&mut self, stmt: &syn::Stmt) -> Option<Stmt> {
        match stmt {
            syn::Stmt::Local(local) => self.local(local),
            syn::Stmt::Expr(e, _) => self.stmt_expr(e),
            other => {
                self.errors.push(err(other.span(), format!("unsupported statement: {SUPPORTED}")));
                None
            }
        }
    }

    fn local(&mut self, local: &syn::Local) -> Option<Stmt> {
        let shared = local.attrs.iter().any(|a| a.path().is_ident("shared"));
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let Pat::Ident(pi) = pat else {
            self.errors.push(err(pat.span(), "a `let` in a kernel binds one plain name"));
            return None;
        };
        let name = pi.ident.to_string();
        if shared {
            let len = match ty {
                Some(syn::Type::Array(a)) => match &a.len {
                    syn::Expr::Lit(l) => match &l.lit {
                        Lit::Int(i) => i.base10_parse::<usize>().ok().filter(|n| *n > 0),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            let Some(len) = len.filter(|_| local.init.is_none()) else {
                self.errors
                    .push(err(local.span(), "a shared array is `#[shared] let name: [f32; N];` with a literal N"));
                return None;
            };
            // WebGPU guarantees 16 KiB of workgroup memory; the CPU keeps
            // it on a worker thread's stack.
            let used: usize = self.k.vars.iter().map(|v| if let Kind::Shared { len } = v.kind { len } else { 0 }).sum();
            if used + len > SHARED_F32_MAX {
                let msg = format!(
                    "workgroup memory is at most {SHARED_F32_MAX} f32 (16 KiB, what every WebGPU device offers); \
                     this kernel asks for {}",
                    used + len
                );
                self.errors.push(err(local.span(), msg));
            }
            // Shared arrays live for the whole workgroup: no statement.
            self.declare(name, Ty::F32, Kind::Shared { len });
            return None;
        }
        if let Some(ty) = ty {
            self.errors.push(err(ty.span(), "leave the type out: kernel values are typed by inference"));
        }
        let Some(init) = &local.init else {
            self.errors.push(err(local.span(), "a `let` in a kernel needs a value"));
            return None;
        };
        let value = self.expr(&init.expr)?;
        // The type is settled by the checker from the value.
        let id = self.declare(name, Ty::F32, Kind::Local { mutable: pi.mutability.is_some() });
        Some(Stmt::Let(id, value))
    }

    fn stmt_expr(&mut self, e: &syn::Expr) -> Option<Stmt> {
        let span = e.span();
        match e {
            syn::Expr::Assign(a) => self.assign(&a.left, None, &a.right, span),
            syn::Expr::Binary(b) => {
                let Some(op) = assign_op(&b.op) else {
                    self.errors.push(err(span, format!("a statement does something: {SUPPORTED}")));
                    return None;
                };
                self.assign(&b.left, Some(op), &b.right, span)
            }
            syn::Expr::If(i) => {
                let cond = self.expr(&i.cond);
                let then = self.branch(&i.then_branch);
                let other = match &i.else_branch {
                    Some((_, e)) => match &**e {
                        syn::Expr::Block(b) => self.branch(&b.block),
                        e => self.stmt_expr(e).into_iter().collect(),
                    },
                    None => Vec::new(),
                };
                Some(Stmt::If(cond?, then, other))
            }
            syn::Expr::While(w) => {
                let cond = self.expr(&w.cond);
                let body = self.branch(&w.body);
                Some(Stmt::While(cond?, body))
            }
            syn::Expr::ForLoop(f) => {
                let syn::Expr::Range(r) = &*f.expr else {
                    self.errors.push(err(f.expr.span(), "a kernel's `for` runs over a range `a..b`"));
                    return None;
                };
                let (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) = (&r.start, &r.end, &r.limits) else {
                    self.errors.push(err(r.span(), "a kernel's `for` runs over a range `a..b`"));
                    return None;
                };
                let (start, end) = (self.expr(start), self.expr(end));
                let Pat::Ident(pi) = &*f.pat else {
                    self.errors.push(err(f.pat.span(), "a `for` variable is a plain name"));
                    return None;
                };
                self.scopes.push(Vec::new());
                let var = self.declare(pi.ident.to_string(), Ty::U32, Kind::Local { mutable: false });
                let body = self.branch(&f.body);
                self.scopes.pop();
                Some(Stmt::For(var, start?, end?, body))
            }
            syn::Expr::Call(c) if matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("barrier")) => {
                if !c.args.is_empty() {
                    self.errors.push(err(c.args.span(), "`barrier()` takes no arguments"));
                }
                Some(Stmt::Barrier(span, self.barrier_name))
            }
            syn::Expr::Block(b) => {
                self.errors.push(err(b.span(), format!("unsupported block: {SUPPORTED}")));
                None
            }
            _ => {
                self.errors.push(err(span, format!("a statement does something: {SUPPORTED}")));
                None
            }
        }
    }

    fn assign(&mut self, left: &syn::Expr, op: Option<Bin>, right: &syn::Expr, span: Span) -> Option<Stmt> {
        let value = self.expr(right);
        match left {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = self.lookup(&p.path.get_ident()?.to_string(), left.span())?;
                Some(Stmt::Assign(id, None, op, value?, span))
            }
            syn::Expr::Index(ix) => {
                let syn::Expr::Path(p) = &*ix.expr else {
                    self.errors.push(err(ix.expr.span(), "index a buffer or shared array by name"));
                    return None;
                };
                let id = self.lookup(&p.path.get_ident()?.to_string(), ix.expr.span())?;
                let index = self.expr(&ix.index);
                Some(Stmt::Assign(id, Some(index?), op, value?, span))
            }
            other => {
                self.errors.push(err(other.span(), "assign to a local, or to an element of a buffer or shared array"));
                None
            }
        }
    }

    fn expr(&mut self, e: &syn::Expr) -> Option<Expr> {
        let span = e.span();
        let ex = |e| Some(Expr::new(e, span));
        match e {
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Lit(l) => match &l.lit {
                Lit::Float(f) => ex(ExprKind::Float(f.base10_parse().ok()?)),
                Lit::Int(i) => {
                    let ty = match i.suffix() {
                        "" | "u32" => Ty::U32,
                        "i32" => Ty::I32,
                        _ => {
                            self.errors.push(err(i.span(), "integer literals in kernels are u32 or i32"));
                            return None;
                        }
                    };
                    // An unsuffixed literal may still become i32 (`-5`), so
                    // it may reach 2^31 as well as u32::MAX.
                    let fits = |v: i64| if ty == Ty::U32 { u32::try_from(v).is_ok() } else { v <= 1 << 31 };
                    match i.base10_parse::<i64>() {
                        Ok(v) if fits(v) => ex(ExprKind::Int(v, Cell::new(ty), i.suffix().is_empty())),
                        _ => {
                            self.errors.push(err(i.span(), format!("`{i}` does not fit in {}", ty.name())));
                            None
                        }
                    }
                }
                Lit::Bool(b) => ex(ExprKind::Bool(b.value)),
                other => {
                    self.errors.push(err(other.span(), "kernels take f32, u32 and bool literals"));
                    None
                }
            },
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| *c == name) {
                    return ex(ExprKind::Float(*v));
                }
                let id = self.lookup(&name, span)?;
                ex(ExprKind::Var(id))
            }
            syn::Expr::Index(ix) => {
                let syn::Expr::Path(p) = &*ix.expr else {
                    self.errors.push(err(ix.expr.span(), "index a buffer or shared array by name"));
                    return None;
                };
                let id = self.lookup(&p.path.get_ident()?.to_string(), ix.expr.span())?;
                let index = self.expr(&ix.index)?;
                ex(ExprKind::Index(id, Box::new(index)))
            }
            syn::Expr::Unary(u) => {
                let inner = Box::new(self.expr(&u.expr)?);
                match u.op {
                    UnOp::Neg(_) => ex(ExprKind::Neg(inner)),
                    UnOp::Not(_) => ex(ExprKind::Not(inner)),
                    _ => {
                        self.errors.push(err(u.op.span(), format!("unsupported operator: {SUPPORTED}")));
                        None
                    }
                }
            }
            syn::Expr::Binary(b) => {
                let Some(op) = bin_op(&b.op) else {
                    self.errors.push(err(b.op.span(), format!("unsupported operator: {SUPPORTED}")));
                    return None;
                };
                let (l, r) = (self.expr(&b.left), self.expr(&b.right));
                ex(ExprKind::Binary(op, Box::new(l?), Box::new(r?)))
            }
            syn::Expr::Cast(c) => {
                let to = match &*c.ty {
                    syn::Type::Path(p) => p.path.get_ident().and_then(|i| Ty::from_name(&i.to_string())),
                    _ => None,
                };
                let Some(ty) = to.filter(|t| *t != Ty::Bool) else {
                    self.errors.push(err(c.ty.span(), "kernels cast to `f32`, `u32` or `i32`"));
                    return None;
                };
                ex(ExprKind::Cast(Box::new(self.expr(&c.expr)?), ty))
            }
            syn::Expr::Call(c) => {
                let syn::Expr::Path(p) = &*c.func else {
                    self.errors.push(err(c.func.span(), "call an intrinsic by its plain name"));
                    return None;
                };
                let name = p.path.get_ident()?.to_string();
                if self.k.name == name {
                    self.errors.push(err(c.func.span(), format!("`{name}` calls itself: kernels cannot recurse")));
                    return None;
                }
                if let Some(id) = Id::ALL.into_iter().find(|i| i.name() == name) {
                    if !c.args.is_empty() {
                        self.errors.push(err(c.args.span(), format!("`{name}()` takes no arguments")));
                    }
                    return ex(ExprKind::Id(id));
                }
                if name == "barrier" {
                    self.errors.push(err(span, "`barrier()` is a statement"));
                    return None;
                }
                if [Reduce::Sum, Reduce::Max].into_iter().any(|k| k.name() == name) {
                    let msg = format!(
                        "`{name}(v)` is a statement of its own, one value per invocation: `let total = {name}(v);`"
                    );
                    self.errors.push(err(span, msg));
                    return None;
                }
                let Some(f) = Intrinsic::ALL.into_iter().find(|i| i.name() == name) else {
                    let names = Intrinsic::ALL.iter().map(|i| i.name()).chain(Id::ALL.iter().map(|i| i.name()));
                    let hint = crate::errors::closest(&name, names).map(|c| format!("; did you mean `{c}`?"));
                    self.errors
                        .push(err(c.func.span(), format!("unknown intrinsic `{name}`{}", hint.unwrap_or_default())));
                    return None;
                };
                if c.args.len() != f.arity() {
                    let msg =
                        format!("`{name}` takes {} argument(s), got {}: {}", f.arity(), c.args.len(), f.signature());
                    self.errors.push(err(span, msg));
                    return None;
                }
                let args: Option<Vec<Expr>> =
                    c.args.iter().map(|a| self.expr(a)).collect::<Vec<_>>().into_iter().collect();
                ex(ExprKind::Call(f, args?))
            }
            syn::Expr::MethodCall(m) => {
                self.errors.push(err(
                    m.method.span(),
                    format!("kernels call intrinsics as functions: write `{}(..)`", m.method),
                ));
                None
            }
            other => {
                self.errors.push(err(other.span(), format!("unsupported syntax: {SUPPORTED}")));
                None
            }
        }
    }
}

/// A workgroup reduction: what it combines with.
#[derive(Clone, Copy)]
enum Reduce {
    Sum,
    Max,
}

impl Reduce {
    fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "workgroup_sum",
            Reduce::Max => "workgroup_max",
        }
    }

    /// As messages name it.
    fn quoted(self) -> &'static str {
        match self {
            Reduce::Sum => "`workgroup_sum`",
            Reduce::Max => "`workgroup_max`",
        }
    }
}

/// `let name = workgroup_sum(value);` or `workgroup_max`, taken apart.
fn reduction(s: &syn::Stmt) -> Option<(&syn::Ident, Reduce, &syn::Expr, Span)> {
    let syn::Stmt::Local(local) = s else { return None };
    let Pat::Ident(pi) = &local.pat else { return None };
    let syn::Expr::Call(c) = &*local.init.as_ref()?.expr else { return None };
    let syn::Expr::Path(p) = &*c.func else { return None };
    let kind = [Reduce::Sum, Reduce::Max].into_iter().find(|k| p.path.is_ident(k.name()))?;
    match (c.args.len(), c.args.first()) {
        (1, Some(value)) if pi.mutability.is_none() && local.attrs.is_empty() => {
            Some((&pi.ident, kind, value, c.span()))
        }
        _ => None,
    }
}
