//! Lowering: a `forward` body to a list of tensor ops in SSA form, each
//! value with its per-sample shape (symbolic dims included), checked as it
//! is built. Loops over arrays of layers are unrolled here; anything the
//! macro cannot differentiate is an error at its tokens.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Pat, Stmt, UnOp};

use blaze_spec::StaticShape;

use crate::model::check::Options;
use crate::model::ir::{Field, LayerKind};

/// A per-sample dim: `coef` times the product of symbols `syms` (sorted):
/// `64` is `{64, []}`, `T` is `{1, [T]}`, a flattened `[T, 64]` is `{64, [T]}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dim {
    pub coef: usize,
    pub syms: Vec<usize>,
}

impl Dim {
    pub fn size(n: usize) -> Dim {
        Dim { coef: n, syms: Vec::new() }
    }

    fn sym(k: usize) -> Dim {
        Dim { coef: 1, syms: vec![k] }
    }

    fn fixed(&self) -> Option<usize> {
        self.syms.is_empty().then_some(self.coef)
    }

    fn is_one(&self) -> bool {
        self.fixed() == Some(1)
    }

    fn times(&self, o: &Dim) -> Dim {
        let mut syms = [self.syms.clone(), o.syms.clone()].concat();
        syms.sort_unstable();
        Dim { coef: self.coef * o.coef, syms }
    }

    /// `self / o` when it divides exactly.
    fn over(&self, o: &Dim) -> Option<Dim> {
        if o.coef == 0 || !self.coef.is_multiple_of(o.coef) {
            return None;
        }
        let mut syms = self.syms.clone();
        for s in &o.syms {
            let at = syms.iter().position(|x| x == s)?;
            syms.remove(at);
        }
        Some(Dim { coef: self.coef / o.coef, syms })
    }

    pub fn show(&self, symbols: &[String]) -> String {
        let mut parts: Vec<String> = self.syms.iter().map(|&k| symbols[k].clone()).collect();
        if self.coef != 1 || parts.is_empty() {
            parts.insert(0, self.coef.to_string());
        }
        parts.join("*")
    }

    /// The dim's size at run time, as a `usize` expression.
    pub fn tokens(&self) -> TokenStream {
        let c = self.coef;
        let syms = self.syms.iter().map(|&k| sym_ident(k));
        quote!((#c #(* #syms)*))
    }
}

pub fn sym_ident(k: usize) -> syn::Ident {
    quote::format_ident!("__sym{}", k)
}

pub fn show(shape: &[Dim], symbols: &[String]) -> String {
    format!("[{}]", shape.iter().map(|d| d.show(symbols)).collect::<Vec<_>>().join(", "))
}

/// Who a call goes to: a field, or entry `i` of an array field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callee {
    pub field: usize,
    pub index: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
}

/// `x op s` (or `s op x` for the reversed forms) with a scalar `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarOp {
    Add,
    Sub,
    Mul,
    Div,
    RSub,
    RDiv,
}

/// Activations run as their layer types (whose caches the backward uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    Relu,
    Gelu,
    Tanh,
    Sigmoid,
}

/// One argument of a `kernel!` call.
#[derive(Clone)]
pub enum KernelArg {
    /// Index into the node's `args`.
    Tensor(usize),
    Number(TokenStream),
}

#[derive(Clone)]
pub enum Op {
    Input,
    Layer(Callee),
    Nested(Callee),
    Act(Act),
    Bin(Bin),
    Scalar(ScalarOp, TokenStream),
    Neg,
    Exp,
    Log,
    Sqrt,
    Matmul,
    Transpose(usize, usize),
    Permute(Vec<usize>),
    Reshape(Vec<Dim>),
    Narrow { dim: usize, start: usize, len: usize },
    Cat(usize),
    Softmax(usize),
    LogSoftmax(usize),
    Reduce { dim: usize, mean: bool },
    CausalFill { t: Dim, value: TokenStream },
    Kernel { path: TokenStream, args: Vec<KernelArg> },
    Positions(Dim),
}

pub struct Node {
    pub op: Op,
    pub args: Vec<usize>,
    pub out: usize,
    pub span: Span,
}

/// One SSA value.
pub struct Val {
    pub shape: Vec<Dim>,
    /// False for values built from constants alone: their batch dim is 1.
    pub batched: bool,
    /// Depends on an input or a parameter (needs a gradient in `backward`).
    pub grad: bool,
    /// Depends on a parameter (needs a gradient in `backward_params`).
    pub params: bool,
}

impl Val {
    pub fn rank(&self) -> usize {
        self.shape.len() + 1
    }
}

/// A lowered forward body.
pub struct Lowered {
    pub vals: Vec<Val>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<usize>,
    pub output: usize,
    pub symbols: Vec<String>,
    /// Const assertions (nested model calls).
    pub asserts: Vec<TokenStream>,
    /// For each field, the output shape of its first call (for the summary).
    pub first_output: Vec<Option<Vec<Dim>>>,
}

#[derive(Clone)]
enum Bind {
    Tensor(usize),
    Scalar(TokenStream),
    Module(Callee),
}

enum Operand {
    Tensor(usize),
    Scalar(TokenStream),
}

type R<T> = syn::Result<T>;

/// Where an error points: one token, or the whole of an expression.
pub trait Place {
    fn error(&self, msg: String) -> syn::Error;
    /// The first token's span, for the code generated from the expression.
    fn first(&self) -> Span;
}

impl Place for Span {
    fn error(&self, msg: String) -> syn::Error {
        syn::Error::new(*self, msg)
    }
    fn first(&self) -> Span {
        *self
    }
}

/// An expression's tokens: errors underline all of it.
pub struct Loc(TokenStream);

impl Loc {
    fn of(e: &impl ToTokens) -> Loc {
        Loc(e.to_token_stream())
    }
}

impl Place for &Loc {
    fn error(&self, msg: String) -> syn::Error {
        syn::Error::new_spanned(&self.0, msg)
    }
    fn first(&self) -> Span {
        self.0.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span())
    }
}

fn err<T>(at: impl Place, msg: impl std::fmt::Display) -> R<T> {
    Err(at.error(msg.to_string()))
}

const SUPPORTED: &str = "a #[model] forward body is straight-line tensor code: `let` bindings, calls of layer \
                         fields, `+ - * /`, tensor methods (matmul, transpose, permute, reshape, flatten, narrow, \
                         split, chunk, softmax, log_softmax, sum_dim, mean_dim, masked_fill, relu, gelu, tanh, \
                         sigmoid, exp, log, sqrt), `cat`, kernel! functions, and `for` over an array of layers";

pub struct Lower<'a> {
    fields: &'a [Field],
    options: &'a [Options],
    model: String,
    pub symbols: Vec<String>,
    vals: Vec<Val>,
    nodes: Vec<Node>,
    scopes: Vec<HashMap<String, Bind>>,
    asserts: Vec<TokenStream>,
    calls: Vec<Vec<Loc>>,
    first_output: Vec<Option<Vec<Dim>>>,
}

impl<'a> Lower<'a> {
    pub fn new(model: &str, fields: &'a [Field], options: &'a [Options]) -> Self {
        Lower {
            fields,
            options,
            model: model.to_owned(),
            symbols: Vec::new(),
            vals: Vec::new(),
            nodes: Vec::new(),
            scopes: vec![HashMap::new()],
            asserts: Vec::new(),
            calls: fields.iter().map(|_| Vec::new()).collect(),
            first_output: vec![None; fields.len()],
        }
    }

    /// A dim of the input attribute: a positive literal or a symbol.
    pub fn input_dim(&mut self, e: &Expr) -> R<Dim> {
        match e {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<usize>() {
                Ok(n) if n > 0 => Ok(Dim::size(n)),
                _ => err(e.span(), "input dims are positive integers or symbols such as `T`"),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                Ok(Dim::sym(self.symbol(&name)))
            }
            _ => err(e.span(), "input dims are positive integers or symbols such as `T`"),
        }
    }

    fn symbol(&mut self, name: &str) -> usize {
        match self.symbols.iter().position(|s| s == name) {
            Some(k) => k,
            None => {
                self.symbols.push(name.to_owned());
                self.symbols.len() - 1
            }
        }
    }

    pub fn input(&mut self, name: &str, shape: Vec<Dim>, span: Span) {
        let v = self.push_val(Val { shape, batched: true, grad: true, params: false });
        self.nodes.push(Node { op: Op::Input, args: Vec::new(), out: v, span });
        self.scopes[0].insert(name.to_owned(), Bind::Tensor(v));
    }

    fn push_val(&mut self, v: Val) -> usize {
        self.vals.push(v);
        self.vals.len() - 1
    }

    fn node(&mut self, op: Op, args: Vec<usize>, shape: Vec<Dim>, at: impl Place) -> usize {
        let span = at.first();
        let holds = matches!(op, Op::Layer(c) | Op::Nested(c) if self.fields[c.field].kind.has_params());
        let batched = args.iter().any(|&a| self.vals[a].batched);
        let grad = holds || args.iter().any(|&a| self.vals[a].grad);
        let params = holds || args.iter().any(|&a| self.vals[a].params);
        let out = self.push_val(Val { shape, batched, grad, params });
        self.nodes.push(Node { op, args, out, span });
        out
    }

    fn shape(&self, v: usize) -> &[Dim] {
        &self.vals[v].shape
    }

    fn show(&self, v: usize) -> String {
        show(self.shape(v), &self.symbols)
    }

    fn lookup(&self, name: &str) -> Option<Bind> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    fn assign(&mut self, name: &str, b: Bind) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = b;
                return true;
            }
        }
        false
    }

    /// Lowers the statements of the body; returns the output value.
    pub fn body(mut self, block: &syn::Block) -> R<Lowered> {
        let out = self.block(block)?;
        let Some(out) = out else {
            return err(
                block.span(),
                "the forward body must end with the output tensor (an expression without a semicolon)",
            );
        };
        for (i, f) in self.fields.iter().enumerate() {
            let calls = &self.calls[i];
            if calls.is_empty() {
                return err(
                    f.ident.span(),
                    format!(
                        "`{}` is never called in forward: every field of a #[model] takes part in the forward pass",
                        f.ident
                    ),
                );
            }
            let per = f.array.unwrap_or(1);
            if f.kind.has_params() && calls.len() > per {
                return err(
                    &calls[per],
                    format!(
                        "`{}` is called a second time here: a layer with parameters is called once per forward \
                         (declare another field for a second layer; shared weights need Autodiff)",
                        f.ident
                    ),
                );
            }
        }
        let inputs = self.nodes.iter().filter(|n| matches!(n.op, Op::Input)).map(|n| n.out).collect();
        Ok(Lowered {
            vals: self.vals,
            nodes: self.nodes,
            inputs,
            output: out,
            symbols: self.symbols,
            asserts: self.asserts,
            first_output: self.first_output,
        })
    }

    fn block(&mut self, block: &syn::Block) -> R<Option<usize>> {
        let mut out = None;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt {
                Stmt::Local(local) => self.local(local)?,
                Stmt::Expr(Expr::ForLoop(f), _) => self.for_loop(f)?,
                Stmt::Expr(Expr::Assign(a), _) => {
                    let name = plain_ident(&a.left)
                        .ok_or_else(|| syn::Error::new(a.left.span(), "only a local variable can be assigned"))?;
                    let b = match self.operand(&a.right)? {
                        Operand::Tensor(v) => Bind::Tensor(v),
                        Operand::Scalar(s) => Bind::Scalar(s),
                    };
                    if !self.assign(&name, b) {
                        return err(a.left.span(), format!("cannot find `{name}`: declare it with `let` first"));
                    }
                }
                Stmt::Expr(e, None) if i + 1 == n => match self.operand(e)? {
                    Operand::Tensor(v) => out = Some(v),
                    Operand::Scalar(_) => return err(e.span(), "the forward body must return a tensor"),
                },
                Stmt::Expr(e, _) => return err(e.span(), unsupported(e)),
                Stmt::Item(item) => return err(item.span(), "items cannot be declared inside a #[model] forward"),
                Stmt::Macro(m) => {
                    return err(
                        m.span(),
                        "macros are not supported inside a #[model] forward; the macro cannot see \
                                          through them to differentiate",
                    );
                }
            }
        }
        Ok(out)
    }

    fn local(&mut self, local: &syn::Local) -> R<()> {
        let Some(init) = &local.init else {
            return err(local.span(), "a `let` in a #[model] forward needs a value");
        };
        if init.diverge.is_some() {
            return err(local.span(), "`let .. else` is not supported in a #[model] forward");
        }
        let pat = match &local.pat {
            Pat::Type(t) => &*t.pat,
            p => p,
        };
        match pat {
            Pat::Ident(id) => {
                let b = match self.operand(&init.expr)? {
                    Operand::Tensor(v) => Bind::Tensor(v),
                    Operand::Scalar(s) => Bind::Scalar(s),
                };
                self.bind(id.ident.to_string(), b);
                Ok(())
            }
            Pat::Wild(_) => self.operand(&init.expr).map(|_| ()),
            Pat::Slice(s) => {
                let names: Vec<Option<String>> = s
                    .elems
                    .iter()
                    .map(|p| match p {
                        Pat::Ident(id) => Ok(Some(id.ident.to_string())),
                        Pat::Wild(_) => Ok(None),
                        other => err(other.span(), "expected a name or `_`"),
                    })
                    .collect::<R<_>>()?;
                let pieces = self.pieces(&init.expr, names.len())?;
                for (name, v) in names.into_iter().zip(pieces) {
                    if let Some(name) = name {
                        self.bind(name, Bind::Tensor(v));
                    }
                }
                Ok(())
            }
            other => err(other.span(), "expected `let name = ..` or `let [a, b, ..] = x.split(..)`"),
        }
    }

    fn bind(&mut self, name: String, b: Bind) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, b);
        }
    }

    /// `for b in &self.blocks { .. }`: the body once per entry.
    fn for_loop(&mut self, f: &syn::ExprForLoop) -> R<()> {
        let not_array = || {
            syn::Error::new(
                f.expr.span(),
                "a #[model] forward loops only over an array field of layers (`for b in &self.blocks`); \
                 loops over run-time values need Autodiff",
            )
        };
        let inner = match &*f.expr {
            Expr::Reference(r) => &*r.expr,
            Expr::MethodCall(m) if m.method == "iter" && m.args.is_empty() => &*m.receiver,
            _ => return Err(not_array()),
        };
        let field = self.self_field(inner).ok_or_else(not_array)?;
        let Some(n) = self.fields[field].array else {
            return err(f.expr.span(), format!("`{}` is one layer, not an array of layers", self.fields[field].ident));
        };
        let Pat::Ident(var) = &*f.pat else {
            return err(f.pat.span(), "expected a name for the loop's layer");
        };
        for i in 0..n {
            self.scopes.push(HashMap::new());
            self.bind(var.ident.to_string(), Bind::Module(Callee { field, index: Some(i) }));
            let out = self.block(&f.body);
            self.scopes.pop();
            if let Some(v) = out? {
                let _ = v;
                return err(f.body.span(), "a loop body ends with a statement, not a value");
            }
        }
        Ok(())
    }

    /// `self.name` as a field index.
    fn self_field(&self, e: &Expr) -> Option<usize> {
        let Expr::Field(fe) = e else { return None };
        if !is_self(&fe.base) {
            return None;
        }
        let syn::Member::Named(name) = &fe.member else { return None };
        self.fields.iter().position(|f| f.ident == *name)
    }

    fn unknown_field(&self, name: &syn::Ident) -> syn::Error {
        let names: Vec<String> = self.fields.iter().map(|f| f.ident.to_string()).collect();
        let hint = match crate::model::closest(&name.to_string(), names.iter().map(String::as_str)) {
            Some(c) => format!("; did you mean `{c}`?"),
            None => format!(" (its fields: {})", names.join(", ")),
        };
        syn::Error::new(name.span(), format!("`{}` has no field `{name}`{hint}", self.model))
    }

    fn tensor(&mut self, e: &Expr) -> R<usize> {
        match self.operand(e)? {
            Operand::Tensor(v) => Ok(v),
            Operand::Scalar(_) => err(e.span(), "expected a tensor here, found a number"),
        }
    }

    fn operand(&mut self, e: &Expr) -> R<Operand> {
        match e {
            Expr::Paren(p) => self.operand(&p.expr),
            Expr::Group(g) => self.operand(&g.expr),
            Expr::Lit(_) => Ok(Operand::Scalar(e.to_token_stream())),
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident() {
                    let name = id.to_string();
                    match self.lookup(&name) {
                        Some(Bind::Tensor(v)) => return Ok(Operand::Tensor(v)),
                        Some(Bind::Scalar(s)) => return Ok(Operand::Scalar(s)),
                        Some(Bind::Module(_)) => {
                            return err(id.span(), format!("`{name}` is a layer: call it, `{name}(x)`"));
                        }
                        None => {}
                    }
                    if let Some(k) = self.symbols.iter().position(|s| *s == name) {
                        let s = sym_ident(k);
                        return Ok(Operand::Scalar(quote!(#s)));
                    }
                }
                Ok(Operand::Scalar(e.to_token_stream()))
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match self.operand(&u.expr)? {
                Operand::Tensor(v) => {
                    let shape = self.shape(v).to_vec();
                    Ok(Operand::Tensor(self.node(Op::Neg, vec![v], shape, e.span())))
                }
                Operand::Scalar(s) => Ok(Operand::Scalar(quote!((-#s)))),
            },
            Expr::Binary(b) => self.binary(b),
            Expr::Cast(c) => match self.operand(&c.expr)? {
                Operand::Scalar(s) => {
                    let ty = &c.ty;
                    Ok(Operand::Scalar(quote!((#s as #ty))))
                }
                Operand::Tensor(_) => err(e.span(), "`as` casts numbers; tensors convert with `.to_dtype()`"),
            },
            Expr::MethodCall(m) => self.method(m),
            Expr::Call(c) => self.call(c),
            Expr::Field(f) if is_self(&f.base) => match &f.member {
                syn::Member::Named(name) if self.self_field(e).is_none() => Err(self.unknown_field(name)),
                _ => err(e.span(), "a layer field is called, not read: `self.layer(x)`"),
            },
            _ => err(e.span(), unsupported(e)),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> R<Operand> {
        let op = match b.op {
            BinOp::Add(_) => Bin::Add,
            BinOp::Sub(_) => Bin::Sub,
            BinOp::Mul(_) => Bin::Mul,
            BinOp::Div(_) => Bin::Div,
            _ => {
                return err(
                    b.op.span(),
                    "only `+ - * /` combine tensors in a #[model] forward (comparisons and logic have no gradient)",
                );
            }
        };
        let span = &Loc::of(b);
        let (l, r) = (self.operand(&b.left)?, self.operand(&b.right)?);
        Ok(match (l, r) {
            (Operand::Scalar(a), Operand::Scalar(c)) => {
                let o = &b.op;
                Operand::Scalar(quote!((#a #o #c)))
            }
            (Operand::Tensor(x), Operand::Scalar(s)) => {
                let sop = match op {
                    Bin::Add => ScalarOp::Add,
                    Bin::Sub => ScalarOp::Sub,
                    Bin::Mul => ScalarOp::Mul,
                    Bin::Div => ScalarOp::Div,
                };
                let shape = self.shape(x).to_vec();
                Operand::Tensor(self.node(Op::Scalar(sop, s), vec![x], shape, span))
            }
            (Operand::Scalar(s), Operand::Tensor(x)) => {
                let sop = match op {
                    Bin::Add => ScalarOp::Add,
                    Bin::Sub => ScalarOp::RSub,
                    Bin::Mul => ScalarOp::Mul,
                    Bin::Div => ScalarOp::RDiv,
                };
                let shape = self.shape(x).to_vec();
                Operand::Tensor(self.node(Op::Scalar(sop, s), vec![x], shape, span))
            }
            (Operand::Tensor(x), Operand::Tensor(y)) => {
                let shape = self.broadcast(&x, &y, &format!("`{}`", op_name(op)), span)?;
                Operand::Tensor(self.node(Op::Bin(op), vec![x, y], shape, span))
            }
        })
    }

    fn broadcast(&self, x: &usize, y: &usize, what: &str, span: &Loc) -> R<Vec<Dim>> {
        let (a, b) = (self.shape(*x), self.shape(*y));
        let mismatch = |detail: String| {
            err(span, format!("{what}: shapes {} and {} do not broadcast{detail}", self.show(*x), self.show(*y)))
        };
        if a.len() != b.len() {
            return mismatch(format!(
                " (ranks {} and {}; insert a dim of 1 with `.reshape(..)` to match ranks)",
                a.len(),
                b.len()
            ));
        }
        let mut out = Vec::new();
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            out.push(if p == q || q.is_one() {
                p.clone()
            } else if p.is_one() {
                q.clone()
            } else {
                return mismatch(format!(" (dim {i}: {} vs {})", p.show(&self.symbols), q.show(&self.symbols)));
            });
        }
        Ok(out)
    }

    /// A per-sample dim argument (negative from the end) for a value of `rank` dims.
    fn dim_arg(&self, e: &Expr, rank: usize, op: &str) -> R<usize> {
        let d =
            int_arg(e).ok_or_else(|| syn::Error::new(e.span(), format!("{op}: the dim must be an integer literal")))?;
        let r = rank as i64;
        if d < -r || d >= r {
            return err(
                e.span(),
                format!("{op}: dim {d} is out of range for a per-sample rank of {rank} (the batch dim is implicit)"),
            );
        }
        Ok(if d < 0 { (d + r) as usize } else { d as usize })
    }

    fn count_arg(&self, e: &Expr, op: &str) -> R<usize> {
        match int_arg(e) {
            Some(n) if n >= 0 => Ok(n as usize),
            _ => err(e.span(), format!("{op}: expected a non-negative integer literal")),
        }
    }

    fn args_len(&self, m: &syn::ExprMethodCall, n: usize) -> R<()> {
        if m.args.len() != n {
            return err(
                m.method.span(),
                format!(
                    "`{}` takes {n} argument{} here, found {}",
                    m.method,
                    if n == 1 { "" } else { "s" },
                    m.args.len()
                ),
            );
        }
        Ok(())
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> R<Operand> {
        let span = &Loc::of(m);
        let name = m.method.to_string();
        // `self.layer(x, ..)`: a call of a field.
        if is_self(&m.receiver) {
            let Some(field) = self.fields.iter().position(|f| f.ident == m.method) else {
                return Err(self.unknown_field(&m.method));
            };
            if self.fields[field].array.is_some() {
                return err(
                    m.method.span(),
                    format!("`{name}` is an array of layers: loop over it (`for b in &self.{name}`) or index it"),
                );
            }
            let args: Vec<&Expr> = m.args.iter().collect();
            return self.call_layer(Callee { field, index: None }, &args, span);
        }
        let x = match self.operand(&m.receiver)? {
            Operand::Tensor(x) => x,
            Operand::Scalar(s) => {
                // Arithmetic on numbers (`(d as f64).sqrt()`) stays Rust.
                let mut args = Vec::new();
                for a in &m.args {
                    match self.operand(a)? {
                        Operand::Scalar(t) => args.push(t),
                        Operand::Tensor(_) => return err(a.span(), "expected a number"),
                    }
                }
                let method = &m.method;
                return Ok(Operand::Scalar(quote!(#s.#method(#(#args),*))));
            }
        };
        let shape = self.shape(x).to_vec();
        let rank = shape.len();
        let arg = |i: usize| &m.args[i];
        let v = match name.as_str() {
            "relu" | "gelu" | "tanh" | "sigmoid" | "exp" | "log" | "sqrt" | "neg" => {
                self.args_len(m, 0)?;
                self.unary(&name, x, span)
            }
            "matmul" => {
                self.args_len(m, 1)?;
                let y = self.tensor(arg(0))?;
                self.matmul(x, y, span)?
            }
            "transpose" => {
                self.args_len(m, 2)?;
                let (a, b) = (self.dim_arg(arg(0), rank, "transpose")?, self.dim_arg(arg(1), rank, "transpose")?);
                let mut s = shape.clone();
                s.swap(a, b);
                self.node(Op::Transpose(a, b), vec![x], s, span)
            }
            "permute" => {
                self.args_len(m, 1)?;
                let Expr::Array(arr) = arg(0) else {
                    return err(arg(0).span(), "permute takes an array of dims: `[1, 0, 2]`");
                };
                let axes: Vec<usize> = arr.elems.iter().map(|e| self.dim_arg(e, rank, "permute")).collect::<R<_>>()?;
                let mut sorted = axes.clone();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    return err(
                        arg(0).span(),
                        format!("permute: {axes:?} is not a permutation of the {rank} per-sample dims"),
                    );
                }
                let s = axes.iter().map(|&a| shape[a].clone()).collect();
                self.node(Op::Permute(axes), vec![x], s, span)
            }
            "reshape" => {
                self.args_len(m, 1)?;
                let s = self.reshape_dims(x, arg(0))?;
                self.node(Op::Reshape(s.clone()), vec![x], s, span)
            }
            "flatten" => {
                self.args_len(m, 0)?;
                let n = shape.iter().fold(Dim::size(1), |a, d| a.times(d));
                self.node(Op::Reshape(vec![n.clone()]), vec![x], vec![n], span)
            }
            "narrow" => {
                self.args_len(m, 3)?;
                let dim = self.dim_arg(arg(0), rank, "narrow")?;
                let (start, len) = (self.count_arg(arg(1), "narrow")?, self.count_arg(arg(2), "narrow")?);
                if let Some(size) = shape[dim].fixed()
                    && start + len > size
                {
                    return err(
                        span,
                        format!("narrow: {start}..{} is out of range for dim {dim} of {}", start + len, self.show(x)),
                    );
                }
                let mut s = shape.clone();
                s[dim] = Dim::size(len);
                self.node(Op::Narrow { dim, start, len }, vec![x], s, span)
            }
            "softmax" | "log_softmax" => {
                self.args_len(m, 1)?;
                let d = self.dim_arg(arg(0), rank, &name)?;
                let op = if name == "softmax" { Op::Softmax(d) } else { Op::LogSoftmax(d) };
                self.node(op, vec![x], shape, span)
            }
            "sum_dim" | "mean_dim" => {
                self.args_len(m, 1)?;
                let dim = self.dim_arg(arg(0), rank, &name)?;
                let mut s = shape.clone();
                s[dim] = Dim::size(1);
                self.node(Op::Reduce { dim, mean: name == "mean_dim" }, vec![x], s, span)
            }
            "masked_fill" => {
                self.args_len(m, 2)?;
                let t = self.causal_arg(arg(0))?;
                if rank < 2 || shape[rank - 1] != t || shape[rank - 2] != t {
                    return err(
                        arg(0).span(),
                        format!(
                            "masked_fill: a causal mask of {} positions needs the last two dims [{0}, {0}], got {}",
                            t.show(&self.symbols),
                            self.show(x)
                        ),
                    );
                }
                let value = match self.operand(arg(1))? {
                    Operand::Scalar(s) => s,
                    Operand::Tensor(_) => return err(arg(1).span(), "masked_fill: the fill value is a number"),
                };
                self.node(Op::CausalFill { t, value }, vec![x], shape, span)
            }
            "split" | "chunk" => {
                return err(
                    span,
                    format!("`{name}` gives several tensors: bind them with `let [a, b, ..] = x.{name}(..);`"),
                );
            }
            _ => {
                let known = [
                    "matmul",
                    "transpose",
                    "permute",
                    "reshape",
                    "flatten",
                    "narrow",
                    "split",
                    "chunk",
                    "softmax",
                    "log_softmax",
                    "sum_dim",
                    "mean_dim",
                    "masked_fill",
                    "relu",
                    "gelu",
                    "tanh",
                    "sigmoid",
                    "exp",
                    "log",
                    "sqrt",
                ];
                let hint =
                    crate::model::closest(&name, known).map(|c| format!("did you mean `{c}`? ")).unwrap_or_default();
                return err(
                    m.method.span(),
                    format!(
                        "`{name}` is not a tensor op #[model] can differentiate; {hint}it supports {}",
                        known.join(", ")
                    ),
                );
            }
        };
        Ok(Operand::Tensor(v))
    }

    fn unary(&mut self, name: &str, x: usize, span: &Loc) -> usize {
        let shape = self.shape(x).to_vec();
        let op = match name {
            "relu" => Op::Act(Act::Relu),
            "gelu" => Op::Act(Act::Gelu),
            "tanh" => Op::Act(Act::Tanh),
            "sigmoid" => Op::Act(Act::Sigmoid),
            "exp" => Op::Exp,
            "log" => Op::Log,
            "sqrt" => Op::Sqrt,
            _ => Op::Neg,
        };
        self.node(op, vec![x], shape, span)
    }

    fn matmul(&mut self, x: usize, y: usize, span: &Loc) -> R<usize> {
        let (a, b) = (self.shape(x).to_vec(), self.shape(y).to_vec());
        let (sa, sb) = (self.show(x), self.show(y));
        if a.len() < 2 || a.len() != b.len() {
            return err(
                span,
                format!("matmul: needs two operands of the same per-sample rank >= 2, got {sa} and {sb}"),
            );
        }
        let r = a.len();
        if a[r - 1] != b[r - 2] {
            return err(
                span,
                format!(
                    "matmul: {sa} times {sb}: inner dims {} and {} differ",
                    a[r - 1].show(&self.symbols),
                    b[r - 2].show(&self.symbols)
                ),
            );
        }
        let mut out = Vec::new();
        for (p, q) in a[..r - 2].iter().zip(&b[..r - 2]) {
            out.push(if p == q || q.is_one() {
                p.clone()
            } else if p.is_one() {
                q.clone()
            } else {
                return err(span, format!("matmul: {sa} times {sb}: the leading dims do not broadcast"));
            });
        }
        out.push(a[r - 2].clone());
        out.push(b[r - 1].clone());
        Ok(self.node(Op::Matmul, vec![x, y], out, span))
    }

    fn causal_arg(&mut self, e: &Expr) -> R<Dim> {
        let bad = || syn::Error::new(e.span(), "masked_fill takes a causal mask here: `causal_mask(T)`");
        let Expr::Call(c) = e else { return Err(bad()) };
        let Expr::Path(p) = &*c.func else { return Err(bad()) };
        if !p.path.is_ident("causal_mask") || c.args.len() != 1 {
            return Err(bad());
        }
        self.size_arg(&c.args[0])
    }

    /// A size: a literal, a symbol, or a product of them.
    fn size_arg(&mut self, e: &Expr) -> R<Dim> {
        match e {
            Expr::Lit(_) => match int_arg(e) {
                Some(n) if n > 0 => Ok(Dim::size(n as usize)),
                _ => err(e.span(), "expected a positive size"),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match self.symbols.iter().position(|s| *s == name) {
                    Some(k) => Ok(Dim::sym(k)),
                    None => err(
                        e.span(),
                        format!(
                            "`{name}` is not a dim of this model's input (symbols: {})",
                            if self.symbols.is_empty() { "none".to_owned() } else { self.symbols.join(", ") }
                        ),
                    ),
                }
            }
            Expr::Binary(b) if matches!(b.op, BinOp::Mul(_)) => {
                Ok(self.size_arg(&b.left)?.times(&self.size_arg(&b.right)?))
            }
            Expr::Paren(p) => self.size_arg(&p.expr),
            _ => err(e.span(), "expected a size: an integer literal, an input symbol such as `T`, or a product"),
        }
    }

    fn reshape_dims(&mut self, x: usize, e: &Expr) -> R<Vec<Dim>> {
        let Expr::Array(arr) = e else {
            return err(e.span(), "reshape takes the per-sample shape as an array: `[T, 4, 16]`");
        };
        let mut dims = Vec::new();
        let mut infer_at = None;
        for el in &arr.elems {
            if int_arg(el) == Some(-1) {
                if infer_at.is_some() {
                    return err(el.span(), "reshape: only one dim can be -1");
                }
                infer_at = Some(dims.len());
                dims.push(Dim::size(1));
            } else {
                dims.push(self.size_arg(el)?);
            }
        }
        let have = self.shape(x).iter().fold(Dim::size(1), |a, d| a.times(d));
        let want = dims.iter().fold(Dim::size(1), |a, d| a.times(d));
        let shown = show(&dims, &self.symbols);
        if let Some(at) = infer_at {
            match have.over(&want) {
                Some(d) => dims[at] = d,
                None => {
                    return err(e.span(), format!("reshape: cannot infer the -1 in {shown} from {}", self.show(x)));
                }
            }
        } else if have != want {
            return err(
                e.span(),
                format!(
                    "reshape: {} has {} elements per sample, {shown} has {}",
                    self.show(x),
                    have.show(&self.symbols),
                    want.show(&self.symbols)
                ),
            );
        }
        Ok(dims)
    }

    /// `x.split(size, dim)` or `x.chunk(n, dim)` into `count` narrowed pieces.
    fn pieces(&mut self, e: &Expr, count: usize) -> R<Vec<usize>> {
        let Expr::MethodCall(m) = e else {
            return err(e.span(), "`let [a, b, ..] =` takes `x.split(size, dim)` or `x.chunk(n, dim)`");
        };
        let name = m.method.to_string();
        if !(name == "split" || name == "chunk") {
            return err(m.method.span(), "`let [a, b, ..] =` takes `x.split(size, dim)` or `x.chunk(n, dim)`");
        }
        self.args_len(m, 2)?;
        let x = self.tensor(&m.receiver)?;
        let shape = self.shape(x).to_vec();
        let dim = self.dim_arg(&m.args[1], shape.len(), &name)?;
        let n = self.count_arg(&m.args[0], &name)?;
        let Some(total) = shape[dim].fixed() else {
            return err(m.args[1].span(), format!("{name}: dim {dim} of {} has no fixed size", self.show(x)));
        };
        let size = if name == "split" { n } else { total.checked_div(n).unwrap_or(0) };
        if size == 0 || size * count != total {
            return err(
                e.span(),
                format!(
                    "{name}: {} pieces{} of dim {dim} of {} do not fit {count} names",
                    if name == "split" { total.div_ceil(size.max(1)) } else { n },
                    if name == "split" { format!(" of {size}") } else { String::new() },
                    self.show(x)
                ),
            );
        }
        let mut out = Vec::new();
        for i in 0..count {
            let mut s = shape.clone();
            s[dim] = Dim::size(size);
            out.push(self.node(Op::Narrow { dim, start: i * size, len: size }, vec![x], s, m.span()));
        }
        Ok(out)
    }

    fn call(&mut self, c: &syn::ExprCall) -> R<Operand> {
        let span = &Loc::of(c);
        let args: Vec<&Expr> = c.args.iter().collect();
        // `self.blocks[i](x)`.
        if let Expr::Index(ix) = &*c.func
            && let Some(field) = self.self_field(&ix.expr)
        {
            let Some(n) = self.fields[field].array else {
                return err(ix.span(), format!("`{}` is not an array of layers", self.fields[field].ident));
            };
            let i = match int_arg(&ix.index) {
                Some(i) if i >= 0 && (i as usize) < n => i as usize,
                _ => return err(ix.index.span(), format!("expected an integer literal below {n}")),
            };
            return self.call_layer(Callee { field, index: Some(i) }, &args, span);
        }
        let Expr::Path(p) = &*c.func else { return err(c.func.span(), unsupported(&c.func)) };
        if let Some(id) = p.path.get_ident() {
            let name = id.to_string();
            if let Some(Bind::Module(callee)) = self.lookup(&name) {
                return self.call_layer(callee, &args, span);
            }
            let want = |n: usize| {
                if args.len() == n {
                    Ok(())
                } else {
                    err(
                        span,
                        format!("`{name}` takes {n} argument{}, found {}", if n == 1 { "" } else { "s" }, args.len()),
                    )
                }
            };
            match name.as_str() {
                "relu" | "gelu" | "tanh" | "sigmoid" | "exp" | "log" | "sqrt" => {
                    want(1)?;
                    let x = self.tensor(args[0])?;
                    return Ok(Operand::Tensor(self.unary(&name, x, span)));
                }
                "softmax" | "log_softmax" => {
                    want(2)?;
                    let x = self.tensor(args[0])?;
                    let d = self.dim_arg(args[1], self.shape(x).len(), &name)?;
                    let op = if name == "softmax" { Op::Softmax(d) } else { Op::LogSoftmax(d) };
                    let shape = self.shape(x).to_vec();
                    return Ok(Operand::Tensor(self.node(op, vec![x], shape, span)));
                }
                "matmul" => {
                    want(2)?;
                    let (x, y) = (self.tensor(args[0])?, self.tensor(args[1])?);
                    return Ok(Operand::Tensor(self.matmul(x, y, span)?));
                }
                "cat" => {
                    want(2)?;
                    return self.cat(args[0], args[1], span).map(Operand::Tensor);
                }
                "positions" => {
                    want(1)?;
                    let t = self.size_arg(args[0])?;
                    let v = self.push_val(Val { shape: vec![t.clone()], batched: false, grad: false, params: false });
                    self.nodes.push(Node { op: Op::Positions(t), args: Vec::new(), out: v, span: span.first() });
                    return Ok(Operand::Tensor(v));
                }
                "causal_mask" => {
                    return err(span, "a causal mask is used as `x.masked_fill(causal_mask(T), value)`");
                }
                _ => {}
            }
        }
        self.kernel(p, &args, span)
    }

    fn cat(&mut self, list: &Expr, dim: &Expr, span: &Loc) -> R<usize> {
        let Expr::Array(arr) = list else {
            return err(list.span(), "cat takes an array of tensors: `cat([a, b], -1)`");
        };
        let vs: Vec<usize> = arr.elems.iter().map(|e| self.tensor(e)).collect::<R<_>>()?;
        let Some(&first) = vs.first() else { return err(list.span(), "cat needs at least one tensor") };
        let rank = self.shape(first).len();
        let d = self.dim_arg(dim, rank, "cat")?;
        let mut out = self.shape(first).to_vec();
        let mut total = Dim::size(0);
        for &v in &vs {
            let s = self.shape(v);
            let fits = s.len() == rank && s.iter().enumerate().all(|(i, x)| i == d || *x == out[i]);
            if !fits {
                return err(span, format!("cat: {} and {} differ outside dim {d}", self.show(first), self.show(v)));
            }
            total = match (total.fixed(), s[d].fixed()) {
                (Some(a), Some(b)) => Dim::size(a + b),
                _ if vs.len() == 1 => s[d].clone(),
                _ => return err(span, format!("cat: dim {d} must have fixed sizes, got {}", self.show(v))),
            };
        }
        out[d] = total;
        Ok(self.node(Op::Cat(d), vs, out, span))
    }

    /// A `kernel!` elementwise function: tensors broadcast, numbers pass through.
    fn kernel(&mut self, path: &syn::ExprPath, args: &[&Expr], span: &Loc) -> R<Operand> {
        let mut tensors = Vec::new();
        let mut kargs = Vec::new();
        for a in args {
            match self.operand(a)? {
                Operand::Tensor(v) => {
                    kargs.push(KernelArg::Tensor(tensors.len()));
                    tensors.push(v);
                }
                Operand::Scalar(s) => kargs.push(KernelArg::Number(s)),
            }
        }
        let Some(&first) = tensors.first() else {
            return err(span, "a kernel! function call needs at least one tensor argument");
        };
        let mut shape = self.shape(first).to_vec();
        for &t in &tensors[1..] {
            let (a, b) = (first, t);
            shape = self.broadcast(&a, &b, &format!("`{}`", path.to_token_stream()), span)?;
        }
        let p = &path.path;
        Ok(Operand::Tensor(self.node(Op::Kernel { path: quote!(#p), args: kargs }, tensors, shape, span)))
    }

    fn call_layer(&mut self, callee: Callee, args: &[&Expr], span: &Loc) -> R<Operand> {
        let field = &self.fields[callee.field];
        let vs: Vec<usize> = args.iter().map(|a| self.tensor(a)).collect::<R<_>>()?;
        self.calls[callee.field].push(Loc(span.0.clone()));
        let name = match callee.index {
            Some(i) => format!("{}[{i}]", field.ident),
            None => field.ident.to_string(),
        };
        let me = format!("`{name}: {}`", field.kind.display());
        if let LayerKind::Opaque { .. } = field.kind {
            let Some(&first) = vs.first() else {
                return err(span, format!("{me} is called without inputs"));
            };
            // The output: as `#[layer(output = [..])]` states, else the
            // first input's shape; `check_call` holds the callee to it.
            let out = match self.options[callee.field].output.clone() {
                Some(dims) => dims.iter().map(|d| self.size_arg(d)).collect::<R<Vec<_>>>()?,
                None => self.shape(first).to_vec(),
            };
            self.nested_assert(callee, &vs, &out, &me, span)?;
            let v = self.node(Op::Nested(callee), vs, out.clone(), span);
            self.first_output[callee.field].get_or_insert(out);
            return Ok(Operand::Tensor(v));
        }
        if vs.len() != 1 {
            return err(span, format!("{me} takes one input, called with {}", vs.len()));
        }
        let x = vs[0];
        let dims = self.shape(x).to_vec();
        let LayerKind::Builtin { layer, sizes, .. } = &field.kind else {
            return err(span, format!("{me} is not a built-in layer"));
        };
        // The spec's rule sees a symbolic dim as a number above any size,
        // which it passes through or refuses, and which maps back here.
        let symbolic: Vec<&Dim> = dims.iter().filter(|d| d.fixed().is_none()).collect();
        let code = |d: &Dim| match d.fixed() {
            Some(n) => n.min(blaze_spec::MAX_SIZE),
            None => blaze_spec::MAX_SIZE + 1 + symbolic.iter().position(|s| *s == d).unwrap_or(0),
        };
        if dims.len() > 8 {
            return err(span, format!("{me}: its input {} has more than 8 dims", self.show(x)));
        }
        let input = StaticShape::new(&dims.iter().map(code).collect::<Vec<usize>>());
        let out = match blaze_spec::output(*layer, sizes, &self.options[callee.field].spec, input) {
            Ok(o) => o
                .as_slice()
                .iter()
                .map(|&d| match d.checked_sub(blaze_spec::MAX_SIZE + 1) {
                    Some(k) => symbolic[k].clone(),
                    None => Dim::size(d),
                })
                .collect::<Vec<Dim>>(),
            Err(e) => return err(span, e.message(&me, &input, &self.show(x), None, &name)),
        };
        let v = self.node(Op::Layer(callee), vec![x], out.clone(), span);
        self.first_output[callee.field].get_or_insert(out);
        Ok(Operand::Tensor(v))
    }

    /// The compile-time check of a nested model's call: its arity, its
    /// input shapes, and that its output has the first input's shape.
    fn nested_assert(&mut self, callee: Callee, vs: &[usize], out: &[Dim], me: &str, span: &Loc) -> R<()> {
        let code = |d: &Dim| match (d.fixed(), d.syms.as_slice()) {
            (Some(n), _) => Some(n as isize),
            (None, [k]) if d.coef == 1 => Some(-(*k as isize) - 1),
            _ => None,
        };
        let sig = |shape: &[Dim]| match shape.iter().map(code).collect::<Option<Vec<isize>>>() {
            Some(dims) => Ok(quote!(::blaze::nn::SigShape::new(&[#(#dims),*]))),
            None => err(
                span,
                format!(
                    "{me}: a nested model's inputs and output have plain dims (sizes or symbols), not {}",
                    show(shape, &self.symbols)
                ),
            ),
        };
        let args = vs.iter().map(|&v| sig(&self.vals[v].shape)).collect::<R<Vec<_>>>()?;
        let out_sig = sig(out)?;
        let shown: Vec<String> = vs.iter().map(|&v| self.show(v)).collect();
        let stated = self.options[callee.field].output.is_some();
        let msg = format!(
            "{me} is called on {} here and assumed to return {}, but its SIGNATURE differs: another number of \
             inputs, other input shapes, or another output{}",
            shown.join(" and "),
            show(out, &self.symbols),
            if stated { "" } else { " (state it with #[layer(output = [..])] on the field)" }
        );
        let cpu = quote!(::blaze::Cpu);
        let ty = self.fields[callee.field].kind.opaque_ty(&cpu);
        let span = span.first();
        self.asserts.push(quote::quote_spanned! {span=>
            const _: () = ::blaze::nn::graph::check_call(
                <#ty as ::blaze::nn::Graph<#cpu>>::SIGNATURE, &[#(#args),*], #out_sig, #msg);
        });
        Ok(())
    }
}

fn op_name(op: Bin) -> &'static str {
    match op {
        Bin::Add => "+",
        Bin::Sub => "-",
        Bin::Mul => "*",
        Bin::Div => "/",
    }
}

fn is_self(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.is_ident("self"))
}

fn plain_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

fn int_arg(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse().ok(),
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => int_arg(&u.expr).map(|v| -v),
        Expr::Paren(p) => int_arg(&p.expr),
        Expr::Group(g) => int_arg(&g.expr),
        _ => None,
    }
}

/// What to say about an expression the macro cannot differentiate.
fn unsupported(e: &Expr) -> String {
    let what = match e {
        Expr::If(_) => "`if` is not supported: a branch (on tensor data or otherwise) has no static gradient here",
        Expr::While(_) | Expr::Loop(_) => "loops over run-time conditions are not supported",
        Expr::ForLoop(_) => "this `for` loop is not over an array field of layers",
        Expr::Match(_) => "`match` is not supported",
        Expr::Closure(_) => "closures are not supported",
        Expr::Macro(_) => "macros are not supported (the macro cannot see through them)",
        Expr::Return(_) => "`return` is not supported: end the body with the output",
        Expr::Index(_) => "indexing a tensor is not supported (use `narrow`)",
        _ => "this expression is not supported",
    };
    format!("{what} in a #[model] forward; {SUPPORTED}. For data-dependent control flow, write the model with Autodiff")
}
