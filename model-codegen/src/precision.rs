//! `precision = bf16`: the scope a model's passes run their products in,
//! and the plan `Model::FUSION` lists, decided here at compile time from
//! the spec's products of each layer (`Layer::products`) and the rule
//! every product follows at run time (`blaze_spec::precision::rounds`).

use blaze_spec::Layer;
use blaze_spec::precision::{MIN_ROUNDED_DEPTH, rounds};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::Precision;

/// A part of a model that multiplies matrices, as the plan lists it.
#[derive(Debug)]
pub enum Item<'a> {
    /// A built-in layer field (the name as the body calls it).
    Layer { name: String, layer: Layer, sizes: &'a [usize], options: &'a blaze_spec::Options },
    /// A nested model or user layer: its own passes decide.
    Nested { name: String },
    /// A `matmul` in a forward body: its operands' shapes, and its depth
    /// when the shapes fix it.
    Matmul { what: String, depth: Option<usize> },
}

/// `body` run under `precision` (as it is when none is given: the
/// caller's scope decides).
pub fn scoped(precision: Option<Precision>, body: TokenStream) -> TokenStream {
    match precision {
        Some(Precision(variant)) => {
            let variant = format_ident!("{variant}");
            quote!(::blaze::runtime::precision::autocast(::blaze::runtime::precision::Precision::#variant, || { #body }))
        }
        None => body,
    }
}

/// The `precision` and `products` fields of `FusionPlan`.
pub fn plan_fields(precision: Option<Precision>, items: &[Item<'_>]) -> TokenStream {
    let Some(p) = precision else {
        return quote!(precision: ::core::option::Option::None, products: &[],);
    };
    let variant = format_ident!("{}", p.0);
    let lines: Vec<String> = if p.rounds() { lines(p.name(), items) } else { Vec::new() };
    quote! {
        precision: ::core::option::Option::Some(::blaze::runtime::precision::Precision::#variant),
        products: &[#(#lines),*],
    }
}

/// One line per item that multiplies: what runs in `name` (`bf16`) and
/// what stays f32, and why.
fn lines(name: &str, items: &[Item<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let line = match item {
            Item::Layer { name: field, layer, sizes, options } => {
                let products = layer.products(sizes, options);
                if products.is_empty() {
                    continue;
                }
                let rounded = products.iter().any(|p| rounds(p.depth));
                // What stays f32, and why.
                let kept: Vec<String> = products
                    .iter()
                    .filter(|p| !rounds(p.depth))
                    .map(|p| format!("{} f32 (depth {} < {MIN_ROUNDED_DEPTH})", p.what, p.depth))
                    .collect();
                match (rounded, kept.is_empty()) {
                    (_, true) => format!("{field}: {name}"),
                    (false, false) => format!("{field}: {}", kept.join(", ")),
                    (true, false) => format!("{field}: {name}, but {}", kept.join(", ")),
                }
            }
            Item::Nested { name: field } => {
                format!("{field}: as its own FUSION lists, under {name} unless it sets one")
            }
            Item::Matmul { what, depth: Some(d) } if !rounds(*d) => {
                format!("{what}: f32 (depth {d} < {MIN_ROUNDED_DEPTH})")
            }
            Item::Matmul { what, .. } => format!("{what}: {name}"),
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_says_what_rounds_and_why_the_rest_does_not() {
        let o = blaze_spec::Options::DEFAULT;
        let grouped = blaze_spec::Options { groups: 4, ..o };
        let items = [
            Item::Layer { name: "fc1".into(), layer: Layer::Linear, sizes: &[64, 256], options: &o },
            Item::Layer { name: "head".into(), layer: Layer::Linear, sizes: &[64, 10], options: &o },
            Item::Layer { name: "attn".into(), layer: Layer::MultiHeadAttention, sizes: &[64, 4], options: &o },
            Item::Layer { name: "conv1".into(), layer: Layer::Conv2d, sizes: &[1, 8, 3], options: &o },
            Item::Layer { name: "conv2".into(), layer: Layer::Conv2d, sizes: &[16, 64, 3], options: &grouped },
            Item::Layer { name: "ln".into(), layer: Layer::LayerNorm, sizes: &[64], options: &o },
            Item::Nested { name: "blocks[0]".into() },
            Item::Nested { name: "blocks[0]".into() },
            Item::Matmul { what: "matmul [T, 16] x [16, T]".into(), depth: Some(16) },
            Item::Matmul { what: "matmul [T, T] x [T, 16]".into(), depth: None },
        ];
        assert_eq!(
            lines("bf16", &items),
            [
                "fc1: bf16",
                "head: bf16, but g W f32 (depth 10 < 32)",
                "attn: bf16, but per-head scores f32 (depth 16 < 32)",
                "conv1: convolution f32 (depth 9 < 32), input gradient f32 (depth 8 < 32)",
                "conv2: bf16, but input gradient f32 (depth 16 < 32)",
                "blocks[0]: as its own FUSION lists, under bf16 unless it sets one",
                "matmul [T, 16] x [16, T]: f32 (depth 16 < 32)",
                "matmul [T, T] x [T, 16]: bf16",
            ]
        );
    }
}
