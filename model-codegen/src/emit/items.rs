//! The items around a model's passes: the cache struct's fields, the
//! gradients' literal, parameter counts, initialisers, the signature and
//! the summary's rows.

use super::*;

impl Gen<'_> {
    /// The cache struct's fields: what `backward` reads.
    pub fn cache_fields(&self, backward: &diff::Backward) -> TokenStream {
        let (vals, shapes) = backward.kept(self.low, self.plan);
        let mut out = TokenStream::new();
        for k in vals {
            let (id, r) = (value_ident(k), self.rank(k));
            out.extend(quote!(#id: ::blaze::Tensor<B, #r>,));
        }
        for k in shapes {
            let (id, r) = (shape_ident(k), self.rank(k));
            out.extend(quote!(#id: [usize; #r],));
        }
        for (i, n) in self.low.nodes.iter().enumerate() {
            let ci = layer_cache_ident(i);
            if self.plan.recomputed_input(i).is_some() {
                continue;
            }
            let ty = match &n.op {
                // A layer's cache, and a norm's that ends a group; other
                // groups' adjoints read their arguments (`stored`).
                Op::Layer(_) | Op::Fused(_) => match self.layer_call(i) {
                    Some((callee, x)) => {
                        let path = self.layer_path(field_ty(&self.fields()[callee.field].kind), x, n.out);
                        quote!(#path::Cache)
                    }
                    None => continue,
                },
                Op::Seed(_) => {
                    let d = seed_ident(i);
                    out.extend(quote!(#d: ::core::option::Option<u64>,));
                    continue;
                }
                Op::Nested(callee) => match self.nested_path(*callee, n.args.len()) {
                    Some(path) => quote!(#path::Cache),
                    None => {
                        let ty = field_ty(&self.fields()[callee.field].kind);
                        quote!(<#ty as ::blaze::nn::Graph<B>>::Cache)
                    }
                },
                Op::Attend(callee) => {
                    let ty = field_ty(&self.fields()[callee.field].kind);
                    quote!(<#ty as ::blaze::nn::Attend<B>>::AttendCache)
                }
                // The other ops' adjoints read what `stored` keeps.
                Op::Input
                | Op::SoftmaxWith(_)
                | Op::Positions(_)
                | Op::Matmul
                | elementwise_ops!()
                | movement_ops!()
                | row_ops!() => continue,
            };
            out.extend(quote!(#ci: #ty,));
        }
        let ns = self.low.symbols.len();
        out.extend(quote!(syms: [usize; #ns], __backend: ::core::marker::PhantomData<B>,));
        out
    }

    /// The gradients struct literal from the `gr_*` variables.
    pub fn grads_literal(&self) -> TokenStream {
        let grads_struct = format_ident!("{}Grads", self.model.ident);
        let fields = self.fields().iter().enumerate().map(|(fi, f)| {
            let name = &f.ident;
            let value = match (f.kind.has_params(), f.array) {
                (false, None) => quote!(()),
                (false, Some(n)) => quote!(::std::vec![(); #n]),
                (true, None) => {
                    let id = grads_ident(Callee { field: fi, index: None }, self.fields());
                    quote!(#id)
                }
                (true, Some(n)) => {
                    let ids = (0..n).map(|i| grads_ident(Callee { field: fi, index: Some(i) }, self.fields()));
                    quote!(::std::vec![#(#ids),*])
                }
            };
            quote!(#name: #value)
        });
        quote!(#grads_struct { #(#fields),* })
    }

    /// Trainable scalars, as a const expression.
    pub fn num_params(&self) -> TokenStream {
        let terms = self.fields().iter().zip(self.options).map(|(f, o)| {
            let n = f.array.unwrap_or(1);
            match count_params(&f.kind, o) {
                Some(p) => {
                    let p = p * n;
                    quote!(#p)
                }
                None => {
                    let (ty, via) = (f.kind.opaque_ty(&quote!(::blaze::Cpu)), self.opaque_trait());
                    quote!(<#ty as #via<::blaze::Cpu>>::NUM_PARAMS * #n)
                }
            }
        });
        quote!(0 #(+ #terms)*)
    }

    /// The trait through which a model reaches a field the macro cannot
    /// see for its initialisation and parameter count: `Graph`, which
    /// every `#[model]` implements, in a forward body; `Block` in a
    /// sequential model, which a hand-written layer may implement too.
    fn opaque_trait(&self) -> TokenStream {
        if self.model.graph { quote!(::blaze::nn::Graph) } else { quote!(::blaze::nn::Block) }
    }

    /// Field initialisers; fields the macro cannot see through
    /// `Gen::opaque_trait`.
    pub fn inits(&self) -> Vec<TokenStream> {
        let via = self.opaque_trait();
        self.fields()
            .iter()
            .zip(self.options)
            .map(|(f, o)| match &f.kind {
                LayerKind::Opaque { .. } => {
                    let ty = field_ty(&f.kind);
                    let one = quote!(<#ty as #via<B>>::init(rng, device));
                    if f.array.is_some() { quote!(::core::array::from_fn(|_| #one)) } else { one }
                }
                LayerKind::Builtin { .. } => field_init(f, o),
            })
            .collect()
    }

    /// The summary's rows: each field's name, type and first output shape.
    pub fn summary_rows(&self) -> Vec<TokenStream> {
        self.fields()
            .iter()
            .enumerate()
            .map(|(fi, f)| {
                let name = f.ident.to_string();
                let kind = match f.array {
                    Some(n) => format!("[{}; {n}]", f.kind.display()),
                    None => f.kind.display(),
                };
                let output = match self.low.first_output[fi] {
                    Some(v) => self.low.vals[v].shape_text(&self.low.symbols),
                    None => quote!("-"),
                };
                quote!((#name, #kind, #output))
            })
            .collect()
    }
}
