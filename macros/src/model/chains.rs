//! Runs of elementwise fields (an activation, then activations and
//! dropouts) found in a struct model and fused into one kernel and its
//! adjoint (`fuse::chain`), listed in the model's fusion plan.

use super::check::{Plan, Shape};
use super::ir::{Field, LayerKind, Model};
use super::precision;
use crate::graph::fuse::{self, ChainOp};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// The activation a `Linear` or `Conv2d` at `i` fuses with the layer after
/// it: ReLU, sigmoid and tanh, whose caches are their outputs (the spec
/// says which).
pub(super) fn fused_activation(fields: &[&Field], i: usize) -> Option<TokenStream> {
    let (layer, _) = fields[i].kind.builtin()?;
    let (next, _) = fields.get(i + 1)?.kind.builtin()?;
    let op = format_ident!("{}", next.fusable_activation().filter(|_| layer.fuses_activation())?);
    Some(quote!(::core::option::Option::Some(::blaze::UnaryOp::#op)))
}

/// A run of elementwise fields (an activation, then activations and
/// dropouts) that runs as one fused kernel, forward and backward: fields
/// `start..end`, the kernel, and the module its items live in.
pub(super) struct Run {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) ops: Vec<ChainOp>,
    pub(super) kernel: blaze_kernel_dsl::ir::Kernel,
    pub(super) module: Ident,
}

impl Run {
    /// The dropout fields of the run, in order.
    pub(super) fn dropouts<'a>(&'a self, fields: &'a [&Field]) -> impl Iterator<Item = &'a Ident> + 'a {
        self.ops
            .iter()
            .zip(&fields[self.start..self.end])
            .filter(|(op, _)| matches!(op, ChainOp::Dropout))
            .map(|(_, f)| &f.ident)
    }

    /// The kernel's call (`kernel` names it in the run's module) on `x`
    /// (a `&Tensor` expression), with each dropout's arguments read from
    /// its seed (`seed` of its field's name) or, without `seed`, the
    /// identity's; `extra` is the output gradient for an adjoint.
    pub(super) fn call(
        &self,
        fields: &[&Field],
        r: &TokenStream,
        kernel: TokenStream,
        x: TokenStream,
        seed: Option<&dyn Fn(&Ident) -> TokenStream>,
        extra: Option<TokenStream>,
    ) -> TokenStream {
        let arg = quote!(::blaze::runtime::kernel::Arg);
        let mut args = vec![quote!(#arg::Tensor(#x))];
        for d in self.dropouts(fields) {
            args.extend(fuse::dropout_args(&quote!(self.#d), seed.map(|s| s(d))));
        }
        args.extend(extra.map(|g| quote!(#arg::Tensor(&#g))));
        let module = &self.module;
        quote!(::blaze::runtime::kernel::call::<#module::#kernel, B, #r>(&[#(#args),*]))
    }
}

/// The op a field is inside a run, if it can be in one.
pub(super) fn chain_op(f: &Field) -> Option<ChainOp> {
    let (layer, _) = f.kind.builtin().filter(|_| f.array.is_none())?;
    use blaze_spec::Layer;
    match layer {
        Layer::Dropout => Some(ChainOp::Dropout),
        Layer::Unary(op) => Some(ChainOp::Unary(op)),
        // Elementwise, but layers of their own rather than ops of the op
        // table, from which (and dropouts) a chain's kernel is built.
        Layer::LeakyRelu | Layer::Silu | Layer::Identity | Layer::Softplus | Layer::Elu | Layer::Map => None,
        // Not elementwise.
        Layer::Linear
        | Layer::Conv2d
        | Layer::ConvTranspose2d
        | Layer::Conv1d
        | Layer::MaxPool2d
        | Layer::AvgPool2d
        | Layer::AdaptiveAvgPool2d
        | Layer::Upsample
        | Layer::GlobalAvgPool
        | Layer::Flatten
        | Layer::Softmax
        | Layer::LogSoftmax
        | Layer::BatchNorm2d
        | Layer::BatchNorm1d
        | Layer::GroupNorm
        | Layer::LayerNorm
        | Layer::RMSNorm
        | Layer::MultiHeadAttention
        | Layer::Lstm
        | Layer::Gru
        | Layer::Embedding => None,
    }
}

/// The runs of two or more elementwise fields that start with an
/// activation the layer before does not take into its bias pass.
pub(super) fn runs(model: &Model, fields: &[&Field]) -> Vec<Run> {
    if !model.fuse {
        return Vec::new();
    }
    let taken = |i: usize| i > 0 && fused_activation(fields, i - 1).is_some();
    let mut out = Vec::new();
    let mut i = 0;
    while i < fields.len() {
        if !matches!(chain_op(fields[i]), Some(ChainOp::Unary(_))) || taken(i) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < fields.len() && chain_op(fields[end]).is_some() {
            end += 1;
        }
        if end - i >= 2 {
            let ops: Vec<ChainOp> = fields[i..end].iter().filter_map(|f| chain_op(f)).collect();
            let g = out.len();
            let kernel = fuse::chain(format!("{}_fused{g}", model.ident), &ops, fields[i].ident.span());
            out.push(Run { start: i, end, ops, kernel, module: fuse::Plan::module(&model.ident, g) });
        }
        i = end;
    }
    out
}

/// Each run's kernel items (a module each) and the model's `FUSION`
/// constant.
pub(super) fn fusion(
    model: &Model,
    fields: &[&Field],
    plan: &Plan,
    runs: &[Run],
    recomputed: &[bool],
) -> (TokenStream, TokenStream) {
    let mut items = TokenStream::new();
    let mut groups = Vec::new();
    for run in runs {
        let module = &run.module;
        let wgsl = match blaze_kernel_dsl::fused_items(&run.kernel, true) {
            Ok((kernel_items, wgsl)) => {
                items.extend(quote! {
                    #[doc(hidden)]
                    #[allow(non_snake_case)]
                    mod #module {
                        #kernel_items
                    }
                });
                wgsl
            }
            Err(e) => {
                let msg = format!("internal error: fused fields of `{}` do not check: {e}", model.ident);
                items.extend(syn::Error::new(run.kernel.span, msg).to_compile_error());
                String::new()
            }
        };
        let name = &run.kernel.name;
        let ops = run.ops.iter().map(|op| match op {
            ChainOp::Unary(u) => u.name.to_owned(),
            ChainOp::Dropout => "dropout".to_owned(),
        });
        let inputs = 1 + 3 * run.dropouts(fields).count();
        let output = match &plan.steps[run.end - 1].output {
            Shape::Known(d) => format!("{d:?}"),
            Shape::Opaque(_) => "[..]".to_owned(),
        };
        groups.push(quote!(::blaze::nn::FusedGroup { name: #name, ops: &[#(#ops),*], inputs: #inputs, output: #output, wgsl: #wgsl }));
    }
    let epilogues: Vec<String> = (0..fields.len())
        .filter(|&i| fused_activation(fields, i).is_some())
        .map(|i| format!("{} + {}", fields[i].ident, fields[i + 1].ident))
        .collect();
    let recomputed =
        (0..fields.len()).filter(|&i| recomputed[i]).map(|i| format!("{} <- {}", fields[i].ident, fields[i - 1].ident));
    let merged: usize = runs.iter().map(|r| r.end - r.start - 1).sum();
    let products: Vec<precision::Item<'_>> = fields
        .iter()
        .zip(&plan.steps)
        .map(|(f, step)| match &f.kind {
            LayerKind::Builtin { layer, sizes, .. } => {
                precision::Item::Layer { name: f.ident.to_string(), layer: *layer, sizes, options: &step.options.spec }
            }
            LayerKind::Opaque { .. } => precision::Item::Nested { name: f.ident.to_string() },
        })
        .collect();
    let products = precision::plan_fields(model.precision, &products);
    let (fields_n, taken) = (fields.len(), epilogues.len());
    let forward = [fields_n - taken - merged, fields_n - taken];
    let backward = [fields_n - merged, fields_n];
    let plan = quote!(::blaze::nn::FusionPlan {
        groups: &[#(#groups),*],
        softmaxes: &[],
        epilogues: &[#(#epilogues),*],
        recomputed: &[#(#recomputed),*],
        forward_ops: [#(#forward),*],
        backward_ops: [#(#backward),*],
        #products
    });
    (items, plan)
}
