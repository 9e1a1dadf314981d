//! `#[load(..)]` on a field: where its tensors come from in a checkpoint
//! that names them its own way. `blaze-macros` (`model/attr.rs`) parses the entries with
//! [`LoadEntry`]'s parser and checks them here, and the struct's `Module`
//! impl gets [`field_sources`] per field for `Module::sources`.

use proc_macro2::TokenStream;
use quote::quote;

use super::ir::{Field, LayerKind, LayerOption, LoadEntry, OptionValue};
use blaze_kernel_dsl::errors::Errors;

impl syn::parse::Parse for LoadEntry {
    /// `"prefix"`, or `name = "from"`, or `name = transposed("from")`,
    /// `name` a dotted path (`out_proj.weight`).
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(syn::LitStr) {
            let s: syn::LitStr = input.parse()?;
            return Ok(LoadEntry::Prefix(s.value(), s.span()));
        }
        let first: syn::Ident = input.parse()?;
        let span = first.span();
        let mut name = first.to_string();
        while input.peek(syn::Token![.]) {
            input.parse::<syn::Token![.]>()?;
            name.push('.');
            name.push_str(&input.parse::<syn::Ident>()?.to_string());
        }
        input.parse::<syn::Token![=]>()?;
        if input.peek(syn::LitStr) {
            let from: syn::LitStr = input.parse()?;
            return Ok(LoadEntry::Param { name, from: from.value(), transposed: false, span });
        }
        let how: syn::Ident = input.parse()?;
        if how != "transposed" {
            return Err(syn::Error::new(how.span(), "expected a tensor's name (\"..\") or `transposed(\"..\")`"));
        }
        let inner;
        syn::parenthesized!(inner in input);
        let from: syn::LitStr = inner.parse()?;
        Ok(LoadEntry::Param { name, from: from.value(), transposed: true, span })
    }
}

/// The rules of `#[load(..)]`: one prefix at most, `{i}` in it exactly
/// when the field is an array, one name per entry for a single layer, and
/// for a built-in layer only the tensors its spec lists.
pub fn check_load(
    load: &[LoadEntry],
    kind: &LayerKind,
    options: &[LayerOption],
    array: Option<usize>,
    errors: &mut Errors,
) {
    let mut prefixes = 0;
    let mut seen: Vec<&str> = Vec::new();
    for e in load {
        match e {
            LoadEntry::Prefix(p, span) => {
                prefixes += 1;
                if prefixes > 1 {
                    errors.push(syn::Error::new(*span, "`#[load]` takes one prefix"));
                } else if array.is_some() != p.contains("{i}") {
                    let why = if array.is_some() {
                        "an array field's prefix needs `{i}` where each entry's index goes (\"h.{i}\")"
                    } else {
                        "`{i}` stands for an array field's index; this field is not an array"
                    };
                    errors.push(syn::Error::new(*span, why));
                }
            }
            LoadEntry::Param { name, span, .. } => {
                if array.is_some() {
                    errors.push(syn::Error::new(
                        *span,
                        "an array field maps its entries with a prefix holding `{i}`; name tensors in the entries' own model",
                    ));
                    continue;
                }
                if seen.contains(&name.as_str()) {
                    errors.push(syn::Error::new(*span, format!("`{name}` is mapped twice")));
                }
                seen.push(name);
                if let LayerKind::Builtin { layer, sizes, .. } = kind {
                    // The tensors the layer has with its `bias` option.
                    let bias =
                        options.iter().find(|o| o.key == "bias").is_none_or(|o| o.value != OptionValue::Bool(false));
                    let all = blaze_spec::Options { bias, ..layer.defaults() };
                    let params: Vec<&str> = layer.params(sizes, &all).iter().map(|p| p.name).collect();
                    if !params.contains(&name.as_str()) {
                        let has = if params.is_empty() { "none".to_string() } else { params.join(", ") };
                        errors.push(syn::Error::new(
                            *span,
                            format!("`{}` has no tensor `{name}` (it has {has})", layer.name()),
                        ));
                    }
                }
            }
        }
    }
}

/// A field's part of `Module::sources`: its tensors under the field's
/// name, or where `#[load(..)]` says.
pub fn field_sources(f: &Field) -> TokenStream {
    let (name, at) = (f.ident.to_string(), &f.ident);
    let module = quote!(::blaze::nn::Module::<B>);
    let own = quote!(::blaze::nn::join(prefix, #name));
    let prefix = f.load.iter().find_map(|e| match e {
        LoadEntry::Prefix(p, _) => Some(p.clone()),
        LoadEntry::Param { .. } => None,
    });
    if f.array.is_some() {
        let from = prefix.unwrap_or_else(|| format!("{name}.{{i}}"));
        return quote! {
            for (i, m) in self.#at.iter().enumerate() {
                let i = i.to_string();
                #module::sources(m, &::blaze::nn::join(&#own, &i), &::blaze::nn::join(source, &#from.replace("{i}", &i)), out);
            }
        };
    }
    let from = prefix.unwrap_or(name);
    let params = f.load.iter().filter_map(|e| match e {
        LoadEntry::Param { name, from, transposed, .. } => Some(quote! {
            ::blaze::nn::set_source(out, &::blaze::nn::join(&#own, #name), &::blaze::nn::join(source, #from), #transposed);
        }),
        LoadEntry::Prefix(..) => None,
    });
    quote! {
        #module::sources(&self.#at, &#own, &::blaze::nn::join(source, #from), out);
        #(#params)*
    }
}
