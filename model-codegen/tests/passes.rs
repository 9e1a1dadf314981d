//! The passes on op lists built by hand, as plain values: fusion rewrites
//! ops into fused ops, and differentiation of either says what the
//! training forward keeps and how many adjoints the backward runs.

use std::collections::BTreeSet;

use blaze_model_codegen::diff::{self, Step, Term};
use blaze_model_codegen::fuse::{self, Input, Plan};
use blaze_model_codegen::ops::{Bin, Callee, Dim, Lowered, Node, Op, SampleDim, ScalarOp, Val};
use blaze_spec::ops::{UNARY, Unary};
use proc_macro2::Span;
use quote::{format_ident, quote};

/// A forward body under construction, every value of per-sample shape
/// `[8]`, its first value the input.
struct Body {
    low: Lowered,
}

impl Body {
    fn new() -> Body {
        let low = Lowered {
            vals: Vec::new(),
            nodes: Vec::new(),
            inputs: Vec::new(),
            output: 0,
            symbols: Vec::new(),
            asserts: Vec::new(),
            first_output: Vec::new(),
        };
        let mut body = Body { low };
        let x = body.op(Op::Input, &[]);
        body.low.inputs.push(x);
        body
    }

    /// Appends `op` on `args`; its value is the body's output until the next.
    fn op(&mut self, op: Op, args: &[usize]) -> usize {
        let out = self.low.vals.len();
        self.low.vals.push(Val { shape: vec![Dim::size(8)], opaque: None, batched: true, grad: true, params: false });
        self.low.nodes.push(Node { op, args: args.to_vec(), out, span: Span::call_site(), field: None });
        self.low.output = out;
        out
    }

    fn fuse(&self, dropouts: &[usize]) -> (Lowered, Plan) {
        fuse::fuse(&format_ident!("Net"), &self.low, &[], dropouts, &[])
    }
}

fn unary(name: &str) -> &'static Unary {
    UNARY.iter().find(|u| u.name == name).expect("an op of the table")
}

fn set(values: &[usize]) -> BTreeSet<usize> {
    values.iter().copied().collect()
}

#[test]
fn an_elementwise_chain_becomes_one_fused_op_whose_backward_keeps_its_argument() {
    let mut body = Body::new();
    let t = body.op(Op::Unary(unary("tanh")), &[0]);
    let m = body.op(Op::Scalar(ScalarOp::Mul, quote!(2.0)), &[t]);
    let y = body.op(Op::Bin(Bin::Add), &[m, 0]);
    let (fused, plan) = body.fuse(&[]);

    assert_eq!(fused.nodes.len(), 2);
    assert!(matches!(fused.nodes[1].op, Op::Fused(0)));
    assert_eq!((fused.nodes[1].args.clone(), fused.nodes[1].out, fused.output), (vec![0], y, y));
    assert_eq!(plan.groups[0].ops, ["tanh", "mul_scalar", "add"]);

    // Unfused, tanh's adjoint reads its output and the others read no
    // value; fused, one adjoint kernel reads the group's argument.
    let unfused = diff::differentiate(&body.low, &Plan::none(), &[], true);
    assert!(diff::of_output(unary("tanh")));
    assert_eq!(unfused.kept(&body.low, &Plan::none()), (set(&[t]), set(&[])));
    assert_eq!(unfused.ops(), 4, "tanh, the scaling and both operands of the add");
    let backward = diff::differentiate(&fused, &plan, &[], true);
    assert_eq!(backward.kept(&fused, &plan), (set(&[0]), set(&[])));
    assert_eq!(backward.ops(), 1);
    let grads: Vec<_> = backward.steps.iter().filter(|s| matches!(s, Step::Grad { .. })).collect();
    assert!(
        matches!(grads[..], [Step::Grad { to: 0, term: Term::Fused { group: 0, pos: 0, .. }, first: true, .. }]),
        "the input's gradient is the adjoint kernel's"
    );
}

#[test]
fn a_dropout_in_a_group_leaves_its_seed_where_it_drew() {
    let mut body = Body::new();
    let t = body.op(Op::Unary(unary("tanh")), &[0]);
    let d = body.op(Op::Layer(Callee { field: 0, index: None }), &[t]);
    let (fused, plan) = body.fuse(&[2]);

    let ops: Vec<&Op> = fused.nodes.iter().map(|n| &n.op).collect();
    assert!(matches!(ops[..], [Op::Input, Op::Seed(Callee { field: 0, index: None }), Op::Fused(0)]));
    // The seed is drawn before the kernel runs, and makes a value of its
    // own: the list stays in SSA form.
    assert_eq!(fused.nodes[2].out, d);
    assert!(fused.nodes[1].out >= body.low.vals.len() && fused.nodes[1].args.is_empty());
    assert!(plan.groups[0].inputs.iter().any(|x| matches!(x, Input::Dropout { node: 1, .. })));
}

#[test]
fn a_scaled_softmax_folds_and_its_backward_reads_its_output() {
    let mut body = Body::new();
    let s = body.op(Op::Scalar(ScalarOp::Mul, quote!(0.25)), &[0]);
    let p = body.op(Op::Softmax(0), &[s]);
    let (fused, plan) = body.fuse(&[]);

    assert!(matches!(fused.nodes[1].op, Op::SoftmaxWith(0)));
    assert_eq!(fused.nodes[1].args, [0]);
    assert_eq!((plan.softmaxes[0].ops.clone(), plan.softmaxes[0].scale), (vec!["mul_scalar", "softmax"], Some(0.25)));
    let backward = diff::differentiate(&fused, &plan, &[], true);
    assert_eq!(backward.kept(&fused, &plan), (set(&[p]), set(&[])));
}
