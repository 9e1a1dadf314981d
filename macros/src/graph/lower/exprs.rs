//! Operators and operands: values, literals, `+ - * /` with broadcasting.

use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

use super::*;

impl Lower<'_> {
    /// `self.name` as a field index.
    pub(super) fn self_field(&self, e: &Expr) -> Option<usize> {
        let Expr::Field(fe) = e else { return None };
        if !is_self(&fe.base) {
            return None;
        }
        let syn::Member::Named(name) = &fe.member else { return None };
        self.fields.iter().position(|f| f.ident == *name)
    }

    pub(super) fn unknown_field(&self, name: &syn::Ident) -> syn::Error {
        let names: Vec<String> = self.fields.iter().map(|f| f.ident.to_string()).collect();
        let hint = match blaze_kernel_dsl::errors::closest(&name.to_string(), names.iter().map(String::as_str)) {
            Some(c) => format!("; did you mean `{c}`?"),
            None => format!(" (its fields: {})", names.join(", ")),
        };
        syn::Error::new(name.span(), format!("`{}` has no field `{name}`{hint}", self.model))
    }

    pub(super) fn tensor(&mut self, e: &Expr) -> R<usize> {
        match self.operand(e)? {
            Operand::Tensor(v) => Ok(v),
            Operand::Scalar(_) => err(e.span(), "expected a tensor here, found a number"),
        }
    }

    pub(super) fn operand(&mut self, e: &Expr) -> R<Operand> {
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
                        Some(Bind::Poisoned) => return Err(Fail::Poisoned),
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
                syn::Member::Named(name) if self.self_field(e).is_none() => Err(self.unknown_field(name).into()),
                _ => err(e.span(), "a layer field is called, not read: `self.layer(x)`"),
            },
            _ => err(e.span(), unsupported(e)),
        }
    }

    pub(super) fn binary(&mut self, b: &syn::ExprBinary) -> R<Operand> {
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

    /// A number operand: a Rust expression of the forward's numbers.
    pub(super) fn number(&mut self, e: &Expr) -> R<TokenStream> {
        match self.operand(e)? {
            Operand::Scalar(s) => Ok(s),
            Operand::Tensor(_) => err(e.span(), "expected a number here, found a tensor"),
        }
    }

    /// Op `op` of the op table on tensors `x` and `y`, broadcast: the
    /// arithmetic ones as their operators are.
    pub(super) fn table_binary(
        &mut self,
        op: &'static blaze_spec::ops::Binary,
        x: usize,
        y: usize,
        span: &Loc,
    ) -> R<usize> {
        let shape = self.broadcast(&x, &y, &format!("`{}`", op.name), span)?;
        let op = match arithmetic(op) {
            Some(b) => Op::Bin(b),
            None => Op::Binary(op),
        };
        Ok(self.node(op, vec![x, y], shape, span))
    }

    /// Op `op` of the op table on tensor `x` and the number `s`.
    pub(super) fn with_number(
        &mut self,
        op: &'static blaze_spec::ops::Binary,
        x: usize,
        s: TokenStream,
        span: &Loc,
    ) -> usize {
        let sop = match arithmetic(op) {
            Some(Bin::Add) => ScalarOp::Add,
            Some(Bin::Sub) => ScalarOp::Sub,
            Some(Bin::Mul) => ScalarOp::Mul,
            Some(Bin::Div) => ScalarOp::Div,
            None => ScalarOp::Table(op),
        };
        let shape = self.shape(x).to_vec();
        self.node(Op::Scalar(sop, s), vec![x], shape, span)
    }

    pub(super) fn broadcast(&self, x: &usize, y: &usize, what: &str, span: &Loc) -> R<Vec<Dim>> {
        match rules::broadcast(self.shape(*x), self.shape(*y)) {
            Ok(dims) => Ok(dims.cloned().collect()),
            Err(e) => self.refused(span, what, e, &[&self.show(*x), &self.show(*y)]),
        }
    }
}

/// The operator an op of the op table is written with, if any.
fn arithmetic(op: &blaze_spec::ops::Binary) -> Option<Bin> {
    Some(match op.variant {
        "Add" => Bin::Add,
        "Sub" => Bin::Sub,
        "Mul" => Bin::Mul,
        "Div" => Bin::Div,
        _ => return None,
    })
}
