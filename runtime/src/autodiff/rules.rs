//! The gradient rules: one arm per primitive, each calling the op's
//! gradient in `crate::adjoint` (where the generated backward and the
//! layers find the same formulas) with what the op recorded. An arm
//! returns the gradient of each input, in the order the op recorded them
//! (`None` where there is none, or where it is not needed).

use super::graph::Op;
use crate::adjoint;
use crate::backend::{Backend, ReduceOp};
use crate::kernel::KernelArg;

/// The gradient of each input of `op`, given the gradient `g` of its output.
/// `needed[i]` says whether input `i` is tracked: the costly gradients (a
/// product's, a convolution's) of untracked inputs are not computed.
pub(crate) fn gradients<B: Backend>(op: &Op<B>, g: &B::Storage, needed: &[bool]) -> Vec<Option<B::Storage>> {
    let all = |gs: [B::Storage; 2]| gs.into_iter().map(Some).collect();
    match op {
        Op::Cast(from) => vec![Some(B::cast(g, *from))],
        Op::Unary(u, x, y) => vec![Some(adjoint::unary::<B>(*u, x, y, g))],
        Op::Binary(b, x, y) => all(adjoint::binary::<B>(*b, x, y, g)),
        Op::BinaryScalar(b, x, s) => vec![Some(adjoint::binary_scalar::<B>(*b, x, *s, g))],
        Op::Where(cond, sa, sb) => all(adjoint::where_cond::<B>(g, cond, sa, sb)),
        Op::Reduce(r, x, y, dim) => vec![Some(match r {
            ReduceOp::Sum => adjoint::sum::<B>(g, B::shape(x)),
            ReduceOp::Max | ReduceOp::Min => adjoint::extreme::<B>(g, x, y, *dim),
            ReduceOp::ArgMax | ReduceOp::ArgMin => unreachable!("index reductions are not recorded"),
        })],
        Op::BiasAct(act, y, dim, bias) => {
            // ReLU, sigmoid and tanh differentiate from their output (for
            // ReLU, y > 0 exactly where its input is).
            let gp = match act {
                Some(op) => adjoint::unary::<B>(*op, y, y, g),
                None => g.clone(),
            };
            let mut grads = vec![Some(gp.clone())];
            if *bias {
                grads.push(Some(adjoint::bias::<B>(&gp, *dim)));
            }
            grads
        }
        Op::Kernel(partial, inputs, shape, dtype) => inputs
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, KernelArg::Tensor(_)))
            .map(|(i, _)| Some(adjoint::times::<B>(g, &partial(i, inputs, shape, *dtype))))
            .collect(),
        // The gradients' products in the forward's precision, whatever
        // the scope the backward runs in.
        Op::Matmul(a, b, precision) => crate::autocast(*precision, || {
            vec![
                needed[0].then(|| adjoint::matmul_lhs::<B>(g, b, B::shape(a))),
                needed[1].then(|| adjoint::matmul_rhs::<B>(g, a, B::shape(b))),
            ]
        }),
        Op::Reshape(from) => vec![Some(adjoint::reshape::<B>(g, from))],
        Op::Permute(axes) => vec![Some(adjoint::permute::<B>(g, axes))],
        Op::Expand(from) => vec![Some(adjoint::sum_to::<B>(g.clone(), from))],
        Op::Slice(from, ranges) => vec![Some(adjoint::slice::<B>(g, from, ranges))],
        Op::Pad(from, pads) => vec![Some(adjoint::pad::<B>(g, from, pads))],
        Op::Cat(dim, sizes) => {
            let mut start = 0;
            sizes
                .iter()
                .map(|&n| {
                    start += n;
                    Some(adjoint::cat_piece::<B>(g, *dim, start - n, n))
                })
                .collect()
        }
        Op::Gather(xs, dim, idx) => vec![Some(adjoint::gather::<B>(g, xs, *dim, idx))],
        Op::ScatterAdd(dim, idx) => all(adjoint::scatter_add::<B>(g, *dim, idx)),
        Op::IndexSelect(xs, dim, idx) => vec![Some(adjoint::index_select::<B>(g, xs, *dim, idx))],
        Op::IndexAdd(dim, idx) => all(adjoint::index_add::<B>(g, *dim, idx)),
        Op::Conv2d(x, w, opts, precision) => {
            let rank4 = |s: &B::Storage| -> [usize; 4] {
                B::shape(s).try_into().unwrap_or_else(|_| unreachable!("conv2d records rank-4 tensors"))
            };
            let mut out = crate::autocast(*precision, || {
                vec![
                    needed[0].then(|| adjoint::conv2d_input::<B>(g, w, rank4(x), opts)),
                    needed[1].then(|| adjoint::conv2d_weight::<B>(g, x, rank4(w), opts)),
                ]
            });
            if needed.len() == 3 {
                out.push(Some(adjoint::bias::<B>(g, 1)));
            }
            out
        }
        Op::ConvTranspose2d(x, w, opts, precision) => {
            let w_shape: [usize; 4] =
                B::shape(w).try_into().unwrap_or_else(|_| unreachable!("conv2d_input_grad records rank-4 weights"));
            crate::autocast(*precision, || {
                vec![
                    needed[0].then(|| adjoint::conv_transpose2d_input::<B>(g, w, opts)),
                    needed[1].then(|| adjoint::conv_transpose2d_weight::<B>(g, x, w_shape, opts)),
                ]
            })
        }
        Op::MaxPool2d(from, idx) => vec![Some(adjoint::max_pool2d::<B>(g, from, idx))],
        Op::AvgPool2d(from, opts) => vec![Some(adjoint::avg_pool2d::<B>(g, from, opts))],
        Op::Softmax(y, dim, o) => vec![Some(adjoint::softmax::<B>(g, y, *dim, *o))],
    }
}
