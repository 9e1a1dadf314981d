//! Printing the reverse pass (`diff.rs` makes it): one statement per step,
//! reading what the training forward kept from `cache`.

use super::*;
use crate::diff::{Arg, Backward, Step, Term, Via};

/// The variable holding piece `j` of node `i`'s step.
fn part_ident(i: usize, j: usize) -> syn::Ident {
    format_ident!("d{}_{}", i, j)
}

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

    /// Where the statements of node `i`'s adjoint point: the body's tokens
    /// of the op, resolved at the call site.
    fn span(&self, i: usize) -> proc_macro2::Span {
        proc_macro2::Span::call_site().located_at(self.low.nodes[i].span)
    }

    /// The backward's statements: every parameter's gradient (`gr_*`), and
    /// with `full` each input's gradient (`g{k}`). With `hand_over`, each
    /// field's gradients go to the visitor `ready` as soon as they are made
    /// (`Differentiable::backward_params_each`).
    pub fn backward(&self, pass: &Backward, hand_over: bool) -> TokenStream {
        let low = self.low;
        let mut out = TokenStream::new();
        for k in 0..low.symbols.len() {
            let sid = sym_ident(k);
            out.extend(quote!(let #sid: usize = cache.syms[#k];));
        }
        let go = grad_ident(low.output);
        out.extend(quote!(let #go = ::core::clone::Clone::clone(grad);));
        for step in &pass.steps {
            out.extend(match step {
                Step::Let { node, term } => {
                    let (d, e, span) = (part_ident(*node, 0), self.term(term), self.span(*node));
                    quote_spanned!(span=> let #d = #e;)
                }
                Step::Call { node, callee, via, inputs, params, rebuilt } => {
                    self.call_backward(*node, *callee, *via, *inputs, *params, *rebuilt)
                }
                Step::Binary { node, op } => {
                    let n = &low.nodes[*node];
                    let (va, vb, gy) = (value_ident(n.args[0]), value_ident(n.args[1]), grad_ident(n.out));
                    let (da, db) = (part_ident(*node, 0), part_ident(*node, 1));
                    let (ra, rb, op) = (self.rank(n.args[0]), self.rank(n.args[1]), diff::table_op("BinaryOp", op.variant));
                    quote_spanned! {self.span(*node)=>
                        let [#da, #db] = ::blaze::runtime::adjoint::binary::<B>(
                            #op, cache.#va.storage(), cache.#vb.storage(), #gy.storage());
                        let (#da, #db) = (::blaze::Tensor::<B, #ra>::from_storage(#da), ::blaze::Tensor::<B, #rb>::from_storage(#db));
                    }
                }
                Step::Grad { to, term, first, node } => {
                    let span = self.span(*node);
                    let (gk, e) = (grad_ident(*to), self.owned(term));
                    match first {
                        true => quote_spanned!(span=> let #gk = #e;),
                        false => quote_spanned!(span=> let #gk = #gk.add(&#e);),
                    }
                }
                Step::Ready(callee) if hand_over => self.hand_over(*callee),
                Step::Ready(_) => TokenStream::new(),
                Step::Unreached(callee) => {
                    let (id, at) = (grads_ident(*callee, self.fields()), access(*callee, self.fields()));
                    quote!(let #id = ::blaze::nn::graph::zero_grads::<B, _>(&#at);)
                }
                Step::UnreachedInput(k) => {
                    let (gk, sk) = (grad_ident(*k), shape_ident(*k));
                    quote!(let #gk = ::blaze::Tensor::full_dtype(cache.#sk, 0.0, grad.dtype(), &grad.device());)
                }
            });
        }
        out
    }

    /// A field's backward at node `i` (`Step::Call`).
    fn call_backward(
        &self,
        i: usize,
        callee: Callee,
        via: Via,
        inputs: bool,
        params: bool,
        rebuilt: Option<usize>,
    ) -> TokenStream {
        let (n, span) = (&self.low.nodes[i], self.span(i));
        let ty = field_ty(&self.fields()[callee.field].kind);
        let (at, gr, gy, ci) = (
            access(callee, self.fields()),
            grads_ident(callee, self.fields()),
            grad_ident(n.out),
            layer_cache_ident(i),
        );
        let mut out = TokenStream::new();
        // The cache, rebuilt from the recomputed input where the training
        // forward kept none.
        let cache = match rebuilt {
            Some(p) => {
                let (x, r) = (self.recomputed(p), self.rank(n.args[0]));
                out.extend(quote_spanned!(span=>
                    let #ci = <#ty as ::blaze::nn::CachesInput<B, #r>>::cache_input(&#at, &#x);
                ));
                quote!(#ci)
            }
            None => quote!(cache.#ci),
        };
        let gpat = if params { quote!(#gr) } else { quote!(_) };
        let count = match via {
            Via::Attend => 3,
            Via::Layer => 1,
            Via::Nested | Via::Inherent => n.args.len(),
        };
        let dx: Vec<syn::Ident> = (0..count).map(|j| part_ident(i, j)).collect();
        let pat = if count == 1 { quote!(#(#dx)*) } else { quote!((#(#dx),*)) };
        let path = match via {
            // A norm that ends a group is called on the value its kernel computes.
            Via::Layer => self.layer_path(ty, self.layer_call(i).map_or(n.args[0], |(_, x)| x), n.out),
            Via::Nested => quote!(<#ty as ::blaze::nn::Differentiable<B>>),
            Via::Attend => quote!(<#ty as ::blaze::nn::Attend<B>>),
            Via::Inherent => TokenStream::new(),
        };
        out.extend(match (via, inputs) {
            (Via::Attend, _) => quote_spanned!(span=> let (#pat, #gpat) = #path::attend_backward(&#at, &#cache, &#gy);),
            (Via::Inherent, true) => quote_spanned!(span=> let (#pat, #gpat) = #at.backward(&#cache, &#gy);),
            (Via::Inherent, false) => quote_spanned!(span=> let #gr = #at.backward_params(&#cache, &#gy);),
            (Via::Layer | Via::Nested, true) => {
                quote_spanned!(span=> let (#pat, #gpat) = #path::backward(&#at, &#cache, &#gy);)
            }
            (Via::Layer | Via::Nested, false) => {
                quote_spanned!(span=> let #gr = #path::backward_params(&#at, &#cache, &#gy);)
            }
        });
        out
    }

    /// A term as a place or expression of its tensor.
    fn term(&self, term: &Term) -> TokenStream {
        match term {
            Term::Grad(k) => quote::ToTokens::into_token_stream(grad_ident(*k)),
            Term::Kept(k) => {
                let v = value_ident(*k);
                quote!(cache.#v)
            }
            Term::Part(i, j) => quote::ToTokens::into_token_stream(part_ident(*i, *j)),
            Term::Adjoint { f, args, rank_of } => {
                let (f, r) = (format_ident!("{}", f), self.rank(*rank_of));
                let args = args.iter().map(|a| self.arg(a));
                quote!(::blaze::Tensor::<B, #r>::from_storage(::blaze::runtime::adjoint::#f::<B>(#(#args),*)))
            }
            Term::Fused { group, pos, grad } => {
                let adjoint = format_ident!("Adjoint{}", pos);
                let grad = self.term(grad);
                self.fused_call(*group, quote!(#adjoint::Kernel), Pass::Backward, Some(grad))
            }
            Term::Partial { node, pos } => {
                let n = &self.low.nodes[*node];
                let Op::Kernel { path, args } = &n.op else { unreachable!("a partial is a kernel's") };
                let (list, r) = (self.kernel_args(args, &n.args, true), self.rank(n.out));
                quote!(::blaze::runtime::kernel::partial::<#path::Kernel, B, #r>(#pos, &[#(#list),*]))
            }
        }
    }

    /// A term as an owned tensor: a gradient another step reads again is
    /// cloned.
    fn owned(&self, term: &Term) -> TokenStream {
        match term {
            Term::Grad(_) | Term::Kept(_) => {
                let t = self.term(term);
                quote!(::core::clone::Clone::clone(&#t))
            }
            Term::Part(..) | Term::Adjoint { .. } | Term::Fused { .. } | Term::Partial { .. } => self.term(term),
        }
    }

    fn arg(&self, arg: &Arg) -> TokenStream {
        match arg {
            Arg::Storage(t) => {
                let t = self.term(t);
                quote!(#t.storage())
            }
            Arg::Owned(t) => {
                let t = self.term(t);
                quote!(#t.into_storage())
            }
            Arg::Call(f, args) => {
                let (f, args) = (format_ident!("{}", f), args.iter().map(|a| self.arg(a)));
                quote!(::blaze::runtime::adjoint::#f::<B>(#(#args),*))
            }
            Arg::Shape(k) => {
                let s = shape_ident(*k);
                quote!(&cache.#s)
            }
            Arg::ShapeOf(t) => {
                let t = self.term(t);
                quote!(&#t.shape())
            }
            Arg::Dim(k, d) => {
                let s = shape_ident(*k);
                quote!(cache.#s[#d])
            }
            Arg::Offset(ks, d) => {
                let ss = ks.iter().map(|&k| shape_ident(k));
                quote!((0usize #(+ cache.#ss[#d])*))
            }
            Arg::Start { start, of, d } => {
                let s = shape_ident(*of);
                narrow_start(*start, quote!(cache.#s[#d]))
            }
            Arg::Causal { t, like } => {
                let (t, r, g) = (t.tokens(), self.rank(*like), grad_ident(*like));
                quote!(::blaze::nn::graph::causal_mask::<B, #r>(#t, &#g.device()).storage())
            }
            Arg::Code(c) => c.clone(),
        }
    }
}
