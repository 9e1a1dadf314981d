//! The gradient rules: one arm per primitive. Each takes what the op saved
//! and the gradient of its output, and returns the gradient of each input
//! (in the order the op recorded them; `None` where there is none).

use super::graph::Op;
use crate::backend::{Backend, BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::kernel::KernelArg;

fn shape<B: Backend>(x: &B::Storage) -> Vec<usize> {
    B::shape(x).to_vec()
}

fn mul<B: Backend>(a: &B::Storage, b: &B::Storage) -> B::Storage {
    B::binary(BinaryOp::Mul, a, b)
}

fn scale<B: Backend>(a: &B::Storage, s: f64) -> B::Storage {
    B::binary_scalar(BinaryOp::Mul, a, s)
}

fn zeros<B: Backend>(like: &B::Storage, shape: &[usize]) -> B::Storage {
    B::full(shape, 0.0, B::dtype(like), &B::device(like))
}

/// A mask as 0/1 of `like`'s dtype.
fn as_float<B: Backend>(mask: &B::Storage, like: &B::Storage) -> B::Storage {
    B::cast(mask, B::dtype(like))
}

/// Sums `g` over the dims where `shape` has size 1 and `g` does not: the
/// adjoint of broadcasting to `g`'s shape.
fn sum_to<B: Backend>(g: B::Storage, shape: &[usize]) -> B::Storage {
    let gs = B::shape(&g).to_vec();
    let mut out = g;
    for (d, (&want, &have)) in shape.iter().zip(&gs).enumerate() {
        if want == 1 && have != 1 {
            out = B::reduce(ReduceOp::Sum, &out, d);
        }
    }
    out
}

/// Swaps the last two dims.
fn transpose<B: Backend>(x: &B::Storage) -> B::Storage {
    let r = B::shape(x).len();
    let mut axes: Vec<usize> = (0..r).collect();
    axes.swap(r - 2, r - 1);
    B::permute(x, &axes)
}

fn unary<B: Backend>(op: UnaryOp, x: &B::Storage, y: &B::Storage, g: &B::Storage) -> B::Storage {
    let one_minus = |t: &B::Storage| B::binary_scalar(BinaryOp::Add, &scale::<B>(t, -1.0), 1.0);
    match op {
        UnaryOp::Neg => B::unary(UnaryOp::Neg, g),
        UnaryOp::Abs => mul::<B>(g, &B::unary(UnaryOp::Sign, x)),
        UnaryOp::Exp => mul::<B>(g, y),
        UnaryOp::Log => B::binary(BinaryOp::Div, g, x),
        // d sqrt(x) = 1 / (2 sqrt(x)).
        UnaryOp::Sqrt => scale::<B>(&B::binary(BinaryOp::Div, g, y), 0.5),
        // d (1/x) = -1/x² = -y².
        UnaryOp::Recip => scale::<B>(&mul::<B>(g, &mul::<B>(y, y)), -1.0),
        UnaryOp::Tanh => mul::<B>(g, &one_minus(&mul::<B>(y, y))),
        UnaryOp::Sigmoid => mul::<B>(g, &mul::<B>(y, &one_minus(y))),
        UnaryOp::Relu => {
            let zero = zeros::<B>(g, &vec![1; shape::<B>(g).len()]);
            B::where_cond(&B::compare_scalar(CmpOp::Gt, x, 0.0), g, &zero)
        }
        UnaryOp::LeakyRelu(s) => B::where_cond(&B::compare_scalar(CmpOp::Gt, x, 0.0), g, &scale::<B>(g, s)),
        UnaryOp::Gelu => {
            // d/dx [x Φ(x)] = Φ(x) + x φ(x).
            let cdf = scale::<B>(
                &B::binary_scalar(
                    BinaryOp::Add,
                    &B::unary(UnaryOp::Erf, &scale::<B>(x, std::f64::consts::FRAC_1_SQRT_2)),
                    1.0,
                ),
                0.5,
            );
            let pdf = scale::<B>(&B::unary(UnaryOp::Exp, &scale::<B>(&mul::<B>(x, x), -0.5)), 0.398_942_280_401_432_7);
            mul::<B>(g, &B::binary(BinaryOp::Add, &cdf, &mul::<B>(x, &pdf)))
        }
        UnaryOp::Sin => mul::<B>(g, &B::unary(UnaryOp::Cos, x)),
        UnaryOp::Cos => scale::<B>(&mul::<B>(g, &B::unary(UnaryOp::Sin, x)), -1.0),
        // d erf(x) = 2/√π e^{-x²}.
        UnaryOp::Erf => mul::<B>(
            g,
            &scale::<B>(&B::unary(UnaryOp::Exp, &scale::<B>(&mul::<B>(x, x), -1.0)), std::f64::consts::FRAC_2_SQRT_PI),
        ),
        // Piecewise constant: zero almost everywhere.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Sign | UnaryOp::Not => zeros::<B>(g, &shape::<B>(g)),
    }
}

/// Where `a` wins a max (min, with `less`): 1, ties 1/2, else 0.
fn winner<B: Backend>(a: &B::Storage, b: &B::Storage, less: bool) -> B::Storage {
    let cmp = if less { CmpOp::Lt } else { CmpOp::Gt };
    let wins = as_float::<B>(&B::compare(cmp, a, b), a);
    let ties = as_float::<B>(&B::compare(CmpOp::Eq, a, b), a);
    B::binary(BinaryOp::Add, &wins, &scale::<B>(&ties, 0.5))
}

fn binary<B: Backend>(op: BinaryOp, a: &B::Storage, b: &B::Storage, g: &B::Storage) -> [B::Storage; 2] {
    let (ga, gb) = match op {
        BinaryOp::Add => (g.clone(), g.clone()),
        BinaryOp::Sub => (g.clone(), B::unary(UnaryOp::Neg, g)),
        BinaryOp::Mul => (mul::<B>(g, b), mul::<B>(g, a)),
        BinaryOp::Div => {
            let ga = B::binary(BinaryOp::Div, g, b);
            // d(a/b)/db = -a/b² = -(a/b)/b.
            let gb = scale::<B>(&B::binary(BinaryOp::Div, &mul::<B>(&ga, a), b), -1.0);
            (ga, gb)
        }
        BinaryOp::Pow => {
            let p = B::binary(BinaryOp::Pow, a, b);
            // d a^b/da = b a^(b-1) = b a^b / a; d a^b/db = a^b ln a.
            let ga = mul::<B>(g, &B::binary(BinaryOp::Div, &mul::<B>(b, &p), a));
            let gb = mul::<B>(g, &mul::<B>(&p, &B::unary(UnaryOp::Log, a)));
            (ga, gb)
        }
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let less = op == BinaryOp::Minimum;
            (mul::<B>(g, &winner::<B>(a, b, less)), mul::<B>(g, &winner::<B>(b, a, less)))
        }
        BinaryOp::And | BinaryOp::Or => unreachable!("bool ops are not recorded"),
    };
    [sum_to::<B>(ga, &shape::<B>(a)), sum_to::<B>(gb, &shape::<B>(b))]
}

fn binary_scalar<B: Backend>(op: BinaryOp, x: &B::Storage, s: f64, g: &B::Storage) -> B::Storage {
    match op {
        BinaryOp::Add | BinaryOp::Sub => g.clone(),
        BinaryOp::Mul => scale::<B>(g, s),
        BinaryOp::Div => scale::<B>(g, 1.0 / s),
        BinaryOp::Pow => mul::<B>(g, &scale::<B>(&B::binary_scalar(BinaryOp::Pow, x, s - 1.0), s)),
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let cmp = if op == BinaryOp::Maximum { CmpOp::Gt } else { CmpOp::Lt };
            let wins = as_float::<B>(&B::compare_scalar(cmp, x, s), x);
            let ties = as_float::<B>(&B::compare_scalar(CmpOp::Eq, x, s), x);
            mul::<B>(g, &B::binary(BinaryOp::Add, &wins, &scale::<B>(&ties, 0.5)))
        }
        BinaryOp::And | BinaryOp::Or => unreachable!("bool ops are not recorded"),
    }
}

/// The gradient of each input of `op`, given the gradient `g` of its output.
/// `needed[i]` says whether input `i` is tracked: the costly gradients (a
/// product's, a convolution's) of untracked inputs are not computed.
pub(crate) fn gradients<B: Backend>(op: &Op<B>, g: &B::Storage, needed: &[bool]) -> Vec<Option<B::Storage>> {
    let inputs = needed.len();
    match op {
        Op::Cast(from) => vec![Some(B::cast(g, *from))],
        Op::Unary(u, x, y) => vec![Some(unary::<B>(*u, x, y, g))],
        Op::Binary(b, x, y) => binary::<B>(*b, x, y, g).into_iter().map(Some).collect(),
        Op::BinaryScalar(b, x, s) => vec![Some(binary_scalar::<B>(*b, x, *s, g))],
        Op::Where(cond, sa, sb) => {
            let zero = zeros::<B>(g, &vec![1; sa.len()]);
            let ga = sum_to::<B>(B::where_cond(cond, g, &zero), sa);
            let gb = sum_to::<B>(B::where_cond(cond, &zero, g), sb);
            vec![Some(ga), Some(gb)]
        }
        Op::Reduce(r, x, y, dim) => {
            let xs = shape::<B>(x);
            let spread = B::expand(g, &xs);
            match r {
                ReduceOp::Sum => vec![Some(spread)],
                // The gradient goes to the extreme elements, split evenly
                // between ties (as torch.amax).
                ReduceOp::Max | ReduceOp::Min => {
                    let hits = as_float::<B>(&B::compare(CmpOp::Eq, x, &B::expand(y, &xs)), x);
                    let count = B::expand(&B::reduce(ReduceOp::Sum, &hits, *dim), &xs);
                    vec![Some(B::binary(BinaryOp::Div, &mul::<B>(&spread, &hits), &count))]
                }
                ReduceOp::ArgMax | ReduceOp::ArgMin => unreachable!("index reductions are not recorded"),
            }
        }
        Op::BiasAct(act, y, dim, bias) => {
            // ReLU, sigmoid and tanh differentiate from their output (for
            // ReLU, y > 0 exactly where its input is).
            let gp = match act {
                Some(op) => unary::<B>(*op, y, y, g),
                None => g.clone(),
            };
            let mut grads = vec![Some(gp.clone())];
            if *bias {
                let shape = shape::<B>(&gp);
                let mut s = gp;
                for d in (0..shape.len()).rev().filter(|&d| d != *dim) {
                    s = B::reduce(ReduceOp::Sum, &s, d);
                }
                grads.push(Some(B::reshape(&s, &[shape[*dim]])));
            }
            grads
        }
        Op::Kernel(partial, inputs, shape, dtype) => inputs
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, KernelArg::Tensor(_)))
            .map(|(i, _)| Some(mul::<B>(g, &partial(i, inputs, shape, *dtype))))
            .collect(),
        Op::Matmul(a, b) => {
            let ga = needed[0].then(|| sum_to::<B>(B::matmul(g, &transpose::<B>(b)), &shape::<B>(a)));
            let gb = needed[1].then(|| sum_to::<B>(B::matmul(&transpose::<B>(a), g), &shape::<B>(b)));
            vec![ga, gb]
        }
        Op::Reshape(from) => vec![Some(B::reshape(g, from))],
        Op::Permute(axes) => {
            let mut inverse = vec![0; axes.len()];
            for (i, &a) in axes.iter().enumerate() {
                inverse[a] = i;
            }
            vec![Some(B::permute(g, &inverse))]
        }
        Op::Expand(from) => vec![Some(sum_to::<B>(g.clone(), from))],
        Op::Slice(from, ranges) => {
            let pads: Vec<(usize, usize)> = ranges.iter().zip(from).map(|(r, &n)| (r.start, n - r.end)).collect();
            vec![Some(B::pad(g, &pads, 0.0))]
        }
        Op::Pad(from, pads) => {
            let ranges: Vec<_> = pads.iter().zip(from).map(|(&(before, _), &n)| before..before + n).collect();
            vec![Some(B::slice(g, &ranges))]
        }
        Op::Cat(dim, sizes) => {
            let gs = shape::<B>(g);
            let mut start = 0;
            sizes
                .iter()
                .map(|&n| {
                    let ranges: Vec<_> = gs
                        .iter()
                        .enumerate()
                        .map(|(d, &len)| if d == *dim { start..start + n } else { 0..len })
                        .collect();
                    start += n;
                    Some(B::slice(g, &ranges))
                })
                .collect()
        }
        Op::Gather(xs, dim, idx) => vec![Some(B::scatter_add(&zeros::<B>(g, xs), *dim, idx, g))],
        Op::ScatterAdd(dim, idx) => vec![Some(g.clone()), Some(B::gather(g, *dim, idx))],
        Op::IndexSelect(xs, dim, idx) => vec![Some(B::index_add(&zeros::<B>(g, xs), *dim, idx, g))],
        Op::IndexAdd(dim, idx) => vec![Some(g.clone()), Some(B::index_select(g, *dim, idx))],
        Op::Conv2d(x, w, opts) => {
            let xs: [usize; 4] = shape::<B>(x).try_into().expect("conv2d input is rank 4");
            let ws: [usize; 4] = shape::<B>(w).try_into().expect("conv2d weight is rank 4");
            let mut out = vec![
                needed[0].then(|| B::conv2d_input_grad(g, w, xs, opts)),
                needed[1].then(|| B::conv2d_weight_grad(x, g, ws, opts)),
            ];
            if inputs == 3 {
                let s = B::reduce(ReduceOp::Sum, &B::reduce(ReduceOp::Sum, &B::reduce(ReduceOp::Sum, g, 0), 2), 3);
                out.push(Some(B::reshape(&s, &[ws[0]])));
            }
            out
        }
        Op::MaxPool2d(from, idx) => {
            let gs = shape::<B>(g);
            let flat = [gs[0], gs[1], gs[2] * gs[3]];
            let plane = [from[0], from[1], from[2] * from[3]];
            let dx = B::scatter_add(&zeros::<B>(g, &plane), 2, &B::reshape(idx, &flat), &B::reshape(g, &flat));
            vec![Some(B::reshape(&dx, from))]
        }
        Op::AvgPool2d(from, opts) => {
            let xs: [usize; 4] = from.as_slice().try_into().expect("avg_pool2d input is rank 4");
            vec![Some(B::avg_pool2d_input_grad(g, xs, opts))]
        }
    }
}
