//! Tensor methods: `matmul`, `reshape`, `softmax`, `split`, ...

use quote::quote;
use syn::spanned::Spanned;
use syn::{BinOp, Expr};

use super::*;

impl Lower<'_> {
    /// A per-sample dim argument (negative from the end) for a value of `rank` dims.
    pub(super) fn dim_arg(&self, e: &Expr, rank: usize, op: &str) -> R<usize> {
        let d =
            int_arg(e).ok_or_else(|| syn::Error::new(e.span(), format!("{op}: the dim must be an integer literal")))?;
        rules::dim(d, rank).or_else(|r| self.refused(e.span(), op, r, &[]))
    }

    pub(super) fn count_arg(&self, e: &Expr, op: &str) -> R<usize> {
        match int_arg(e) {
            Some(n) if n > blaze_spec::MAX_SIZE as i64 => too_large(e, op, n),
            Some(n) if n >= 0 => Ok(n as usize),
            _ => err(e.span(), format!("{op}: expected a non-negative integer literal")),
        }
    }

    pub(super) fn args_len(&self, m: &syn::ExprMethodCall, n: usize) -> R<()> {
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

    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> R<Operand> {
        let span = &Loc::of(m);
        let name = m.method.to_string();
        // `self.layer(x, ..)`: a call of a field.
        if is_self(&m.receiver) {
            let Some(field) = self.fields.iter().position(|f| f.ident == m.method) else {
                return Err(self.unknown_field(&m.method).into());
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
        let Some(entry) = vocab::method_word(&name) else {
            let hint = blaze_kernel_dsl::errors::closest(&name, vocab::method_names())
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return err(
                m.method.span(),
                format!(
                    "`{name}` is not a tensor op #[model] can differentiate; {hint}it supports {}",
                    vocab::method_names().collect::<Vec<_>>().join(", ")
                ),
            );
        };
        self.args_len(m, entry.method.unwrap_or_default())?;
        let shape = self.shape(x).to_vec();
        let rank = shape.len();
        let arg = |i: usize| &m.args[i];
        let v = match entry.word {
            Word::Unary(op) => self.unary(Op::Unary(op), x, span),
            Word::Binary(op) => {
                let Operand::Tensor(y) = self.operand(arg(0))? else {
                    let msg = format!("`{name}` takes a tensor; with a number, write `x.{}(..)`", op.with_number);
                    return err(arg(0).span(), msg);
                };
                self.table_binary(op, x, y, span)?
            }
            Word::WithNumber(op) => {
                let Operand::Scalar(s) = self.operand(arg(0))? else {
                    return err(
                        arg(0).span(),
                        format!("`{name}` takes a number; with a tensor, write `x.{}(..)`", op.name),
                    );
                };
                self.with_number(op, x, s, span)
            }
            Word::Clamp => {
                let (lo, hi) = (self.number(arg(0))?, self.number(arg(1))?);
                let [max, min] = ["maximum", "minimum"]
                    .map(|n| blaze_spec::ops::binary(n).expect("the op table has maximum and minimum"));
                let above = self.with_number(max, x, lo, span);
                self.with_number(min, above, hi, span)
            }
            Word::Neg => self.unary(Op::Neg, x, span),
            Word::Matmul => {
                let y = self.tensor(arg(0))?;
                self.matmul(x, y, span)?
            }
            Word::Transpose => {
                let (a, b) = (self.dim_arg(arg(0), rank, "transpose")?, self.dim_arg(arg(1), rank, "transpose")?);
                let mut s = shape.clone();
                s.swap(a, b);
                self.node(Op::Transpose(a, b), vec![x], s, span)
            }
            Word::Permute => {
                let Expr::Array(arr) = arg(0) else {
                    return err(arg(0).span(), "permute takes an array of dims: `[1, 0, 2]`");
                };
                let axes: Vec<usize> = arr.elems.iter().map(|e| self.dim_arg(e, rank, "permute")).collect::<R<_>>()?;
                if let Err(e) = rules::permute(&axes, rank) {
                    return self.refused(arg(0).span(), "permute", e, &[&self.show(x)]);
                }
                let s = axes.iter().map(|&a| shape[a].clone()).collect();
                self.node(Op::Permute(axes), vec![x], s, span)
            }
            Word::Reshape => {
                let s = self.reshape_dims(x, arg(0))?;
                self.node(Op::Reshape(s.clone()), vec![x], s, span)
            }
            Word::Flatten => {
                let n = shape.iter().fold(Dim::size(1), |a, d| a.times(d));
                self.node(Op::Reshape(vec![n.clone()]), vec![x], vec![n], span)
            }
            Word::Narrow => {
                let dim = self.dim_arg(arg(0), rank, "narrow")?;
                let len = self.count_arg(arg(2), "narrow")?;
                // As torch.narrow: a negative start counts from the end
                // (`x.narrow(0, -1, 1)`: the last step of a sequence).
                let Some(start) = int_arg(arg(1)) else {
                    return err(arg(1).span(), "narrow: expected an integer literal start (negative: from the end)");
                };
                let start = match rules::narrow(&shape[dim], dim, start, len) {
                    Ok(start) => start,
                    Err(e) => return self.refused(span, "narrow", e, &[&self.show(x)]),
                };
                let mut s = shape.clone();
                s[dim] = Dim::size(len);
                self.node(Op::Narrow { dim, start, len }, vec![x], s, span)
            }
            Word::Softmax | Word::LogSoftmax => {
                let d = self.dim_arg(arg(0), rank, &name)?;
                let op = if entry.word == Word::Softmax { Op::Softmax(d) } else { Op::LogSoftmax(d) };
                self.node(op, vec![x], shape, span)
            }
            Word::SumDim | Word::MeanDim => {
                let dim = self.dim_arg(arg(0), rank, &name)?;
                let mut s = shape.clone();
                s[dim] = Dim::size(1);
                self.node(Op::Reduce { dim, mean: entry.word == Word::MeanDim }, vec![x], s, span)
            }
            Word::MaskedFill => {
                let t = self.causal_arg(arg(0))?;
                if rank < 2 || shape[rank - 1] != t || shape[rank - 2] != t {
                    return err(
                        arg(0).span(),
                        format!(
                            "masked_fill: a causal mask of {} positions needs the last two dims [{0}, {0}], got {}",
                            t.shown(&self.symbols),
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
            Word::Split | Word::Chunk => {
                return err(
                    span,
                    format!("`{name}` gives several tensors: bind them with `let [a, b, ..] = x.{name}(..);`"),
                );
            }
            Word::Cat | Word::Positions | Word::CausalMask => {
                return err(m.method.span(), format!("`{name}` is a function here: write `{name}(..)`"));
            }
        };
        Ok(Operand::Tensor(v))
    }

    pub(super) fn unary(&mut self, op: Op, x: usize, span: &Loc) -> usize {
        let shape = self.shape(x).to_vec();
        self.node(op, vec![x], shape, span)
    }

    pub(super) fn matmul(&mut self, x: usize, y: usize, span: &Loc) -> R<usize> {
        let out = match rules::matmul(self.shape(x), self.shape(y)) {
            Ok(dims) => dims.cloned().collect(),
            Err(e) => return self.refused(span, "matmul", e, &[&self.show(x), &self.show(y)]),
        };
        Ok(self.node(Op::Matmul, vec![x, y], out, span))
    }

    pub(super) fn causal_arg(&mut self, e: &Expr) -> R<Dim> {
        let bad = || syn::Error::new(e.span(), "masked_fill takes a causal mask here: `causal_mask(T)`");
        let Expr::Call(c) = e else { return Err(bad().into()) };
        let Expr::Path(p) = &*c.func else { return Err(bad().into()) };
        if !p.path.is_ident("causal_mask") || c.args.len() != 1 {
            return Err(bad().into());
        }
        self.size_arg(&c.args[0])
    }

    /// A size: a literal, a symbol, or a product of them.
    pub(super) fn size_arg(&mut self, e: &Expr) -> R<Dim> {
        match e {
            Expr::Lit(_) => match int_arg(e) {
                Some(n) if n > blaze_spec::MAX_SIZE as i64 => too_large(e, "a size", n),
                Some(n) if n > 0 => Ok(Dim::size(n as usize)),
                _ => err(e.span(), "expected a positive size"),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match self.symbols.iter().position(|s| *s == name) {
                    Some(k) => Ok(Dim::named(k)),
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

    pub(super) fn reshape_dims(&mut self, x: usize, e: &Expr) -> R<Vec<Dim>> {
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
        if let Err(r) = rules::reshape(self.shape(x), &mut dims, infer_at) {
            return self.refused(e.span(), "reshape", r, &[&self.show(x), &show(&dims, &self.symbols)]);
        }
        Ok(dims)
    }

    /// `x.split(size, dim)` or `x.chunk(n, dim)` into `count` narrowed pieces.
    pub(super) fn pieces(&mut self, e: &Expr, count: usize) -> R<Vec<usize>> {
        let Expr::MethodCall(m) = e else {
            return err(e.span(), "`let [a, b, ..] =` takes `x.split(size, dim)` or `x.chunk(n, dim)`");
        };
        let name = m.method.to_string();
        let split = match vocab::method_word(&name).map(|e| e.word) {
            Some(Word::Split) => true,
            Some(Word::Chunk) => false,
            _ => {
                return err(m.method.span(), "`let [a, b, ..] =` takes `x.split(size, dim)` or `x.chunk(n, dim)`");
            }
        };
        self.args_len(m, 2)?;
        let x = self.tensor(&m.receiver)?;
        let shape = self.shape(x).to_vec();
        let dim = self.dim_arg(&m.args[1], shape.len(), &name)?;
        let n = self.count_arg(&m.args[0], &name)?;
        let Some(total) = shape[dim].fixed() else {
            return err(m.args[1].span(), format!("{name}: dim {dim} of {} has no fixed size", self.show(x)));
        };
        let size = if split { n } else { total.checked_div(n).unwrap_or(0) };
        if size == 0 || size * count != total {
            return err(
                e.span(),
                format!(
                    "{name}: {} pieces{} of dim {dim} of {} do not fit {count} names",
                    if split { total.div_ceil(size.max(1)) } else { n },
                    if split { format!(" of {size}") } else { String::new() },
                    self.show(x)
                ),
            );
        }
        let mut out = Vec::new();
        for i in 0..count {
            let mut s = shape.clone();
            s[dim] = Dim::size(size);
            out.push(self.node(Op::Narrow { dim, start: (i * size) as i64, len: size }, vec![x], s, m.span()));
        }
        Ok(out)
    }
}

/// A size literal past any tensor's: refused, so that every size the
/// lowering builds fits a dim's factor.
fn too_large<T>(e: &Expr, what: &str, n: i64) -> R<T> {
    err(e.span(), format!("{what}: {n} is larger than any tensor's dim (at most {})", blaze_spec::MAX_SIZE))
}
