//! The typed IR of an elementwise kernel, and its lowering from Rust
//! syntax. Lowering rejects every construct the DSL does not have, at its
//! tokens; `check` then types what is left.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, FnArg, Lit, Pat, ReturnType, Stmt, UnOp};

/// The value types of the DSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F32,
    Bool,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::Bool => "bool",
        }
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

    /// The operator of a Rust binary expression, if the DSL has it.
    pub fn from_syn(op: &BinOp) -> Option<Bin> {
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

    pub fn is_logic(self) -> bool {
        matches!(self, Bin::And | Bin::Or)
    }

    /// Shifts and bitwise and/or/xor: integer operands, an integer result.
    pub fn is_bitwise(self) -> bool {
        matches!(self, Bin::Shl | Bin::Shr | Bin::BitAnd | Bin::BitOr | Bin::BitXor)
    }

    /// The operator of a compound assignment (`+=`, `<<=`, ...).
    pub fn from_syn_assign(op: &BinOp) -> Option<Bin> {
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
}

impl Intrinsic {
    pub const ALL: [Intrinsic; 19] = [
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
        }
    }

    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow | Intrinsic::Min | Intrinsic::Max => 2,
            Intrinsic::Clamp | Intrinsic::Fma | Intrinsic::Select => 3,
            _ => 1,
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
            _ => "(x: f32)",
        }
    }

    fn from_name(name: &str) -> Option<Intrinsic> {
        Intrinsic::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// A variable: a parameter or a `let` binding, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    Param(usize),
    Let(usize),
}

/// An expression. Spans point at the user's tokens (generated derivative
/// expressions reuse the span of what they came from).
#[derive(Clone, Debug)]
pub enum ExprKind {
    Float(f64),
    Bool(bool),
    Var(Var),
    Neg(Box<ExprIr>),
    Not(Box<ExprIr>),
    Binary(Bin, Box<ExprIr>, Box<ExprIr>),
    Call(Intrinsic, Vec<ExprIr>),
}

#[derive(Clone, Debug)]
pub struct ExprIr {
    pub kind: ExprKind,
    pub span: Span,
}

impl ExprIr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        ExprIr { kind, span }
    }
}

/// One `let` binding.
#[derive(Clone, Debug)]
pub struct Let {
    pub name: String,
    pub value: ExprIr,
}

/// A kernel: parameters (all `f32`), `let` bindings, the result. Plain
/// values: `syn` stays in `lower`, and names are strings as the user
/// wrote them (`r#type` keeps its prefix).
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// Where the kernel's name is, for errors about the whole kernel.
    pub span: Span,
    pub params: Vec<String>,
    pub lets: Vec<Let>,
    pub result: ExprIr,
}

/// Constants usable by name.
pub const CONSTANTS: [(&str, f64); 4] = [
    ("PI", std::f64::consts::PI),
    ("E", std::f64::consts::E),
    ("LN_2", std::f64::consts::LN_2),
    ("SQRT_2", std::f64::consts::SQRT_2),
];

/// The most arguments a kernel takes (the CPU backend's limit).
pub const MAX_ARGS: usize = 8;

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

const SUPPORTED: &str = "elementwise kernels support `let` bindings, arithmetic (+ - * / %), comparisons, \
                         `&&` `||` `!`, if/else expressions, `select`, and the intrinsics";

/// Lowers a function to the IR, collecting every error.
pub fn lower(f: &syn::ItemFn, errors: &mut Vec<syn::Error>) -> Option<Kernel> {
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

    let mut lower = Lowerer { params: params.clone(), lets: Vec::new(), errors, kernel: sig.ident.to_string() };
    let stmts = &f.block.stmts;
    let Some((last, init)) = stmts.split_last() else {
        lower.errors.push(err(f.block.span(), "a kernel's body ends with the value it returns"));
        return None;
    };
    for stmt in init {
        match stmt {
            Stmt::Local(local) => lower.local(local),
            other => lower.errors.push(err(other.span(), format!("unsupported statement: {SUPPORTED}"))),
        }
    }
    let result = match last {
        Stmt::Expr(e, None) => lower.expr(e),
        Stmt::Expr(Expr::Return(r), _) => match &r.expr {
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
    let lets = lower.lets;
    Some(Kernel { name: sig.ident.to_string(), span: sig.ident.span(), params, lets, result: result? })
}

struct Lowerer<'e> {
    params: Vec<String>,
    lets: Vec<Let>,
    errors: &'e mut Vec<syn::Error>,
    kernel: String,
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
            self.lets.push(Let { name, value });
        }
    }

    fn lookup(&self, name: &str) -> Option<Var> {
        if let Some(i) = self.lets.iter().rposition(|l| l.name == name) {
            return Some(Var::Let(i));
        }
        self.params.iter().position(|p| p == name).map(Var::Param)
    }

    fn expr(&mut self, e: &Expr) -> Option<ExprIr> {
        let span = e.span();
        let kind = match e {
            Expr::Paren(p) => return self.expr(&p.expr),
            Expr::Group(g) => return self.expr(&g.expr),
            Expr::Lit(l) => match &l.lit {
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
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                if let Some(v) = self.lookup(&name) {
                    ExprKind::Var(v)
                } else if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| *c == name) {
                    ExprKind::Float(*v)
                } else {
                    let known = self.params.iter().cloned().chain(self.lets.iter().map(|l| l.name.clone()));
                    let known: Vec<String> = known.chain(CONSTANTS.iter().map(|(c, _)| c.to_string())).collect();
                    let hint = crate::model::closest(&name, known.iter().map(String::as_str))
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                    self.errors.push(err(span, format!("unknown value `{name}`{hint}")));
                    return None;
                }
            }
            Expr::Unary(u) => {
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
            Expr::Binary(b) => {
                let Some(op) = Bin::from_syn(&b.op) else {
                    self.errors.push(err(b.op.span(), format!("unsupported operator: {SUPPORTED}")));
                    return None;
                };
                let (l, r) = (self.expr(&b.left), self.expr(&b.right));
                ExprKind::Binary(op, Box::new(l?), Box::new(r?))
            }
            Expr::If(i) => {
                let cond = self.expr(&i.cond);
                let then = self.block_value(&i.then_branch);
                let other = match &i.else_branch {
                    Some((_, e)) => match &**e {
                        Expr::Block(b) => self.block_value(&b.block),
                        e => self.expr(e),
                    },
                    None => {
                        self.errors.push(err(span, "an `if` in a kernel is an expression: it needs an `else`"));
                        None
                    }
                };
                ExprKind::Call(Intrinsic::Select, vec![cond?, then?, other?])
            }
            Expr::Call(c) => {
                let name = match &*c.func {
                    Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident()?.to_string(),
                    other => {
                        self.errors.push(err(other.span(), "call an intrinsic by its plain name"));
                        return None;
                    }
                };
                if name == self.kernel {
                    self.errors.push(err(c.func.span(), format!("`{name}` calls itself: kernels cannot recurse")));
                    return None;
                }
                let Some(intrinsic) = Intrinsic::from_name(&name) else {
                    let hint = crate::model::closest(&name, Intrinsic::ALL.iter().map(|i| i.name()))
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
                let args: Vec<Option<ExprIr>> = c.args.iter().map(|a| self.expr(a)).collect();
                ExprKind::Call(intrinsic, args.into_iter().collect::<Option<Vec<_>>>()?)
            }
            Expr::MethodCall(m) => {
                let receiver = quote::ToTokens::to_token_stream(&m.receiver).to_string();
                let (method, more) = (&m.method, if m.args.is_empty() { "" } else { ", .." });
                self.errors.push(err(
                    m.method.span(),
                    format!("kernels call intrinsics as functions: write `{method}({receiver}{more})`"),
                ));
                return None;
            }
            Expr::Block(b) => return self.block_value(&b.block),
            other => {
                self.errors.push(err(other.span(), format!("unsupported syntax: {SUPPORTED}")));
                return None;
            }
        };
        Some(ExprIr::new(kind, span))
    }

    /// A block used as a value: `{ expr }`.
    fn block_value(&mut self, b: &syn::Block) -> Option<ExprIr> {
        match b.stmts.as_slice() {
            [Stmt::Expr(e, None)] => self.expr(e),
            _ => {
                self.errors.push(err(b.span(), "a branch of a kernel's `if` is one expression"));
                None
            }
        }
    }
}
