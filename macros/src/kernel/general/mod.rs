//! General kernels: `#[workgroup(N)]` functions over `f32` buffers with
//! invocation ids, workgroup-shared arrays, barriers, loops and branches.
//! Lowered to a typed IR here, checked (types, writes to inputs, barriers
//! in divergent control flow), then emitted as a WGSL compute shader
//! (validated with naga) and as Rust that runs a workgroup's invocations
//! in lockstep between barriers. The pipeline's stages are this folder's
//! files: `lower.rs` (syntax to IR), `check.rs` (types, uniformity),
//! `wgsl.rs` and `rust.rs` (the two emitters); the IR is here.

mod check;
mod lower;
mod rust;
mod wgsl;

use std::cell::Cell;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;

use self::check::Check;
use self::lower::Lower;
use super::ir::{Bin, Intrinsic};
use super::wgsl::validate;

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

/// An expression of a general kernel.
#[derive(Clone, Debug)]
enum ExprKind {
    Float(f64),
    /// An integer literal: its value, its type (u32 unless suffixed or
    /// settled by the checker from the other operand), and whether the
    /// checker may still settle it.
    Int(i64, Cell<Ty>, bool),
    Bool(bool),
    Var(usize),
    /// A load from a buffer or shared array.
    Index(usize, Box<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(Bin, Box<Expr>, Box<Expr>),
    Call(Intrinsic, Vec<Expr>),
    Id(Id),
    Cast(Box<Expr>, Ty),
}

/// An expression and the user's tokens it came from.
#[derive(Clone, Debug)]
struct Expr {
    kind: ExprKind,
    span: Span,
}

/// Statements; a `target` of an assignment is a local, or an element of a
/// buffer or shared array.
#[derive(Clone, Debug)]
enum Stmt {
    Let(usize, Expr),
    Assign(usize, Option<Expr>, Option<Bin>, Expr, Span),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    While(Expr, Vec<Stmt>),
    For(usize, Expr, Expr, Vec<Stmt>),
    Barrier(Span),
}

impl Stmt {
    fn has_barrier(&self) -> bool {
        match self {
            Stmt::Barrier(_) => true,
            Stmt::If(_, a, b) => a.iter().chain(b).any(Stmt::has_barrier),
            Stmt::While(_, b) | Stmt::For(_, _, _, b) => b.iter().any(Stmt::has_barrier),
            _ => false,
        }
    }
}

/// A general kernel: its variables (parameters first, then locals and
/// shared arrays, each by index) and its body. Plain values: `syn` stays
/// in `lower.rs`.
struct Kernel {
    name: String,
    /// Where the kernel's name is, for errors about the whole kernel.
    span: Span,
    workgroup: usize,
    vars: Vec<Var>,
    params: Vec<usize>,
    body: Vec<Stmt>,
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
    let mut k = Kernel {
        name: f.sig.ident.to_string(),
        span: f.sig.ident.span(),
        workgroup,
        vars: Vec::new(),
        params: Vec::new(),
        body: Vec::new(),
    };
    let body = {
        let mut lower = Lower::new(&mut k, &mut errors);
        lower.signature(f);
        lower.block(&f.block.stmts)
    };
    if errors.is_empty() {
        let mut check = Check::new(&mut k, &mut errors);
        check.block(&body);
        check.uniformity(&body);
        check.barriers(&body, None);
    }
    k.body = body;
    if !errors.is_empty() {
        return errors.into_iter().map(|e| e.to_compile_error()).collect();
    }
    let wgsl = wgsl::wgsl(&k);
    if let Err(e) = validate(&wgsl) {
        let msg = format!("kernel `{}` produced WGSL that naga rejects:\n{e}\n{wgsl}", k.name);
        return err(k.span, msg).to_compile_error();
    }
    rust::rust(f, &k, &wgsl)
}

/// The type of a checked expression (locals carry their types by then).
fn value_ty(k: &Kernel, e: &Expr) -> Ty {
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Index(..) => Ty::F32,
        ExprKind::Int(_, t, _) => t.get(),
        ExprKind::Id(_) => Ty::U32,
        ExprKind::Bool(_) | ExprKind::Not(_) => Ty::Bool,
        ExprKind::Var(v) => k.vars[*v].ty,
        ExprKind::Neg(x) => value_ty(k, x),
        ExprKind::Binary(op, a, _) if op.is_arithmetic() || op.is_bitwise() => value_ty(k, a),
        ExprKind::Binary(..) => Ty::Bool,
        ExprKind::Call(Intrinsic::Select, args) => value_ty(k, &args[1]),
        ExprKind::Call(..) => Ty::F32,
        ExprKind::Cast(_, t) => *t,
    }
}
