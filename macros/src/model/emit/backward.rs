//! The reverse pass of a model's lowered ops: one adjoint statement per op,
//! walking the lowered ops backwards, reading what the training forward
//! stored.

use super::*;

impl Gen<'_> {
    /// Hands the gradients of `callee` to the visitor `ready`, under the
    /// names `Module::visit_grad_tensors` gives them.
    fn hand_over(&self, callee: Callee) -> TokenStream {
        let f = &self.fields()[callee.field];
        let (gr, ty, field) = (grads_ident(callee, self.fields()), field_ty(&f.kind), f.ident.to_string());
        let name = match callee.index {
            Some(i) => {
                let i = i.to_string();
                quote!(::blaze::nn::join(#field, #i))
            }
            None => quote!(::blaze::nn::join("", #field)),
        };
        quote!(<#ty as ::blaze::nn::Module<B>>::visit_grad_tensors(&#gr, &#name, ready);)
    }

    /// The backward's statements: every parameter's gradient (`gr_*`), and
    /// with `full` each input's gradient (`g{k}`). With `hand_over`, each
    /// field's gradients go to the visitor `ready` as soon as they are made
    /// (`Differentiable::backward_params_each`).
    pub fn backward(&self, full: bool, hand_over: bool) -> TokenStream {
        let low = self.low;
        let need = |k: usize| if full { low.vals[k].grad } else { low.vals[k].params };
        let mut out = TokenStream::new();
        for k in 0..low.symbols.len() {
            let sid = sym_ident(k);
            out.extend(quote!(let #sid: usize = cache.syms[#k];));
        }
        let go = grad_ident(low.output);
        out.extend(quote!(let #go = ::core::clone::Clone::clone(grad);));
        let mut defined: HashSet<usize> = HashSet::from([low.output]);
        let mut grads_done: HashSet<(usize, Option<usize>)> = HashSet::new();

        // A call of the op's gradient in `blaze::runtime::adjoint`, where the
        // tape and the layers find the same formulas, as a tensor.
        // `to` is the value the gradient is for, whose rank it has.
        let adj = |to: usize, f: &str, args: TokenStream| {
            let (f, r) = (format_ident!("{}", f), self.rank(to));
            quote!(::blaze::Tensor::<B, #r>::from_storage(::blaze::runtime::adjoint::#f::<B>(#args)))
        };

        for (i, n) in low.nodes.iter().enumerate().rev() {
            if !defined.contains(&n.out) || matches!(n.op, Op::Input) {
                continue;
            }
            let gy = grad_ident(n.out);
            let span = proc_macro2::Span::call_site().located_at(n.span);
            let ci = layer_cache_ident(i);
            // (input value, expression of its gradient contribution)
            let mut contrib: Vec<(usize, TokenStream)> = Vec::new();
            // The field whose gradients this node's statements make.
            let mut made: Option<Callee> = None;
            let mut pre = TokenStream::new();
            let a = n.args.first().copied().unwrap_or(0);
            if let Some(fold) = self.plan.softmax_at(i) {
                // A softmax that applies the scale and mask before it: its
                // adjoint goes straight to the value they were applied to.
                let (d, vy, x) = (self.rank(n.out).known() - 1, value_ident(n.out), fold.input);
                let opts = fold.options();
                contrib.push((x, adj(x, "softmax", quote!(#gy.storage(), cache.#vy.storage(), #d, #opts))));
            } else if let Some(group) = self.plan.rooted_at(i) {
                // A fused group: each argument's gradient from its adjoint
                // kernel, one pass each, summed to its shape where broadcast.
                // After a sum over the last dim, the gradient broadcasts
                // along it (divided by its size after a mean).
                let g = match group.reduce {
                    // After a softmax, the gradient of its input, from its output.
                    Some(op @ (RowOp::Softmax | RowOp::LogSoftmax)) => {
                        let (d, vy) = (self.rank(n.out).known() - 1, value_ident(n.out));
                        let opts = if op == RowOp::LogSoftmax {
                            quote!(::blaze::SoftmaxOptions::default().log())
                        } else {
                            quote!(::blaze::SoftmaxOptions::default())
                        };
                        let gs = format_ident!("{}_softmax", gy);
                        let e = adj(group.value, "softmax", quote!(#gy.storage(), cache.#vy.storage(), #d, #opts));
                        pre.extend(quote_spanned!(span=> let #gs = #e;));
                        gs
                    }
                    // After a LayerNorm or RMSNorm, the gradient of its
                    // input from the layer's own backward and cache.
                    Some(RowOp::Norm { .. }) => {
                        let Op::Layer(callee) = &n.op else { unreachable!("a norm is a layer call") };
                        let kind = &self.fields()[callee.field].kind;
                        let (at, gr) = (access(*callee, self.fields()), grads_ident(*callee, self.fields()));
                        let path = self.layer_path(field_ty(kind), a, n.out);
                        let gs = format_ident!("{}_norm", gy);
                        let gpat = if kind.has_params() {
                            grads_done.insert((callee.field, callee.index));
                            made = Some(*callee);
                            quote!(#gr)
                        } else {
                            quote!(_)
                        };
                        // Where no argument of the group needs a gradient
                        // (`backward_params` before the first parameters),
                        // the norm's parameters alone.
                        let inputs_need = group.inputs.iter().any(|x| matches!(x, Input::Value(k) if need(*k)));
                        match (inputs_need, kind.has_params()) {
                            (true, _) => pre.extend(
                                quote_spanned!(span=> let (#gs, #gpat) = #path::backward(&#at, &cache.#ci, &#gy);),
                            ),
                            (false, true) => pre.extend(
                                quote_spanned!(span=> let #gr = #path::backward_params(&#at, &cache.#ci, &#gy);),
                            ),
                            (false, false) => {}
                        }
                        gs
                    }
                    Some(RowOp::Mean) => {
                        let len = self.low.vals[group.value].shape.last().expect("a reduced dim").tokens();
                        let gs = format_ident!("{}_mean", gy);
                        pre.extend(quote_spanned!(span=> let #gs = #gy.mul_scalar(1.0 / (#len) as f64);));
                        gs
                    }
                    // After a sum the gradient broadcasts along the row as it
                    // is; without a reduction it is the value's own.
                    None | Some(RowOp::Sum) => gy.clone(),
                };
                for (pos, input) in group.inputs.iter().enumerate() {
                    let Input::Value(k) = input else { continue };
                    if !need(*k) {
                        continue;
                    }
                    let adjoint = format_ident!("Adjoint{}", pos);
                    let call = self.fused_call(group, quote!(#adjoint::Kernel), Pass::Backward, Some(quote!(#g)));
                    let e = if self.broadcast(*k, group.value) {
                        let sk = shape_ident(*k);
                        adj(*k, "sum_to", quote!(#call.into_storage(), &cache.#sk))
                    } else {
                        call
                    };
                    contrib.push((*k, e));
                }
            } else {
                match &n.op {
                    Op::Input | Op::Positions(_) => {}
                    Op::Layer(callee) | Op::Nested(callee) => {
                        // A nested model of several inputs runs as its
                        // inherent methods; everything else through a trait.
                        let inherent = matches!(n.op, Op::Nested(_)) && n.args.len() != 1;
                        let holds = self.fields()[callee.field].kind.has_params();
                        let at = access(*callee, self.fields());
                        let gr = grads_ident(*callee, self.fields());
                        let wants: Vec<bool> = n.args.iter().map(|&k| need(k)).collect();
                        let path = if let Op::Nested(_) = n.op {
                            self.nested_path(*callee, n.args.len()).unwrap_or_default()
                        } else {
                            self.layer_path(field_ty(&self.fields()[callee.field].kind), a, n.out)
                        };
                        // The cache, rebuilt from the recomputed input where
                        // the training forward kept none.
                        let c = match self.plan.recomputed_input(i) {
                            Some(p) => {
                                let (x, r) = (self.recomputed(p), self.rank(a));
                                let ty = field_ty(&self.fields()[callee.field].kind);
                                pre.extend(quote_spanned!(span=>
                                    let #ci = <#ty as ::blaze::nn::CachesInput<B, #r>>::cache_input(&#at, &#x);
                                ));
                                quote!(#ci)
                            }
                            None => quote!(cache.#ci),
                        };
                        if wants.iter().any(|&w| w) {
                            let dx: Vec<syn::Ident> =
                                (0..n.args.len()).map(|j| format_ident!("d{}_{}", i, j)).collect();
                            let pat = if dx.len() == 1 { quote!(#(#dx)*) } else { quote!((#(#dx),*)) };
                            let gpat = if holds { quote!(#gr) } else { quote!(_) };
                            pre.extend(if inherent {
                                quote_spanned!(span=> let (#pat, #gpat) = #at.backward(&#c, &#gy);)
                            } else {
                                quote_spanned!(span=> let (#pat, #gpat) = #path::backward(&#at, &#c, &#gy);)
                            });
                            for (j, &k) in n.args.iter().enumerate() {
                                let d = &dx[j];
                                contrib.push((k, quote!(#d)));
                            }
                        } else if holds {
                            pre.extend(if inherent {
                                quote_spanned!(span=> let #gr = #at.backward_params(&#c, &#gy);)
                            } else {
                                quote_spanned!(span=> let #gr = #path::backward_params(&#at, &#c, &#gy);)
                            });
                        }
                        if holds {
                            grads_done.insert((callee.field, callee.index));
                            made = Some(*callee);
                        }
                    }
                    Op::Attend(callee) => {
                        let holds = self.fields()[callee.field].kind.has_params();
                        let (at, path, _, _) = self.attend_parts(*callee, &n.args);
                        let gr = grads_ident(*callee, self.fields());
                        let dx: Vec<syn::Ident> = (0..3usize).map(|j| format_ident!("d{}_{}", i, j)).collect();
                        let gpat = if holds { quote!(#gr) } else { quote!(_) };
                        pre.extend(quote_spanned!(span=> let ((#(#dx),*), #gpat) = #path::attend_backward(&#at, &cache.#ci, &#gy);));
                        // The mask has no gradient.
                        for (j, &k) in n.args.iter().take(3).enumerate() {
                            let d = &dx[j];
                            contrib.push((k, quote!(#d)));
                        }
                        if holds {
                            grads_done.insert((callee.field, callee.index));
                            made = Some(*callee);
                        }
                    }
                    Op::Unary(u) => {
                        // The op's adjoint kernel, from what `stored` kept.
                        let from = value_ident(if of_output(u) { n.out } else { a });
                        let op = unary_op(u);
                        let args = quote!(#op, cache.#from.storage(), cache.#from.storage(), #gy.storage());
                        contrib.push((a, adj(a, "unary", args)));
                    }
                    Op::Bin(op) => {
                        let b = n.args[1];
                        let (va, vb, vy) = (value_ident(a), value_ident(b), value_ident(n.out));
                        // The shape an operand's gradient sums to: its own where
                        // it was broadcast, the gradient's otherwise.
                        let shape = |k: usize| {
                            let sk = shape_ident(k);
                            if self.broadcast(k, n.out) { quote!(&cache.#sk) } else { quote!(&#gy.shape()) }
                        };
                        let (sa, sb) = (shape(a), shape(b));
                        let g = quote!(#gy.storage());
                        let (ea, eb) = match op {
                            Bin::Add => (adj(a, "add", quote!(#g, #sa)), adj(b, "add", quote!(#g, #sb))),
                            Bin::Sub => (adj(a, "add", quote!(#g, #sa)), adj(b, "sub_rhs", quote!(#g, #sb))),
                            Bin::Mul => (
                                adj(a, "mul_operand", quote!(#g, cache.#vb.storage(), #sa)),
                                adj(b, "mul_operand", quote!(#g, cache.#va.storage(), #sb)),
                            ),
                            Bin::Div => (
                                adj(a, "div_lhs", quote!(#g, cache.#vb.storage(), #sa)),
                                adj(b, "div_rhs", quote!(#g, cache.#vb.storage(), cache.#vy.storage())),
                            ),
                        };
                        contrib.push((a, ea));
                        contrib.push((b, eb));
                    }
                    Op::Binary(op) => {
                        // The tape's adjoint: the table's partials, each summed
                        // to its operand's shape.
                        let b = n.args[1];
                        let (va, vb) = (value_ident(a), value_ident(b));
                        let v = format_ident!("{}", op.variant);
                        let (da, db) = (format_ident!("d{}_0", i), format_ident!("d{}_1", i));
                        pre.extend(quote_spanned!(span=>
                            let [#da, #db] = ::blaze::runtime::adjoint::binary::<B>(
                                ::blaze::BinaryOp::#v, cache.#va.storage(), cache.#vb.storage(), #gy.storage());
                        ));
                        let (ra, rb) = (self.rank(a), self.rank(b));
                        contrib.push((a, quote!(::blaze::Tensor::<B, #ra>::from_storage(#da))));
                        contrib.push((b, quote!(::blaze::Tensor::<B, #rb>::from_storage(#db))));
                    }
                    Op::Scalar(op, sv) => {
                        let sv = scalar(sv);
                        let (vx, vy) = (value_ident(a), value_ident(n.out));
                        let g = quote!(#gy.storage());
                        let e = match op {
                            ScalarOp::Add | ScalarOp::Sub => quote!(::core::clone::Clone::clone(&#gy)),
                            ScalarOp::Mul => adj(a, "scale_by", quote!(#g, #sv)),
                            ScalarOp::Div => adj(a, "scale_by", quote!(#g, 1.0 / (#sv))),
                            ScalarOp::RSub => adj(a, "neg", g),
                            ScalarOp::RDiv => {
                                adj(a, "rdiv_scalar", quote!(#g, cache.#vx.storage(), cache.#vy.storage()))
                            }
                            ScalarOp::Table(op) => {
                                let v = format_ident!("{}", op.variant);
                                let args = quote!(::blaze::BinaryOp::#v, cache.#vx.storage(), #sv, #g);
                                adj(a, "binary_scalar", args)
                            }
                        };
                        contrib.push((a, e));
                    }
                    Op::Neg => contrib.push((a, adj(a, "neg", quote!(#gy.storage())))),
                    Op::Matmul => {
                        let b = n.args[1];
                        let (va, vb) = (value_ident(a), value_ident(b));
                        let g = quote!(#gy.storage());
                        let ea = adj(a, "matmul_lhs", quote!(#g, cache.#vb.storage(), &cache.#va.shape()));
                        let eb = adj(b, "matmul_rhs", quote!(#g, cache.#va.storage(), &cache.#vb.shape()));
                        contrib.push((a, ea));
                        contrib.push((b, eb));
                    }
                    Op::Transpose(x, y) => {
                        let (x, y) = (tensor_dim(*x), tensor_dim(*y));
                        contrib.push((a, adj(a, "transpose_dims", quote!(#gy.storage(), #x, #y))));
                    }
                    Op::Permute(axes) => {
                        let axes = axes.iter().map(|&x| tensor_dim(x));
                        contrib.push((a, adj(a, "permute", quote!(#gy.storage(), &[0usize #(, #axes)*]))));
                    }
                    Op::Reshape(_) => {
                        let sa = shape_ident(a);
                        contrib.push((a, adj(a, "reshape", quote!(#gy.storage(), &cache.#sa))));
                    }
                    Op::Narrow { dim, start, .. } => {
                        let (d, sa) = (tensor_dim(*dim), shape_ident(a));
                        let start = narrow_start(*start, quote!(cache.#sa[#d]));
                        contrib.push((a, adj(a, "narrow", quote!(#gy.storage(), #d, #start, cache.#sa[#d]))));
                    }
                    Op::Cat(dim) => {
                        let d = tensor_dim(*dim);
                        let off = format_ident!("o{}", i);
                        pre.extend(quote!(let #off = 0usize;));
                        for (j, &k) in n.args.iter().enumerate() {
                            let (sk, piece) = (shape_ident(k), format_ident!("d{}_{}", i, j));
                            let e = adj(k, "cat_piece", quote!(#gy.storage(), #d, #off, cache.#sk[#d]));
                            pre.extend(quote! {
                                let #piece = #e;
                                let #off = #off + cache.#sk[#d];
                            });
                            contrib.push((k, quote!(#piece)));
                        }
                        pre.extend(quote!(let _ = #off;));
                    }
                    Op::Softmax(d) | Op::LogSoftmax(d) => {
                        let (d, vy) = (tensor_dim(*d), value_ident(n.out));
                        let o = if matches!(n.op, Op::Softmax(_)) {
                            quote!(::blaze::SoftmaxOptions::default())
                        } else {
                            quote!(::blaze::SoftmaxOptions::default().log())
                        };
                        contrib.push((a, adj(a, "softmax", quote!(#gy.storage(), cache.#vy.storage(), #d, #o))));
                    }
                    Op::Reduce { dim, mean } => {
                        let (d, sa) = (tensor_dim(*dim), shape_ident(a));
                        let e = if *mean {
                            adj(a, "mean", quote!(#gy.storage(), &cache.#sa, cache.#sa[#d]))
                        } else {
                            adj(a, "sum", quote!(#gy.storage(), &cache.#sa))
                        };
                        contrib.push((a, e));
                    }
                    Op::CausalFill { t, .. } => {
                        let (t, r) = (t.tokens(), self.rank(n.out));
                        let mask = quote!(::blaze::nn::graph::causal_mask::<B, #r>(#t, &#gy.device()));
                        contrib.push((a, adj(a, "masked_fill", quote!(#gy.storage(), #mask.storage()))));
                    }
                    Op::Kernel { path, args: kargs } => {
                        let list = self.kernel_args(kargs, &n.args, true);
                        let r = self.rank(n.out);
                        for (pos, ka) in kargs.iter().enumerate() {
                            if let KernelArg::Tensor(j) = ka {
                                let k = n.args[*j];
                                if need(k) {
                                    let shape = if self.broadcast(k, n.out) {
                                        let sk = shape_ident(k);
                                        quote!(&cache.#sk)
                                    } else {
                                        quote!(&#gy.shape())
                                    };
                                    let partial = quote!(::blaze::runtime::kernel::partial::<#path::Kernel, B, #r>(#pos, &[#(#list),*]));
                                    let times = quote!(::blaze::runtime::adjoint::times::<B>(#gy.storage(), #partial.storage()));
                                    contrib.push((k, adj(k, "sum_to", quote!(#times, #shape))));
                                }
                            }
                        }
                    }
                }
            }
            out.extend(pre);
            if let (true, Some(c)) = (hand_over, made) {
                out.extend(self.hand_over(c));
            }
            for (k, e) in contrib {
                if !need(k) {
                    continue;
                }
                let gk = grad_ident(k);
                out.extend(if defined.insert(k) {
                    quote_spanned!(span=> let #gk = #e;)
                } else {
                    quote_spanned!(span=> let #gk = #gk.add(&#e);)
                });
            }
        }
        // Parameters whose layer's output did not reach the output.
        for (fi, f) in self.fields().iter().enumerate() {
            if !f.kind.has_params() {
                continue;
            }
            let indices: Vec<Option<usize>> = match f.array {
                Some(n) => (0..n).map(Some).collect(),
                None => vec![None],
            };
            for index in indices {
                let callee = Callee { field: fi, index };
                if !grads_done.contains(&(fi, index)) {
                    let (id, at) = (grads_ident(callee, self.fields()), access(callee, self.fields()));
                    out.extend(quote!(let #id = ::blaze::nn::graph::zero_grads::<B, _>(&#at);));
                    if hand_over {
                        out.extend(self.hand_over(callee));
                    }
                }
            }
        }
        if full {
            for &k in &low.inputs {
                if !defined.contains(&k) {
                    let (gk, sk) = (grad_ident(k), shape_ident(k));
                    out.extend(
                        quote!(let #gk = ::blaze::Tensor::full_dtype(cache.#sk, 0.0, grad.dtype(), &grad.device());),
                    );
                }
            }
        }
        out
    }
}
