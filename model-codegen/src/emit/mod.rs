//! Printing a model's passes from its fused ops (`fuse.rs`; a forward
//! body's, or a sequential model's fields): the inference and training
//! forwards as straight-line Rust, and the reverse pass, one statement per
//! step of `diff.rs` (`backward.rs`). The training forward keeps only what
//! those steps read.
//!
//! Every match over an op names each variant (the lint below holds these
//! modules to it): an op added to the IR is a compile error in each pass
//! until the pass decides what to do with it.
#![deny(clippy::wildcard_enum_match_arm)]

mod backward;
mod decode;
mod export;
mod items;
mod plan;

use std::collections::{HashMap, HashSet};

use blaze_spec::ops::Unary;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::diff::{self, Backward, of_output, scalar, tensor_dim};
use super::fuse::{DropPart, Input, Plan, RowOp};
use blaze_spec::rules::Extent;

use super::ops::{
    Bin, Callee, Dim, KernelArg, Lowered, Node, Op, Rank, SampleDim, ScalarOp, elementwise_ops, fused_ops,
    movement_ops, row_ops, show, sym_ident,
};
use crate::ir::{Field, LayerKind, Model};
use crate::ir::{Options, count_params};
use crate::precision;
use crate::structs::{field_init, field_ty};

/// The ops whose value [`Gen::op_expr`] computes from their operands
/// (every op but inputs and calls of fields): a pattern.
macro_rules! computed {
    () => {
        Op::Positions(_) | Op::Matmul | elementwise_ops!() | movement_ops!() | row_ops!()
    };
}

/// The variable (and cache field) holding value `k`.
fn value_ident(k: usize) -> syn::Ident {
    format_ident!("v{}", k)
}

/// The variable holding the gradient of value `k`.
fn grad_ident(k: usize) -> syn::Ident {
    format_ident!("g{}", k)
}

/// The cache field holding what node `n`'s layer kept.
fn layer_cache_ident(n: usize) -> syn::Ident {
    format_ident!("c{}", n)
}

/// The cache field holding the shape of value `k`.
fn shape_ident(k: usize) -> syn::Ident {
    format_ident!("s{}", k)
}

/// The variable holding a callee's gradients.
fn grads_ident(callee: Callee, fields: &[Field]) -> syn::Ident {
    let f = &fields[callee.field].ident;
    match callee.index {
        Some(i) => format_ident!("gr_{}_{}", f, i),
        None => format_ident!("gr_{}", f),
    }
}

fn access(callee: Callee, fields: &[Field]) -> TokenStream {
    let f = &fields[callee.field].ident;
    match callee.index {
        Some(i) => quote!(self.#f[#i]),
        None => quote!(self.#f),
    }
}

/// A narrow's start as a `usize` expression: the literal, or counted back
/// from `size` (an expression) when negative.
fn narrow_start(start: i64, size: TokenStream) -> TokenStream {
    if start >= 0 {
        let start = start as usize;
        quote!(#start)
    } else {
        let back = start.unsigned_abs() as usize;
        quote!((#size - #back))
    }
}

/// The runtime's `UnaryOp` of op `u` of the op table (one without
/// parameters).
fn unary_op(u: &Unary) -> TokenStream {
    diff::table_op("UnaryOp", u.variant)
}

/// What a layer node does in its bias pass besides the bias
/// (`Gen::fused`): the activation node after it and its `UnaryOp`, or
/// the residual add node after it and the value it adds.
#[derive(Debug)]
pub enum Epilogue {
    /// The activation node after the layer, and its `UnaryOp`.
    Act(usize, TokenStream),
    /// The residual add node after the layer, and the value it adds.
    Residual(usize, usize),
}

impl Epilogue {
    /// The node that runs inside the layer's call.
    fn node(&self) -> usize {
        match self {
            Epilogue::Act(j, _) | Epilogue::Residual(j, _) => *j,
        }
    }

    /// The value the layer's call makes: the fused node's.
    fn output(&self, low: &Lowered) -> syn::Ident {
        value_ident(low.nodes[self.node()].out)
    }

    /// The layer's method call on its input `x`, for inference or training:
    /// `forward_act` (every layer that fuses an activation has it) or,
    /// with a residual, `Linear::forward_fused`.
    fn call(&self, x: &syn::Ident, training: bool) -> TokenStream {
        let none = quote!(::core::option::Option::None);
        match (self, training) {
            (Epilogue::Act(_, act), false) => quote!(forward_act(&#x, #act)),
            (Epilogue::Act(_, act), true) => quote!(forward_train_act(&#x, #act)),
            (Epilogue::Residual(_, r), false) => {
                let r = value_ident(*r);
                quote!(forward_fused(&#x, #none, ::core::option::Option::Some(&#r)))
            }
            (Epilogue::Residual(_, r), true) => {
                let r = value_ident(*r);
                quote!(forward_train_fused(&#x, #none, ::core::option::Option::Some(&#r)))
            }
        }
    }
}

/// Value `k` as a kernel call's tensor argument, read from the training
/// forward's cache or not.
fn tensor_arg(k: usize, from_cache: bool) -> TokenStream {
    let id = value_ident(k);
    if from_cache {
        quote!(::blaze::runtime::kernel::Arg::Tensor(&cache.#id))
    } else {
        quote!(::blaze::runtime::kernel::Arg::Tensor(&#id))
    }
}

/// Which pass a fused group's kernel call is made in: what its tensors
/// are read from and what its dropouts do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The inference forward: dropouts are the identity.
    Infer,
    /// The training forward: each dropout draws with the seed in `d{node}`.
    Train,
    /// The backward: tensors and seeds from the cache.
    Backward,
}

/// The variable (and cache field) holding the seed a fused dropout at
/// node `n` drew its mask from, if it dropped anything.
fn seed_ident(n: usize) -> syn::Ident {
    format_ident!("d{}", n)
}

/// A scalar from the body as a kernel call's number argument.
fn number_arg(s: &TokenStream) -> TokenStream {
    let s = scalar(s);
    quote!(::blaze::runtime::kernel::Arg::Number(#s))
}

/// What the printers read: the model, its fields' options, its ops before
/// and after fusion, its inputs' names and what fusion made.
#[derive(Debug, Clone, Copy)]
pub struct Gen<'a> {
    pub model: &'a Model,
    pub options: &'a [Options],
    /// The ops after fusion, which the passes run.
    pub low: &'a Lowered,
    /// The ops before fusion: what the export writes, what decides whether
    /// the model decodes, what the plan counts against.
    pub unfused: &'a Lowered,
    pub input_names: &'a [syn::Ident],
    /// The groups and softmax folds the fused ops call, and the layers
    /// whose input the backward rebuilds (`fuse.rs`).
    pub plan: &'a Plan,
}

impl Gen<'_> {
    fn rank(&self, k: usize) -> Rank {
        self.low.vals[k].rank()
    }

    fn fields(&self) -> &[Field] {
        &self.model.fields
    }

    /// An attention call's field, trait path, query, keys and values, and
    /// its key-padding mask as an `Option`.
    fn attend_parts(&self, callee: Callee, args: &[usize]) -> (TokenStream, TokenStream, [syn::Ident; 3], TokenStream) {
        let ty = field_ty(&self.fields()[callee.field].kind);
        let mask = match args.get(3) {
            Some(&m) => {
                let m = value_ident(m);
                quote!(::core::option::Option::Some(&#m))
            }
            None => quote!(::core::option::Option::None),
        };
        let qkv = [value_ident(args[0]), value_ident(args[1]), value_ident(args[2])];
        (access(callee, self.fields()), quote!(<#ty as ::blaze::nn::Attend<B>>), qkv, mask)
    }

    /// The trait path a nested field's call of `inputs` inputs runs
    /// through: `Differentiable` for one input (every model of one input
    /// implements it, and so does a hand-written `Block`); `None` for
    /// several, which run as the nested model's inherent methods.
    fn nested_path(&self, callee: Callee, inputs: usize) -> Option<TokenStream> {
        let ty = field_ty(&self.fields()[callee.field].kind);
        (inputs == 1).then(|| quote!(<#ty as ::blaze::nn::Differentiable<B>>))
    }

    fn layer_path(&self, ty: TokenStream, x: usize, out: usize) -> TokenStream {
        let (ri, ro) = (self.rank(x), self.rank(out));
        quote!(<#ty as ::blaze::nn::Layer<B, #ri, #ro>>)
    }

    fn kernel_args(&self, args: &[KernelArg], vals: &[usize], from_cache: bool) -> Vec<TokenStream> {
        args.iter()
            .map(|a| match a {
                KernelArg::Tensor(i) => tensor_arg(vals[*i], from_cache),
                KernelArg::Number(s) => number_arg(s),
            })
            .collect()
    }

    /// A call of group `group`'s kernel (`kernel` names it in the group's
    /// module: `Kernel`, or `Adjoint{i}` with the output's gradient `extra`
    /// as the last argument) in `pass`.
    fn fused_call(&self, g: usize, kernel: TokenStream, pass: Pass, extra: Option<TokenStream>) -> TokenStream {
        let from_cache = pass == Pass::Backward;
        let (group, module) = (&self.plan.groups[g], Plan::module(&self.model.ident, g));
        let r = self.rank(group.out);
        // A mask is made on the device and in the dtype of a tensor argument.
        let like = group.inputs.iter().find_map(|input| {
            let Input::Value(k) = input else { return None };
            let v = value_ident(*k);
            Some(if from_cache { quote!(cache.#v) } else { quote!(#v) })
        });
        let mut args: Vec<TokenStream> = group
            .inputs
            .iter()
            .map(|input| match input {
                Input::Value(k) => tensor_arg(*k, from_cache),
                Input::Number(s) => number_arg(s),
                Input::Causal(t) => {
                    let (t, like) = (t.tokens(), like.as_ref().expect("a group reads a tensor"));
                    quote!(::blaze::runtime::kernel::Arg::Tensor(
                        &::blaze::nn::graph::causal_mask::<B, #r>(#t, &#like.device()).to_dtype(#like.dtype())
                    ))
                }
                Input::Dropout { node, part } => self.dropout_arg(*node, *part, pass),
            })
            .collect();
        args.extend(extra.map(|e| quote!(::blaze::runtime::kernel::Arg::Tensor(&#e))));
        let call = |f: TokenStream, extra: TokenStream| quote!(::blaze::runtime::kernel::#f::<#module::#kernel, B, #r>(&[#(#args),*] #extra));
        // The forward's kernel runs the reduction after it in its pass.
        match group.reduce {
            Some(RowOp::Norm { layer, .. }) if !from_cache => {
                let (at, ty) = (access(layer, self.fields()), field_ty(&self.fields()[layer.field].kind));
                let norm = quote!(<#ty as ::blaze::nn::RowNormLayer<B>>::row_norm(&#at));
                // Training keeps the kernel's values for the norm's cache.
                let keep = pass == Pass::Train;
                let e = call(quote!(call_norm), quote!(, #norm, #keep));
                if keep { e } else { quote!(#e.0) }
            }
            Some(op @ (RowOp::Sum | RowOp::Mean)) if !from_cache => {
                let mean = op == RowOp::Mean;
                call(quote!(call_sum), quote!(, #mean))
            }
            Some(op @ (RowOp::Softmax | RowOp::LogSoftmax)) if !from_cache => {
                let log = op == RowOp::LogSoftmax;
                call(quote!(call_softmax), quote!(, #log))
            }
            // The backward's adjoint kernels, and a group without a reduction.
            None | Some(RowOp::Norm { .. } | RowOp::Sum | RowOp::Mean | RowOp::Softmax | RowOp::LogSoftmax) => {
                call(quote!(call), TokenStream::new())
            }
        }
    }

    /// Argument `part` of the dropout at node `node` in a group's call:
    /// the identity's in inference and where training dropped nothing.
    fn dropout_arg(&self, node: usize, part: DropPart, pass: Pass) -> TokenStream {
        let Op::Seed(callee) = &self.low.nodes[node].op else { unreachable!("a fused dropout leaves its seed") };
        let layer = access(*callee, self.fields());
        let d = seed_ident(node);
        let seed = match pass {
            Pass::Infer => None,
            Pass::Train => Some(quote!(#d)),
            Pass::Backward => Some(quote!(cache.#d)),
        };
        let [threshold, scale, noise] = super::fuse::dropout_args(&layer, seed);
        match part {
            DropPart::Threshold => threshold,
            DropPart::Scale => scale,
            DropPart::Noise => noise,
        }
    }

    /// The right-hand side of node `i`, which fusion made: a fused group's
    /// kernel or a folded softmax, in the forward `pass`.
    fn fused_expr(&self, i: usize, pass: Pass) -> TokenStream {
        let n = &self.low.nodes[i];
        if let Op::Fused(g) = n.op {
            return self.fused_call(g, quote!(Kernel), pass, None);
        }
        let Op::SoftmaxWith(s) = n.op else { unreachable!("a group's kernel or a folded softmax") };
        let fold = &self.plan.softmaxes[s];
        let (x, d, opts) = (value_ident(fold.input), self.rank(n.out).known() - 1, fold.options());
        quote!(#x.softmax_with(#d, #opts))
    }

    /// The field a node calls and the value it calls it on: a layer's, or
    /// the norm that ends a fused group (on the value the kernel computes).
    fn layer_call(&self, i: usize) -> Option<(Callee, usize)> {
        let n = &self.low.nodes[i];
        if let Op::Layer(c) = n.op {
            return Some((c, n.args[0]));
        }
        let Op::Fused(g) = n.op else { return None };
        let group = &self.plan.groups[g];
        let Some(RowOp::Norm { layer, .. }) = group.reduce else { return None };
        Some((layer, group.value))
    }

    /// Whether node `i` is a fused group that ends with a LayerNorm or
    /// RMSNorm (and keeps that layer's cache).
    fn norm_root(&self, i: usize) -> bool {
        matches!(self.low.nodes[i].op, Op::Fused(_)) && self.layer_call(i).is_some()
    }

    /// The right-hand side computing a node's output from its inputs
    /// (everything but inputs, layers and nested models).
    fn op_expr(&self, op: &Op, args: &[usize], out: usize) -> TokenStream {
        let a = args.first().map(|&k| value_ident(k));
        let b = args.get(1).map(|&k| value_ident(k));
        let r = self.rank(out);
        match op {
            Op::Bin(Bin::Add) => quote!(#a.add(&#b)),
            Op::Bin(Bin::Sub) => quote!(#a.sub(&#b)),
            Op::Bin(Bin::Mul) => quote!(#a.mul(&#b)),
            Op::Bin(Bin::Div) => quote!(#a.div(&#b)),
            Op::Binary(op) => {
                let m = format_ident!("{}", op.name);
                quote!(#a.#m(&#b))
            }
            Op::Scalar(o, sv) => {
                let sv = scalar(sv);
                let m = match o {
                    ScalarOp::Add => quote!(add_scalar),
                    ScalarOp::Sub => quote!(sub_scalar),
                    ScalarOp::Mul => quote!(mul_scalar),
                    ScalarOp::Div => quote!(div_scalar),
                    ScalarOp::RSub => quote!(rsub_scalar),
                    ScalarOp::RDiv => quote!(rdiv_scalar),
                    ScalarOp::Table(op) => {
                        let m = format_ident!("{}", op.with_number);
                        quote!(#m)
                    }
                };
                quote!(#a.#m(#sv))
            }
            Op::Neg => quote!(#a.neg()),
            Op::Unary(u) => {
                let m = format_ident!("{}", u.name);
                quote!(#a.#m())
            }
            Op::Matmul => quote!(#a.matmul(&#b)),
            Op::Transpose(x, y) => {
                let (x, y) = (tensor_dim(*x), tensor_dim(*y));
                quote!(#a.transpose(#x, #y))
            }
            Op::Permute(axes) => {
                let axes = axes.iter().map(|&x| tensor_dim(x));
                quote!(#a.permute([0usize #(, #axes)*]))
            }
            Op::Reshape(dims) => {
                let dims = dims.iter().map(Dim::tokens);
                quote!(#a.reshape::<#r>([#a.shape()[0] #(, #dims)*]))
            }
            Op::Narrow { dim, start, len } => {
                let d = tensor_dim(*dim);
                let start = narrow_start(*start, quote!(#a.shape()[#d]));
                quote!(#a.narrow(#d, #start, #len))
            }
            Op::Cat(dim) => {
                let d = tensor_dim(*dim);
                let vs = args.iter().map(|&k| value_ident(k));
                quote!(::blaze::Tensor::cat(&[#(::core::clone::Clone::clone(&#vs)),*], #d))
            }
            Op::Softmax(d) => {
                let d = tensor_dim(*d);
                quote!(#a.softmax(#d))
            }
            Op::LogSoftmax(d) => {
                let d = tensor_dim(*d);
                quote!(#a.log_softmax(#d))
            }
            Op::Reduce { dim, mean } => {
                let d = tensor_dim(*dim);
                if *mean { quote!(#a.mean_dim(#d)) } else { quote!(#a.sum_dim(#d)) }
            }
            Op::CausalFill { t, value } => {
                let (t, value) = (t.tokens(), scalar(value));
                quote!(#a.masked_fill(&::blaze::nn::graph::causal_mask::<B, #r>(#t, &#a.device()), #value))
            }
            Op::Kernel { path, args: kargs } => {
                let list = self.kernel_args(kargs, args, false);
                quote!(::blaze::runtime::kernel::call::<#path::Kernel, B, #r>(&[#(#list),*]))
            }
            Op::Positions(t) => {
                let t = t.tokens();
                quote!(::blaze::nn::graph::positions::<B>(#t, &__device))
            }
            Op::Input | Op::Layer(_) | Op::Nested(_) | Op::Attend(_) | fused_ops!() => TokenStream::new(),
        }
    }

    /// Binds each input to `v{k}`, checks its dims, and binds the symbols;
    /// the messages name the model's int8 form in its forward (`int8`).
    fn bind_inputs(&self, int8: bool) -> TokenStream {
        let name = match int8 {
            true => crate::quant::ident(self.model).to_string(),
            false => self.model.ident.to_string(),
        };
        let mut out = TokenStream::new();
        let mut seen = HashSet::new();
        for (i, &k) in self.low.inputs.iter().enumerate() {
            let (id, arg) = (value_ident(k), &self.input_names[i]);
            let want =
                format!("[batch, {}]", show(&self.low.vals[k].shape, &self.low.symbols).trim_matches(['[', ']']));
            let msg = match self.low.inputs.len() {
                1 => format!("{name}::forward: expects input {want}, got {{:?}}"),
                _ => format!("{name}::forward: input `{arg}` expects {want}, got {{:?}}"),
            };
            out.extend(quote!(let #id = ::core::clone::Clone::clone(#arg); let __shape = #id.shape();));
            for (d, dim) in self.low.vals[k].shape.iter().enumerate() {
                let at = tensor_dim(d);
                match dim.name() {
                    Some(&sym) if seen.insert(sym) => {
                        let sid = sym_ident(sym);
                        out.extend(quote!(let #sid: usize = __shape[#at];));
                    }
                    _ => {
                        let want = dim.tokens();
                        out.extend(quote!(::core::assert!(__shape[#at] == #want, #msg, __shape);));
                    }
                }
            }
        }
        let positions = self.low.nodes.iter().any(|n| matches!(n.op, Op::Positions(_)));
        if let (true, Some(&first)) = (positions, self.low.inputs.first()) {
            let id = value_ident(first);
            out.extend(quote!(let __device = #id.device();));
        }
        out
    }

    /// The inference forward's statements, ending with the output.
    pub fn forward(&self) -> TokenStream {
        self.forward_stmts(false, false)
    }

    /// The int8 model's inference forward (`blaze::quant`): the same
    /// statements, each field called as its quantized form, and the `where`
    /// bounds that its nested models' calls need; `None` when a nested
    /// model takes several inputs (its int8 form has no trait to call it by).
    pub fn forward_int8(&self) -> Option<(TokenStream, Vec<TokenStream>)> {
        let mut bounds = Vec::new();
        for n in &self.low.nodes {
            if let Op::Nested(callee) = &n.op {
                let [x] = n.args[..] else { return None };
                let ty = field_ty(&self.fields()[callee.field].kind);
                let (ri, ro) = (self.rank(x), self.rank(n.out));
                bounds.push(
                    quote!(<#ty as ::blaze::quant::Quantize<B>>::Quantized: ::blaze::quant::InferBlock<B, #ri, #ro>),
                );
            }
        }
        Some((self.forward_stmts(false, true), bounds))
    }

    /// The inference forward's statements; with `decode`, those of a
    /// decoding step (`decode.rs`): causal attention over `state`'s cache,
    /// nested models' steps, positions after those `state` has seen.
    fn forward_stmts(&self, decode: bool, int8: bool) -> TokenStream {
        let quantized = |ty: TokenStream| match int8 {
            true => quote!(<#ty as ::blaze::quant::Quantize<B>>::Quantized),
            false => ty,
        };
        let mut out = self.bind_inputs(int8);
        let fused = self.fused_for_inference();
        let skipped: HashSet<usize> = fused.values().map(Epilogue::node).collect();
        for (i, n) in self.low.nodes.iter().enumerate() {
            let o = value_ident(n.out);
            let span = proc_macro2::Span::call_site().located_at(n.span);
            let stmt = match &n.op {
                Op::Input | Op::Seed(_) => continue,
                _ if skipped.contains(&i) => continue,
                Op::Fused(_) | Op::SoftmaxWith(_) => {
                    let e = self.fused_expr(i, Pass::Infer);
                    quote_spanned!(span=> let #o = #e;)
                }
                Op::Layer(callee) if fused.contains_key(&i) => {
                    let e = &fused[&i];
                    let (at, x, y) = (access(*callee, self.fields()), value_ident(n.args[0]), e.output(self.low));
                    let call = e.call(&x, false);
                    quote_spanned!(span=> let #y = #at.#call;)
                }
                _ if decode && let Some(step) = self.decode_stmt(i, int8) => step,
                Op::Layer(callee) => {
                    let ty = quantized(field_ty(&self.fields()[callee.field].kind));
                    let mut path = self.layer_path(ty.clone(), n.args[0], n.out);
                    if int8 {
                        let (ri, ro) = (self.rank(n.args[0]), self.rank(n.out));
                        path = quote!(<#ty as ::blaze::quant::Infer<B, #ri, #ro>>);
                    }
                    let (at, x) = (access(*callee, self.fields()), value_ident(n.args[0]));
                    quote_spanned!(span=> let #o = #path::forward(&#at, &#x);)
                }
                Op::Nested(callee) if int8 => {
                    let ty = quantized(field_ty(&self.fields()[callee.field].kind));
                    let (ri, ro) = (self.rank(n.args[0]), self.rank(n.out));
                    let (at, x) = (access(*callee, self.fields()), value_ident(n.args[0]));
                    quote_spanned!(span=> let #o = <#ty as ::blaze::quant::InferBlock<B, #ri, #ro>>::forward(&#at, &#x);)
                }
                Op::Nested(callee) => {
                    let at = access(*callee, self.fields());
                    let xs = n.args.iter().map(|&k| value_ident(k));
                    match self.nested_path(*callee, n.args.len()) {
                        Some(path) => quote_spanned!(span=> let #o = #path::forward(&#at, #(&#xs),*);),
                        None => quote_spanned!(span=> let #o = #at.forward(#(&#xs),*);),
                    }
                }
                Op::Attend(callee) => {
                    let (at, mut path, [q, k, v], mask) = self.attend_parts(*callee, &n.args);
                    if int8 {
                        let ty = quantized(field_ty(&self.fields()[callee.field].kind));
                        path = quote!(<#ty as ::blaze::quant::InferAttend<B>>);
                    }
                    quote_spanned!(span=> let #o = #path::attend(&#at, &#q, &#k, &#v, #mask);)
                }
                op @ computed!() => {
                    let e = self.op_expr(op, &n.args, n.out);
                    quote_spanned!(span=> let #o = #e;)
                }
            };
            out.extend(stmt);
        }
        let o = value_ident(self.low.output);
        out.extend(quote!(#o));
        out
    }

    /// The training forward's statements, ending with `(output, cache)`.
    pub fn forward_train(&self, cache_ident: &syn::Ident, backward: &Backward) -> TokenStream {
        let mut out = self.bind_inputs(false);
        let mut caches = Vec::new();
        let fused = self.fused();
        let skipped: HashSet<usize> = fused.values().map(Epilogue::node).collect();
        for (i, n) in self.low.nodes.iter().enumerate() {
            let o = value_ident(n.out);
            let span = proc_macro2::Span::call_site().located_at(n.span);
            let ci = layer_cache_ident(i);
            let stmt = match &n.op {
                Op::Input => continue,
                Op::Seed(callee) => {
                    // A dropout in a group draws its seed where the layer
                    // would have (the draws keep the body's order) and keeps
                    // it, not its mask.
                    let (d, at) = (seed_ident(i), access(*callee, self.fields()));
                    caches.push(d.clone());
                    quote_spanned! {span=>
                        let #d: ::core::option::Option<u64> = (ctx.train && #at.p > 0.0).then(|| ctx.rng.next_u64());
                    }
                }
                _ if skipped.contains(&i) => continue,
                Op::Fused(_) if self.norm_root(i) => {
                    // The group's values and statistics are the layer's cache.
                    caches.push(ci.clone());
                    let e = self.fused_expr(i, Pass::Train);
                    quote_spanned!(span=>
                        let (#o, __stats, __kept) = #e;
                        let #ci = (__kept.expect("kept in training"), __stats);
                    )
                }
                Op::Fused(_) | Op::SoftmaxWith(_) => {
                    let e = self.fused_expr(i, Pass::Train);
                    quote_spanned!(span=> let #o = #e;)
                }
                Op::Layer(callee) if fused.contains_key(&i) => {
                    // The layer caches its input; a fused activation's output
                    // is a value the backward reads.
                    let e = &fused[&i];
                    let (at, x, y) = (access(*callee, self.fields()), value_ident(n.args[0]), e.output(self.low));
                    let keep = if self.plan.recomputed_input(i).is_some() {
                        quote!(_)
                    } else {
                        caches.push(ci.clone());
                        quote!(#ci)
                    };
                    let call = e.call(&x, true);
                    quote_spanned!(span=> let (#y, #keep) = #at.#call;)
                }
                Op::Layer(callee) => {
                    // A layer whose input the backward recomputes keeps no cache.
                    let keep = if self.plan.recomputed_input(i).is_some() {
                        quote!(_)
                    } else {
                        caches.push(ci.clone());
                        quote!(#ci)
                    };
                    let path = self.layer_path(field_ty(&self.fields()[callee.field].kind), n.args[0], n.out);
                    let (at, x) = (access(*callee, self.fields()), value_ident(n.args[0]));
                    quote_spanned!(span=> let (#o, #keep) = #path::forward_train(&mut #at, &#x, ctx);)
                }
                Op::Nested(callee) => {
                    caches.push(ci.clone());
                    let at = access(*callee, self.fields());
                    let xs = n.args.iter().map(|&k| value_ident(k));
                    match self.nested_path(*callee, n.args.len()) {
                        Some(path) => {
                            quote_spanned!(span=> let (#o, #ci) = #path::forward_train(&mut #at, #(&#xs,)* ctx);)
                        }
                        None => quote_spanned!(span=> let (#o, #ci) = #at.forward_train(#(&#xs,)* ctx);),
                    }
                }
                Op::Attend(callee) => {
                    caches.push(ci.clone());
                    let (at, path, [q, k, v], mask) = self.attend_parts(*callee, &n.args);
                    quote_spanned!(span=> let (#o, #ci) = #path::attend_train(&mut #at, &#q, &#k, &#v, #mask, ctx);)
                }
                op @ computed!() => {
                    let e = self.op_expr(op, &n.args, n.out);
                    quote_spanned!(span=> let #o = #e;)
                }
            };
            out.extend(stmt);
        }
        let (vals, shapes) = backward.kept(self.low, self.plan);
        let vs: Vec<_> = vals.iter().map(|&k| value_ident(k)).collect();
        let ss: Vec<_> = shapes.iter().map(|&k| shape_ident(k)).collect();
        let sv: Vec<_> = shapes.iter().map(|&k| value_ident(k)).collect();
        let syms: Vec<_> = (0..self.low.symbols.len()).map(sym_ident).collect();
        let o = value_ident(self.low.output);
        out.extend(quote! {
            let __cache = #cache_ident {
                #(#vs: ::core::clone::Clone::clone(&#vs),)*
                #(#ss: #sv.shape(),)*
                #(#caches,)*
                syms: [#(#syms),*],
                __backend: ::core::marker::PhantomData,
            };
            (#o, __cache)
        });
        out
    }
}
