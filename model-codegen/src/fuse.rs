//! Fusion, a pass from a model's lowered ops to its fused ops ([`fuse`]):
//! maximal groups of elementwise ops whose intermediate values nothing
//! else reads become one `Op::Fused`, a kernel of the kernel IR
//! (`blaze_kernel_dsl::ir`), emitted
//! as a type with its CPU loop, its naga-validated WGSL and its partials,
//! and, for the backward, one adjoint kernel per input (`g * ∂f/∂a_i` in
//! one pass). The forward computes a group in one pass over memory
//! instead of one per op; the training forward keeps the group's inputs,
//! not its intermediates (the adjoint kernels recompute them).
//!
//! A softmax over the last dim of a causally masked and scaled input
//! (`(s * 0.25).masked_fill(causal_mask(T), -1e9).softmax(-1)`, attention's
//! weights) becomes one `Op::SoftmaxWith`, run as `softmax_with`, whose
//! backward applies the scale and the mask itself: the scaled and masked
//! scores are never stored.
//!
//! Every match over an op names each variant (the lint below holds the
//! passes to it), so an op added to the IR is a compile error here until
//! fusion decides what to do with it.
#![deny(clippy::wildcard_enum_match_arm)]

use blaze_spec::ops::Unary;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::ops::{
    Bin, KernelArg, Lowered, Node, Op, Rank, ScalarOp, Val, elementwise_ops, fused_ops, movement_ops, row_ops,
};
use blaze_kernel_dsl::ir::{self, Expr, ExprKind, Intrinsic, Kernel, Kind, Stmt, Ty};

/// The most arguments a fused kernel takes; its adjoints take one more.
const MAX_INPUTS: usize = ir::MAX_ARGS - 1;

/// An argument of a fused group.
#[derive(Debug, Clone)]
pub enum Input {
    /// A value of the body, read as a tensor (broadcast to the output).
    Value(usize),
    /// A scalar operand, evaluated where the group runs.
    Number(TokenStream),
    /// The causal mask over the last two dims (`T` of them), 1 where a
    /// `masked_fill(causal_mask(T), ..)` fills, as a tensor of the group's
    /// dtype made where the group runs.
    Causal(super::ops::Dim),
    /// Part of the dropout at node `node`: in training, the layer's
    /// threshold and scale and the noise drawn from the seed the forward
    /// drew where the node was (the backward draws it again); in
    /// inference, numbers that make it the identity.
    Dropout { node: usize, part: DropPart },
}

/// The three arguments a dropout adds to its group's kernel, which
/// computes `noise < threshold ? 0 : x * scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropPart {
    Threshold,
    Scale,
    Noise,
}

/// One fused group: its nodes in body order before fusion (the last,
/// `root`, produces the only value read outside the group), its
/// arguments, and the kernel.
#[derive(Debug)]
pub struct Group {
    pub nodes: Vec<usize>,
    pub root: usize,
    /// The value the group makes: the root's.
    pub out: usize,
    pub inputs: Vec<Input>,
    pub kernel: Kernel,
    /// The ops, by their names in the body, for the plan.
    pub ops: Vec<String>,
    /// The value the kernel computes: the root's, or with `reduce` the
    /// one the reduction reads.
    pub value: usize,
    /// A reduction over the last dim that reads the kernel's value alone
    /// and runs in the same pass (`root` is it).
    pub reduce: Option<RowOp>,
}

/// A reduction over the last dim that a group runs in its pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOp {
    Sum,
    Mean,
    Softmax,
    LogSoftmax,
    /// A `LayerNorm` or `RMSNorm` field (`centre` for LayerNorm): the
    /// kernel computes each row's statistics and output in its pass, and
    /// the layer's cache is its usual `(input, stats)`.
    Norm {
        centre: bool,
        layer: super::ops::Callee,
    },
}

impl RowOp {
    /// The op's name in the body.
    fn name(self) -> &'static str {
        match self {
            RowOp::Sum => "sum",
            RowOp::Mean => "mean",
            RowOp::Softmax => "softmax",
            RowOp::LogSoftmax => "log_softmax",
            RowOp::Norm { centre: true, .. } => "layer_norm",
            RowOp::Norm { centre: false, .. } => "rms_norm",
        }
    }
}

/// A softmax (node `root`, by its index before fusion) that takes the
/// scale and causal mask applied to its input by the nodes before it.
#[derive(Debug)]
pub struct SoftmaxFold {
    pub root: usize,
    /// The ops, by their names in the body, the softmax last, for the plan.
    pub ops: Vec<&'static str>,
    /// The value the scale (or mask) was applied to.
    pub input: usize,
    pub log: bool,
    /// The scale, a positive number known while compiling.
    pub scale: Option<f64>,
    pub causal: bool,
}

impl SoftmaxFold {
    /// The `SoftmaxOptions` expression.
    pub fn options(&self) -> TokenStream {
        let mut o = quote!(::blaze::SoftmaxOptions::default());
        if self.log {
            o.extend(quote!(.log()));
        }
        if let Some(s) = self.scale {
            o.extend(quote!(.scale(#s)));
        }
        if self.causal {
            o.extend(quote!(.causal()));
        }
        o
    }
}

/// What fusion made of a body: its groups and softmax folds, which the
/// ops after fusion call (`Op::Fused`, `Op::SoftmaxWith`), and the layers
/// whose input the backward rebuilds.
#[derive(Debug)]
pub struct Plan {
    /// False under `fuse = false`: nothing fuses but what a sequential
    /// model fuses too (an activation into its layer's bias pass).
    pub enabled: bool,
    pub groups: Vec<Group>,
    pub softmaxes: Vec<SoftmaxFold>,
    /// `(layer, producer)`, by their index after fusion: layer nodes whose
    /// cache the backward rebuilds from their input, which it recomputes
    /// from the producer's cache (`nn::Recompute`), so the training
    /// forward does not keep it.
    pub recompute: Vec<(usize, usize)>,
}

impl Plan {
    /// No fusion (`#[model(.., fuse = false)]`).
    pub fn none() -> Plan {
        Plan { enabled: false, groups: Vec::new(), softmaxes: Vec::new(), recompute: Vec::new() }
    }

    /// The producer whose cache rebuilds layer node `i`'s input.
    pub fn recomputed_input(&self, i: usize) -> Option<usize> {
        self.recompute.iter().find(|(l, _)| *l == i).map(|(_, p)| *p)
    }

    /// The module holding group `g`'s kernels.
    pub fn module(model: &syn::Ident, g: usize) -> syn::Ident {
        format_ident!("__blaze_fused_{}_{}", model, g)
    }
}

/// The ops that are no function of each element alone: sources, calls of
/// nested models and attention, products, moves and reductions. A
/// pattern, so that the matches of this pass name every op: a new op
/// joins this list or an elementwise arm of [`fusable`].
macro_rules! not_elementwise {
    () => {
        Op::Input
            | Op::Positions(_)
            | Op::Nested(_)
            | Op::Attend(_)
            | Op::Matmul
            | movement_ops!()
            | row_ops!()
            | fused_ops!()
    };
}

/// What an op is as an elementwise function of its operands, if it is one
/// a group may hold.
pub fn fusable(op: &Op) -> Option<&'static str> {
    Some(match op {
        Op::Bin(Bin::Add) => "add",
        Op::Bin(Bin::Sub) => "sub",
        Op::Bin(Bin::Mul) => "mul",
        Op::Bin(Bin::Div) => "div",
        Op::Scalar(ScalarOp::Add, _) => "add_scalar",
        Op::Scalar(ScalarOp::Sub, _) => "sub_scalar",
        Op::Scalar(ScalarOp::Mul, _) => "mul_scalar",
        Op::Scalar(ScalarOp::Div, _) => "div_scalar",
        Op::Scalar(ScalarOp::RSub, _) => "rsub_scalar",
        Op::Scalar(ScalarOp::RDiv, _) => "rdiv_scalar",
        // A number form whose gradient is its entry's partial (`powf`); not
        // one whose entry writes its partials (`clamp_min`'s gradient
        // passes at its bound, where `maximum`'s splits).
        Op::Scalar(ScalarOp::Table(op), _) if op.grads.is_none() => op.with_number,
        Op::Neg => "neg",
        Op::Unary(u) => u.name,
        Op::Binary(op) => op.name,
        Op::CausalFill { .. } => "masked_fill",
        // Only `Dropout` layers are let into groups (`plan`'s `dropouts`).
        Op::Layer(_) => "dropout",
        // A `kernel!` function: named by its own name in the plan.
        Op::Kernel { .. } => "kernel",
        // A number form whose entry writes its own partials.
        Op::Scalar(ScalarOp::Table(_), _) => return None,
        not_elementwise!() => return None,
    })
}

/// Groups the fusable nodes of `low` (elementwise ops, and the layer
/// nodes in `dropouts`, which call a `Dropout`), leaving out `taken` ones
/// (fused already, as an activation into its layer). A node joins the
/// group of an operand made by a fusable node that only it reads, as long
/// as the group keeps to `MAX_INPUTS` arguments and one rank; groups of
/// one op stay unfused. `norms` are the layer nodes calling a LayerNorm
/// (`true`) or RMSNorm (`false`), which may end a group.
///
/// The ops after fusion: each group's ops become one `Op::Fused` where
/// its root was (a dropout in it leaves an `Op::Seed`), each softmax
/// fold's one `Op::SoftmaxWith`; values keep their numbers (a seed's is
/// new).
pub fn fuse(
    model: &syn::Ident,
    low: &Lowered,
    taken: &[usize],
    dropouts: &[usize],
    norms: &[(usize, bool)],
) -> (Lowered, Plan) {
    let n = low.nodes.len();
    let uses = low.uses();
    let producer: Vec<Option<usize>> = {
        let mut p = vec![None; low.vals.len()];
        for (i, node) in low.nodes.iter().enumerate() {
            p[node.out] = Some(i);
        }
        p
    };
    let (softmaxes, softmax_of) = fold_softmaxes(low, &uses, &producer);
    let elementwise = |i: usize| {
        if let Op::Layer(_) = low.nodes[i].op { dropouts.contains(&i) } else { fusable(&low.nodes[i].op).is_some() }
    };
    let ok = |i: usize| elementwise(i) && !taken.contains(&i) && softmax_of[i].is_none();
    // members[g]: the nodes of tentative group g, by its root.
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        if !ok(i) {
            continue;
        }
        let rank = low.vals[low.nodes[i].out].rank();
        let mut nodes = vec![i];
        for &a in &low.nodes[i].args {
            let Some(m) = producer[a] else { continue };
            let Some(g) = group_of[m] else { continue };
            if uses[a] != 1 || members[g].is_empty() {
                continue;
            }
            let mut joined = members[g].clone();
            joined.extend(&nodes);
            joined.sort_unstable();
            if inputs_of(low, &joined).len() <= MAX_INPUTS && same_rank(low, &joined, &rank) {
                nodes = joined;
                members[g].clear();
            }
        }
        let g = members.len();
        for &m in &nodes {
            group_of[m] = Some(g);
        }
        members.push(nodes);
    }
    let mut plan = Plan { enabled: true, groups: Vec::new(), softmaxes, recompute: Vec::new() };
    let mut in_group: Vec<Option<usize>> = vec![None; n];
    // A sum, mean, softmax, log-softmax, LayerNorm or RMSNorm over the
    // last dim that alone reads a group's value joins the group (a single
    // op with one is worth a kernel too); a softmax that takes its scale
    // or mask stays folded.
    let folded: Vec<bool> = softmax_of.iter().map(Option::is_some).collect();
    let reduce_after = |i: usize| {
        let v = low.nodes[i].out;
        let r = (0..n).find(|&r| low.nodes[r].args.contains(&v))?;
        let last = |dim: usize| uses[v] == 1 && dim + 1 == low.vals[v].shape.len();
        let op = match low.nodes[r].op {
            Op::Reduce { dim, mean } if last(dim) => {
                if mean {
                    RowOp::Mean
                } else {
                    RowOp::Sum
                }
            }
            Op::Softmax(dim) if last(dim) && !folded[r] => RowOp::Softmax,
            Op::LogSoftmax(dim) if last(dim) && !folded[r] => RowOp::LogSoftmax,
            Op::Layer(layer) if uses[v] == 1 => {
                let &(_, centre) = norms.iter().find(|(n, _)| *n == r)?;
                RowOp::Norm { centre, layer }
            }
            // Over another dim, folded, or not reading the value alone.
            Op::Reduce { .. } | Op::Softmax(_) | Op::LogSoftmax(_) | Op::Layer(_) => return None,
            // Not a reduction of a row.
            Op::Input
            | Op::Positions(_)
            | Op::Nested(_)
            | Op::Attend(_)
            | Op::Matmul
            | elementwise_ops!()
            | movement_ops!()
            | fused_ops!() => return None,
        };
        Some((r, op))
    };
    for nodes in members.into_iter().filter(|m| m.len() > 1 || m.last().is_some_and(|&i| reduce_after(i).is_some())) {
        let g = plan.groups.len();
        let name = format!("{}_fused{g}", model);
        let mut group = build(low, nodes, name);
        if let Some((r, op)) = reduce_after(group.root) {
            group.nodes.push(r);
            group.root = r;
            group.reduce = Some(op);
            group.ops.push(op.name().into());
            group.out = low.nodes[r].out;
        }
        for &m in &group.nodes {
            in_group[m] = Some(g);
        }
        plan.groups.push(group);
    }
    let fused = rewrite(low, &mut plan, &in_group, &softmax_of);
    (fused, plan)
}

/// The ops after fusion (see [`fuse`]); the groups' dropout arguments
/// renumbered to their `Op::Seed`.
fn rewrite(low: &Lowered, plan: &mut Plan, in_group: &[Option<usize>], softmax_of: &[Option<usize>]) -> Lowered {
    let mut nodes = Vec::new();
    let mut vals = low.vals.clone();
    let mut seeds: Vec<(usize, usize)> = Vec::new();
    for (i, node) in low.nodes.iter().enumerate() {
        // A dropout draws its seed where it was, also as a group's root; a
        // seed makes a value of its own, which nothing reads.
        let dropout =
            |g: usize| plan.groups[g].inputs.iter().any(|x| matches!(x, Input::Dropout { node, .. } if *node == i));
        if let (Some(g), Op::Layer(callee)) = (in_group[i], &node.op)
            && dropout(g)
        {
            seeds.push((i, nodes.len()));
            vals.push(Val { shape: Vec::new(), opaque: None, batched: false, grad: false, params: false });
            nodes.push(Node {
                op: Op::Seed(*callee),
                args: Vec::new(),
                out: vals.len() - 1,
                field: None,
                ..node.clone()
            });
        }
        let (op, args) = match (in_group[i], softmax_of[i]) {
            (Some(g), _) if plan.groups[g].root == i => {
                let inputs = &plan.groups[g].inputs;
                (
                    Op::Fused(g),
                    inputs.iter().filter_map(|x| if let Input::Value(k) = x { Some(*k) } else { None }).collect(),
                )
            }
            (Some(_), _) => continue,
            (None, Some(f)) if plan.softmaxes[f].root == i => (Op::SoftmaxWith(f), vec![plan.softmaxes[f].input]),
            (None, Some(_)) => continue,
            (None, None) => {
                nodes.push(node.clone());
                continue;
            }
        };
        // A fused op is no field's call.
        nodes.push(Node { op, args, field: None, ..node.clone() });
    }
    for input in plan.groups.iter_mut().flat_map(|g| &mut g.inputs) {
        if let Input::Dropout { node, .. } = input {
            *node = seeds.iter().find(|(before, _)| before == node).expect("a fused dropout leaves its seed").1;
        }
    }
    Lowered {
        vals,
        nodes,
        inputs: low.inputs.clone(),
        output: low.output,
        symbols: low.symbols.clone(),
        asserts: low.asserts.clone(),
        first_output: low.first_output.clone(),
    }
}

/// The softmaxes over the last dim whose input only they read and is the
/// causal fill (with a value that underflows every weight it replaces) or
/// the positive scaling, by a number written in the body, of the value
/// before, or both (scale first).
fn fold_softmaxes(low: &Lowered, uses: &[usize], producer: &[Option<usize>]) -> (Vec<SoftmaxFold>, Vec<Option<usize>>) {
    let mut folds = Vec::new();
    let mut fold_of = vec![None; low.nodes.len()];
    for (i, node) in low.nodes.iter().enumerate() {
        let (Op::Softmax(dim) | Op::LogSoftmax(dim)) = node.op else { continue };
        let log = matches!(node.op, Op::LogSoftmax(_));
        if dim + 1 != low.vals[node.out].shape.len() {
            continue;
        }
        // The single-use node making `v`, if any.
        let only = |v: usize| producer[v].filter(|_| uses[v] == 1);
        let mut nodes = vec![i];
        let mut input = node.args[0];
        let mut causal = false;
        if let Some(m) = only(input)
            && let Op::CausalFill { value, .. } = &low.nodes[m].op
            && underflows(value)
        {
            causal = true;
            nodes.push(m);
            input = low.nodes[m].args[0];
        }
        let mut scale = None;
        if let Some(m) = only(input)
            && let Op::Scalar(op @ (ScalarOp::Mul | ScalarOp::Div), s) = &low.nodes[m].op
            && let Some(s) = positive(s)
        {
            scale = Some(if *op == ScalarOp::Mul { s } else { 1.0 / s });
            nodes.push(m);
            input = low.nodes[m].args[0];
        }
        if nodes.len() == 1 {
            continue;
        }
        nodes.reverse();
        for &m in &nodes {
            fold_of[m] = Some(folds.len());
        }
        // The scale and the fill by their names, then the softmax's.
        let mut ops: Vec<&'static str> = nodes[..nodes.len() - 1]
            .iter()
            .map(|&m| fusable(&low.nodes[m].op).expect("a fold scales and masks by elementwise ops"))
            .collect();
        ops.push(if log { "log_softmax" } else { "softmax" });
        folds.push(SoftmaxFold { root: i, ops, input, log, scale, causal });
    }
    (folds, fold_of)
}

/// A number literal in the body, possibly in parentheses.
#[allow(clippy::wildcard_enum_match_arm, reason = "syn's expressions are non-exhaustive")]
fn literal(ts: &TokenStream) -> Option<(f64, bool)> {
    let mut e: syn::Expr = syn::parse2(ts.clone()).ok()?;
    let mut negative = false;
    loop {
        match e {
            syn::Expr::Paren(p) => e = *p.expr,
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => {
                negative = !negative;
                e = *expr;
            }
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => {
                return Some((f.base10_parse().ok()?, negative));
            }
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                return Some((i.base10_parse().ok()?, negative));
            }
            syn::Expr::Path(p) => {
                let last = p.path.segments.last()?.ident.to_string();
                return match last.as_str() {
                    "INFINITY" => Some((f64::INFINITY, negative)),
                    "NEG_INFINITY" => Some((f64::INFINITY, !negative)),
                    _ => None,
                };
            }
            _ => return None,
        }
    }
}

/// A positive finite number written in the body.
fn positive(ts: &TokenStream) -> Option<f64> {
    literal(ts).filter(|&(v, neg)| !neg && v > 0.0 && v.is_finite()).map(|(v, _)| v)
}

/// A fill value so negative that the weights it replaces are 0 in f32, as
/// a causal softmax's masked ones are: `-1e9` or below, or `-inf`.
fn underflows(ts: &TokenStream) -> bool {
    literal(ts).is_some_and(|(v, neg)| neg && v >= 1e9)
}

/// Whether every tensor a group reads or makes has rank `rank` (kernel
/// calls take tensors of one rank).
fn same_rank(low: &Lowered, nodes: &[usize], rank: &Rank) -> bool {
    nodes.iter().all(|&i| {
        let node = &low.nodes[i];
        low.vals[node.out].rank() == *rank && node.args.iter().all(|&a| low.vals[a].rank() == *rank)
    })
}

/// The arguments of the group of `nodes`: values made outside it, each
/// once, and every scalar operand.
fn inputs_of(low: &Lowered, nodes: &[usize]) -> Vec<Input> {
    let made: Vec<usize> = nodes.iter().map(|&i| low.nodes[i].out).collect();
    let mut inputs: Vec<Input> = Vec::new();
    for &i in nodes {
        let node = &low.nodes[i];
        for &a in &node.args {
            let seen = inputs.iter().any(|x| matches!(x, Input::Value(v) if *v == a));
            if !made.contains(&a) && !seen {
                inputs.push(Input::Value(a));
            }
        }
        match &node.op {
            Op::Scalar(_, s) => inputs.push(Input::Number(s.clone())),
            Op::Kernel { args, .. } => {
                for a in args {
                    if let KernelArg::Number(s) = a {
                        inputs.push(Input::Number(s.clone()));
                    }
                }
            }
            Op::CausalFill { t, value } => {
                inputs.push(Input::Causal(t.clone()));
                inputs.push(Input::Number(value.clone()));
            }
            Op::Layer(_) => {
                for part in [DropPart::Threshold, DropPart::Scale, DropPart::Noise] {
                    inputs.push(Input::Dropout { node: i, part });
                }
            }
            // Operands alone.
            Op::Unary(_) | Op::Bin(_) | Op::Binary(_) | Op::Neg => {}
            not_elementwise!() => unreachable!("only fusable ops are grouped"),
        }
    }
    inputs
}

/// A `kernel!` function's name: the last segment of the path it is
/// called by.
pub fn kernel_name(path: &TokenStream) -> String {
    path.clone()
        .into_iter()
        .filter_map(|t| if let proc_macro2::TokenTree::Ident(i) = t { Some(i.to_string()) } else { None })
        .last()
        .unwrap_or_default()
}

fn at(kind: ExprKind, span: Span) -> Expr {
    Expr::new(kind, span)
}

fn bin(op: ir::Bin, a: Expr, b: Expr, span: Span) -> Expr {
    at(ExprKind::Binary(op, Box::new(a), Box::new(b)), span)
}

fn call(f: Intrinsic, args: Vec<Expr>, span: Span) -> Expr {
    at(ExprKind::Call(f, args), span)
}

/// Op `u` of the op table at `x` in the kernel IR: a call of the table's
/// kernel (`blaze_runtime::unary`), the function the unfused op runs, so a
/// fused model computes the bits an unfused one does, with the table's
/// derivative.
fn unary_expr(u: &Unary, x: Expr, sp: Span) -> Expr {
    blaze_kernel_dsl::table::call(u.name, vec![x], sp)
}

/// Inverted dropout of `x` in the kernel IR, given its threshold, scale
/// and noise: 0 where the element's draw falls below the threshold, the
/// input scaled elsewhere.
fn dropout_expr(x: Expr, [threshold, scale, noise]: [Expr; 3], sp: Span) -> Expr {
    let dropped = bin(ir::Bin::Lt, noise, threshold, sp);
    let kept = bin(ir::Bin::Mul, x, scale, sp);
    call(Intrinsic::Select, vec![dropped, at(ExprKind::Float(0.0), sp), kept], sp)
}

/// The three arguments (threshold, scale, noise) of a fused dropout whose
/// layer `layer` names: with `seed` (an `Option<u64>` expression, `Some`
/// where training drew one) the layer's threshold and scale and noise
/// drawn from the seed; without, numbers that make it the identity.
pub fn dropout_args(layer: &TokenStream, seed: Option<TokenStream>) -> [TokenStream; 3] {
    let arg = quote!(::blaze::runtime::kernel::Arg);
    match seed {
        None => [quote!(#arg::Number(0.0)), quote!(#arg::Number(1.0)), quote!(#arg::Number(1.0))],
        Some(seed) => [
            quote!(#arg::Number(#seed.map_or(0.0, |_| #layer.threshold()))),
            quote!(#arg::Number(#seed.map_or(1.0, |_| #layer.scale()))),
            quote!(#seed.map_or(#arg::Number(1.0), #arg::Uniform)),
        ],
    }
}

/// The group of `nodes` with its kernel: a parameter per argument, a `let`
/// per op, the root's value as the result.
fn build(low: &Lowered, nodes: Vec<usize>, name: String) -> Group {
    let inputs = inputs_of(low, &nodes);
    let root = *nodes.last().expect("a group has nodes");
    let span = low.nodes[root].span;
    let mut k = Kernel::new(name, span, None);
    let mut param_of_value = Vec::new();
    let mut scalars = Vec::new();
    let mut masks = Vec::new();
    let mut drops = Vec::new();
    for (index, input) in inputs.iter().enumerate() {
        let v = k.declare(format!("a{index}"), Ty::F32, Kind::Element { index });
        k.params.push(v);
        match input {
            Input::Value(val) => param_of_value.push((*val, v)),
            Input::Number(_) => scalars.push(v),
            Input::Causal(_) => masks.push(v),
            Input::Dropout { node, part } => drops.push((*node, *part, v)),
        }
    }
    let drop_param = |i: usize, part: DropPart, sp: Span| {
        let v = drops.iter().find(|d| d.0 == i && d.1 == part).expect("a dropout has its three parameters").2;
        at(ExprKind::Var(v), sp)
    };
    let mut scalars = scalars.into_iter();
    let mut masks = masks.into_iter();
    let mut binding_of_value: Vec<(usize, usize)> = Vec::new();
    let mut ops = Vec::new();
    for &i in &nodes {
        let node = &low.nodes[i];
        let sp = node.span;
        let operand = |a: usize| {
            let v = binding_of_value
                .iter()
                .chain(&param_of_value)
                .find(|(val, _)| *val == a)
                .map(|(_, v)| *v)
                .expect("every operand is an argument or made earlier in the group");
            at(ExprKind::Var(v), sp)
        };
        let x = operand(node.args[0]);
        let value = match &node.op {
            Op::Bin(op) => {
                let y = operand(node.args[1]);
                let op = match op {
                    Bin::Add => ir::Bin::Add,
                    Bin::Sub => ir::Bin::Sub,
                    Bin::Mul => ir::Bin::Mul,
                    Bin::Div => ir::Bin::Div,
                };
                bin(op, x, y, sp)
            }
            Op::Scalar(op, _) => {
                let s = at(ExprKind::Var(scalars.next().expect("one parameter per scalar")), sp);
                match op {
                    ScalarOp::Add => bin(ir::Bin::Add, x, s, sp),
                    ScalarOp::Sub => bin(ir::Bin::Sub, x, s, sp),
                    ScalarOp::Mul => bin(ir::Bin::Mul, x, s, sp),
                    ScalarOp::Div => bin(ir::Bin::Div, x, s, sp),
                    ScalarOp::RSub => bin(ir::Bin::Sub, s, x, sp),
                    ScalarOp::RDiv => bin(ir::Bin::Div, s, x, sp),
                    ScalarOp::Table(op) => blaze_kernel_dsl::table::call_binary(op.name, vec![x, s], sp),
                }
            }
            Op::Neg => at(ExprKind::Neg(Box::new(x)), sp),
            Op::Unary(u) => unary_expr(u, x, sp),
            Op::Binary(op) => blaze_kernel_dsl::table::call_binary(op.name, vec![x, operand(node.args[1])], sp),
            // The fill where the mask is 1, the value elsewhere.
            Op::CausalFill { .. } => {
                let m = at(ExprKind::Var(masks.next().expect("one mask per fill")), sp);
                let fill = at(ExprKind::Var(scalars.next().expect("one parameter per fill value")), sp);
                let masked = bin(ir::Bin::Gt, m, at(ExprKind::Float(0.5), sp), sp);
                call(Intrinsic::Select, vec![masked, fill, x], sp)
            }
            Op::Kernel { path, args } => {
                let args = args
                    .iter()
                    .map(|a| match a {
                        KernelArg::Tensor(i) => operand(node.args[*i]),
                        KernelArg::Number(_) => {
                            at(ExprKind::Var(scalars.next().expect("one parameter per number")), sp)
                        }
                    })
                    .collect();
                let f = ir::Extern { path: path.clone(), name: kernel_name(path), partial: None, table: false };
                at(ExprKind::Extern(Box::new(f), args), sp)
            }
            Op::Layer(_) => {
                let part = |p| drop_param(i, p, sp);
                dropout_expr(x, [part(DropPart::Threshold), part(DropPart::Scale), part(DropPart::Noise)], sp)
            }
            not_elementwise!() => unreachable!("only fusable ops are grouped"),
        };
        let b = k.declare(format!("t{i}"), Ty::F32, Kind::Local { mutable: false });
        k.body.push(Stmt::Let(b, value));
        binding_of_value.push((node.out, b));
        ops.push(if let Op::Kernel { path, .. } = &node.op {
            kernel_name(path)
        } else {
            fusable(&node.op).expect("only fusable ops are grouped").to_owned()
        });
    }
    let result = binding_of_value.last().map(|&(_, b)| b).expect("a group has nodes");
    k.result = Some(at(ExprKind::Var(result), span));
    let value = low.nodes[root].out;
    Group { nodes, root, out: value, inputs, kernel: k, ops, value, reduce: None }
}

/// The items of every group (a module each, with the kernel and its
/// adjoints) and each group's WGSL; a compile error at the group's first
/// op if a kernel does not check (an internal error).
pub fn items(model: &syn::Ident, low: &Lowered, plan: &Plan) -> (TokenStream, Vec<String>) {
    let mut out = TokenStream::new();
    let mut wgsl = Vec::new();
    for (g, group) in plan.groups.iter().enumerate() {
        let module = Plan::module(model, g);
        match blaze_kernel_dsl::fused_items(&group.kernel, true) {
            Ok((items, w)) => {
                // The WGSL calls each `kernel!` function by the name the
                // body calls it by, which must be its own.
                for &i in &group.nodes {
                    if let Op::Kernel { path, .. } = &low.nodes[i].op {
                        let name = kernel_name(path);
                        let msg = format!(
                            "`{name}` names a `kernel!` function imported under another name: a fused group \
                             calls it by its own (import it unrenamed, or turn fusion off with `fuse = false`)"
                        );
                        let span = path.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
                        out.extend(quote::quote_spanned! {span=>
                            const _: () = ::core::assert!(
                                ::blaze::runtime::kernel::same_name(
                                    <#path::Kernel as ::blaze::runtime::kernel::Elementwise>::NAME, #name),
                                #msg
                            );
                        });
                    }
                }
                out.extend(quote! {
                    #[doc(hidden)]
                    #[allow(non_snake_case)]
                    mod #module {
                        // `kernel!` functions the group calls, by the paths
                        // the body names them with.
                        #[allow(unused_imports)]
                        use super::*;
                        #items
                    }
                });
                wgsl.push(w);
            }
            Err(e) => {
                let msg = format!("internal error: fused group {g} of `{model}` does not check: {e}");
                out.extend(syn::Error::new(group.kernel.span, msg).to_compile_error());
                wgsl.push(String::new());
            }
        }
    }
    (out, wgsl)
}
