//! Models with a `forward` body.
//!
//! ```text
//! #[model]                                  // no `input`: a graph model
//! pub struct ResBlock { norm: LayerNorm<64>, fc1: Linear<64, 256>, fc2: Linear<256, 64> }
//!
//! #[model(input = [T, 64])]
//! impl ResBlock {
//!     fn forward(&self, x: Tensor) -> Tensor {
//!         let h = gelu(self.fc1(self.norm(x)));
//!         x + self.fc2(h)
//!     }
//! }
//! ```
//!
//! The two attributes expand separately, so the struct's expansion leaves
//! its fields behind in a `macro_rules!` named after the model; the impl's
//! expansion calls it, which hands both to `__model_graph`. There the body
//! is lowered to SSA ops with symbolic shapes (`lower/`, with the tensor
//! operations it knows listed once in `vocab.rs`) and the forward and
//! reverse passes are emitted as straight-line code (`codegen.rs`).

mod codegen;
pub(crate) mod fuse;
pub(crate) mod lower;
mod vocab;

use proc_macro2::{Delimiter, Punct, Spacing, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::attr::{InputShapes, ModelArgs, Precision};
use crate::model::check::{Options, resolve_options};
use crate::model::codegen::struct_and_module;
use crate::model::fallback;
use crate::model::ir::Model;
use blaze_spec::rules::Extent;
use codegen::Gen;
use lower::{Dim, Lower};

fn callback_ident(model: &syn::Ident) -> syn::Ident {
    format_ident!("__blaze_model_{}", model)
}

/// What `#[model]` on a struct without `input` emits: the struct and its
/// `Module` impl, constructors through `Graph`, and the callback macro that
/// carries the struct to the impl's expansion.
pub fn expand_struct(model: &Model, item: &TokenStream) -> TokenStream {
    let callback = callback_ident(&model.ident);
    let structs = struct_items(model);
    let d = Punct::new('$', Spacing::Alone);
    quote! {
        #structs

        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #callback {
            (#d (#d t:tt)*) => { ::blaze::__model_graph! { { #item } #d (#d t)* } };
        }
    }
}

/// What every model has, whatever makes its passes: the struct, its
/// gradients and `Module` impl, and the constructors through `Graph`.
pub fn struct_items(model: &Model) -> TokenStream {
    let ident = &model.ident;
    let structs = struct_and_module(model);
    quote! {
        #structs

        #[automatically_derived]
        impl<B: ::blaze::Backend> #ident<B> {
            /// A model initialised as PyTorch initialises these layers, from
            /// the global generator (`blaze::manual_seed`).
            pub fn new<Dev: ::blaze::nn::BackendDevice<B>>(device: &Dev) -> Self
            where
                Self: ::blaze::nn::Graph<B>,
            {
                let mut rng = ::blaze::rng::with_global_rng(|r| r.fork());
                <Self as ::blaze::nn::Graph<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }

            /// A model initialised from `seed` alone: the same seed gives the
            /// same weights on every backend.
            pub fn new_seeded<Dev: ::blaze::nn::BackendDevice<B>>(seed: u64, device: &Dev) -> Self
            where
                Self: ::blaze::nn::Graph<B>,
            {
                let mut rng = ::blaze::Rng::seed_from_u64(seed);
                <Self as ::blaze::nn::Graph<B>>::init(&mut rng, ::blaze::nn::BackendDevice::<B>::as_device(device))
            }
        }
    }
}

/// `#[model(input = ..)] impl Name { fn forward .. }`: calls the struct's
/// callback macro with the attribute and the impl.
pub fn expand_impl(attr: TokenStream, item: syn::ItemImpl) -> TokenStream {
    let syn::Type::Path(tp) = &*item.self_ty else {
        return syn::Error::new(item.self_ty.span(), "#[model] on an impl needs the model's name: `impl ResBlock`")
            .to_compile_error();
    };
    let Some(last) = tp.path.segments.last() else { return TokenStream::new() };
    if item.trait_.is_some() {
        return syn::Error::new(item.impl_token.span, "#[model] applies to an inherent impl (`impl ResBlock { .. }`)")
            .to_compile_error();
    }
    let callback = callback_ident(&last.ident);
    let span = last.ident.span();
    quote_spanned!(span=> #callback! { [#attr] #item })
}

/// `__model_graph! { { struct } [attr] impl .. }`.
pub fn expand_graph(input: TokenStream) -> TokenStream {
    match graph(input) {
        Ok(out) => out,
        Err(e) => e.to_compile_error(),
    }
}

fn graph(input: TokenStream) -> syn::Result<TokenStream> {
    let mut it = input.into_iter();
    let (Some(TokenTree::Group(st)), Some(TokenTree::Group(at))) = (it.next(), it.next()) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "malformed __model_graph input"));
    };
    if st.delimiter() != Delimiter::Brace || at.delimiter() != Delimiter::Bracket {
        return Err(syn::Error::new(st.span(), "malformed __model_graph input"));
    }
    let item: syn::ItemImpl = syn::parse2(it.collect())?;
    // Errors in the struct were reported by its own expansion. With a field
    // that did not parse or a bad option the body is not lowered, but the
    // fallback items still follow.
    let Ok((mut model, struct_error)) = crate::model::attr::parse(TokenStream::new(), st.stream()) else {
        return Ok(TokenStream::new());
    };
    let resolved: Option<Vec<Options>> = match struct_error {
        None => model.fields.iter().map(resolve_options).collect::<syn::Result<_>>().ok(),
        Some(_) => None,
    };
    let defaults = vec![Options::default(); model.fields.len()];
    let options = resolved.as_deref().unwrap_or(&defaults);
    let mut low = Lower::new(&model.ident.to_string(), &model.fields, options);
    // Without the input shapes the fallback's types are unknown: the error alone.
    let ImplArgs { inputs, fuse: fusion, precision, errors: args_error } = input_shapes(at.stream(), &mut low, &item)?;
    model.precision = precision;
    // A bad `fuse` or an unknown option is reported next to everything else
    // the model emits.
    let args_error = args_error.map(|e| e.to_compile_error()).unwrap_or_default();
    let fallback = |error: Option<syn::Error>, output_rank: Option<usize>, names: Vec<syn::Ident>| {
        let fixed = match inputs.as_slice() {
            [one] => one.iter().map(Dim::fixed).collect(),
            _ => None,
        };
        let ranks: Vec<usize> = inputs.iter().map(Vec::len).collect();
        // Without the output, the first input's rank is the likeliest.
        let output = fallback::Rank::Known(output_rank.or(ranks.first().copied()).unwrap_or(1));
        let inputs = fallback::Inputs { names, ranks, fixed };
        let mut out = error.map(|e| e.to_compile_error()).unwrap_or_default();
        out.extend(fallback::items(&model, &inputs, &output, false));
        out
    };
    let (f, names) = match forward_inputs(&item, &inputs, &mut low) {
        Ok(found) => found,
        Err(e) => return Ok(fallback(Some(e), None, (0..inputs.len()).map(|i| format_ident!("x{i}")).collect())),
    };
    if resolved.is_none() {
        return Ok(fallback(None, None, names));
    }
    match low.body(&f.block) {
        Ok(lowered) => Ok(generate(&model, options, &lowered, names, fusion)),
        Err(failed) => Ok(fallback(Some(failed.error), failed.output_rank, names)),
    }
    .map(|mut out| {
        out.extend(args_error);
        out
    })
}

/// The impl's `forward` and its input names, bound to the input shapes.
fn forward_inputs<'i>(
    item: &'i syn::ItemImpl,
    inputs: &[Vec<Dim>],
    low: &mut Lower<'_>,
) -> syn::Result<(&'i syn::ImplItemFn, Vec<syn::Ident>)> {
    let f = forward_fn(item)?;
    let params: Vec<&syn::PatType> = f
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    if params.len() != inputs.len() {
        return Err(syn::Error::new(
            f.sig.inputs.span(),
            format!(
                "`forward` takes {} input{} but `input` gives {} shape{}",
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                inputs.len(),
                if inputs.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    let mut names = Vec::new();
    for (p, shape) in params.iter().zip(inputs) {
        let syn::Pat::Ident(id) = &*p.pat else {
            return Err(syn::Error::new(p.pat.span(), "`forward`'s inputs are plain names: `x: Tensor`"));
        };
        low.input(&id.ident.to_string(), shape.clone(), id.span());
        names.push(id.ident.clone());
    }
    Ok((f, names))
}

fn forward_fn(item: &syn::ItemImpl) -> syn::Result<&syn::ImplItemFn> {
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new(item.generics.span(), "#[model] makes the model generic over the backend itself"));
    }
    let mut found = None;
    for it in &item.items {
        match it {
            syn::ImplItem::Fn(f) if f.sig.ident == "forward" && found.is_none() => found = Some(f),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "a #[model] impl holds `fn forward` alone; put other items in a separate impl",
                ));
            }
        }
    }
    let f = found.ok_or_else(|| {
        syn::Error::new(item.self_ty.span(), "a #[model] impl needs `fn forward(&self, x: Tensor) -> Tensor`")
    })?;
    match f.sig.inputs.first() {
        Some(syn::FnArg::Receiver(r)) if matches!(r.kind, syn::ReceiverKind::Reference(_, _, None)) => Ok(f),
        _ => Err(syn::Error::new(f.sig.ident.span(), "`forward` takes `&self` first")),
    }
}

/// `input = [T, 64]` or `input = ([T, 64], [T])`, then optionally
/// `fuse = false` (run every op on its own: for debugging, and to compare
/// fused kernels with the ops they replace) and `precision = bf16`: the
/// input shapes, whether to fuse, the precision, and the other mistakes
/// of the attribute, which leave the model whole. Without the input shapes the fallback's types are unknown, so
/// that is an error alone.
fn input_shapes(attr: TokenStream, low: &mut Lower<'_>, item: &syn::ItemImpl) -> syn::Result<ImplArgs> {
    let missing = || {
        syn::Error::new(
            item.self_ty.span(),
            "#[model] on an impl needs the per-sample input shape: #[model(input = [T, 64])], or for several \
             inputs #[model(input = ([T, 64], [T]))]; symbols such as `T` are sizes known at run time",
        )
    };
    let mut errors = darling::Error::accumulator();
    let args = ModelArgs::<InputShapes>::parse(attr, || missing().into(), &mut errors);
    let errors = errors.finish().err().map(syn::Error::from);
    let Some(InputShapes(shapes)) = args.input else { return Err(errors.unwrap_or_else(missing)) };
    let mut out = Vec::new();
    for dims in &shapes {
        match dims.iter().map(|e| low.input_dim(e).map_err(syn::Error::from)).collect::<syn::Result<Vec<_>>>() {
            Ok(dims) => out.push(dims),
            Err(mut e) => {
                e.extend(errors);
                return Err(e);
            }
        }
    }
    Ok(ImplArgs { inputs: out, fuse: args.fuse, precision: args.precision, errors })
}

/// What `#[model(..)]` on the impl of a forward body says.
struct ImplArgs {
    /// Each input's per-sample shape.
    inputs: Vec<Vec<Dim>>,
    fuse: bool,
    /// `precision = ..`: the scope of the passes' products.
    precision: Option<Precision>,
    /// The attribute's other mistakes, which leave the model whole.
    errors: Option<syn::Error>,
}

/// A model's passes and the items around them, from its lowered ops
/// (a forward body's, or a sequential model's fields in order).
pub fn generate(
    model: &Model,
    options: &[Options],
    low: &lower::Lowered,
    names: Vec<syn::Ident>,
    fusion: bool,
) -> TokenStream {
    let ident = &model.ident;
    let vis = &model.vis;
    let cache_ident = format_ident!("{}Cache", ident);
    let grads_ident = format_ident!("{}Grads", ident);
    let unfused = fuse::Plan::none(low);
    let plan = if fusion {
        // What runs in layers' bias passes is decided first; groups take the rest.
        let seed = fuse::Plan { enabled: true, ..fuse::Plan::none(low) };
        let g = Gen { model, options, low, input_names: names.clone(), plan: &seed };
        let taken: Vec<usize> = g.fused_activations();
        let mut plan = fuse::plan(ident, low, &taken, &g.dropouts(), &g.norms());
        plan.recompute = Gen { model, options, low, input_names: names.clone(), plan: &plan }.recomputable();
        plan
    } else {
        fuse::Plan::none(low)
    };
    let (fused_items, fused_wgsl) = fuse::items(ident, low, &plan);
    let g = Gen { model, options, low, input_names: names.clone(), plan: &plan };
    let fusion_plan = g.fusion_plan(&fused_wgsl, &unfused);
    let cache_fields = g.cache_fields();
    let forward = g.forward();
    let forward_train = g.forward_train(&cache_ident);
    let backward = g.backward(true, false);
    let backward_params = g.backward(false, false);
    let backward_params_each = g.backward(false, true);
    let grads = g.grads_literal();
    let input_grads: Vec<syn::Ident> = low.inputs.iter().map(|&k| format_ident!("g{}", k)).collect();
    let in_grad_val = if names.len() == 1 { quote!(#(#input_grads)*) } else { quote!((#(#input_grads),*)) };
    // Each pass under the model's precision, when it sets one.
    let scoped = |body: TokenStream| crate::model::precision::scoped(model.precision, body);
    let (forward, forward_train) = (scoped(forward), scoped(forward_train));
    let backward = scoped(quote!(#backward (#in_grad_val, #grads)));
    let backward_params = scoped(quote!(#backward_params #grads));
    let backward_params_each = scoped(quote!(#backward_params_each #grads));
    let num_params = g.num_params();
    let inits = g.inits();
    let field_names: Vec<_> = model.fields.iter().map(|f| &f.ident).collect();
    let (_, marker_init) = crate::model::codegen::backend_marker(model);
    let asserts = &low.asserts;
    let in_ranks: Vec<lower::Rank> = low.inputs.iter().map(|&k| low.vals[k].rank()).collect();
    let out_rank = low.vals[low.output].rank();
    let in_sigs: Vec<TokenStream> = low.inputs.iter().map(|&k| low.vals[k].static_shape()).collect();
    let out_sig = low.vals[low.output].static_shape();
    let in_grad_ty = if names.len() == 1 {
        let r = &in_ranks[0];
        quote!(::blaze::Tensor<B, #r>)
    } else {
        quote!((#(::blaze::Tensor<B, #in_ranks>),*))
    };
    let rows = g.summary_rows();
    let input_text =
        low.inputs.iter().map(|&k| lower::show(&low.vals[k].shape, &low.symbols)).collect::<Vec<_>>().join(", ");
    let cache_doc =
        format!("What [`{ident}::forward_train`] keeps for [`{ident}::backward`]: only what its adjoint code reads.");

    // A model of one input is `Differentiable`, which `fit` trains; with
    // fixed dims it is also a `Block`: a field of a sequential model.
    let fixed = |shape: &[Dim]| shape.iter().map(Extent::fixed).collect::<Option<Vec<usize>>>();
    let block = if names.len() == 1 {
        let (ri, x) = (&in_ranks[0], &names[0]);
        let differentiable = quote! {
            #[automatically_derived]
            impl<B: ::blaze::Backend> ::blaze::nn::Differentiable<B> for #ident<B> {
                type Input = ::blaze::Tensor<B, #ri>;
                type Output = ::blaze::Tensor<B, #out_rank>;
                type Cache = #cache_ident<B>;

                fn forward(&self, #x: &Self::Input) -> Self::Output {
                    #ident::forward(self, #x)
                }
                fn forward_train(&mut self, #x: &Self::Input, ctx: &mut ::blaze::nn::Ctx) -> (Self::Output, Self::Cache) {
                    #ident::forward_train(self, #x, ctx)
                }
                fn backward(&self, cache: &Self::Cache, grad: &Self::Output) -> (Self::Input, Self::Grads) {
                    #ident::backward(self, cache, grad)
                }
                fn backward_params(&self, cache: &Self::Cache, grad: &Self::Output) -> Self::Grads {
                    #ident::backward_params(self, cache, grad)
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
        };
        // The output's dims are fixed, or known to the compiler after a
        // field the macro cannot see.
        let output = &low.vals[low.output];
        match (fixed(&low.vals[low.inputs[0]].shape), output.opaque.is_some() || fixed(&output.shape).is_some()) {
            (Some(i), true) => {
                let o = output.static_shape();
                quote! {
                    #differentiable

                    #[automatically_derived]
                    impl<B: ::blaze::Backend> ::blaze::nn::Block<B> for #ident<B> {
                        const INPUT: ::blaze::nn::StaticShape = ::blaze::nn::StaticShape::new(&[#(#i),*]);
                        const OUTPUT: ::blaze::nn::StaticShape = #o;
                        const NUM_PARAMS: usize = #num_params;

                        fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                            <Self as ::blaze::nn::Graph<B>>::init(rng, device)
                        }
                    }

                    #[automatically_derived]
                    impl<B: ::blaze::Backend> #ident<B> {
                        /// Per-sample input shape (the batch dim excluded).
                        pub const INPUT_SHAPE: &'static [usize] = &[#(#i),*];
                        /// Per-sample output shape.
                        pub const OUTPUT_SHAPE: &'static [usize] = <Self as ::blaze::nn::Block<B>>::OUTPUT.as_slice();
                    }
                }
            }
            (None, _) | (Some(_), false) => differentiable,
        }
    } else {
        TokenStream::new()
    };

    let export = g.export();
    let decode = g.decode();
    let int8 = g.forward_int8().map(|(body, bounds)| {
        let inputs: Vec<(syn::Ident, TokenStream)> =
            names.iter().zip(&in_ranks).map(|(n, r)| (n.clone(), quote!(#r))).collect();
        crate::model::quant::forward_impl(model, &inputs, quote!(#out_rank), body, &bounds)
    });
    quote! {
        #(#asserts)*

        #fused_items

        #export

        #decode

        #int8

        #[doc = #cache_doc]
        #vis struct #cache_ident<B: ::blaze::Backend> {
            #cache_fields
        }

        impl<B: ::blaze::Backend> ::core::fmt::Debug for #cache_ident<B> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#cache_ident)).finish_non_exhaustive()
            }
        }

        #[automatically_derived]
        impl<B: ::blaze::Backend> ::blaze::nn::Graph<B> for #ident<B> {
            const SIGNATURE: ::blaze::nn::Signature = ::blaze::nn::Signature {
                inputs: &[#(#in_sigs),*],
                output: #out_sig,
            };
            const NUM_PARAMS: usize = #num_params;
            type Cache = #cache_ident<B>;

            fn init(rng: &mut ::blaze::Rng, device: &B::Device) -> Self {
                #ident { #(#field_names: #inits,)* #marker_init }
            }
        }

        #block

        #[automatically_derived]
        #[allow(unused_variables, clippy::all)]
        impl<B: ::blaze::Backend> #ident<B> {
            /// Number of trainable scalars.
            pub const NUM_PARAMS: usize = #num_params;

            /// Which elementwise ops of `forward` run fused, as one kernel
            /// each, and how many ops each pass runs with and without fusion.
            pub const FUSION: ::blaze::nn::FusionPlan = #fusion_plan;

            /// Inference: dropout off, normalisation on running statistics.
            /// Panics if an input's per-sample shape does not fit `input`.
            pub fn forward(&self, #(#names: &::blaze::Tensor<B, #in_ranks>),*) -> ::blaze::Tensor<B, #out_rank> {
                #forward
            }

            /// The training forward: the output, and what `backward` needs.
            pub fn forward_train(
                &mut self,
                #(#names: &::blaze::Tensor<B, #in_ranks>,)*
                ctx: &mut ::blaze::nn::Ctx,
            ) -> (::blaze::Tensor<B, #out_rank>, #cache_ident<B>) {
                #forward_train
            }

            /// The gradient of each input and of every parameter, given the
            /// gradient of the output: the adjoint of the forward body,
            /// generated as straight-line code.
            pub fn backward(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out_rank>) -> (#in_grad_ty, #grads_ident<B>) {
                #backward
            }

            /// The parameter gradients alone: the adjoint code that only the
            /// inputs' gradients need is left out.
            pub fn backward_params(&self, cache: &#cache_ident<B>, grad: &::blaze::Tensor<B, #out_rank>) -> #grads_ident<B> {
                #backward_params
            }

            /// A Keras-style table of the fields, the output shape of each
            /// one's (first) call and their parameter counts.
            pub fn summary(&self) -> ::std::string::String {
                ::blaze::nn::model_summary::<B, _>(
                    self,
                    ::core::stringify!(#ident),
                    #input_text,
                    &[#(#rows),*],
                    &Self::FUSION,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    /// `__model_graph` on a struct and an impl, as the callback passes them.
    fn expand(st: TokenStream, attr: TokenStream, imp: TokenStream) -> String {
        let input = quote!({ #st } [#attr] #imp);
        let out = std::panic::catch_unwind(|| super::expand_graph(input.clone()).to_string());
        assert!(out.is_ok(), "__model_graph panicked on {input}");
        out.unwrap_or_default()
    }

    #[test]
    fn a_transformer_block_expands_without_errors() {
        let out = expand(
            quote!(
                pub struct A {
                    qkv: Linear<16, 48>,
                    proj: Linear<16, 16>,
                }
            ),
            quote!(input = [T, 16]),
            quote!(impl A { fn forward(&self, x: Tensor) -> Tensor {
                let [q, k, v] = self.qkv(x).split(16, -1);
                let q = q.reshape([T, 4, 4]).transpose(0, 1);
                let k = k.reshape([T, 4, 4]).transpose(0, 1);
                let v = v.reshape([T, 4, 4]).transpose(0, 1);
                let att = q.matmul(k.transpose(-2, -1)).masked_fill(causal_mask(T), -1e9).softmax(-1);
                self.proj(att.matmul(v).transpose(0, 1).reshape([T, 16]))
            } }),
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("ACache") && out.contains("backward_params"));
    }

    /// Every operation of the vocabulary, in every form, lowers and differentiates.
    #[test]
    fn every_vocabulary_example_expands_without_errors() {
        for entry in super::vocab::WORDS.iter() {
            for example in entry.examples {
                let (lets, value) = example.rsplit_once(';').unwrap_or(("", example));
                let body: TokenStream =
                    format!("{lets}{} let y = {value}; self.fc(y)", if lets.is_empty() { "" } else { ";" })
                        .parse()
                        .expect("an example tokenizes");
                // Every field must be called, so the embedding is there only when used.
                let fields = if example.contains("self.pos") {
                    quote!(
                        pub struct V {
                            fc: Linear<4, 4>,
                            pos: Embedding<4, 4>,
                        }
                    )
                } else {
                    quote!(
                        pub struct V {
                            fc: Linear<4, 4>,
                        }
                    )
                };
                let out = expand(
                    fields,
                    quote!(input = [4, 4]),
                    quote!(impl V { fn forward(&self, x: Tensor) -> Tensor { #body } }),
                );
                assert!(!out.contains("compile_error"), "`{}`: {example}\n{out}", entry.name);
                assert!(out.contains("backward_params"), "`{}`: {example}", entry.name);
            }
        }
    }

    #[test]
    fn odd_bodies_report_instead_of_panicking() {
        let st = quote!(
            pub struct N {
                fc: Linear<4, 4>,
                blocks: [Inner; 2],
            }
        );
        let bodies: Vec<(TokenStream, TokenStream)> = vec![
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { 1.0 } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x[0] } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.reshape(4) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.reshape([-1, -1]) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.permute([0, 0]) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.transpose(0, 5) } })),
            (
                quote!(input = [4]),
                quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { let [a, b] = x.split(0, 0); a } }),
            ),
            (
                quote!(input = [4]),
                quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { let [a, b] = x.chunk(3, 0); a } }),
            ),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { cat([], 0) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.masked_fill(x, 0.0) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x.matmul(x) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { self.blocks[7](x) } })),
            (
                quote!(input = [4]),
                quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { for b in &self.fc { x = b(x); } x } }),
            ),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { y = x; y } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { while true {} x } })),
            (quote!(input = [4]), quote!(impl N { fn forward(self, x: Tensor) -> Tensor { x } })),
            (quote!(input = [0]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x } })),
            (quote!(input = 4), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x } })),
            (quote!(shape = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { x } })),
            (quote!(input = [4]), quote!(impl N { fn other(&self) {} })),
            (quote!(input = [T]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { positions(U) } })),
            (quote!(input = [4]), quote!(impl N { fn forward(&self, x: Tensor) -> Tensor { swish() } })),
        ];
        for (attr, imp) in bodies {
            let out = expand(st.clone(), attr.clone(), imp.clone());
            assert!(out.contains("compile_error"), "expected an error for {attr} / {imp}, got {out}");
        }
    }
}
