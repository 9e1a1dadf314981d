//! `#[model]`: parse, check, generate.

mod attr;
mod check;
mod codegen;
mod ir;

use proc_macro2::TokenStream;

/// Expands `#[model(attr)] item`. On errors, emits them together with a
/// plain version of the struct so that uses of it elsewhere do not add a
/// cascade of unrelated errors.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed = match attr::parse(attr, item.clone()) {
        Ok(model) => model,
        Err(e) => return fallback(e, item),
    };
    match check::check(&parsed) {
        Ok(plan) => codegen::generate(&parsed, &plan),
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(codegen::fallback_struct(&parsed));
            out
        }
    }
}

fn fallback(e: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = e.to_compile_error();
    // Re-emit a struct only when it parses as one; otherwise the error alone.
    if let Ok(s) = syn::parse2::<syn::ItemStruct>(item)
        && matches!(s.fields, syn::Fields::Named(_))
    {
        let ident = &s.ident;
        let vis = &s.vis;
        out.extend(quote::quote! { #vis struct #ident<B = ()>(::core::marker::PhantomData<B>); });
    }
    out
}
