//! The items every model has, whatever makes its passes: the struct
//! (generic over the backend), its gradients struct and `Module` impl, and
//! its fields' types and initialisers. The passes are `generate.rs`'s.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::Options;
use super::ir::{Field, LayerKind, Model};
use super::load::field_sources;

/// The field's type with the backend `B` filled in: a built-in layer's
/// type takes the backend when it holds tensors, then its sizes.
pub fn field_ty(kind: &LayerKind) -> TokenStream {
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
pub fn full_ty(f: &Field) -> TokenStream {
    let ty = field_ty(&f.kind);
    match f.array {
        Some(n) => quote!([#ty; #n]),
        None => ty,
    }
}

/// The expression that initialises a field (each entry of an array in turn).
pub fn field_init(f: &Field, o: &Options) -> TokenStream {
    let one = init_expr(&f.kind, o);
    match f.array {
        Some(_) => quote!(::core::array::from_fn(|_| #one)),
        None => one,
    }
}

/// A marker field (declaration, initialiser) for a model none of whose
/// layers names the backend, which would leave `B` unused.
pub fn backend_marker(model: &Model) -> (TokenStream, TokenStream) {
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

/// The struct (generic over the backend), its gradients struct and its
/// `Module` impl: what every model has, sequential or with a forward body.
pub fn struct_and_module(model: &Model) -> TokenStream {
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
    quote! {
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
