//! Differentiation, IR to IR: the reverse pass of a model's lowered ops,
//! after fusion, as a list of [`Step`]s over named gradients. Each step is
//! an adjoint of `blaze::runtime::adjoint` (the formulas the tape and the
//! layers use), a field's own backward, or a fused group's adjoint
//! kernel (`fuse.rs`). The steps say what they read, so the training
//! forward keeps exactly that ([`Backward::kept`]) and the plan counts
//! what the backward runs; `emit/backward.rs` prints them.
//!
//! Every match over an op names each variant (the lint below holds the
//! pass to it): an op added to the IR is a compile error here until its
//! adjoint is written.
#![deny(clippy::wildcard_enum_match_arm)]

use std::collections::{BTreeSet, HashSet};

use blaze_spec::ops::{Grad, Unary};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::fuse::{Input, Plan, RowOp};
use super::ir::Field;
use super::ops::{Bin, Callee, Dim, KernelArg, Lowered, Op, ScalarOp};

/// A tensor of the reverse pass.
#[derive(Debug, Clone)]
pub enum Term {
    /// The gradient of value `k`.
    Grad(usize),
    /// Value `k` as the training forward kept it.
    Kept(usize),
    /// Piece `j` that the step of node `i` made: `Part(i, j)`.
    Part(usize, usize),
    /// `blaze::runtime::adjoint::{f}`, as a tensor of value `rank_of`'s rank.
    Adjoint { f: &'static str, args: Vec<Arg>, rank_of: usize },
    /// Fused group `group`'s adjoint kernel for its argument `pos`, given
    /// the gradient of the value the kernel computes.
    Fused { group: usize, pos: usize, grad: Box<Term> },
    /// The partial in its argument `pos` of the `kernel!` function node
    /// `node` calls, at the arguments the forward called it with.
    Partial { node: usize, pos: usize },
}

/// An argument of an adjoint.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A tensor's storage, borrowed.
    Storage(Term),
    /// A tensor's storage, moved.
    Owned(Term),
    /// An adjoint's storage as it comes (`sum_to` takes it).
    Call(&'static str, Vec<Arg>),
    /// Value `k`'s shape, kept by the training forward.
    Shape(usize),
    /// A tensor's shape.
    ShapeOf(Term),
    /// Dim `d` (a tensor dim) of value `k`'s kept shape.
    Dim(usize, usize),
    /// Where a piece of a cat along tensor dim `d` starts: the sizes of
    /// the values before it along `d`, summed.
    Offset(Vec<usize>, usize),
    /// A narrow's start along tensor dim `d` of value `of`, counted back
    /// from its size when negative.
    Start { start: i64, of: usize, d: usize },
    /// The causal mask over `t` positions, on the device of value `like`'s
    /// gradient, of that gradient's rank.
    Causal { t: Dim, like: usize },
    /// Fixed while compiling: a dim index, a number of the body, options.
    Code(TokenStream),
}

/// How a field's backward is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A layer, through `Layer`.
    Layer,
    /// A nested model of one input, through `Differentiable`.
    Nested,
    /// A nested model of several inputs, as its inherent methods.
    Inherent,
    /// An attending layer, through `Attend` (query, keys and values).
    Attend,
}

/// One statement of the reverse pass.
#[derive(Debug)]
pub enum Step {
    /// `Part(node, 0)` is `term`: a gradient several adjoint kernels read.
    Let { node: usize, term: Term },
    /// Field `callee`'s backward at node `node`, from the gradient of the
    /// node's value: with `inputs`, each input's gradient as
    /// `Part(node, j)`, and the field's gradients where it holds
    /// parameters (without `inputs`, its `backward_params` alone). With
    /// `rebuilt`, the cache is rebuilt from that producer's cache.
    Call { node: usize, callee: Callee, via: Via, inputs: bool, params: bool, rebuilt: Option<usize> },
    /// Both partials of an op of two tensors of the op table at node
    /// `node`: `Part(node, 0)` and `Part(node, 1)`.
    Binary { node: usize, op: &'static blaze_spec::ops::Binary },
    /// The gradient of value `to` is `term` (`first`) or gains it; node
    /// `node`'s adjoint.
    Grad { to: usize, term: Term, first: bool, node: usize },
    /// Field `callee`'s gradients are ready: `backward_params_each` hands
    /// them to its visitor here.
    Ready(Callee),
    /// Field `callee`'s parameters never reached the output: zero gradients.
    Unreached(Callee),
    /// Input `k` never reached the output: a zero gradient.
    UnreachedInput(usize),
}

/// The reverse pass: the steps, in order.
#[derive(Debug)]
pub struct Backward {
    pub steps: Vec<Step>,
}

/// Whether operand `a` of a node with output `out` was broadcast.
fn broadcast(low: &Lowered, a: usize, out: usize) -> bool {
    let (x, y) = (&low.vals[a], &low.vals[out]);
    !x.same_shape(y) || x.batched != y.batched
}

/// A per-sample dim index as the tensor's dim (after the batch dim).
pub fn tensor_dim(d: usize) -> usize {
    d + 1
}

fn adjoint(f: &'static str, rank_of: usize, args: Vec<Arg>) -> Term {
    Term::Adjoint { f, args, rank_of }
}

fn code(d: usize) -> Arg {
    Arg::Code(quote!(#d))
}

/// A softmax's `SoftmaxOptions`, log or not.
fn softmax_options(log: bool) -> Arg {
    Arg::Code(if log {
        quote!(::blaze::SoftmaxOptions::default().log())
    } else {
        quote!(::blaze::SoftmaxOptions::default())
    })
}

/// Whether op `u`'s derivative reads its output (else its input).
pub fn of_output(u: &Unary) -> bool {
    matches!(u.grad, Grad::OfOutput(_))
}

/// A scalar of the body as an `f64`.
pub fn scalar(s: &TokenStream) -> TokenStream {
    quote!(((#s) as f64))
}

/// The `UnaryOp` or `BinaryOp` variant of an op of the op table.
pub fn table_op(kind: &str, variant: &str) -> TokenStream {
    let (kind, v) = (format_ident!("{}", kind), format_ident!("{}", variant));
    quote!(::blaze::#kind::#v)
}

/// The reverse pass of `low` under `plan`: with `full`, the gradient of
/// every value that depends on an input or a parameter; without, of those
/// that depend on a parameter (`backward_params`).
pub fn differentiate(low: &Lowered, plan: &Plan, fields: &[Field], full: bool) -> Backward {
    let need = |k: usize| if full { low.vals[k].grad } else { low.vals[k].params };
    let mut steps = Vec::new();
    let mut defined: HashSet<usize> = HashSet::from([low.output]);
    let mut reached: HashSet<Callee> = HashSet::new();
    for (i, n) in low.nodes.iter().enumerate().rev() {
        if !defined.contains(&n.out) || matches!(n.op, Op::Input) {
            continue;
        }
        let gy = Term::Grad(n.out);
        let a = n.args.first().copied().unwrap_or(0);
        // (value, its gradient's term) for each operand.
        let mut contrib: Vec<(usize, Term)> = Vec::new();
        let mut call = |steps: &mut Vec<Step>, callee: Callee, via: Via, inputs: bool, rebuilt: Option<usize>| {
            let params = fields[callee.field].kind.has_params();
            if inputs || params {
                steps.push(Step::Call { node: i, callee, via, inputs, params, rebuilt });
            }
            if params {
                reached.insert(callee);
                steps.push(Step::Ready(callee));
            }
        };
        let b = n.args.get(1).copied().unwrap_or(0);
        // The shape an operand's gradient sums to: its own where it was
        // broadcast, the gradient's otherwise.
        let to_shape = |k: usize| match broadcast(low, k, n.out) {
            true => Arg::Shape(k),
            false => Arg::ShapeOf(Term::Grad(n.out)),
        };
        let g = || Arg::Storage(Term::Grad(n.out));
        let kept = |k: usize| Arg::Storage(Term::Kept(k));
        let parts = |contrib: &mut Vec<(usize, Term)>, count: usize| {
            for (j, &k) in n.args.iter().take(count).enumerate() {
                contrib.push((k, Term::Part(i, j)));
            }
        };
        match &n.op {
            Op::Seed(_) => {}
            Op::SoftmaxWith(f) => {
                let fold = &plan.softmaxes[*f];
                // A softmax that applies the scale and mask before it: its
                // adjoint goes straight to the value they were applied to.
                let d = low.vals[n.out].rank().known() - 1;
                let args = vec![Arg::Storage(gy), Arg::Storage(Term::Kept(n.out)), code(d), Arg::Code(fold.options())];
                contrib.push((fold.input, adjoint("softmax", fold.input, args)));
            }
            Op::Fused(index) => {
                let group = &plan.groups[*index];
                // The gradient of the value the kernel computes: after a
                // softmax, from its output; after a norm, from the layer's own
                // backward; after a mean, scaled; after a sum, broadcast as it is.
                let inputs_need = group.inputs.iter().any(|x| matches!(x, Input::Value(k) if need(*k)));
                let grad = match group.reduce {
                    Some(op @ (RowOp::Softmax | RowOp::LogSoftmax)) => {
                        let d = low.vals[n.out].rank().known() - 1;
                        let log = op == RowOp::LogSoftmax;
                        let args =
                            vec![Arg::Storage(gy), Arg::Storage(Term::Kept(n.out)), code(d), softmax_options(log)];
                        steps.push(Step::Let { node: i, term: adjoint("softmax", group.value, args) });
                        Term::Part(i, 0)
                    }
                    Some(RowOp::Norm { layer, .. }) => {
                        call(&mut steps, layer, Via::Layer, inputs_need, None);
                        Term::Part(i, 0)
                    }
                    Some(RowOp::Mean) => {
                        let len = low.vals[group.value].shape.last().expect("a reduced dim");
                        let len = super::ops::SampleDim::tokens(len);
                        let args = vec![Arg::Storage(gy), Arg::Code(quote!(1.0 / (#len) as f64))];
                        steps.push(Step::Let { node: i, term: adjoint("scale_by", n.out, args) });
                        Term::Part(i, 0)
                    }
                    None | Some(RowOp::Sum) => gy,
                };
                for (pos, input) in group.inputs.iter().enumerate() {
                    let Input::Value(k) = *input else { continue };
                    let term = Term::Fused { group: *index, pos, grad: Box::new(grad.clone()) };
                    let term = match broadcast(low, k, group.value) {
                        true => adjoint("sum_to", k, vec![Arg::Owned(term), Arg::Shape(k)]),
                        false => term,
                    };
                    contrib.push((k, term));
                }
            }
            Op::Input | Op::Positions(_) => {}
            Op::Layer(callee) => {
                let wants = n.args.iter().any(|&k| need(k));
                call(&mut steps, *callee, Via::Layer, wants, plan.recomputed_input(i));
                parts(&mut contrib, usize::from(wants));
            }
            Op::Nested(callee) => {
                let wants = n.args.iter().any(|&k| need(k));
                let via = if n.args.len() == 1 { Via::Nested } else { Via::Inherent };
                call(&mut steps, *callee, via, wants, None);
                parts(&mut contrib, if wants { n.args.len() } else { 0 });
            }
            Op::Attend(callee) => {
                call(&mut steps, *callee, Via::Attend, true, None);
                // The mask has no gradient.
                parts(&mut contrib, 3);
            }
            Op::Unary(u) => {
                // The op's adjoint kernel, from the value its derivative reads.
                let from = if of_output(u) { n.out } else { a };
                let op = Arg::Code(table_op("UnaryOp", u.variant));
                contrib.push((a, adjoint("unary", a, vec![op, kept(from), kept(from), g()])));
            }
            Op::Bin(op) => {
                let (ea, eb) = match op {
                    Bin::Add => (("add", vec![g(), to_shape(a)]), ("add", vec![g(), to_shape(b)])),
                    Bin::Sub => (("add", vec![g(), to_shape(a)]), ("sub_rhs", vec![g(), to_shape(b)])),
                    Bin::Mul => (
                        ("mul_operand", vec![g(), kept(b), to_shape(a)]),
                        ("mul_operand", vec![g(), kept(a), to_shape(b)]),
                    ),
                    Bin::Div => {
                        (("div_lhs", vec![g(), kept(b), to_shape(a)]), ("div_rhs", vec![g(), kept(b), kept(n.out)]))
                    }
                };
                contrib.push((a, adjoint(ea.0, a, ea.1)));
                contrib.push((b, adjoint(eb.0, b, eb.1)));
            }
            Op::Binary(op) => {
                // The tape's adjoint: the table's partials, each summed
                // to its operand's shape.
                steps.push(Step::Binary { node: i, op });
                parts(&mut contrib, 2);
            }
            Op::Scalar(op, s) => {
                let s = scalar(s);
                let term = match op {
                    ScalarOp::Add | ScalarOp::Sub => Term::Grad(n.out),
                    ScalarOp::Mul => adjoint("scale_by", a, vec![g(), Arg::Code(s)]),
                    ScalarOp::Div => adjoint("scale_by", a, vec![g(), Arg::Code(quote!(1.0 / (#s)))]),
                    ScalarOp::RSub => adjoint("neg", a, vec![g()]),
                    ScalarOp::RDiv => adjoint("rdiv_scalar", a, vec![g(), kept(a), kept(n.out)]),
                    ScalarOp::Table(op) => {
                        let op = Arg::Code(table_op("BinaryOp", op.variant));
                        adjoint("binary_scalar", a, vec![op, kept(a), Arg::Code(s), g()])
                    }
                };
                contrib.push((a, term));
            }
            Op::Neg => contrib.push((a, adjoint("neg", a, vec![g()]))),
            Op::Matmul => {
                let shape = |k| Arg::ShapeOf(Term::Kept(k));
                contrib.push((a, adjoint("matmul_lhs", a, vec![g(), kept(b), shape(a)])));
                contrib.push((b, adjoint("matmul_rhs", b, vec![g(), kept(a), shape(b)])));
            }
            Op::Transpose(x, y) => {
                let args = vec![g(), code(tensor_dim(*x)), code(tensor_dim(*y))];
                contrib.push((a, adjoint("transpose_dims", a, args)));
            }
            Op::Permute(axes) => {
                let axes = axes.iter().map(|&x| tensor_dim(x));
                let args = vec![g(), Arg::Code(quote!(&[0usize #(, #axes)*]))];
                contrib.push((a, adjoint("permute", a, args)));
            }
            Op::Reshape(_) => contrib.push((a, adjoint("reshape", a, vec![g(), Arg::Shape(a)]))),
            Op::Narrow { dim, start, .. } => {
                let d = tensor_dim(*dim);
                let args = vec![g(), code(d), Arg::Start { start: *start, of: a, d }, Arg::Dim(a, d)];
                contrib.push((a, adjoint("narrow", a, args)));
            }
            Op::Cat(dim) => {
                let d = tensor_dim(*dim);
                for (j, &k) in n.args.iter().enumerate() {
                    let args = vec![g(), code(d), Arg::Offset(n.args[..j].to_vec(), d), Arg::Dim(k, d)];
                    contrib.push((k, adjoint("cat_piece", k, args)));
                }
            }
            Op::Softmax(d) | Op::LogSoftmax(d) => {
                let log = matches!(n.op, Op::LogSoftmax(_));
                let args = vec![g(), kept(n.out), code(tensor_dim(*d)), softmax_options(log)];
                contrib.push((a, adjoint("softmax", a, args)));
            }
            Op::Reduce { dim, mean } => {
                let d = tensor_dim(*dim);
                let term = match mean {
                    true => adjoint("mean", a, vec![g(), Arg::Shape(a), Arg::Dim(a, d)]),
                    false => adjoint("sum", a, vec![g(), Arg::Shape(a)]),
                };
                contrib.push((a, term));
            }
            Op::CausalFill { t, .. } => {
                let mask = Arg::Causal { t: t.clone(), like: n.out };
                contrib.push((a, adjoint("masked_fill", a, vec![g(), mask])));
            }
            Op::Kernel { args, .. } => {
                for (pos, arg) in args.iter().enumerate() {
                    let KernelArg::Tensor(j) = arg else { continue };
                    let (k, partial) = (n.args[*j], Term::Partial { node: i, pos });
                    let times = Arg::Call("times", vec![g(), Arg::Storage(partial)]);
                    contrib.push((k, adjoint("sum_to", k, vec![times, to_shape(k)])));
                }
            }
        }
        for (k, term) in contrib {
            if need(k) {
                let first = defined.insert(k);
                steps.push(Step::Grad { to: k, term, first, node: i });
            }
        }
    }
    // Parameters whose field's output did not reach the output.
    for (field, f) in fields.iter().enumerate().filter(|(_, f)| f.kind.has_params()) {
        let indices: Vec<Option<usize>> = match f.array {
            Some(n) => (0..n).map(Some).collect(),
            None => vec![None],
        };
        for callee in indices.into_iter().map(|index| Callee { field, index }) {
            if !reached.contains(&callee) {
                steps.push(Step::Unreached(callee));
                steps.push(Step::Ready(callee));
            }
        }
    }
    if full {
        steps.extend(low.inputs.iter().filter(|k| !defined.contains(k)).map(|&k| Step::UnreachedInput(k)));
    }
    Backward { steps }
}

impl Backward {
    /// What the steps read from the training forward: values and shapes.
    pub fn kept(&self, low: &Lowered, plan: &Plan) -> (BTreeSet<usize>, BTreeSet<usize>) {
        let mut kept = Kept { vals: BTreeSet::new(), shapes: BTreeSet::new(), low, plan };
        for step in &self.steps {
            match step {
                Step::Let { term, .. } | Step::Grad { term, .. } => kept.term(term),
                Step::Binary { node, .. } => kept.vals.extend(low.nodes[*node].args.iter().copied()),
                // A rebuilt input comes from its producer's input where the
                // producer is an activation (else from the producer's cache).
                Step::Call { rebuilt: Some(p), .. } => {
                    if let Op::Unary(_) = low.nodes[*p].op {
                        kept.vals.insert(low.nodes[*p].args[0]);
                    }
                }
                Step::UnreachedInput(k) => {
                    kept.shapes.insert(*k);
                }
                Step::Call { rebuilt: None, .. } | Step::Ready(_) | Step::Unreached(_) => {}
            }
        }
        (kept.vals, kept.shapes)
    }

    /// The adjoints the pass runs: a field's backward as one, a fused
    /// group's once per argument, every other op once per operand.
    pub fn ops(&self) -> usize {
        let calls: HashSet<usize> = self
            .steps
            .iter()
            .filter_map(|s| if let Step::Call { node, .. } = s { Some(*node) } else { None })
            .collect();
        self.steps
            .iter()
            .filter(|s| match s {
                Step::Call { .. } => true,
                Step::Grad { term: Term::Part(i, _), .. } => !calls.contains(i),
                Step::Grad { .. } => true,
                Step::Let { .. }
                | Step::Binary { .. }
                | Step::Ready(_)
                | Step::Unreached(_)
                | Step::UnreachedInput(_) => false,
            })
            .count()
    }
}

/// The walk of [`Backward::kept`].
struct Kept<'a> {
    vals: BTreeSet<usize>,
    shapes: BTreeSet<usize>,
    low: &'a Lowered,
    plan: &'a Plan,
}

impl Kept<'_> {
    fn term(&mut self, term: &Term) {
        match term {
            Term::Kept(k) => {
                self.vals.insert(*k);
            }
            Term::Adjoint { args, .. } => args.iter().for_each(|a| self.arg(a)),
            Term::Fused { group, grad, .. } => {
                let inputs = &self.plan.groups[*group].inputs;
                self.vals.extend(inputs.iter().filter_map(|x| if let Input::Value(k) = x { Some(*k) } else { None }));
                self.term(grad);
            }
            Term::Partial { node, .. } => self.vals.extend(self.low.nodes[*node].args.iter().copied()),
            Term::Grad(_) | Term::Part(..) => {}
        }
    }

    fn arg(&mut self, arg: &Arg) {
        match arg {
            Arg::Storage(t) | Arg::Owned(t) | Arg::ShapeOf(t) => self.term(t),
            Arg::Call(_, args) => args.iter().for_each(|a| self.arg(a)),
            Arg::Shape(k) | Arg::Dim(k, _) | Arg::Start { of: k, .. } => {
                self.shapes.insert(*k);
            }
            Arg::Offset(ks, _) => self.shapes.extend(ks.iter().copied()),
            Arg::Causal { .. } | Arg::Code(_) => {}
        }
    }
}
