//! Lowering: a `forward` body to a list of tensor ops in SSA form, each
//! value with its per-sample shape (symbolic dims included), checked as it
//! is built. Loops over arrays of layers are unrolled here; anything the
//! macro cannot differentiate is an error at its tokens. The statements
//! are here (the IR is `model::ops`); `exprs.rs` lowers operators and operands,
//! `methods.rs` tensor methods, `calls.rs` calls of functions, kernels,
//! layers and nested models.

mod calls;
mod exprs;
mod methods;

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt, UnOp};

use blaze_spec::StaticShape;
use blaze_spec::rules::{self, Extent, RuleError};

use super::vocab::{self, Word};
use crate::model::ir::Options;
use crate::model::ir::{Field, LayerKind};
pub use crate::model::ops::*;
use blaze_kernel_dsl::errors::Errors;

/// A body that did not lower: every error, and the output's per-sample rank
/// when the output itself lowered (for the fallback items).
pub struct Failed {
    pub error: syn::Error,
    pub output_rank: Option<usize>,
}

#[derive(Clone)]
enum Bind {
    Tensor(usize),
    Scalar(TokenStream),
    Module(Callee),
    /// A name whose value could not be lowered (its error is reported
    /// already): uses of it are not errors of their own.
    Poisoned,
}

enum Operand {
    Tensor(usize),
    Scalar(TokenStream),
}

/// Why an expression did not lower: an error at its tokens, or a use of a
/// name whose own definition failed (reported there, so not again).
#[derive(Debug)]
pub enum Fail {
    Error(syn::Error),
    Poisoned,
}

impl From<syn::Error> for Fail {
    fn from(e: syn::Error) -> Self {
        Fail::Error(e)
    }
}

impl From<Fail> for syn::Error {
    /// Where no name can be poisoned yet (the `input` attribute).
    fn from(f: Fail) -> Self {
        match f {
            Fail::Error(e) => e,
            Fail::Poisoned => syn::Error::new(Span::call_site(), "a value failed to lower"),
        }
    }
}

type R<T> = Result<T, Fail>;

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
    Err(Fail::Error(at.error(msg.to_string())))
}

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
    first_output: Vec<Option<usize>>,
    /// Every independent error so far: a statement that fails is reported
    /// and lowering goes on with the next.
    errors: Errors,
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
            errors: Errors::default(),
        }
    }

    /// A dim of the input attribute: a positive literal or a symbol.
    pub fn input_dim(&mut self, e: &Expr) -> R<Dim> {
        match e {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<u128>() {
                Ok(n) if n > blaze_spec::MAX_SIZE as u128 => err(
                    e.span(),
                    format!("input dim {n} is larger than any tensor's (at most {})", blaze_spec::MAX_SIZE),
                ),
                Ok(n) if n > 0 => Ok(Dim::size(n as usize)),
                _ => err(e.span(), "input dims are positive integers or symbols such as `T`"),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                Ok(Dim::named(self.symbol(&name)))
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
        let v = self.push_val(Val { shape, opaque: None, batched: true, grad: true, params: false });
        self.nodes.push(Node { op: Op::Input, args: Vec::new(), out: v, span, field: None });
        self.scopes[0].insert(name.to_owned(), Bind::Tensor(v));
    }

    fn push_val(&mut self, v: Val) -> usize {
        self.vals.push(v);
        self.vals.len() - 1
    }

    fn node(&mut self, op: Op, args: Vec<usize>, shape: Vec<Dim>, at: impl Place) -> usize {
        let span = at.first();
        let holds =
            matches!(op, Op::Layer(c) | Op::Nested(c) | Op::Attend(c) if self.fields[c.field].kind.has_params());
        let batched = args.iter().any(|&a| self.vals[a].batched);
        let grad = holds || args.iter().any(|&a| self.vals[a].grad);
        let params = holds || args.iter().any(|&a| self.vals[a].params);
        let out = self.push_val(Val { shape, opaque: None, batched, grad, params });
        self.nodes.push(Node { op, args, out, span, field: None });
        out
    }

    fn shape(&self, v: usize) -> &[Dim] {
        &self.vals[v].shape
    }

    fn show(&self, v: usize) -> String {
        show(self.shape(v), &self.symbols)
    }

    /// A shape rule's refusal at `at`, worded as the runtime words it;
    /// `shapes` are the printed operands the rule names.
    fn refused<T>(&self, at: impl Place, op: &str, e: RuleError<Dim>, shapes: &[&str]) -> R<T> {
        let mut msg = e.message(op, shapes, |d| d.shown(&self.symbols));
        if matches!(e, RuleError::Dim { .. }) {
            msg += " (per sample: the batch dim is implicit)";
        }
        err(at, msg)
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

    /// Lowers the statements of the body; returns the output value, or
    /// every independent error, each at its expression.
    pub fn body(mut self, block: &syn::Block) -> Result<Lowered, Failed> {
        let out = self.block(block);
        let output_rank = match &out {
            Ok(Some(v)) => Some(self.vals[*v].rank().known()),
            _ => None,
        };
        let failed =
            |errors: Errors| Failed { error: errors.finish().expect_err("a failed body has errors"), output_rank };
        let out = match out {
            Ok(Some(out)) if self.errors.is_empty() => out,
            Ok(None) if self.errors.is_empty() => {
                return Err(failed(Errors::from(syn::Error::new(
                    block.span(),
                    "the forward body must end with the output tensor (an expression without a semicolon)",
                ))));
            }
            _ => return Err(failed(self.errors)),
        };
        for (i, f) in self.fields.iter().enumerate() {
            let calls = &self.calls[i];
            if calls.is_empty() {
                self.errors.push(syn::Error::new(
                    f.ident.span(),
                    format!(
                        "`{}` is never called in forward: every field of a #[model] takes part in the forward pass",
                        f.ident
                    ),
                ));
                continue;
            }
            let per = f.array.unwrap_or(1);
            if f.kind.has_params() && calls.len() > per {
                self.errors.push((&calls[per]).error(format!(
                    "`{}` is called a second time here: a layer with parameters is called once per forward \
                     (declare another field for a second layer; shared weights need Autodiff)",
                    f.ident
                )));
            }
        }
        if !self.errors.is_empty() {
            return Err(failed(self.errors));
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

    /// Records a statement's failure (unless it only used a name whose own
    /// definition failed) and poisons the names it would have bound.
    fn failed(&mut self, fail: Fail, names: Vec<String>) {
        if let Fail::Error(e) = fail {
            self.errors.push(e);
        }
        for name in names {
            if !self.assign(&name, Bind::Poisoned) {
                self.bind(name, Bind::Poisoned);
            }
        }
    }

    /// Lowers a block's statements, going on past a failing one; `Ok(None)`
    /// when it ends without a value.
    fn block(&mut self, block: &syn::Block) -> R<Option<usize>> {
        let mut out = None;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            let result = match stmt {
                Stmt::Local(local) => self.local(local),
                Stmt::Expr(Expr::ForLoop(f), _) => self.for_loop(f),
                Stmt::Expr(Expr::Assign(a), _) => self.assignment(a),
                Stmt::Expr(e, None) if i + 1 == n => match self.operand(e) {
                    Ok(Operand::Tensor(v)) => {
                        out = Some(v);
                        Ok(())
                    }
                    Ok(Operand::Scalar(_)) => err(e.span(), "the forward body must return a tensor"),
                    Err(f) => Err(f),
                },
                Stmt::Expr(e, _) => err(e.span(), unsupported(e)),
                Stmt::Item(item) => err(item.span(), "items cannot be declared inside a #[model] forward"),
                Stmt::Macro(m) => err(
                    m.span(),
                    "macros are not supported inside a #[model] forward; the macro cannot see through them to \
                     differentiate",
                ),
            };
            if let Err(f) = result {
                self.failed(f, bound_names(stmt));
            }
        }
        Ok(out)
    }

    fn assignment(&mut self, a: &syn::ExprAssign) -> R<()> {
        let name = plain_ident(&a.left)
            .ok_or_else(|| syn::Error::new(a.left.span(), "only a local variable can be assigned"))?;
        let b = match self.operand(&a.right)? {
            Operand::Tensor(v) => Bind::Tensor(v),
            Operand::Scalar(s) => Bind::Scalar(s),
        };
        if !self.assign(&name, b) {
            return err(a.left.span(), format!("cannot find `{name}`: declare it with `let` first"));
        }
        Ok(())
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
            _ => return Err(not_array().into()),
        };
        let field = self.self_field(inner).ok_or_else(not_array)?;
        let Some(n) = self.fields[field].array else {
            return err(f.expr.span(), format!("`{}` is one layer, not an array of layers", self.fields[field].ident));
        };
        let Pat::Ident(var) = &*f.pat else {
            return err(f.pat.span(), "expected a name for the loop's layer");
        };
        for i in 0..n {
            let before = self.errors.len();
            self.scopes.push(HashMap::new());
            self.bind(var.ident.to_string(), Bind::Module(Callee { field, index: Some(i) }));
            let out = self.block(&f.body);
            self.scopes.pop();
            // An error in the body is reported once, not once per layer.
            if self.errors.len() > before {
                break;
            }
            if let Some(v) = out? {
                let _ = v;
                return err(f.body.span(), "a loop body ends with a statement, not a value");
            }
        }
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
    format!(
        "{what} in a #[model] forward; {}. For data-dependent control flow, write the model with Autodiff",
        vocab::supported()
    )
}

/// The names a statement binds or assigns, poisoned when it fails.
fn bound_names(stmt: &Stmt) -> Vec<String> {
    fn pat_names(p: &Pat, out: &mut Vec<String>) {
        match p {
            Pat::Ident(id) => out.push(id.ident.to_string()),
            Pat::Type(t) => pat_names(&t.pat, out),
            Pat::Slice(s) => s.elems.iter().for_each(|e| pat_names(e, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match stmt {
        Stmt::Local(l) => pat_names(&l.pat, &mut out),
        Stmt::Expr(Expr::Assign(a), _) => out.extend(plain_ident(&a.left)),
        _ => {}
    }
    out
}
