//! The one IR of both kernel forms. A general kernel (`#[workgroup(N)]`)
//! is statements over buffers, scalars, locals and shared arrays; an
//! elementwise kernel is the same IR without buffers: its parameters are
//! one element each, its body only `let` bindings, and it has a result.
//! Plain values throughout: names are strings as the user wrote them
//! (`r#type` keeps its prefix), spans only point back at the user's
//! tokens, and `syn` stays in the lowering stages (`lower.rs`,
//! `general/lower.rs`). So every later stage (`check.rs`, `diff.rs`, the
//! WGSL and Rust printers) runs on kernels built by hand in `ir_tests.rs`.

use std::cell::Cell;

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The value types. Elementwise kernels have `f32` and `bool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F32,
    U32,
    I32,
    Bool,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::U32 => "u32",
            Ty::I32 => "i32",
            Ty::Bool => "bool",
        }
    }

    pub fn rust(self) -> TokenStream {
        match self {
            Ty::F32 => quote!(f32),
            Ty::U32 => quote!(u32),
            Ty::I32 => quote!(i32),
            Ty::Bool => quote!(bool),
        }
    }

    pub fn zero(self) -> TokenStream {
        match self {
            Ty::F32 => quote!(0.0f32),
            Ty::U32 => quote!(0u32),
            Ty::I32 => quote!(0i32),
            Ty::Bool => quote!(false),
        }
    }

    pub fn int(self) -> bool {
        matches!(self, Ty::U32 | Ty::I32)
    }

    pub fn from_name(name: &str) -> Option<Ty> {
        [Ty::F32, Ty::U32, Ty::I32, Ty::Bool].into_iter().find(|t| t.name() == name)
    }
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    /// Integer bit operations (general kernels only).
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
}

impl Bin {
    pub fn symbol(self) -> &'static str {
        match self {
            Bin::Add => "+",
            Bin::Sub => "-",
            Bin::Mul => "*",
            Bin::Div => "/",
            Bin::Rem => "%",
            Bin::Lt => "<",
            Bin::Le => "<=",
            Bin::Gt => ">",
            Bin::Ge => ">=",
            Bin::Eq => "==",
            Bin::Ne => "!=",
            Bin::And => "&&",
            Bin::Or => "||",
            Bin::Shl => "<<",
            Bin::Shr => ">>",
            Bin::BitAnd => "&",
            Bin::BitOr => "|",
            Bin::BitXor => "^",
        }
    }

    /// The operator as Rust tokens.
    pub fn tokens(self) -> proc_macro2::TokenStream {
        match self {
            Bin::Add => quote::quote!(+),
            Bin::Sub => quote::quote!(-),
            Bin::Mul => quote::quote!(*),
            Bin::Div => quote::quote!(/),
            Bin::Rem => quote::quote!(%),
            Bin::Lt => quote::quote!(<),
            Bin::Le => quote::quote!(<=),
            Bin::Gt => quote::quote!(>),
            Bin::Ge => quote::quote!(>=),
            Bin::Eq => quote::quote!(==),
            Bin::Ne => quote::quote!(!=),
            Bin::And => quote::quote!(&&),
            Bin::Or => quote::quote!(||),
            Bin::Shl => quote::quote!(<<),
            Bin::Shr => quote::quote!(>>),
            Bin::BitAnd => quote::quote!(&),
            Bin::BitOr => quote::quote!(|),
            Bin::BitXor => quote::quote!(^),
        }
    }

    pub fn is_arithmetic(self) -> bool {
        matches!(self, Bin::Add | Bin::Sub | Bin::Mul | Bin::Div | Bin::Rem)
    }

    /// `<` `<=` `>` `>=`: numbers only.
    pub fn is_ordering(self) -> bool {
        matches!(self, Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge)
    }

    pub fn is_logic(self) -> bool {
        matches!(self, Bin::And | Bin::Or)
    }

    /// Shifts and bitwise and/or/xor: integer operands, an integer result.
    pub fn is_bitwise(self) -> bool {
        matches!(self, Bin::Shl | Bin::Shr | Bin::BitAnd | Bin::BitOr | Bin::BitXor)
    }
}

/// The intrinsics, each with its arity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intrinsic {
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Tanh,
    Sin,
    Cos,
    Pow,
    Abs,
    Sign,
    Min,
    Max,
    Clamp,
    Floor,
    Ceil,
    Fma,
    Select,
    Erf,
}

/// The intrinsics of one argument, as a pattern: named once for the
/// matches that decide by arity.
macro_rules! one_argument {
    () => {
        Intrinsic::Exp
            | Intrinsic::Exp2
            | Intrinsic::Log
            | Intrinsic::Log2
            | Intrinsic::Sqrt
            | Intrinsic::Rsqrt
            | Intrinsic::Tanh
            | Intrinsic::Sin
            | Intrinsic::Cos
            | Intrinsic::Abs
            | Intrinsic::Sign
            | Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Erf
    };
}

impl Intrinsic {
    pub const ALL: [Intrinsic; 20] = [
        Intrinsic::Exp,
        Intrinsic::Exp2,
        Intrinsic::Log,
        Intrinsic::Log2,
        Intrinsic::Sqrt,
        Intrinsic::Rsqrt,
        Intrinsic::Tanh,
        Intrinsic::Sin,
        Intrinsic::Cos,
        Intrinsic::Pow,
        Intrinsic::Abs,
        Intrinsic::Sign,
        Intrinsic::Min,
        Intrinsic::Max,
        Intrinsic::Clamp,
        Intrinsic::Floor,
        Intrinsic::Ceil,
        Intrinsic::Fma,
        Intrinsic::Select,
        Intrinsic::Erf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Exp2 => "exp2",
            Intrinsic::Log => "log",
            Intrinsic::Log2 => "log2",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Rsqrt => "rsqrt",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Pow => "pow",
            Intrinsic::Abs => "abs",
            Intrinsic::Sign => "sign",
            Intrinsic::Min => "min",
            Intrinsic::Max => "max",
            Intrinsic::Clamp => "clamp",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Fma => "fma",
            Intrinsic::Select => "select",
            Intrinsic::Erf => "erf",
        }
    }

    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow | Intrinsic::Min | Intrinsic::Max => 2,
            Intrinsic::Clamp | Intrinsic::Fma | Intrinsic::Select => 3,
            one_argument!() => 1,
        }
    }

    pub fn signature(self) -> &'static str {
        match self {
            Intrinsic::Select => "select(cond: bool, if_true: f32, if_false: f32)",
            Intrinsic::Clamp => "clamp(x: f32, lo: f32, hi: f32)",
            Intrinsic::Fma => "fma(a: f32, b: f32, c: f32)",
            Intrinsic::Pow => "pow(x: f32, y: f32)",
            Intrinsic::Min => "min(a: f32, b: f32)",
            Intrinsic::Max => "max(a: f32, b: f32)",
            one_argument!() => "(x: f32)",
        }
    }

    pub fn from_name(name: &str) -> Option<Intrinsic> {
        Intrinsic::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// The invocation ids of a general kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Id {
    Global,
    Local,
    Workgroup,
    Workgroups,
}

impl Id {
    pub const ALL: [Id; 4] = [Id::Global, Id::Local, Id::Workgroup, Id::Workgroups];

    pub fn name(self) -> &'static str {
        match self {
            Id::Global => "global_id",
            Id::Local => "local_id",
            Id::Workgroup => "workgroup_id",
            Id::Workgroups => "num_workgroups",
        }
    }
}

/// What a name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Elementwise parameter `index`: one element of a tensor (or a scalar
    /// broadcast to every element).
    Element { index: usize },
    /// General buffer parameter `index`: `&[f32]`, or `&mut [f32]` when
    /// `output`.
    Buffer { index: usize, output: bool },
    /// General scalar parameter `index`, one value for every invocation.
    Scalar { index: usize },
    /// A local (`let`, `let mut`, a `for` variable).
    Local { mutable: bool },
    /// A workgroup-shared `[f32; len]`.
    Shared { len: usize },
}

/// A named value, referred to by its index in [`Kernel::vars`].
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub ty: Ty,
    pub kind: Kind,
    /// Whether every invocation of a workgroup holds the same value.
    pub uniform: bool,
}

/// A `kernel!` function a fused group calls, or one of its partials.
#[derive(Clone, Debug)]
pub struct Extern {
    /// The module `kernel!` made (its `Kernel` type implements `Elementwise`).
    pub path: proc_macro2::TokenStream,
    /// Its name, the name of its WGSL function.
    pub name: String,
    /// `Some(i)`: the partial derivative by argument `i`.
    pub partial: Option<usize>,
    /// An op of the op table (`blaze_spec::ops`) rather than a `kernel!`
    /// function: the runtime holds its kernel and the CubeCL backend its
    /// `#[cube]` functions (a binary op's name starts `binary_`).
    pub table: bool,
}

impl Extern {
    /// The WGSL function: `{name}` or, for a partial, `{name}_d{i}`.
    pub fn wgsl_name(&self) -> String {
        match self.partial {
            None => self.name.clone(),
            Some(i) => format!("{}_d{i}", self.name),
        }
    }
}

/// An expression.
#[derive(Clone, Debug)]
pub enum ExprKind {
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
    /// A call of a `kernel!` function (fused groups only): f32 arguments,
    /// an f32 result.
    Extern(Box<Extern>, Vec<Expr>),
    Id(Id),
    Cast(Box<Expr>, Ty),
}

/// An expression and the user's tokens it came from (derivatives reuse
/// the span of what they came from).
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }
}

/// Statements; the target of an assignment is a local, or an element of a
/// buffer or shared array.
#[derive(Clone, Debug)]
pub enum Stmt {
    Let(usize, Expr),
    Assign(usize, Option<Expr>, Option<Bin>, Expr, Span),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    While(Expr, Vec<Stmt>),
    For(usize, Expr, Expr, Vec<Stmt>),
    /// A barrier, and what the user wrote: `barrier()`, or the reduction
    /// (`workgroup_sum`) it is part of.
    Barrier(Span, &'static str),
}

impl Stmt {
    pub fn has_barrier(&self) -> bool {
        match self {
            Stmt::Barrier(..) => true,
            Stmt::If(_, a, b) => a.iter().chain(b).any(Stmt::has_barrier),
            Stmt::While(_, b) | Stmt::For(_, _, _, b) => b.iter().any(Stmt::has_barrier),
            Stmt::Let(..) | Stmt::Assign(..) => false,
        }
    }
}

/// Where a kernel's Rust is emitted, which decides the paths it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Home {
    /// A user's crate (`kernel!`, `#[model]`): everything through the
    /// `blaze` facade, the CubeCL items behind its `cubecl` feature.
    #[default]
    Facade,
    /// The runtime itself (the op table's kernels): `crate::`, no CubeCL
    /// items (the CubeCL backend prints its own from the table).
    Runtime,
    /// The CubeCL backend (the op table's `#[cube]` functions): the
    /// runtime and CubeCL by their own crate names.
    Cube,
}

impl Home {
    /// The path of the runtime crate from here.
    pub fn runtime(self) -> TokenStream {
        match self {
            Home::Facade => quote!(::blaze::runtime),
            Home::Runtime => quote!(crate),
            Home::Cube => quote!(::blaze_runtime),
        }
    }
}

/// A kernel: its variables (parameters first, then locals and shared
/// arrays), its parameters in order, its body, and, for an elementwise
/// kernel, its result.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// Where the kernel's name is, for errors about the whole kernel.
    pub span: Span,
    /// Invocations per workgroup of a general kernel; `None` for an
    /// elementwise kernel, which runs once per element.
    pub workgroup: Option<usize>,
    pub vars: Vec<Var>,
    pub params: Vec<usize>,
    pub body: Vec<Stmt>,
    /// The value an elementwise kernel returns.
    pub result: Option<Expr>,
    /// Where its Rust is emitted.
    pub home: Home,
}

impl Kernel {
    /// An empty kernel of either form, to be filled by a lowering.
    pub fn new(name: String, span: Span, workgroup: Option<usize>) -> Self {
        Kernel {
            name,
            span,
            workgroup,
            vars: Vec::new(),
            params: Vec::new(),
            body: Vec::new(),
            result: None,
            home: Home::Facade,
        }
    }

    pub fn is_elementwise(&self) -> bool {
        self.workgroup.is_none()
    }

    /// Adds a variable; its index.
    pub fn declare(&mut self, name: String, ty: Ty, kind: Kind) -> usize {
        self.vars.push(Var { name, ty, kind, uniform: true });
        self.vars.len() - 1
    }

    /// The `let` bindings of the body, in order: all of an elementwise
    /// kernel's statements.
    pub fn bindings(&self) -> impl Iterator<Item = (usize, &Expr)> {
        self.body.iter().filter_map(|s| match s {
            Stmt::Let(v, e) => Some((*v, e)),
            _ => None,
        })
    }

    /// The type of a checked expression (locals carry their types by then).
    pub fn ty(&self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Float(_) | ExprKind::Index(..) => Ty::F32,
            ExprKind::Int(_, t, _) => t.get(),
            ExprKind::Id(_) => Ty::U32,
            ExprKind::Bool(_) | ExprKind::Not(_) => Ty::Bool,
            ExprKind::Var(v) => self.vars[*v].ty,
            ExprKind::Neg(x) => self.ty(x),
            ExprKind::Binary(op, a, _) if op.is_arithmetic() || op.is_bitwise() => self.ty(a),
            ExprKind::Binary(..) => Ty::Bool,
            ExprKind::Call(Intrinsic::Select, args) => self.ty(&args[1]),
            ExprKind::Call(..) | ExprKind::Extern(..) => Ty::F32,
            ExprKind::Cast(_, t) => *t,
        }
    }
}

/// Constants usable by name.
pub const CONSTANTS: [(&str, f64); 4] = [
    ("PI", std::f64::consts::PI),
    ("E", std::f64::consts::E),
    ("LN_2", std::f64::consts::LN_2),
    ("SQRT_2", std::f64::consts::SQRT_2),
];

/// The `kernel!` functions (and partials) that `kernels` call, each once,
/// with their arities.
pub fn externs<'a>(kernels: impl Iterator<Item = &'a Kernel>) -> Vec<(Extern, usize)> {
    fn walk(e: &Expr, out: &mut Vec<(Extern, usize)>) {
        match &e.kind {
            ExprKind::Extern(f, args) => {
                if !out.iter().any(|(g, _)| g.wgsl_name() == f.wgsl_name()) {
                    out.push(((**f).clone(), args.len()));
                }
                args.iter().for_each(|a| walk(a, out));
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            ExprKind::Binary(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x, _) | ExprKind::Index(_, x) => walk(x, out),
            ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) | ExprKind::Var(_) | ExprKind::Id(_) => {}
        }
    }
    let mut out = Vec::new();
    for k in kernels {
        k.bindings().for_each(|(_, e)| walk(e, &mut out));
        if let Some(r) = &k.result {
            walk(r, &mut out);
        }
    }
    out
}

/// The most arguments a kernel takes (the CPU backend's limit).
pub const MAX_ARGS: usize = 8;

/// The prefix of a table kernel's name (its WGSL function's): an op may
/// be named like a WGSL builtin (`abs`).
pub const PREFIX: &str = "unary_";

/// The prefix of a binary op's kernel name (`binary_add`).
pub const BINARY_PREFIX: &str = "binary_";
