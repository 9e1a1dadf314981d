//! `blaze::export::Export` and `OnnxModel` for any model: one statement
//! per op of its lowered ops (never the fused plan:
//! ONNX Runtime fuses on its own), each calling the exporter's function for
//! the op; symbolic dims are sizes of the inputs, read as the model runs.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::quote;

use super::{Gen, access, field_ty, scalar, unary_op, value_ident};
use blaze_spec::rules::Extent;

use crate::ops::{Bin, Dim, KernelArg, Op, SampleDim, ScalarOp, Val, fused_ops, sym_ident};

/// The sample dims of a value as `Option<usize>` tokens.
fn known(val: &Val) -> TokenStream {
    if let Some(e) = &val.opaque {
        return quote!(&::blaze::export::sample_dims(&#e));
    }
    let dims = val.shape.iter().map(|d| match d.fixed() {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    });
    quote!(&[#(#dims),*])
}

/// A per-sample dim's size as an int64 vector of one entry.
fn size(d: &Dim) -> TokenStream {
    match d.fixed() {
        Some(n) => {
            let n = n as i64;
            quote!(g.ints(&[#n]))
        }
        None => {
            let c = d.factor();
            let syms = d.syms.iter().map(|&k| sym_ident(k));
            quote!({
                let syms = [#(::core::clone::Clone::clone(&#syms)),*];
                let refs: ::std::vec::Vec<&::blaze::export::Value> = syms.iter().collect();
                ::blaze::export::ops::dim(g, #c, &refs)
            })
        }
    }
}

impl Gen<'_> {
    /// The name a call's weights sit under (`blocks.0`).
    fn callee_name(&self, c: crate::ops::Callee) -> String {
        let f = self.fields()[c.field].ident.to_string();
        match c.index {
            Some(i) => format!("{f}.{i}"),
            None => f,
        }
    }

    /// A call of field `c` on `args` in the export: the field's own
    /// operators, under its name.
    fn export_call(&self, c: crate::ops::Callee, args: &[usize]) -> TokenStream {
        let (at, name) = (access(c, self.fields()), self.callee_name(c));
        let xs = args.iter().map(|&k| value_ident(k));
        quote!(::blaze::export::sublayer(g, &#at, name, #name, &[#(::core::clone::Clone::clone(&#xs)),*]))
    }

    /// The right-hand side of node `n` in the export; an op a field
    /// stands for (`act: Relu`) exports as that field.
    fn export_expr(&self, n: &crate::ops::Node) -> TokenStream {
        let (op, args) = (&n.op, &n.args[..]);
        if let Some(c) = n.field {
            return self.export_call(c, args);
        }
        let a = args.first().map(|&k| value_ident(k));
        let b = args.get(1).map(|&k| value_ident(k));
        let ops = quote!(::blaze::export::ops);
        match op {
            Op::Layer(c) | Op::Nested(c) | Op::Attend(c) => self.export_call(*c, args),
            fused_ops!() => unreachable!("the export writes the ops before fusion"),
            Op::Unary(u) => {
                let u = unary_op(u);
                quote!(#ops::unary(g, #u, &#a))
            }
            Op::Bin(bin) => {
                let onnx = match bin {
                    Bin::Add => "Add",
                    Bin::Sub => "Sub",
                    Bin::Mul => "Mul",
                    Bin::Div => "Div",
                };
                quote!(g.map(#onnx, &[&#a, &#b]))
            }
            Op::Binary(op) => {
                let onnx = op.onnx;
                quote!(g.map(#onnx, &[&#a, &#b]))
            }
            Op::Scalar(o, sv) => {
                let (onnx, reversed) = match o {
                    ScalarOp::Add => ("Add", false),
                    ScalarOp::Sub => ("Sub", false),
                    ScalarOp::Mul => ("Mul", false),
                    ScalarOp::Div => ("Div", false),
                    ScalarOp::RSub => ("Sub", true),
                    ScalarOp::RDiv => ("Div", true),
                    ScalarOp::Table(op) => (op.onnx, false),
                };
                let sv = scalar(sv);
                quote!(#ops::with_scalar(g, #onnx, &#a, #sv, #reversed))
            }
            Op::Neg => quote!(g.map("Neg", &[&#a])),
            Op::Matmul => quote!(#ops::matmul(g, &#a, &#b)),
            Op::Transpose(x, y) => {
                let (x, y) = (x + 1, y + 1);
                quote!(#ops::transpose(g, &#a, #x, #y))
            }
            Op::Permute(axes) => {
                let axes = axes.iter().map(|x| x + 1);
                quote!(#ops::permute(g, &#a, &[0usize #(, #axes)*]))
            }
            Op::Reshape(dims) => {
                let dims = dims.iter().map(size);
                quote!({
                    let dims = [#(#dims),*];
                    #ops::reshape(g, &#a, &dims)
                })
            }
            Op::Narrow { dim, start, len } => {
                let d = dim + 1;
                quote!(#ops::narrow(g, &#a, #d, #start, #len))
            }
            Op::Cat(dim) => {
                let d = dim + 1;
                let vs = args.iter().map(|&k| value_ident(k));
                quote!(#ops::cat(g, &[#(::core::clone::Clone::clone(&#vs)),*], #d))
            }
            Op::Softmax(d) => {
                let d = d + 1;
                quote!(#ops::softmax(g, &#a, #d, false))
            }
            Op::LogSoftmax(d) => {
                let d = d + 1;
                quote!(#ops::softmax(g, &#a, #d, true))
            }
            Op::Reduce { dim, mean } => {
                let d = dim + 1;
                quote!(#ops::reduce(g, &#a, #d, #mean))
            }
            Op::CausalFill { value, .. } => {
                let value = scalar(value);
                quote!(#ops::causal_fill(g, &#a, #value))
            }
            Op::Kernel { path, args: kargs } => {
                let list = kargs.iter().map(|k| match k {
                    KernelArg::Tensor(i) => {
                        let v = value_ident(args[*i]);
                        quote!(::core::clone::Clone::clone(&#v))
                    }
                    KernelArg::Number(s) => {
                        let s = scalar(s);
                        quote!(g.scalar(#s, ::blaze::export::elem::FLOAT))
                    }
                });
                quote!({
                    let args = [#(#list),*];
                    <#path::Kernel as ::blaze::runtime::kernel::Elementwise>::onnx(g, &args)
                })
            }
            Op::Positions(t) => {
                let t = size(t);
                quote!({
                    let t = #t;
                    #ops::positions(g, &t)
                })
            }
            Op::Input => TokenStream::new(),
        }
    }

    /// The `Export` and `OnnxModel` impls.
    pub fn export(&self) -> TokenStream {
        let ident = &self.model.ident;
        let low = self.low;
        let mut body = TokenStream::new();
        let mut seen = HashSet::new();
        for (i, &k) in low.inputs.iter().enumerate() {
            let (v, dims) = (value_ident(k), known(&low.vals[k]));
            body.extend(quote!(let #v = ::core::clone::Clone::clone(&inputs[#i]).with_sample_dims(#dims);));
            for (d, dim) in low.vals[k].shape.iter().enumerate() {
                if let Some(&sym) = dim.name()
                    && seen.insert(sym)
                {
                    let (s, axis) = (sym_ident(sym), d + 1);
                    body.extend(quote!(let #s = g.size(&#v, #axis);));
                }
            }
        }
        for n in &low.nodes {
            if matches!(n.op, Op::Input) {
                continue;
            }
            let (o, e, dims) = (value_ident(n.out), self.export_expr(n), known(&low.vals[n.out]));
            body.extend(quote!(let #o = (#e).with_sample_dims(#dims);));
        }
        let out = value_ident(low.output);
        // An input holds ids when a layer that takes ids reads it, maybe
        // through views of it.
        let ids: Vec<TokenStream> = low
            .inputs
            .iter()
            .map(|&k| {
                let mut seen = vec![k];
                for n in &low.nodes {
                    let view = matches!(n.op, Op::Reshape(_) | Op::Narrow { .. } | Op::Transpose(..) | Op::Permute(_));
                    if view && seen.contains(&n.args[0]) {
                        seen.push(n.out);
                    }
                }
                let readers = low.nodes.iter().filter(|n| n.args.first().is_some_and(|a| seen.contains(a)));
                let tys: Vec<TokenStream> =
                    readers.filter_map(|n| n.op.callee().map(|c| field_ty(&self.fields()[c.field].kind))).collect();
                quote!(false #(|| <#tys as ::blaze::export::Export>::TAKES_IDS)*)
            })
            .collect();
        let takes_ids = ids[0].clone();
        let mut tys: Vec<TokenStream> = Vec::new();
        for f in self.fields() {
            let ty = field_ty(&f.kind);
            if !tys.iter().any(|t| t.to_string() == ty.to_string()) {
                tys.push(ty);
            }
        }
        let inputs = low.inputs.iter().map(|&k| {
            let dims = low.vals[k].shape.iter().map(|d| match d.fixed() {
                Some(n) => quote!(::blaze::export::Dim::Size(#n)),
                None => {
                    let name = d.shown(&low.symbols);
                    quote!(::blaze::export::Dim::Named(::std::string::String::from(#name)))
                }
            });
            quote!(::std::vec![#(#dims),*])
        });
        let onnx_model = crate::export::onnx_model(ident, &inputs.collect::<Vec<_>>(), &ids);
        let export = crate::export::export_impl(ident, &tys, takes_ids, quote!(#body #out));
        quote! {
            #export

            #onnx_model
        }
    }
}
