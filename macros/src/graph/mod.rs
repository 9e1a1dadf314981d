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
//! expansion calls it, which hands both to `__model_graph`. This is the
//! front end of such models: the body is lowered to the op IR
//! (`model::ops`) with symbolic shapes (`lower/`, with the tensor
//! operations it knows listed once in `vocab.rs`); from there the model
//! takes the passes every model takes (`model::generate`).

pub(crate) mod lower;
mod vocab;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{format_ident, quote_spanned};
use syn::spanned::Spanned;

use crate::model::attr::{InputShapes, ModelArgs, Precision};
use crate::model::check::resolve_options;
use crate::model::fallback;
use crate::model::generate::{callback_ident, generate};
use crate::model::ir::Options;
use blaze_spec::rules::Extent;
use lower::{Dim, Lower};

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
