//! General kernels: `#[workgroup(N)]` functions over `f32` buffers with
//! invocation ids, workgroup-shared arrays, barriers, loops and branches.
//! Lowered to a typed IR here, checked (types, writes to inputs, barriers
//! in divergent control flow), then emitted as a WGSL compute shader
//! (validated with naga) and as Rust that runs a workgroup's invocations
//! in lockstep between barriers.

use std::cell::Cell;
use std::fmt::Write;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Lit, Pat, Stmt, UnOp};

use super::ir::{Bin, Intrinsic};
use super::wgsl::{Helper, Wgsl, validate};

/// Value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    F32,
    U32,
    I32,
    Bool,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::U32 => "u32",
            Ty::I32 => "i32",
            Ty::Bool => "bool",
        }
    }

    fn rust(self) -> TokenStream {
        match self {
            Ty::F32 => quote!(f32),
            Ty::U32 => quote!(u32),
            Ty::I32 => quote!(i32),
            Ty::Bool => quote!(bool),
        }
    }

    fn zero(self) -> TokenStream {
        match self {
            Ty::F32 => quote!(0.0f32),
            Ty::U32 => quote!(0u32),
            Ty::I32 => quote!(0i32),
            Ty::Bool => quote!(false),
        }
    }

    fn int(self) -> bool {
        matches!(self, Ty::U32 | Ty::I32)
    }

    fn from_name(name: &str) -> Option<Ty> {
        [Ty::F32, Ty::U32, Ty::I32, Ty::Bool].into_iter().find(|t| t.name() == name)
    }
}

/// What a name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Buffer parameter `index`: `&[f32]`, or `&mut [f32]` when `output`.
    Buffer { index: usize, output: bool },
    /// Scalar parameter `index`.
    Scalar { index: usize },
    /// A local (`let`, `let mut`, a `for` variable).
    Local { mutable: bool },
    /// A workgroup-shared `[f32; len]`.
    Shared { len: usize },
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    ty: Ty,
    kind: Kind,
    /// Whether every invocation of a workgroup holds the same value.
    uniform: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Id {
    Global,
    Local,
    Workgroup,
    Workgroups,
}

impl Id {
    const ALL: [Id; 4] = [Id::Global, Id::Local, Id::Workgroup, Id::Workgroups];

    fn name(self) -> &'static str {
        match self {
            Id::Global => "global_id",
            Id::Local => "local_id",
            Id::Workgroup => "workgroup_id",
            Id::Workgroups => "num_workgroups",
        }
    }
}

#[derive(Clone, Debug)]
enum E {
    Float(f64),
    /// An integer literal: its value, its type (u32 unless suffixed or
    /// settled by the checker from the other operand), and whether the
    /// checker may still settle it.
    Int(i64, Cell<Ty>, bool),
    Bool(bool),
    Var(usize),
    /// A load from a buffer or shared array.
    Index(usize, Box<Ex>),
    Neg(Box<Ex>),
    Not(Box<Ex>),
    Binary(Bin, Box<Ex>, Box<Ex>),
    Call(Intrinsic, Vec<Ex>),
    Id(Id),
    Cast(Box<Ex>, Ty),
}

#[derive(Clone, Debug)]
struct Ex {
    e: E,
    span: Span,
}

/// Statements; a `target` of an assignment is a local, or an element of a
/// buffer or shared array.
#[derive(Clone, Debug)]
enum S {
    Let(usize, Ex),
    Assign(usize, Option<Ex>, Option<Bin>, Ex, Span),
    If(Ex, Vec<S>, Vec<S>),
    While(Ex, Vec<S>),
    For(usize, Ex, Ex, Vec<S>),
    Barrier(Span),
}

impl S {
    fn has_barrier(&self) -> bool {
        match self {
            S::Barrier(_) => true,
            S::If(_, a, b) => a.iter().chain(b).any(S::has_barrier),
            S::While(_, b) | S::For(_, _, _, b) => b.iter().any(S::has_barrier),
            _ => false,
        }
    }
}

struct Kernel {
    name: syn::Ident,
    workgroup: usize,
    vars: Vec<Var>,
    params: Vec<usize>,
    body: Vec<S>,
}

const SUPPORTED: &str = "general kernels support `let` and `let mut`, `#[shared] let name: [f32; N];`, \
                         assignments (also compound ones such as `+=` and `<<=`), indexing buffers and shared arrays, \
                         integer bit operations (`<<` `>>` `&` `|` `^`), `if`/`else`, `while`, `for i in a..b`, \
                         `barrier()`, `as` casts, `global_id()` `local_id()` \
                         `workgroup_id()` `num_workgroups()`, and the intrinsics";

/// Workgroup memory, in f32, that every WebGPU device offers (16 KiB).
const SHARED_F32_MAX: usize = 4096;

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

/// The size in `#[workgroup(N)]`, when the attribute is present.
pub fn workgroup_attr(f: &syn::ItemFn, errors: &mut Vec<syn::Error>) -> Option<usize> {
    let attr = f.attrs.iter().find(|a| a.path().is_ident("workgroup"))?;
    match attr.parse_args::<syn::LitInt>().and_then(|l| l.base10_parse::<usize>()) {
        Ok(n) if (1..=256).contains(&n) => Some(n),
        _ => {
            errors.push(err(attr.span(), "write the workgroup size as `#[workgroup(N)]`, N from 1 to 256"));
            Some(1)
        }
    }
}

/// Expands a general kernel.
pub fn expand(f: &syn::ItemFn, workgroup: usize, mut errors: Vec<syn::Error>) -> TokenStream {
    let mut k = Kernel { name: f.sig.ident.clone(), workgroup, vars: Vec::new(), params: Vec::new(), body: Vec::new() };
    {
        let mut lower = Lower { k: &mut k, scopes: vec![Vec::new()], errors: &mut errors };
        lower.signature(f);
        let body = lower.block(&f.block.stmts);
        lower.k.body = body;
    }
    if errors.is_empty() {
        let mut check = Check { k: &mut k, errors: &mut errors };
        let body = std::mem::take(&mut check.k.body);
        check.block(&body);
        check.uniformity(&body);
        check.barriers(&body, None);
        k.body = body;
    }
    if !errors.is_empty() {
        return errors.into_iter().map(|e| e.to_compile_error()).collect();
    }
    let wgsl = wgsl(&k);
    if let Err(e) = validate(&wgsl) {
        let msg = format!("kernel `{}` produced WGSL that naga rejects:\n{e}\n{wgsl}", k.name);
        return err(k.name.span(), msg).to_compile_error();
    }
    rust(f, &k, &wgsl)
}

// ---- lowering ------------------------------------------------------------

struct Lower<'a> {
    k: &'a mut Kernel,
    scopes: Vec<Vec<(String, usize)>>,
    errors: &'a mut Vec<syn::Error>,
}

impl Lower<'_> {
    fn declare(&mut self, name: String, ty: Ty, kind: Kind) -> usize {
        let id = self.k.vars.len();
        self.k.vars.push(Var { name: name.clone(), ty, kind, uniform: true });
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
            let hint = crate::model::closest(name, known).map(|c| format!("; did you mean `{c}`?"));
            self.errors.push(err(span, format!("unknown value `{name}`{}", hint.unwrap_or_default())));
        }
        found.map(|(_, id)| *id)
    }

    fn signature(&mut self, f: &syn::ItemFn) {
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

    fn block(&mut self, stmts: &[Stmt]) -> Vec<S> {
        self.scopes.push(Vec::new());
        let out = stmts.iter().filter_map(|s| self.stmt(s)).collect();
        self.scopes.pop();
        out
    }

    fn branch(&mut self, b: &syn::Block) -> Vec<S> {
        self.block(&b.stmts)
    }

    fn stmt(&mut self, stmt: &Stmt) -> Option<S> {
        match stmt {
            Stmt::Local(local) => self.local(local),
            Stmt::Expr(e, _) => self.stmt_expr(e),
            other => {
                self.errors.push(err(other.span(), format!("unsupported statement: {SUPPORTED}")));
                None
            }
        }
    }

    fn local(&mut self, local: &syn::Local) -> Option<S> {
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
                    Expr::Lit(l) => match &l.lit {
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
        Some(S::Let(id, value))
    }

    fn stmt_expr(&mut self, e: &Expr) -> Option<S> {
        let span = e.span();
        match e {
            Expr::Assign(a) => self.assign(&a.left, None, &a.right, span),
            Expr::Binary(b) => {
                let Some(op) = Bin::from_syn_assign(&b.op) else {
                    self.errors.push(err(span, format!("a statement does something: {SUPPORTED}")));
                    return None;
                };
                self.assign(&b.left, Some(op), &b.right, span)
            }
            Expr::If(i) => {
                let cond = self.expr(&i.cond);
                let then = self.branch(&i.then_branch);
                let other = match &i.else_branch {
                    Some((_, e)) => match &**e {
                        Expr::Block(b) => self.branch(&b.block),
                        e => self.stmt_expr(e).into_iter().collect(),
                    },
                    None => Vec::new(),
                };
                Some(S::If(cond?, then, other))
            }
            Expr::While(w) => {
                let cond = self.expr(&w.cond);
                let body = self.branch(&w.body);
                Some(S::While(cond?, body))
            }
            Expr::ForLoop(f) => {
                let Expr::Range(r) = &*f.expr else {
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
                Some(S::For(var, start?, end?, body))
            }
            Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("barrier")) => {
                if !c.args.is_empty() {
                    self.errors.push(err(c.args.span(), "`barrier()` takes no arguments"));
                }
                Some(S::Barrier(span))
            }
            Expr::Block(b) => {
                self.errors.push(err(b.span(), format!("unsupported block: {SUPPORTED}")));
                None
            }
            _ => {
                self.errors.push(err(span, format!("a statement does something: {SUPPORTED}")));
                None
            }
        }
    }

    fn assign(&mut self, left: &Expr, op: Option<Bin>, right: &Expr, span: Span) -> Option<S> {
        let value = self.expr(right);
        match left {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = self.lookup(&p.path.get_ident()?.to_string(), left.span())?;
                Some(S::Assign(id, None, op, value?, span))
            }
            Expr::Index(ix) => {
                let Expr::Path(p) = &*ix.expr else {
                    self.errors.push(err(ix.expr.span(), "index a buffer or shared array by name"));
                    return None;
                };
                let id = self.lookup(&p.path.get_ident()?.to_string(), ix.expr.span())?;
                let index = self.expr(&ix.index);
                Some(S::Assign(id, Some(index?), op, value?, span))
            }
            other => {
                self.errors.push(err(other.span(), "assign to a local, or to an element of a buffer or shared array"));
                None
            }
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Ex> {
        let span = e.span();
        let ex = |e| Some(Ex { e, span });
        match e {
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Lit(l) => match &l.lit {
                Lit::Float(f) => ex(E::Float(f.base10_parse().ok()?)),
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
                        Ok(v) if fits(v) => ex(E::Int(v, Cell::new(ty), i.suffix().is_empty())),
                        _ => {
                            self.errors.push(err(i.span(), format!("`{i}` does not fit in {}", ty.name())));
                            None
                        }
                    }
                }
                Lit::Bool(b) => ex(E::Bool(b.value)),
                other => {
                    self.errors.push(err(other.span(), "kernels take f32, u32 and bool literals"));
                    None
                }
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                if let Some((_, v)) = super::ir::CONSTANTS.iter().find(|(c, _)| *c == name) {
                    return ex(E::Float(*v));
                }
                let id = self.lookup(&name, span)?;
                ex(E::Var(id))
            }
            Expr::Index(ix) => {
                let Expr::Path(p) = &*ix.expr else {
                    self.errors.push(err(ix.expr.span(), "index a buffer or shared array by name"));
                    return None;
                };
                let id = self.lookup(&p.path.get_ident()?.to_string(), ix.expr.span())?;
                let index = self.expr(&ix.index)?;
                ex(E::Index(id, Box::new(index)))
            }
            Expr::Unary(u) => {
                let inner = Box::new(self.expr(&u.expr)?);
                match u.op {
                    UnOp::Neg(_) => ex(E::Neg(inner)),
                    UnOp::Not(_) => ex(E::Not(inner)),
                    _ => {
                        self.errors.push(err(u.op.span(), format!("unsupported operator: {SUPPORTED}")));
                        None
                    }
                }
            }
            Expr::Binary(b) => {
                let Some(op) = Bin::from_syn(&b.op) else {
                    self.errors.push(err(b.op.span(), format!("unsupported operator: {SUPPORTED}")));
                    return None;
                };
                let (l, r) = (self.expr(&b.left), self.expr(&b.right));
                ex(E::Binary(op, Box::new(l?), Box::new(r?)))
            }
            Expr::Cast(c) => {
                let to = match &*c.ty {
                    syn::Type::Path(p) => p.path.get_ident().and_then(|i| Ty::from_name(&i.to_string())),
                    _ => None,
                };
                let Some(ty) = to.filter(|t| *t != Ty::Bool) else {
                    self.errors.push(err(c.ty.span(), "kernels cast to `f32`, `u32` or `i32`"));
                    return None;
                };
                ex(E::Cast(Box::new(self.expr(&c.expr)?), ty))
            }
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else {
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
                    return ex(E::Id(id));
                }
                if name == "barrier" {
                    self.errors.push(err(span, "`barrier()` is a statement"));
                    return None;
                }
                let Some(f) = Intrinsic::ALL.into_iter().find(|i| i.name() == name) else {
                    let names = Intrinsic::ALL.iter().map(|i| i.name()).chain(Id::ALL.iter().map(|i| i.name()));
                    let hint = crate::model::closest(&name, names).map(|c| format!("; did you mean `{c}`?"));
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
                let args: Option<Vec<Ex>> =
                    c.args.iter().map(|a| self.expr(a)).collect::<Vec<_>>().into_iter().collect();
                ex(E::Call(f, args?))
            }
            Expr::MethodCall(m) => {
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

// ---- checking ------------------------------------------------------------

/// Gives an unsuffixed integer literal the integer type `ty`; true if `e`
/// is one (and so now has that type).
fn settle(e: &Ex, ty: Ty) -> bool {
    match &e.e {
        E::Int(_, t, true) if ty.int() => {
            t.set(ty);
            true
        }
        _ => false,
    }
}

struct Check<'a> {
    k: &'a mut Kernel,
    errors: &'a mut Vec<syn::Error>,
}

impl Check<'_> {
    fn mismatch(&mut self, span: Span, msg: String) -> Option<Ty> {
        self.errors.push(err(span, format!("type mismatch: {msg}")));
        None
    }

    fn ty(&mut self, e: &Ex) -> Option<Ty> {
        match &e.e {
            E::Float(_) => Some(Ty::F32),
            E::Int(_, ty, _) => Some(ty.get()),
            E::Id(_) => Some(Ty::U32),
            E::Bool(_) => Some(Ty::Bool),
            E::Var(v) => {
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
            E::Index(v, i) => {
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
            E::Neg(x) => {
                settle(x, Ty::I32);
                match self.ty(x)? {
                    t @ (Ty::F32 | Ty::I32) => Some(t),
                    t => self.mismatch(e.span, format!("`-` takes f32 or i32, found {}", t.name())),
                }
            }
            E::Not(x) => match self.ty(x)? {
                Ty::Bool => Some(Ty::Bool),
                t => self.mismatch(e.span, format!("`!` takes bool, found {}", t.name())),
            },
            E::Binary(op, a, b) => {
                let (l, r) = (self.ty(a), self.ty(b));
                self.binary(*op, (a, l?), (b, r?), e.span)
            }
            E::Call(f, args) => {
                let tys: Vec<Option<Ty>> = args.iter().map(|a| self.ty(a)).collect();
                let tys: Vec<Ty> = tys.into_iter().collect::<Option<_>>()?;
                if *f == Intrinsic::Select {
                    return match (tys[0], tys[1], tys[2]) {
                        (Ty::Bool, a, b) if a == b => Some(a),
                        _ => self.mismatch(e.span, format!("`select` is {}", f.signature())),
                    };
                }
                match tys.iter().position(|t| *t != Ty::F32) {
                    None => Some(Ty::F32),
                    Some(i) => {
                        self.mismatch(args[i].span, format!("`{}` takes f32, found {}", f.name(), tys[i].name()))
                    }
                }
            }
            E::Cast(x, to) => match self.ty(x)? {
                Ty::Bool => self.mismatch(x.span, "casts take f32, u32 or i32".into()),
                _ => Some(*to),
            },
        }
    }

    /// The type of `a op b`, given the operands' types.
    fn binary(&mut self, op: Bin, (a, mut l): (&Ex, Ty), (b, mut r): (&Ex, Ty), span: Span) -> Option<Ty> {
        let s = op.symbol();
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
        Some(if op.is_arithmetic() || op.is_bitwise() { l } else { Ty::Bool })
    }

    fn block(&mut self, stmts: &[S]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &S) {
        match s {
            S::Let(v, value) => {
                if let Some(t) = self.ty(value) {
                    self.k.vars[*v].ty = t;
                }
            }
            S::Barrier(_) => {}
            S::Assign(v, index, op, value, span) => {
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
                    (Kind::Scalar { .. }, _) => {
                        self.errors
                            .push(err(*span, format!("`{}` is a parameter: copy it into a `let mut`", var.name)));
                    }
                    _ => self.errors.push(err(*span, format!("`{}` is indexed as `{}[i]`", var.name, var.name))),
                }
            }
            S::If(c, a, b) => {
                self.cond(c);
                self.block(a);
                self.block(b);
            }
            S::While(c, body) => {
                self.cond(c);
                self.block(body);
            }
            S::For(_, a, b, body) => {
                for e in [a, b] {
                    if let Some(t) = self.ty(e).filter(|t| *t != Ty::U32) {
                        self.mismatch(e.span, format!("a range runs over u32, found {}", t.name()));
                    }
                }
                self.block(body);
            }
        }
    }

    fn cond(&mut self, c: &Ex) {
        if let Some(t) = self.ty(c).filter(|t| *t != Ty::Bool) {
            self.mismatch(c.span, format!("a condition is bool, found {}", t.name()));
        }
    }

    /// Whether `e` has one value across a workgroup.
    fn uniform(&self, e: &Ex) -> bool {
        match &e.e {
            E::Float(_) | E::Int(..) | E::Bool(_) => true,
            E::Id(id) => matches!(id, Id::Workgroup | Id::Workgroups),
            E::Var(v) => self.k.vars[*v].uniform,
            E::Index(..) => false,
            E::Neg(x) | E::Not(x) | E::Cast(x, _) => self.uniform(x),
            E::Binary(_, a, b) => self.uniform(a) && self.uniform(b),
            E::Call(_, args) => args.iter().all(|a| self.uniform(a)),
        }
    }

    /// Marks the locals that may differ between invocations: those given a
    /// varying value, or assigned under varying control flow, to a fixpoint.
    fn uniformity(&mut self, body: &[S]) {
        loop {
            let before: Vec<bool> = self.k.vars.iter().map(|v| v.uniform).collect();
            self.mark(body, true);
            if self.k.vars.iter().map(|v| v.uniform).eq(before) {
                return;
            }
        }
    }

    fn mark(&mut self, stmts: &[S], uniform_flow: bool) {
        for s in stmts {
            match s {
                S::Let(v, e) => {
                    let u = uniform_flow && self.uniform(e);
                    self.k.vars[*v].uniform &= u;
                }
                S::Assign(v, None, _, e, _) => {
                    let u = uniform_flow && self.uniform(e);
                    self.k.vars[*v].uniform &= u;
                }
                S::If(c, a, b) => {
                    let u = uniform_flow && self.uniform(c);
                    self.mark(a, u);
                    self.mark(b, u);
                }
                S::While(c, body) => {
                    let u = uniform_flow && self.uniform(c);
                    self.mark(body, u);
                }
                S::For(v, a, b, body) => {
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
    fn barriers(&mut self, stmts: &[S], divergent: Option<Span>) {
        for s in stmts {
            match s {
                S::Barrier(span) => {
                    if let Some(at) = divergent {
                        let mut e = err(
                            *span,
                            "`barrier()` in divergent control flow: every invocation of a workgroup must reach the same \
                             barriers, and this one sits under a condition that differs between invocations",
                        );
                        e.combine(err(at, "this condition depends on the invocation (an id, a loaded value)"));
                        self.errors.push(e);
                    }
                }
                S::If(c, a, b) => {
                    let d = divergent.or((!self.uniform(c)).then_some(c.span));
                    self.barriers(a, d);
                    self.barriers(b, d);
                }
                S::While(c, body) => {
                    let d = divergent.or((!self.uniform(c)).then_some(c.span));
                    self.barriers(body, d);
                }
                S::For(_, a, b, body) => {
                    let d = divergent.or((!(self.uniform(a) && self.uniform(b))).then_some(a.span));
                    self.barriers(body, d);
                }
                _ => {}
            }
        }
    }
}

// ---- WGSL ----------------------------------------------------------------

/// A variable's WGSL name: the Rust name with its id, so no WGSL keyword or
/// builtin can clash with it.
fn wname(k: &Kernel, v: usize) -> String {
    let name = &k.vars[v].name;
    if name.starts_with('_') { format!("v{v}") } else { format!("{name}_{v}") }
}

fn wgsl_ex(k: &Kernel, e: &Ex, out: &mut Wgsl) {
    match &e.e {
        E::Float(v) => out.float(*v),
        E::Int(v, ty, _) => match ty.get() {
            // -2^31 has no positive literal: write it as an expression.
            Ty::I32 if *v == 1 << 31 => out.push_str("(-2147483647i - 1i)"),
            Ty::I32 => out.push_str(&format!("{v}i")),
            _ => out.push_str(&format!("{v}u")),
        },
        E::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        E::Var(v) => match k.vars[*v].kind {
            Kind::Scalar { index } => out.push_str(&format!("params.s{index}")),
            _ => out.push_str(&wname(k, *v)),
        },
        E::Index(v, i) => {
            out.push_str(&format!("{}[", wname(k, *v)));
            wgsl_ex(k, i, out);
            out.push(']');
        }
        E::Neg(x) | E::Not(x) => {
            out.push_str(if matches!(e.e, E::Neg(_)) { "(-" } else { "(!" });
            wgsl_ex(k, x, out);
            out.push(')');
        }
        // u32 by a non-zero literal is defined everywhere: no helper.
        E::Binary(op @ (Bin::Div | Bin::Rem), a, b)
            if value_ty(k, a) == Ty::U32 && matches!(b.e, E::Int(v, _, _) if v > 0) =>
        {
            out.push('(');
            wgsl_ex(k, a, out);
            out.push_str(&format!(" {} ", op.symbol()));
            wgsl_ex(k, b, out);
            out.push(')');
        }
        E::Binary(op, a, b) => {
            wgsl_binary(*op, value_ty(k, a), out, |out| wgsl_ex(k, a, out), |out| wgsl_ex(k, b, out))
        }
        E::Call(f, args) => out.call(*f, |i, out| wgsl_ex(k, &args[i], out)),
        E::Id(id) => out.push_str(match id {
            Id::Global => "gid.x",
            Id::Local => "lid.x",
            Id::Workgroup => "wid.x",
            Id::Workgroups => "nwg.x",
        }),
        E::Cast(x, t) => {
            match (value_ty(k, x), t) {
                (Ty::F32, Ty::I32) => out.helper(Helper::F32ToI32),
                (Ty::F32, Ty::U32) => out.helper(Helper::F32ToU32),
                _ => out.push_str(t.name()),
            }
            out.push('(');
            wgsl_ex(k, x, out);
            out.push(')');
        }
    }
}

/// Whether `a op= b`, `a` of type `ty`, is written other than `a op= b`.
fn needs_helper(op: Bin, ty: Ty) -> bool {
    matches!((op, ty), (Bin::Div, Ty::I32 | Ty::U32) | (Bin::Rem, _) | (Bin::Shl | Bin::Shr, _))
}

/// `a op b` in WGSL, with `a` of type `ty`: integer division and remainder
/// through helpers that define them on every backend, shift amounts masked
/// to five bits as WGSL defines (GLSL leaves larger shifts undefined).
fn wgsl_binary(op: Bin, ty: Ty, out: &mut Wgsl, a: impl FnOnce(&mut Wgsl), b: impl FnOnce(&mut Wgsl)) {
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

fn wgsl_block(k: &Kernel, stmts: &[S], depth: usize, out: &mut Wgsl) {
    let pad = "    ".repeat(depth);
    for s in stmts {
        match s {
            S::Let(v, e) => {
                let var = &k.vars[*v];
                let kw = if matches!(var.kind, Kind::Local { mutable: true }) { "var" } else { "let" };
                out.push_str(&format!("{pad}{kw} {}: {} = ", wname(k, *v), var.ty.name()));
                wgsl_ex(k, e, out);
                out.push_str(";\n");
            }
            S::Assign(v, index, op, e, _) => {
                let target = |out: &mut Wgsl| {
                    out.push_str(&wname(k, *v));
                    if let Some(i) = index {
                        out.push('[');
                        wgsl_ex(k, i, out);
                        out.push(']');
                    }
                };
                out.push_str(&pad);
                target(out);
                let ty = if index.is_some() { Ty::F32 } else { k.vars[*v].ty };
                match op {
                    // `x op= v` becomes `x = x op v` where a helper applies.
                    Some(op) if needs_helper(*op, ty) => {
                        out.push_str(" = ");
                        wgsl_binary(*op, ty, out, target, |out| wgsl_ex(k, e, out));
                    }
                    Some(op) => {
                        out.push_str(&format!(" {}= ", op.symbol()));
                        wgsl_ex(k, e, out);
                    }
                    None => {
                        out.push_str(" = ");
                        wgsl_ex(k, e, out);
                    }
                }
                out.push_str(";\n");
            }
            S::If(c, a, b) => {
                out.push_str(&format!("{pad}if ("));
                wgsl_ex(k, c, out);
                out.push_str(") {\n");
                wgsl_block(k, a, depth + 1, out);
                if !b.is_empty() {
                    out.push_str(&format!("{pad}}} else {{\n"));
                    wgsl_block(k, b, depth + 1, out);
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            S::While(c, body) => {
                out.push_str(&format!("{pad}while ("));
                wgsl_ex(k, c, out);
                out.push_str(") {\n");
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            S::For(v, a, b, body) => {
                let n = wname(k, *v);
                out.push_str(&format!("{pad}for (var {n}: u32 = "));
                wgsl_ex(k, a, out);
                out.push_str(&format!("; {n} < "));
                wgsl_ex(k, b, out);
                out.push_str(&format!("; {n} += 1u) {{\n"));
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            S::Barrier(_) => out.push_str(&format!("{pad}workgroupBarrier();\n")),
        }
    }
}

/// The compute shader: buffer bindings in parameter order, then the
/// scalars in one uniform struct.
fn wgsl(k: &Kernel) -> String {
    let mut out = String::new();
    let mut binding = 0;
    let mut scalars = Vec::new();
    for &p in &k.params {
        let var = &k.vars[p];
        match var.kind {
            Kind::Buffer { output, .. } => {
                let access = if output { "read_write" } else { "read" };
                let _ =
                    writeln!(out, "@group(0) @binding({binding}) var<storage, {access}> {}: array<f32>;", wname(k, p));
                binding += 1;
            }
            Kind::Scalar { index } => scalars.push(format!("    s{index}: {},\n", var.ty.name())),
            _ => {}
        }
    }
    if !scalars.is_empty() {
        let _ = writeln!(out, "struct Params {{\n{}}}", scalars.concat());
        let _ = writeln!(out, "@group(0) @binding({binding}) var<uniform> params: Params;");
    }
    for (i, v) in k.vars.iter().enumerate() {
        if let Kind::Shared { len } = v.kind {
            let _ = writeln!(out, "var<workgroup> {}: array<f32, {len}>;", wname(k, i));
        }
    }
    let _ = writeln!(
        out,
        "\n@compute @workgroup_size({})\nfn {}(@builtin(global_invocation_id) gid: vec3<u32>, \
         @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, \
         @builtin(num_workgroups) nwg: vec3<u32>) {{",
        k.workgroup, k.name
    );
    let mut w = Wgsl::new(&k.name.to_string());
    w.out = out;
    wgsl_block(k, &k.body, 1, &mut w);
    w.push_str("}\n");
    w.finish()
}

// ---- Rust ----------------------------------------------------------------

/// Rust for an expression inside the loop over invocations (`lane`).
fn rust_ex(k: &Kernel, e: &Ex) -> TokenStream {
    let name = k.name.to_string();
    match &e.e {
        // Literals are parenthesised: a negative one would otherwise bind
        // looser than the method calls (`wrapping_add`) applied to it.
        E::Float(v) => {
            let v = *v as f32;
            quote!((#v))
        }
        E::Int(v, ty, _) => match ty.get() {
            Ty::I32 => {
                let v = *v as i32;
                quote!((#v))
            }
            _ => {
                let v = *v as u32;
                quote!((#v))
            }
        },
        E::Bool(b) => quote!(#b),
        E::Var(v) => match k.vars[*v].kind {
            Kind::Scalar { index } => {
                let s = format_ident!("s{}", index);
                quote!(#s)
            }
            _ => {
                let id = format_ident!("v{}", v);
                quote!(#id[lane])
            }
        },
        E::Index(v, i) => {
            let i = rust_ex(k, i);
            let var = &k.vars[*v];
            match var.kind {
                Kind::Buffer { index, .. } => {
                    let label = format!("{name}: `{}`", var.name);
                    quote!(buffers[#index].load(#i, #label))
                }
                _ => {
                    let id = format_ident!("v{}", v);
                    quote!(#id[(#i) as usize])
                }
            }
        }
        E::Neg(x) if value_ty(k, x).int() => {
            let x = rust_ex(k, x);
            quote!(#x.wrapping_neg())
        }
        E::Neg(x) => {
            let x = rust_ex(k, x);
            quote!((-#x))
        }
        E::Not(x) => {
            let x = rust_ex(k, x);
            quote!((!#x))
        }
        E::Binary(op, a, b) => rust_binary(*op, value_ty(k, a), rust_ex(k, a), rust_ex(k, b)),
        E::Call(Intrinsic::Select, args) => {
            let (c, a, b) = (rust_ex(k, &args[0]), rust_ex(k, &args[1]), rust_ex(k, &args[2]));
            quote!((if #c { #a } else { #b }))
        }
        E::Call(f, args) => {
            let f = format_ident!("{}", f.name());
            let args = args.iter().map(|a| rust_ex(k, a));
            quote!(<f32 as ::blaze::runtime::kernel::KernelFloat>::#f(#(#args),*))
        }
        E::Id(id) => match id {
            Id::Global => quote!((group * WORKGROUP + lane as u32)),
            Id::Local => quote!((lane as u32)),
            Id::Workgroup => quote!(group),
            Id::Workgroups => quote!(groups),
        },
        E::Cast(x, t) => {
            let (x, t) = (rust_ex(k, x), t.rust());
            quote!(((#x) as #t))
        }
    }
}

/// The type of a checked expression (locals carry their types by then).
fn value_ty(k: &Kernel, e: &Ex) -> Ty {
    match &e.e {
        E::Float(_) | E::Index(..) => Ty::F32,
        E::Int(_, t, _) => t.get(),
        E::Id(_) => Ty::U32,
        E::Bool(_) | E::Not(_) => Ty::Bool,
        E::Var(v) => k.vars[*v].ty,
        E::Neg(x) => value_ty(k, x),
        E::Binary(op, a, _) if op.is_arithmetic() || op.is_bitwise() => value_ty(k, a),
        E::Binary(..) => Ty::Bool,
        E::Call(Intrinsic::Select, args) => value_ty(k, &args[1]),
        E::Call(..) => Ty::F32,
        E::Cast(_, t) => *t,
    }
}

/// `a op b` in Rust with `a` of type `ty`, computing what WGSL defines:
/// integers wrap, `x / 0 = x`, `MIN / -1 = MIN`, `x % 0 = 0`, and a shift
/// uses the low five bits of its amount.
fn rust_binary(op: Bin, ty: Ty, a: TokenStream, b: TokenStream) -> TokenStream {
    if ty == Ty::F32 && op == Bin::Rem {
        return quote!(<f32 as ::blaze::runtime::kernel::KernelFloat>::wgsl_rem(#a, #b));
    }
    if !ty.int() {
        let op = op.tokens();
        return quote!((#a #op #b));
    }
    match op {
        Bin::Add => quote!(#a.wrapping_add(#b)),
        Bin::Sub => quote!(#a.wrapping_sub(#b)),
        Bin::Mul => quote!(#a.wrapping_mul(#b)),
        Bin::Div => quote!({ let a = #a; a.checked_div(#b).unwrap_or(a) }),
        Bin::Rem => quote!(#a.checked_rem(#b).unwrap_or(0)),
        Bin::Shl => quote!(#a.wrapping_shl((#b) as u32)),
        Bin::Shr => quote!(#a.wrapping_shr((#b) as u32)),
        Bin::BitAnd | Bin::BitOr | Bin::BitXor | Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge | Bin::Eq | Bin::Ne => {
            let op = op.tokens();
            quote!((#a #op #b))
        }
        // Logic takes bools, which the checker made sure of.
        Bin::And | Bin::Or => {
            let op = op.tokens();
            quote!((#a #op #b))
        }
    }
}

/// Statements without barriers, for one invocation `lane`.
fn rust_lane(k: &Kernel, stmts: &[S]) -> TokenStream {
    let name = k.name.to_string();
    stmts
        .iter()
        .map(|s| match s {
            S::Let(v, e) => {
                let (id, e) = (format_ident!("v{}", v), rust_ex(k, e));
                quote!(#id[lane] = #e;)
            }
            S::Barrier(_) => quote!(),
            S::Assign(v, index, op, e, _) => {
                let e = rust_ex(k, e);
                let var = &k.vars[*v];
                // Buffer and shared elements are f32; locals have their type.
                let ty = if index.is_some() { Ty::F32 } else { var.ty };
                let value = |current: TokenStream| match op {
                    None => e.clone(),
                    Some(op) => rust_binary(*op, ty, current, e.clone()),
                };
                match (var.kind, index) {
                    (Kind::Buffer { index: b, .. }, Some(i)) => {
                        let i = rust_ex(k, i);
                        let label = format!("{name}: `{}`", var.name);
                        let v = value(quote!(buffers[#b].load(idx, #label)));
                        quote!({ let idx = #i; buffers[#b].store(idx, #v, #label); })
                    }
                    (_, Some(i)) => {
                        let (i, id) = (rust_ex(k, i), format_ident!("v{}", v));
                        let v = value(quote!(#id[idx]));
                        quote!({ let idx = (#i) as usize; #id[idx] = #v; })
                    }
                    (_, None) => {
                        let id = format_ident!("v{}", v);
                        let v = value(quote!(#id[lane]));
                        quote!(#id[lane] = #v;)
                    }
                }
            }
            S::If(c, a, b) => {
                let (c, a, b) = (rust_ex(k, c), rust_lane(k, a), rust_lane(k, b));
                quote!(if #c { #a } else { #b })
            }
            S::While(c, body) => {
                let (c, body) = (rust_ex(k, c), rust_lane(k, body));
                quote!(while #c { #body })
            }
            S::For(v, a, b, body) => {
                let (id, a, b, body) = (format_ident!("v{}", v), rust_ex(k, a), rust_ex(k, b), rust_lane(k, body));
                quote!({ let (start, end) = (#a, #b); for i in start..end { #id[lane] = i; #body } })
            }
        })
        .collect()
}

/// A statement list at workgroup level: barrier-free runs loop over the
/// invocations; control flow holding a barrier is uniform (checked), so it
/// runs once, deciding on invocation 0's values.
fn rust_group(k: &Kernel, stmts: &[S]) -> TokenStream {
    let mut out = TokenStream::new();
    let mut run: Vec<S> = Vec::new();
    let flush = |run: &mut Vec<S>, out: &mut TokenStream| {
        if !run.is_empty() {
            let body = rust_lane(k, run);
            out.extend(quote!(for lane in 0..WORKGROUP as usize { #body }));
            run.clear();
        }
    };
    for s in stmts {
        if !s.has_barrier() {
            run.push(s.clone());
            continue;
        }
        flush(&mut run, &mut out);
        let at0 = |e: &Ex| {
            let e = rust_ex(k, e);
            quote!({ let lane = 0usize; #e })
        };
        out.extend(match s {
            S::Barrier(_) => quote!(),
            S::If(c, a, b) => {
                let (c, a, b) = (at0(c), rust_group(k, a), rust_group(k, b));
                quote!(if #c { #a } else { #b })
            }
            S::While(c, body) => {
                let (c, body) = (at0(c), rust_group(k, body));
                quote!(while #c { #body })
            }
            S::For(v, a, b, body) => {
                let (id, a, b, body) = (format_ident!("v{}", v), at0(a), at0(b), rust_group(k, body));
                quote!({ let (start, end) = (#a, #b); for i in start..end { #id = [i; WORKGROUP as usize]; #body } })
            }
            _ => quote!(),
        });
    }
    flush(&mut run, &mut out);
    out
}

fn rust(f: &syn::ItemFn, k: &Kernel, wgsl: &str) -> TokenStream {
    let rt = quote!(::blaze::runtime);
    let (name, vis) = (&k.name, &f.vis);
    let name_str = name.to_string();
    let docs: Vec<&syn::Attribute> = f.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let workgroup = k.workgroup as u32;
    let locals = k.vars.iter().enumerate().filter_map(|(i, v)| {
        let id = format_ident!("v{}", i);
        match v.kind {
            Kind::Local { .. } => {
                let z = v.ty.zero();
                Some(quote!(let mut #id = [#z; WORKGROUP as usize];))
            }
            Kind::Shared { len } => Some(quote!(let mut #id = [0.0f32; #len];)),
            _ => None,
        }
    });
    let scalars = k.params.iter().filter_map(|&p| match k.vars[p].kind {
        Kind::Scalar { index } => {
            let id = format_ident!("s{}", index);
            let ty = k.vars[p].ty.rust();
            Some(quote!(let #id: #ty = scalars[#index].into();))
        }
        _ => None,
    });
    let body = rust_group(k, &k.body);

    // The launcher's parameters, in the kernel's order.
    let mut launch_params = Vec::new();
    let mut ranks = Vec::new();
    let mut buffer_args = Vec::new();
    let mut scalar_args = Vec::new();
    let mut param_kinds = Vec::new();
    for &p in &k.params {
        let var = &k.vars[p];
        let id = format_ident!("{}", var.name);
        match var.kind {
            Kind::Buffer { output: false, index } => {
                let r = format_ident!("R{}", index);
                ranks.push(quote!(const #r: usize));
                launch_params.push(quote!(#id: &#rt::Tensor<B, #r>));
                buffer_args.push(quote!(#rt::kernel::LaunchBuffer::Input(#id.storage())));
                param_kinds.push(quote!(#rt::kernel::ParamKind::Input));
            }
            Kind::Buffer { output: true, index } => {
                let r = format_ident!("R{}", index);
                ranks.push(quote!(const #r: usize));
                launch_params.push(quote!(#id: &mut #rt::Tensor<B, #r>));
                buffer_args.push(quote!(#rt::kernel::LaunchBuffer::Output(#id.storage_mut())));
                param_kinds.push(quote!(#rt::kernel::ParamKind::Output));
            }
            Kind::Scalar { .. } => {
                let ty = var.ty.rust();
                launch_params.push(quote!(#id: #ty));
                scalar_args.push(quote!(#rt::kernel::ScalarArg::from(#id)));
                param_kinds.push(match var.ty {
                    Ty::F32 => quote!(#rt::kernel::ParamKind::F32),
                    Ty::I32 => quote!(#rt::kernel::ParamKind::I32),
                    _ => quote!(#rt::kernel::ParamKind::U32),
                });
            }
            _ => {}
        }
    }
    let launch_doc = format!(
        "Runs `{name_str}` over `groups` workgroups of {workgroup} invocations, on the backend of the tensors. \
         Buffers are f32 tensors of any rank, read and written as flat arrays."
    );
    quote! {
        #(#docs)*
        #[allow(non_snake_case)]
        #vis mod #name {
            /// The kernel's type, implementing `Workgroups`.
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Kernel;

            /// The kernel as a WGSL compute shader, validated by naga when
            /// the kernel compiled.
            pub const WGSL: &str = #wgsl;

            /// Invocations per workgroup.
            pub const WORKGROUP: u32 = #workgroup;

            impl #rt::kernel::Workgroups for Kernel {
                const NAME: &'static str = #name_str;
                const WGSL: &'static str = WGSL;
                const WORKGROUP: u32 = #workgroup;
                const PARAMS: &'static [#rt::kernel::ParamKind] = &[#(#param_kinds),*];

                #[allow(unused_variables, unused_mut, unused_parens, clippy::all)]
                fn run_workgroup(group: u32, groups: u32, buffers: &[#rt::kernel::RawBuffer], scalars: &[#rt::kernel::ScalarArg]) {
                    #(#scalars)*
                    #(#locals)*
                    #body
                }
            }

            #[doc = #launch_doc]
            pub fn launch<B: #rt::Backend, #(#ranks),*>(groups: u32, #(#launch_params),*) {
                B::launch::<Kernel>(groups, &mut [#(#buffer_args),*], &[#(#scalar_args),*]);
            }
        }
    }
}
