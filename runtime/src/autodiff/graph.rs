//! The recorded graph: nodes, the op each applied, and the reverse walk.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::{Backend, BinaryOp, Conv2dOptions, Pool2dOptions, Primitives, ReduceOp, SoftmaxOptions, UnaryOp};
use crate::dtype::DType;
use crate::kernel::KernelArg;

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Graph nodes created minus nodes dropped on this thread: it returns to
/// its earlier value once a step's tensors are dropped (tests use it to
/// show the graph is freed). Per thread, so concurrent work elsewhere in
/// the process does not disturb a measurement.
pub fn live_nodes() -> isize {
    LIVE.with(Cell::get)
}

/// What an op saved for its gradient rule (inputs, outputs, shapes).
#[derive(Debug)]
pub(crate) enum Op<B: Backend> {
    Cast(DType),
    Unary(UnaryOp, B::Storage, B::Storage),
    Binary(BinaryOp, B::Storage, B::Storage),
    BinaryScalar(BinaryOp, B::Storage, f64),
    Where(B::Storage, Vec<usize>, Vec<usize>),
    Reduce(ReduceOp, B::Storage, B::Storage, usize),
    /// The operands and the precision the product ran in.
    Matmul(B::Storage, B::Storage, crate::Precision),
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Slice(Vec<usize>, Vec<Range<usize>>),
    Pad(Vec<usize>, Vec<(usize, usize)>),
    Cat(usize, Vec<usize>),
    Gather(Vec<usize>, usize, B::Storage),
    ScatterAdd(usize, B::Storage),
    IndexSelect(Vec<usize>, usize, B::Storage),
    IndexAdd(usize, B::Storage),
    /// Input, weight, options and the precision it ran in.
    Conv2d(B::Storage, B::Storage, Conv2dOptions, crate::Precision),
    /// `conv2d_input_grad` as an op of its own (a transposed convolution),
    /// with its input and weight.
    /// Input, weight, options and the precision it ran in.
    ConvTranspose2d(B::Storage, B::Storage, Conv2dOptions, crate::Precision),
    MaxPool2d(Vec<usize>, B::Storage),
    AvgPool2d(Vec<usize>, Pool2dOptions),
    /// `softmax` (`log_softmax` with `true`) over a dim, with its output.
    Softmax(B::Storage, usize, SoftmaxOptions),
    /// A layer's bias and activation (`Composites::bias_act`) with the output
    /// (the activations recorded this way differentiate from it), the dim
    /// the bias runs along, and whether there is a bias.
    BiasAct(Option<UnaryOp>, B::Storage, usize, bool),
    /// A `kernel!` kernel: its partial derivatives (as a function, since the
    /// kernel type is not part of `Op`), its primal inputs, shape and dtype.
    Kernel(KernelPartial<B>, Vec<KernelArg<B::Storage>>, Vec<usize>, DType),
}

/// `∂f/∂a_i` of a recorded kernel, evaluated on the inner backend.
pub(crate) type KernelPartial<B> =
    fn(usize, &[KernelArg<<B as Primitives>::Storage>], &[usize], DType) -> <B as Primitives>::Storage;

/// A tracked value: a leaf (no op) or the result of `op` on `parents`
/// (`None` for untracked inputs).
#[derive(Debug)]
pub struct Node<B: Backend> {
    pub(crate) id: u64,
    pub(crate) op: Option<Op<B>>,
    pub(crate) parents: Vec<Option<Arc<Node<B>>>>,
}

impl<B: Backend> Node<B> {
    pub(crate) fn leaf() -> Arc<Self> {
        Self::make(None, Vec::new())
    }

    pub(crate) fn new(op: Op<B>, parents: Vec<Option<Arc<Node<B>>>>) -> Arc<Self> {
        Self::make(Some(op), parents)
    }

    fn make(op: Option<Op<B>>, parents: Vec<Option<Arc<Node<B>>>>) -> Arc<Self> {
        LIVE.with(|c| c.set(c.get() + 1));
        Arc::new(Node { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), op, parents })
    }
}

impl<B: Backend> Drop for Node<B> {
    /// Frees long chains (an RNN over many steps) iteratively: the default
    /// recursive drop would overflow the stack.
    fn drop(&mut self) {
        LIVE.with(|c| c.set(c.get() - 1));
        let mut stack: Vec<Arc<Node<B>>> = self.parents.drain(..).flatten().collect();
        while let Some(n) = stack.pop() {
            if let Ok(mut inner) = Arc::try_unwrap(n) {
                stack.extend(inner.parents.drain(..).flatten());
            }
        }
    }
}

/// Walks the graph from `root` back to its leaves, starting from `seed` as
/// the root's gradient; returns the gradient of every leaf by node id.
pub(crate) fn backward<B: Backend>(root: Option<&Arc<Node<B>>>, seed: B::Storage) -> HashMap<u64, B::Storage> {
    let mut leaves = HashMap::new();
    let Some(root) = root else { return leaves };
    // Reverse topological order by an iterative post-order walk.
    let mut order: Vec<Arc<Node<B>>> = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(Arc::clone(root), false)];
    while let Some((n, expanded)) = stack.pop() {
        if expanded {
            order.push(n);
            continue;
        }
        if !seen.insert(n.id) {
            continue;
        }
        stack.push((Arc::clone(&n), true));
        for p in n.parents.iter().flatten() {
            if !seen.contains(&p.id) {
                stack.push((Arc::clone(p), false));
            }
        }
    }
    let mut grads: HashMap<u64, B::Storage> = HashMap::new();
    grads.insert(root.id, seed);
    for n in order.iter().rev() {
        let Some(g) = grads.remove(&n.id) else { continue };
        let Some(op) = &n.op else {
            leaves.insert(n.id, g);
            continue;
        };
        let needed: Vec<bool> = n.parents.iter().map(Option::is_some).collect();
        let parent_grads = super::rules::gradients::<B>(op, &g, &needed);
        for (p, pg) in n.parents.iter().zip(parent_grads) {
            if let (Some(p), Some(pg)) = (p, pg) {
                // A value used several times sums the gradients of its uses.
                let acc = match grads.remove(&p.id) {
                    Some(prev) => B::binary(BinaryOp::Add, &prev, &pg),
                    None => pg,
                };
                grads.insert(p.id, acc);
            }
        }
    }
    leaves
}
