//! The generated `Module` impl and gradient struct of `#[derive(Module)]`:
//! every method delegates to the fields' own `Module` impls.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::attr::Derive;

pub fn generate(d: &Derive) -> TokenStream {
    let Derive { ident, vis, generics, backend: b, fields, tuple } = d;
    let grads = format_ident!("{}Grads", ident);
    let (impl_g, ty_g, where_g) = generics.split_for_impl();
    let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
    let names: Vec<_> = fields.iter().map(|f| &f.name).collect();
    let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
    let gfields: Vec<_> = fields
        .iter()
        .map(|f| format_ident!("{}", if *tuple { format!("_{}", f.name) } else { f.name.clone() }))
        .collect();
    let params = &generics.params;
    let where_preds = where_g.map(|w| &w.predicates);
    let doc = format!("The gradients of every parameter of a [`{ident}`], field by field.");
    let m = quote!(::blaze::nn::Module<#b>);
    let join = quote!(::blaze::nn::join);
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug)]
        #[allow(missing_docs)]
        #vis struct #grads<#params> where #b: ::blaze::Backend, #where_preds {
            #(pub #gfields: <#tys as #m>::Grads,)*
        }

        #[automatically_derived]
        impl #impl_g #m for #ident #ty_g where #b: ::blaze::Backend, #(#tys: #m,)* #where_preds {
            type Grads = #grads #ty_g;

            fn visit_params<V: ::blaze::nn::ParamVisitor<#b>>(&self, prefix: &str, v: &mut V) {
                #(<#tys as #m>::visit_params(&self.#members, &#join(prefix, #names), v);)*
            }

            fn visit_buffers<V: ::blaze::nn::ParamVisitor<#b>>(&self, prefix: &str, v: &mut V) {
                #(<#tys as #m>::visit_buffers(&self.#members, &#join(prefix, #names), v);)*
            }

            fn map_tensors<M: ::blaze::nn::ParamMapper<#b>>(&mut self, prefix: &str, m: &mut M) {
                #(<#tys as #m>::map_tensors(&mut self.#members, &#join(prefix, #names), m);)*
            }

            fn visit_grads<V: ::blaze::nn::GradVisitor<#b>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
                #(<#tys as #m>::visit_grads(&mut self.#members, &g.#gfields, &#join(prefix, #names), v);)*
            }

            fn visit_grad_tensors<V: ::blaze::nn::ParamVisitor<#b>>(g: &Self::Grads, prefix: &str, v: &mut V) {
                #(<#tys as #m>::visit_grad_tensors(&g.#gfields, &#join(prefix, #names), v);)*
            }

            fn map_grad_tensors<M: ::blaze::nn::ParamMapper<#b>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
                #(<#tys as #m>::map_grad_tensors(&mut g.#gfields, &#join(prefix, #names), m);)*
            }

            fn make_grads<F: ::blaze::nn::GradSource<#b>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
                #grads { #(#gfields: <#tys as #m>::make_grads(&self.#members, &#join(prefix, #names), f),)* }
            }
        }
    }
}
