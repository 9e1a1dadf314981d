//! Calls: free functions (`gelu`, `cat`, `causal_mask`), `kernel!`
//! kernels, layer fields and nested models.

use quote::{ToTokens, quote};
use syn::Expr;
use syn::spanned::Spanned;

use super::*;

impl Lower<'_> {
    pub(super) fn call(&mut self, c: &syn::ExprCall) -> R<Operand> {
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
            if let Some(entry) = vocab::function_word(&name) {
                let n = entry.function.unwrap_or_default();
                if args.len() != n {
                    return err(
                        span,
                        format!("`{name}` takes {n} argument{}, found {}", if n == 1 { "" } else { "s" }, args.len()),
                    );
                }
                return self.function(entry.word, &name, &args, span);
            }
        }
        self.kernel(p, &args, span)
    }

    /// A free function of the vocabulary, its arguments counted.
    fn function(&mut self, word: Word, name: &str, args: &[&Expr], span: &Loc) -> R<Operand> {
        let v = match word {
            Word::Unary(op) => {
                let x = self.tensor(args[0])?;
                self.unary(Op::Unary(op), x, span)
            }
            Word::Binary(op) => {
                let (x, y) = (self.tensor(args[0])?, self.tensor(args[1])?);
                self.table_binary(op, x, y, span)?
            }
            Word::Softmax | Word::LogSoftmax => {
                let x = self.tensor(args[0])?;
                let d = self.dim_arg(args[1], self.shape(x).len(), name)?;
                let op = if word == Word::Softmax { Op::Softmax(d) } else { Op::LogSoftmax(d) };
                let shape = self.shape(x).to_vec();
                self.node(op, vec![x], shape, span)
            }
            Word::Matmul => {
                let (x, y) = (self.tensor(args[0])?, self.tensor(args[1])?);
                self.matmul(x, y, span)?
            }
            Word::Cat => self.cat(args[0], args[1], span)?,
            Word::Positions => {
                let t = self.size_arg(args[0])?;
                let v = self.push_val(Val {
                    shape: vec![t.clone()],
                    opaque: None,
                    batched: false,
                    grad: false,
                    params: false,
                });
                self.nodes.push(Node {
                    op: Op::Positions(t),
                    args: Vec::new(),
                    out: v,
                    span: span.first(),
                    field: None,
                });
                v
            }
            Word::CausalMask => {
                return err(span, "a causal mask is used as `x.masked_fill(causal_mask(T), value)`");
            }
            Word::Neg
            | Word::WithNumber(_)
            | Word::Clamp
            | Word::Transpose
            | Word::Permute
            | Word::Reshape
            | Word::Flatten
            | Word::Narrow
            | Word::Split
            | Word::Chunk
            | Word::SumDim
            | Word::MeanDim
            | Word::MaskedFill => {
                return err(span, format!("`{name}` is a tensor method here: write `x.{name}(..)`"));
            }
        };
        Ok(Operand::Tensor(v))
    }

    pub(super) fn cat(&mut self, list: &Expr, dim: &Expr, span: &Loc) -> R<usize> {
        let Expr::Array(arr) = list else {
            return err(list.span(), "cat takes an array of tensors: `cat([a, b], -1)`");
        };
        let vs: Vec<usize> = arr.elems.iter().map(|e| self.tensor(e)).collect::<R<_>>()?;
        let Some(&first) = vs.first() else { return err(list.span(), "cat needs at least one tensor") };
        let rank = self.shape(first).len();
        let d = self.dim_arg(dim, rank, "cat")?;
        if let Err(e) = rules::cat(vs.iter().map(|&v| self.shape(v)), d) {
            let shapes: Vec<String> = vs.iter().map(|&v| self.show(v)).collect();
            let shapes: Vec<&str> = shapes.iter().map(String::as_str).collect();
            return self.refused(span, "cat", e, &shapes);
        }
        let mut out = self.shape(first).to_vec();
        let mut total = Dim::size(0);
        for &v in &vs {
            let s = self.shape(v);
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
    pub(super) fn kernel(&mut self, path: &syn::ExprPath, args: &[&Expr], span: &Loc) -> R<Operand> {
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

    pub(super) fn call_layer(&mut self, callee: Callee, args: &[&Expr], span: &Loc) -> R<Operand> {
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
            let v = self.node(Op::Nested(callee), vs, out, span);
            self.first_output[callee.field].get_or_insert(v);
            return Ok(Operand::Tensor(v));
        }
        if let LayerKind::Builtin { layer, .. } = &field.kind
            && layer.attends()
            && vs.len() != 1
        {
            return self.call_attend(callee, &vs, &me, span);
        }
        if vs.len() != 1 {
            return err(span, format!("{me} takes one input, called with {}", vs.len()));
        }
        let x = vs[0];
        // A field that is an op of the op table (`act: Relu`) is that op:
        // it holds nothing, and the passes fuse it as they fuse `x.relu()`.
        if let LayerKind::Builtin { layer: blaze_spec::Layer::Unary(op), .. } = &field.kind {
            let v = self.unary(Op::Unary(op), x, span);
            if let Some(node) = self.nodes.last_mut() {
                node.field = Some(callee);
            }
            self.first_output[callee.field].get_or_insert(v);
            return Ok(Operand::Tensor(v));
        }
        let dims = self.shape(x).to_vec();
        let LayerKind::Builtin { layer, sizes, .. } = &field.kind else {
            return err(span, format!("{me} is not a built-in layer"));
        };
        // The spec's rule sees a symbolic dim as a number above any size,
        // which it passes through or refuses, and which maps back here.
        let symbolic: Vec<&Dim> = dims.iter().filter(|d| d.fixed().is_none()).collect();
        let code = |d: &Dim| match d.fixed() {
            Some(n) => n.min(blaze_spec::MAX_SIZE),
            None => blaze_spec::symbol(symbolic.iter().position(|s| *s == d).unwrap_or(0)),
        };
        if dims.len() > 8 {
            return err(span, format!("{me}: its input {} has more than 8 dims", self.show(x)));
        }
        let input = StaticShape::new(&dims.iter().map(code).collect::<Vec<usize>>());
        let out = match blaze_spec::output(*layer, sizes, &self.options[callee.field].spec, input) {
            Ok(o) => o
                .as_slice()
                .iter()
                .map(|&d| match blaze_spec::symbol_index(d) {
                    Some(k) => symbolic[k].clone(),
                    None => Dim::size(d),
                })
                .collect::<Vec<Dim>>(),
            Err(e) => return err(span, e.message(&me, &input, &self.show(x), None, &name)),
        };
        let v = self.node(Op::Layer(callee), vec![x], out, span);
        self.first_output[callee.field].get_or_insert(v);
        Ok(Operand::Tensor(v))
    }

    /// An attending layer called on a query `[T, D]`, keys and values
    /// `[S, D]` and maybe a key-padding mask `[S]`: the spec's rule checks
    /// the query, the rest must match it; the output has the query's shape.
    fn call_attend(&mut self, callee: Callee, vs: &[usize], me: &str, span: &Loc) -> R<Operand> {
        let LayerKind::Builtin { layer, sizes, .. } = &self.fields[callee.field].kind else {
            return err(span, format!("{me} is not a built-in layer"));
        };
        if !matches!(vs.len(), 3 | 4) {
            return err(
                span,
                format!(
                    "{me} takes one input (self-attention), or a query, keys and values and maybe a key-padding \
                     mask, called with {}",
                    vs.len()
                ),
            );
        }
        let (q, k, v) = (vs[0], vs[1], vs[2]);
        let d = sizes.first().copied().unwrap_or(0);
        // The query through the spec's rule (rank, embedding, heads), with
        // any symbolic length standing for a number above every size.
        let qs = self.shape(q).to_vec();
        let input = StaticShape::new(
            &qs.iter()
                .map(|x| x.fixed().map_or(blaze_spec::symbol(0), |n| n.min(blaze_spec::MAX_SIZE)))
                .collect::<Vec<_>>(),
        );
        if let Err(e) = blaze_spec::output(*layer, sizes, &self.options[callee.field].spec, input) {
            return err(span, e.message(me, &input, &self.show(q), None, "query"));
        }
        let (ks, vs_) = (self.shape(k).to_vec(), self.shape(v).to_vec());
        if ks.len() != 2 || ks[1] != Dim::size(d) || ks != vs_ {
            return err(
                span,
                format!("{me} takes keys and values of one shape [S, {d}], got {} and {}", self.show(k), self.show(v)),
            );
        }
        if let Some(&m) = vs.get(3)
            && (self.shape(m) != [ks[0].clone()] || !self.vals[m].batched)
        {
            return err(
                span,
                format!(
                    "{me}: a key-padding mask is one value per key, {}, per sample; got {}",
                    show(&ks[..1], &self.symbols),
                    self.show(m)
                ),
            );
        }
        let v = self.node(Op::Attend(callee), vs.to_vec(), qs, span);
        self.first_output[callee.field].get_or_insert(v);
        Ok(Operand::Tensor(v))
    }

    /// The compile-time check of a nested model's call: its arity, its
    /// input shapes, and that its output has the first input's shape.
    pub(super) fn nested_assert(&mut self, callee: Callee, vs: &[usize], out: &[Dim], me: &str, span: &Loc) -> R<()> {
        let code = |d: &Dim| match (d.fixed(), d.name()) {
            (Some(n), _) => Some(n),
            (None, Some(&k)) => Some(blaze_spec::symbol(k)),
            _ => None,
        };
        let sig = |shape: &[Dim]| match shape.iter().map(code).collect::<Option<Vec<usize>>>() {
            Some(dims) => Ok(quote!(::blaze::nn::StaticShape::new(&[#(#dims),*]))),
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
