//! Code generation: the struct (generic over the backend), its cache and
//! gradient structs, `Module` and `Block` impls, the inherent API, and const
//! assertions for blocks whose shapes the macro cannot see.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::check::{Options, Plan, Shape, Step};
use super::ir::{Field, LayerKind, Model};
use super::load::field_sources;
use super::precision;
use crate::graph::fuse::ChainOp;

use super::chains::{Run, fused_activation, fusion, runs};

/// The field's type with the backend `B` filled in: a built-in layer's
/// type takes the backend when it holds tensors, then its sizes.
pub(crate) fn field_ty(kind: &LayerKind) -> TokenStream {
    match kind {
        LayerKind::Builtin { layer, sizes, kernel } => {
            let name = format_ident!("{}", layer.name());
            let backend = layer.holds_tensors().then(|| quote!(B));
            let kernel = kernel.as_ref().map(|(k, _)| k);
            let args = backend.iter().chain(kernel).cloned().chain(sizes.iter().map(|s| quote!(#s)));
            if layer.generics().is_empty() && kernel.is_none() && backend.is_none() {
                quote!(::blaze::nn::#name)
            } else {
                quote!(::blaze::nn::#name<#(#args),*>)
            }
        }
        LayerKind::Opaque { .. } => kind.opaque_ty(&quote!(B)),
    }
}

/// The field's full type: its layer type, or an array of them.
pub(crate) fn full_ty(f: &Field) -> TokenStream {
    let ty = field_ty(&f.kind);
    match f.array {
        Some(n) => quote!([#ty; #n]),
        None => ty,
    }
}

/// The expression that initialises a field (each entry of an array in turn).
pub(crate) fn field_init(f: &Field, o: &Options) -> TokenStream {
    let one = init_expr(&f.kind, o);
    match f.array {
        Some(_) => quote!(::core::array::from_fn(|_| #one)),
        None => one,
    }
}

/// A marker field (declaration, initialiser) for a model none of whose
/// layers names the backend, which would leave `B` unused.
pub(crate) fn backend_marker(model: &Model) -> (TokenStream, TokenStream) {
    if model.fields.iter().any(|f| f.kind.has_params()) {
        return (TokenStream::new(), TokenStream::new());
    }
    (quote!(__backend: ::core::marker::PhantomData<B>,), quote!(__backend: ::core::marker::PhantomData,))
}

/// The expression that initialises a field from `rng` and `device`: a
/// built-in layer from its spec options, another type as a `Block`.
fn init_expr(kind: &LayerKind, o: &Options) -> TokenStream {
    let ty = field_ty(kind);
    match kind {
        LayerKind::Builtin { .. } => {
            let options = o.spec_tokens();
            quote!(<#ty as ::blaze::nn::FromSpec<B>>::from_spec(&#options, rng, device))
        }
        LayerKind::Opaque { .. } => quote!(<#ty as ::blaze::nn::Block<B>>::init(rng, device)),
    }
}

/// The trait path through which a field's passes and cache are named.
fn pass_trait(kind: &LayerKind, step: &Step) -> TokenStream {
    let ty = field_ty(kind);
    match kind {
        LayerKind::Opaque { .. } => quote!(<#ty as ::blaze::nn::Differentiable<B>>),
        LayerKind::Builtin { .. } => {
            let (ri, ro) = (step.input.rank_tokens(), step.output.rank_tokens());
            quote!(<#ty as ::blaze::nn::Layer<B, #ri, #ro>>)
        }
    }
}

/// The statements of `forward` and `forward_train` that run the layers in
/// order, leaving the output in `x` (and each layer's cache in a variable
/// named after its field). A `Linear` or `Conv2d` followed by ReLU, sigmoid
/// or tanh runs as one fused step; a run of elementwise fields as one
/// kernel, whose training forward keeps its input and each dropout's seed.
fn forward_bodies(
    fields: &[&Field],
    passes: &[TokenStream],
    recomputed: &[bool],
    runs: &[Run],
    plan: &Plan,
) -> (TokenStream, TokenStream) {
    let (mut infer, mut train) = (TokenStream::new(), TokenStream::new());
    let mut i = 0;
    while i < fields.len() {
        let (name, pass) = (&fields[i].ident, &passes[i]);
        // The input arrives by reference; later steps borrow the local `x`.
        let arg = if i == 0 { quote!(x) } else { quote!(&x) };
        // A field whose input the backward recomputes keeps no cache.
        let keep = if recomputed[i] { quote!(_) } else { quote!(#name) };
        let unit = recomputed[i].then(|| quote!(let #name = ();));
        if let Some(run) = runs.iter().find(|r| r.start == i) {
            let r = plan.steps[i].input.rank_tokens();
            infer.extend({
                let call = run.call(fields, &r, quote!(Kernel), arg.clone(), None, None);
                quote!(let x = #call;)
            });
            train.extend(quote!(let #name = ::core::clone::Clone::clone(#arg);));
            for (op, f) in run.ops.iter().zip(&fields[i..run.end]).skip(1) {
                let field = &f.ident;
                train.extend(match op {
                    ChainOp::Dropout => quote! {
                        let #field: ::core::option::Option<u64> =
                            (ctx.train && self.#field.p > 0.0).then(|| ctx.rng.next_u64());
                    },
                    ChainOp::Unary(_) => quote!(let #field = ();),
                });
            }
            let call = run.call(fields, &r, quote!(Kernel), quote!(&#name), Some(&|d: &Ident| quote!(#d)), None);
            train.extend(quote!(let x = #call;));
            i = run.end;
        } else if let Some(act) = fused_activation(fields, i) {
            let next = &fields[i + 1].ident;
            infer.extend(quote!(let x = self.#name.forward_act(#arg, #act);));
            train.extend(quote! {
                let (x, #keep) = self.#name.forward_train_act(#arg, #act);
                #unit
                let #next = ::core::clone::Clone::clone(&x);
            });
            i += 2;
        } else {
            infer.extend(quote!(let x = #pass::forward(&self.#name, #arg);));
            train.extend(quote!(let (x, #keep) = #pass::forward_train(&mut self.#name, #arg, ctx); #unit));
            i += 1;
        }
    }
    (infer, train)
}

/// The int8 form's forward (`quant.rs`): the inference statements with
/// each field called through `Infer` as its quantized type, after the
/// input check.
fn int8_forward(
    model: &Model,
    fields: &[&Field],
    runs: &[Run],
    plan: &Plan,
    input_dims: &[usize],
    mismatch: &str,
) -> TokenStream {
    let mut bounds = Vec::new();
    let passes: Vec<TokenStream> = fields
        .iter()
        .zip(&plan.steps)
        .map(|(f, step)| {
            let ty = field_ty(&f.kind);
            let (ri, ro) = (step.input.rank_tokens(), step.output.rank_tokens());
            let q = quote!(<#ty as ::blaze::quant::Quantize<B>>::Quantized);
            if let LayerKind::Opaque { .. } = f.kind {
                bounds.push(quote!(#q: ::blaze::quant::InferBlock<B, #ri, #ro>));
                return quote!(<#q as ::blaze::quant::InferBlock<B, #ri, #ro>>);
            }
            quote!(<#q as ::blaze::quant::Infer<B, #ri, #ro>>)
        })
        .collect();
    let (body, _) = forward_bodies(fields, &passes, &vec![false; fields.len()], runs, plan);
    let mismatch = mismatch.replacen("::forward", "Int8::forward", 1);
    let body = quote! {
        let shape = x.shape();
        ::core::assert!(shape[1..] == [#(#input_dims),*], #mismatch, shape);
        #body
        x
    };
    let x = quote::format_ident!("x");
    let in_rank = input_dims.len() + 1;
    let out_rank = plan.output().map_or_else(|| quote!(2), |o| o.rank_tokens());
    super::quant::forward_impl(model, &[(x, quote!(#in_rank))], out_rank, body, &bounds)
}

/// Each field's statements in the backward, which runs them last field
/// first, taking `g` from the field's output gradient to its input's and
/// binding its gradients to a variable named after it: its own backward,
/// or for a run of elementwise fields the kernel's adjoint (at the run's
/// last field) and no gradients.
fn backward_steps(
    fields: &[&Field],
    passes: &[TokenStream],
    caches: &[TokenStream],
    runs: &[Run],
    plan: &Plan,
) -> Vec<TokenStream> {
    (0..fields.len())
        .map(|i| {
            let name = &fields[i].ident;
            let Some(run) = runs.iter().find(|r| (r.start..r.end).contains(&i)) else {
                let (pass, cache) = (&passes[i], &caches[i]);
                return quote!(let (g, #name) = #pass::backward(&self.#name, #cache, &g););
            };
            if i + 1 != run.end {
                return TokenStream::new();
            }
            let (first, r) = (&fields[run.start].ident, plan.steps[run.start].input.rank_tokens());
            let seed = |d: &Ident| quote!(cache.#d);
            let call =
                run.call(fields, &r, quote!(Adjoint0::Kernel), quote!(&cache.#first), Some(&seed), Some(quote!(g)));
            let names = fields[run.start..run.end].iter().map(|f| &f.ident);
            quote!(let g = #call; #(let #names = ();)*)
        })
        .collect()
}

/// The statements of `backward_params` that bind each field's gradients:
/// full backward steps down to the first layer with parameters, its
/// `backward_params`, and nothing for the stateless layers before it.
/// `hand_over(i)` follows the step of each field `i` with parameters
/// (`backward_params_each` hands its gradients over there).
fn backward_params_body(
    names: &[&Ident],
    passes: &[TokenStream],
    caches: &[TokenStream],
    steps: &[TokenStream],
    plan: &Plan,
    hand_over: impl Fn(usize) -> TokenStream,
) -> TokenStream {
    let Some(first) = plan.steps.iter().position(|s| s.params != Some(0)) else {
        return quote! {
            let _ = (cache, grad);
            #(let #names = ();)*
        };
    };
    let (before, at) = (&names[..first], names[first]);
    let (at_pass, at_cache) = (&passes[first], &caches[first]);
    let after = (first + 1..steps.len()).rev().map(|i| {
        let (step, hand) = (&steps[i], (plan.steps[i].params != Some(0)).then(|| hand_over(i)));
        quote!(#step #hand)
    });
    let hand_first = hand_over(first);
    quote! {
        let g = ::core::clone::Clone::clone(grad);
        #(#after)*
        let #at = #at_pass::backward_params(&self.#at, #at_cache, &g);
        #hand_first
        #(let #before = ();)*
    }
}

/// Which fields' input the backward recomputes rather than `forward_train`
/// keeping it, as in forward bodies: a `Linear` right after a GELU,
/// LayerNorm or RMSNorm field, which rebuilds its output from its own
/// cache (`nn::Recompute`). Such a field's cache is `()`.
fn recomputed(fields: &[&Field], runs: &[Run]) -> Vec<bool> {
    let layer = |i: usize| fields[i].kind.builtin().map(|(l, _)| l);
    (0..fields.len())
        .map(|i| {
            i > 0
                && layer(i).is_some_and(|l| l.caches_input())
                && layer(i - 1).is_some_and(|l| l.recomputes_output())
                && !(i >= 2 && fused_activation(fields, i - 2).is_some())
                && !runs.iter().any(|r| (r.start..r.end).contains(&(i - 1)))
        })
        .collect()
}

/// What each field's backward reads as its cache: `&cache.field`, or for a
/// recomputed field its cache rebuilt from the field before.
fn cache_refs(fields: &[&Field], plan: &Plan, recomputed: &[bool]) -> Vec<TokenStream> {
    (0..fields.len())
        .map(|i| {
            let name = &fields[i].ident;
            if !recomputed[i] {
                return quote!(&cache.#name);
            }
            let (ty, prev_ty, prev) = (field_ty(&fields[i].kind), field_ty(&fields[i - 1].kind), &fields[i - 1].ident);
            let r = plan.steps[i].input.rank_tokens();
            quote!(&<#ty as ::blaze::nn::CachesInput<B, #r>>::cache_input(
                &self.#name,
                &<#prev_ty as ::blaze::nn::Recompute<B, #r>>::recompute(&self.#prev, &cache.#prev),
            ))
        })
        .collect()
}

/// A `&str` expression of a per-sample shape, for the summary.
fn shape_string(s: &Shape) -> TokenStream {
    match s {
        Shape::Known(d) => {
            let text = format!("{d:?}");
            quote!(#text)
        }
        Shape::Opaque(e) => quote!(&*::std::format!("{:?}", #e)),
    }
}

/// The struct (generic over the backend), its gradients struct and its
/// `Module` impl: what every model has, sequential or with a forward body.
pub(crate) fn struct_and_module(model: &Model) -> TokenStream {
    let Model { vis, ident, .. } = model;
    let grads_ident = format_ident!("{}Grads", ident);
    let names: Vec<_> = model.fields.iter().map(|f| &f.ident).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let tys: Vec<TokenStream> = model.fields.iter().map(full_ty).collect();
    let struct_fields = model.fields.iter().zip(&tys).map(|(f, ty)| {
        let (attrs, fv, fi) = (&f.attrs, &f.vis, &f.ident);
        quote!(#(#attrs)* #fv #fi: #ty)
    });
    let user_attrs = &model.attrs;
    let (marker, _) = backend_marker(model);
    // Only a model that failed to parse has no fields; its gradients still
    // name the backend.
    let (grads_marker, grads_marker_init) = match model.fields.is_empty() {
        true => (quote!(__backend: ::core::marker::PhantomData<B>,), quote!(__backend: ::core::marker::PhantomData,)),
        false => (TokenStream::new(), TokenStream::new()),
    };
    let grads_doc = format!("The gradients of every parameter of a [`{ident}`], field by field.");
    let sources: Vec<TokenStream> = model.fields.iter().map(field_sources).collect();
    let int8 = super::quant::struct_items(model);
    quote! {
        #int8

        #(#user_attrs)*
        #[derive(Clone, Debug)]
        #vis struct #ident<B: ::blaze::Backend = ::blaze::Cpu> {
            #(#struct_fields,)*
            #marker
        }

        #[doc = #grads_doc]
        #[allow(missing_docs)]
        #[derive(Clone, Debug)]
        #vis struct #grads_ident<B: ::blaze::Backend> {
            #(pub #names: <#tys as ::blaze::nn::Module<B>>::Grads,)*
            #grads_marker
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Module<B> for #ident<B> {
            type Grads = #grads_ident<B>;

            fn visit_params<V: ::blaze::nn::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                #(::blaze::nn::Module::<B>::visit_params(&self.#names, &::blaze::nn::join(prefix, #name_strs), v);)*
            }

            fn visit_buffers<V: ::blaze::nn::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
                #(::blaze::nn::Module::<B>::visit_buffers(&self.#names, &::blaze::nn::join(prefix, #name_strs), v);)*
            }

            fn map_tensors<M: ::blaze::nn::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
                #(::blaze::nn::Module::<B>::map_tensors(&mut self.#names, &::blaze::nn::join(prefix, #name_strs), m);)*
            }

            fn visit_grads<V: ::blaze::nn::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
                #(::blaze::nn::Module::<B>::visit_grads(&mut self.#names, &g.#names, &::blaze::nn::join(prefix, #name_strs), v);)*
            }

            fn visit_grad_tensors<V: ::blaze::nn::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
                #(<#tys as ::blaze::nn::Module<B>>::visit_grad_tensors(&g.#names, &::blaze::nn::join(prefix, #name_strs), v);)*
            }

            fn make_grads<F: ::blaze::nn::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
                #grads_ident { #(#names: ::blaze::nn::Module::<B>::make_grads(&self.#names, &::blaze::nn::join(prefix, #name_strs), f),)* #grads_marker_init }
            }

            fn map_grad_tensors<M: ::blaze::nn::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
                #(<#tys as ::blaze::nn::Module<B>>::map_grad_tensors(&mut g.#names, &::blaze::nn::join(prefix, #name_strs), m);)*
            }

            fn sources(&self, prefix: &str, source: &str, out: &mut ::std::vec::Vec<::blaze::nn::Source>) {
                #(#sources)*
            }
        }
    }
}

pub fn generate(model: &Model, plan: &Plan) -> TokenStream {
    let Model { vis, ident, .. } = model;
    let cache_ident = format_ident!("{}Cache", ident);
    let grads_ident = format_ident!("{}Grads", ident);
    let fields: Vec<&Field> = model.fields.iter().collect();
    let names: Vec<_> = fields.iter().map(|f| &f.ident).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let passes: Vec<TokenStream> = fields.iter().zip(&plan.steps).map(|(f, s)| pass_trait(&f.kind, s)).collect();
    let inits: Vec<TokenStream> = fields.iter().zip(&plan.steps).map(|(f, s)| init_expr(&f.kind, &s.options)).collect();
    let kinds: Vec<String> = fields.iter().map(|f| f.kind.display()).collect();
    let outputs: Vec<TokenStream> = plan.steps.iter().map(|s| shape_string(&s.output)).collect();

    let input_dims: Vec<usize> = model.input.iter().map(|d| d.0).collect();
    let in_rank = input_dims.len() + 1;
    let input_text = format!("{input_dims:?}");
    let num_params = fields.iter().zip(&plan.steps).map(|(f, s)| match s.params {
        Some(n) => quote!(#n),
        None => {
            let ty = f.kind.opaque_ty(&quote!(::blaze::Cpu));
            quote!(<#ty as ::blaze::nn::Block<::blaze::Cpu>>::NUM_PARAMS)
        }
    });

    // Const assertions for blocks the macro cannot see, and forced
    // evaluation of the const rules after them.
    let mut asserts = Vec::new();
    for (i, (f, s)) in fields.iter().zip(&plan.steps).enumerate() {
        let span = f.ty.span();
        if let LayerKind::Opaque { .. } = f.kind {
            let ty = f.kind.opaque_ty(&quote!(::blaze::Cpu));
            let prev = s.input.static_tokens();
            let from = if i == 0 { "the model input".to_owned() } else { format!("`{}`", fields[i - 1].ident) };
            let produced = match &s.input {
                Shape::Known(d) => format!(" {d:?}"),
                Shape::Opaque(_) => String::new(),
            };
            let msg = format!(
                "`{}: {}` expects another per-sample input shape than {from} produces{produced} \
                 (see its INPUT_SHAPE)",
                f.ident,
                f.kind.display()
            );
            asserts.push(quote_spanned! {span=>
                const _: () = ::blaze::nn::shape_rules::expect(
                    <#ty as ::blaze::nn::Block<::blaze::Cpu>>::INPUT, #prev, #msg);
            });
        }
        if let LayerKind::Builtin { kernel: Some((kernel, name)), .. } = &f.kind {
            let msg = format!("`{}: Map<{name}>`: Map applies a kernel of one argument", f.ident);
            asserts.push(quote_spanned! {span=>
                const _: () = ::core::assert!(
                    <#kernel as ::blaze::runtime::kernel::Elementwise>::ARGS.len() == 1, #msg);
            });
        }
        if let (Shape::Opaque(name), Some(def)) = (&s.output, &s.output_def) {
            asserts.push(quote_spanned! {span=>
                #[doc(hidden)]
                #[allow(non_upper_case_globals)]
                const #name: ::blaze::nn::StaticShape = #def;
            });
        }
    }

    // The panic message of a wrong input shape, as a format string with the
    // shape left to fill in.
    let input_mismatch = format!(
        "{ident}::forward: expects input [batch, {}], got {{:?}}",
        input_text.trim_matches(|c| c == '[' || c == ']')
    );
    // `check` rejects models without layers; this keeps the generator total.
    let (false, Some(output)) = (fields.is_empty(), plan.output()) else {
        return quote!(::core::compile_error!("a model needs at least one layer"););
    };
    let out_rank = output.rank_tokens();
    let out_static = output.static_tokens();
    let runs = runs(model, &fields);
    let recomputed = if model.fuse { recomputed(&fields, &runs) } else { vec![false; fields.len()] };
    let caches = cache_refs(&fields, plan, &recomputed);
    // A run keeps its input (in its first field's slot) and each dropout's seed.
    let cache_tys: Vec<TokenStream> = (0..fields.len())
        .map(|i| match runs.iter().find(|r| (r.start..r.end).contains(&i)) {
            Some(run) if i == run.start => {
                let r = plan.steps[i].input.rank_tokens();
                quote!(::blaze::Tensor<B, #r>)
            }
            Some(run) if matches!(run.ops[i - run.start], ChainOp::Dropout) => quote!(::core::option::Option<u64>),
            Some(_) => quote!(()),
            None if recomputed[i] => quote!(()),
            None => {
                let p = &passes[i];
                quote!(#p::Cache)
            }
        })
        .collect();
    let steps = backward_steps(&fields, &passes, &caches, &runs, plan);
    let rev_steps = steps.iter().rev();
    let backward_params = backward_params_body(&names, &passes, &caches, &steps, plan, |_| TokenStream::new());
    let backward_params_each = backward_params_body(&names, &passes, &caches, &steps, plan, |i| {
        let (name, ty, name_str) = (names[i], full_ty(fields[i]), names[i].to_string());
        quote!(<#ty as ::blaze::nn::Module<B>>::visit_grad_tensors(&#name, &::blaze::nn::join("", #name_str), ready);)
    });
    let (_, marker_init) = backend_marker(model);
    let (forward_body, forward_train_body) = forward_bodies(&fields, &passes, &recomputed, &runs, plan);
    let int8_forward = int8_forward(model, &fields, &runs, plan, &input_dims, &input_mismatch);
    let (fused_items, fusion_plan) = fusion(model, &fields, plan, &runs, &recomputed);
    let cache_doc = format!("What [`{ident}::forward_train`] keeps for [`{ident}::backward`].");
    // Each pass under the model's precision, when it sets one.
    let scoped = |body: TokenStream| precision::scoped(model.precision, body);
    let forward_body = scoped(quote!(#forward_body x));
    let forward_train_body = scoped(quote!(#forward_train_body (x, #cache_ident { #(#names,)* })));
    let backward_body = scoped(quote! {
        let g = ::core::clone::Clone::clone(grad);
        #(#rev_steps)*
        (g, #grads_ident { #(#names,)* })
    });
    let backward_params = scoped(quote!(#backward_params #grads_ident { #(#names,)* }));
    let backward_params_each = scoped(quote!(#backward_params_each #grads_ident { #(#names,)* }));

    let structs = struct_and_module(model);
    let export = super::export::items(model, plan);
    quote! {
        #structs

        #export

        #int8_forward

        #[doc = #cache_doc]
        #[allow(missing_docs)]
        #vis struct #cache_ident<B: ::blaze::Backend> {
            #(pub #names: #cache_tys,)*
        }

        #(#asserts)*

        #fused_items

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Differentiable<B> for #ident<B> {
            type Input = ::blaze::Tensor<B, #in_rank>;
            type Output = ::blaze::Tensor<B, #out_rank>;
            type Cache = #cache_ident<B>;

            fn forward(&self, x: &Self::Input) -> Self::Output {
                Self::check_input(x);
                #forward_body
            }

            fn forward_train(&mut self, x: &Self::Input, ctx: &mut ::blaze::nn::Ctx) -> (Self::Output, Self::Cache) {
                Self::check_input(x);
                #forward_train_body
            }

            fn backward(&self, cache: &Self::Cache, grad: &Self::Output) -> (Self::Input, Self::Grads) {
                #backward_body
            }

            fn backward_params(&self, cache: &Self::Cache, grad: &Self::Output) -> Self::Grads {
                #backward_params
            }

            fn backward_params_each<V: ::blaze::nn::ParamVisitor<B>>(
                &self,
                cache: &Self::Cache,
                grad: &Self::Output,
                ready: &mut V,
            ) -> Self::Grads {
                #backward_params_each
            }

            fn summary(&self) -> ::std::string::String {
                #ident::summary(self)
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Block<B> for #ident<B> {
            const INPUT: ::blaze::nn::StaticShape = ::blaze::nn::StaticShape::new(&[#(#input_dims),*]);
            const OUTPUT: ::blaze::nn::StaticShape = #out_static;
            const NUM_PARAMS: usize = 0 #(+ #num_params)*;

            fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                #ident { #(#names: #inits,)* #marker_init }
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Graph<B> for #ident<B> {
            const SIGNATURE: ::blaze::nn::Signature = ::blaze::nn::Signature {
                inputs: &[<Self as ::blaze::nn::Block<B>>::INPUT],
                output: <Self as ::blaze::nn::Block<B>>::OUTPUT,
            };
            const NUM_PARAMS: usize = <Self as ::blaze::nn::Block<B>>::NUM_PARAMS;
            type Cache = #cache_ident<B>;

            fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                <Self as ::blaze::nn::Block<B>>::init(rng, device)
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> #ident<B> {
            /// Per-sample input shape (the batch dim excluded).
            pub const INPUT_SHAPE: &'static [usize] = &[#(#input_dims),*];
            /// Per-sample output shape.
            pub const OUTPUT_SHAPE: &'static [usize] = <Self as ::blaze::nn::Block<B>>::OUTPUT.as_slice();
            /// Number of trainable scalars.
            pub const NUM_PARAMS: usize = <Self as ::blaze::nn::Block<B>>::NUM_PARAMS;

            /// Which fields run fused: activations in their layer's bias
            /// pass, runs of elementwise fields as one kernel each, and the
            /// layer inputs the backward recomputes.
            pub const FUSION: ::blaze::nn::FusionPlan = #fusion_plan;

            /// A model initialised as PyTorch initialises these layers, from
            /// the global generator (`blaze::manual_seed`).
            pub fn new<Dev: ::blaze::nn::BackendDevice<B>>(device: &Dev) -> Self {
                let mut rng = ::blaze::rng::with_global_rng(|r| r.fork());
                <Self as ::blaze::nn::Block<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }

            /// A model initialised from `seed` alone: the same seed gives the
            /// same weights on every backend.
            pub fn new_seeded<Dev: ::blaze::nn::BackendDevice<B>>(seed: u64, device: &Dev) -> Self {
                let mut rng = ::blaze::Rng::seed_from_u64(seed);
                <Self as ::blaze::nn::Block<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }

            /// Inference: dropout off, normalisation on running statistics.
            /// Panics if the per-sample input shape is not `INPUT_SHAPE`.
            pub fn forward(&self, x: &::blaze::Tensor<B, #in_rank>) -> ::blaze::Tensor<B, #out_rank> {
                <Self as ::blaze::nn::Differentiable<B>>::forward(self, x)
            }

            /// The training forward: the output, and what `backward` needs.
            pub fn forward_train(
                &mut self,
                x: &::blaze::Tensor<B, #in_rank>,
                ctx: &mut ::blaze::nn::Ctx,
            ) -> (::blaze::Tensor<B, #out_rank>, #cache_ident<B>) {
                <Self as ::blaze::nn::Differentiable<B>>::forward_train(self, x, ctx)
            }

            /// The gradient of the input and of every parameter, given the
            /// gradient of the output: straight-line code, layer by layer.
            pub fn backward(
                &self,
                cache: &#cache_ident<B>,
                grad: &::blaze::Tensor<B, #out_rank>,
            ) -> (::blaze::Tensor<B, #in_rank>, #grads_ident<B>) {
                <Self as ::blaze::nn::Differentiable<B>>::backward(self, cache, grad)
            }

            /// The parameter gradients alone, given the gradient of the
            /// output: what training needs. The work done only for the input
            /// gradient (the first layers' input gradients) is skipped.
            pub fn backward_params(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out_rank>) -> #grads_ident<B> {
                <Self as ::blaze::nn::Differentiable<B>>::backward_params(self, cache, grad)
            }

            /// A Keras-style table of the layers, their output shapes and
            /// parameter counts.
            pub fn summary(&self) -> ::std::string::String {
                ::blaze::nn::model_summary::<B, _>(
                    self,
                    ::core::stringify!(#ident),
                    #input_text,
                    &[#((#name_strs, #kinds, #outputs)),*],
                    &Self::FUSION,
                )
            }

            fn check_input(x: &::blaze::Tensor<B, #in_rank>) {
                let shape = x.shape();
                ::core::assert!(shape[1..] == *Self::INPUT_SHAPE, #input_mismatch, shape);
            }
        }
    }
}
