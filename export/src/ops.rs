//! The ops of a forward body as ONNX operators: what the `Export` impl
//! `#[model]` generates for a graph model calls, one function per op of its
//! IR. Axes count the batch as 0, as the tensor methods do; sizes of
//! symbolic dims (`T`) are computed from the inputs as the model runs.

use blaze_runtime::UnaryOp;
use blaze_runtime::unary::{UnaryKernel, UnaryVisitor};
use blaze_spec::ops::{Binary, UNARY};

use crate::graph::{Attr, OnnxGraph, Value, elem};

/// Op `op` of the op table on `x`: the ONNX operator its entry names, or
/// else its kernel's body as ONNX operators.
pub fn unary(g: &mut OnnxGraph, op: UnaryOp, x: &Value) -> Value {
    let entry = &UNARY[op.index()];
    if !entry.onnx.is_empty() {
        return g.map(entry.onnx, &[x]);
    }
    struct Print<'a> {
        g: &'a mut OnnxGraph,
        x: &'a Value,
    }
    impl UnaryVisitor for Print<'_> {
        type Out = Value;
        fn visit<K: UnaryKernel>(self, params: &[f64]) -> Value {
            let mut args = vec![self.x.clone()];
            args.extend(params.iter().map(|&p| self.g.scalar(p, elem::FLOAT)));
            <K::Value as blaze_runtime::kernel::Elementwise>::onnx(self.g, &args)
        }
    }
    // Only bool ops have no body, and each of those names its operator.
    op.visit(Print { g, x })
        .unwrap_or_else(|| panic!("export: `{}` has neither an ONNX operator nor a body", entry.name))
}

/// Op `op` of two tensors (or of a tensor and a number made a scalar).
pub fn binary(g: &mut OnnxGraph, op: &Binary, a: &Value, b: &Value) -> Value {
    g.map(op.onnx, &[a, b])
}

/// `x op s` for a number `s`; `reversed`: `s op x`.
pub fn with_scalar(g: &mut OnnxGraph, op: &'static str, x: &Value, s: f64, reversed: bool) -> Value {
    let s = g.scalar(s, elem::FLOAT);
    if reversed { g.map(op, &[&s, x]) } else { g.map(op, &[x, &s]) }
}

/// The product of the last two dims, batched over the others.
pub fn matmul(g: &mut OnnxGraph, a: &Value, b: &Value) -> Value {
    let rank = a.rank().max(b.rank());
    g.node("MatMul", &[a, b], vec![], rank)
}

/// `x` with its axes in the order `perm`.
pub fn permute(g: &mut OnnxGraph, x: &Value, perm: &[usize]) -> Value {
    let perm = perm.iter().map(|&p| p as i64).collect();
    g.node("Transpose", &[x], vec![("perm", Attr::Ints(perm))], x.rank())
}

/// `x` with axes `a` and `b` swapped.
pub fn transpose(g: &mut OnnxGraph, x: &Value, a: usize, b: usize) -> Value {
    let mut perm: Vec<usize> = (0..x.rank()).collect();
    perm.swap(a, b);
    permute(g, x, &perm)
}

/// The size of a per-sample dim, `coef` times symbols' sizes (each an
/// int64 vector of one entry, as [`OnnxGraph::size`] gives them).
pub fn dim(g: &mut OnnxGraph, coef: usize, syms: &[&Value]) -> Value {
    let mut size = match syms.split_first() {
        Some((first, _)) if coef == 1 => (*first).clone(),
        _ => g.ints(&[coef as i64]),
    };
    let rest = if coef == 1 && !syms.is_empty() { &syms[1..] } else { syms };
    for s in rest {
        size = g.map("Mul", &[&size, s]);
    }
    size
}

/// `x` with per-sample dims `dims` (each an int64 vector of one entry),
/// its batch kept.
pub fn reshape(g: &mut OnnxGraph, x: &Value, dims: &[Value]) -> Value {
    let mut parts = vec![g.size(x, 0)];
    parts.extend(dims.iter().cloned());
    let shape = g.concat_ints(&parts);
    g.node("Reshape", &[x, &shape], vec![], dims.len() + 1)
}

/// `len` entries of axis `axis` from `start` (negative: from the end).
pub fn narrow(g: &mut OnnxGraph, x: &Value, axis: usize, start: i64, len: usize) -> Value {
    let end = start + len as i64;
    // A slice that ends at the last entry, counted from the end, ends at 0
    // otherwise: past the end instead.
    let end = if start < 0 && end == 0 { i64::MAX } else { end };
    let (starts, ends, axes) = (g.ints(&[start]), g.ints(&[end]), g.ints(&[axis as i64]));
    g.node("Slice", &[x, &starts, &ends, &axes], vec![], x.rank())
}

/// The tensors `xs` end to end along `axis`.
pub fn cat(g: &mut OnnxGraph, xs: &[Value], axis: usize) -> Value {
    let refs: Vec<&Value> = xs.iter().collect();
    g.node("Concat", &refs, vec![("axis", Attr::Int(axis as i64))], xs[0].rank())
}

/// Softmax (or, `log`, log-softmax) along `axis`.
pub fn softmax(g: &mut OnnxGraph, x: &Value, axis: usize, log: bool) -> Value {
    let op = if log { "LogSoftmax" } else { "Softmax" };
    g.node(op, &[x], vec![("axis", Attr::Int(axis as i64))], x.rank())
}

/// The sum (or, `mean`, the mean) along `axis`, kept as a dim of 1.
pub fn reduce(g: &mut OnnxGraph, x: &Value, axis: usize, mean: bool) -> Value {
    let op = if mean { "ReduceMean" } else { "ReduceSum" };
    let axes = g.ints(&[axis as i64]);
    g.node(op, &[x, &axes], vec![("keepdims", Attr::Int(1))], x.rank())
}

/// `x` (`[.., T, S]`) with `value` where key `j` comes after query `i`
/// (`j > i`): PyTorch's causal mask, the top-left triangle kept.
pub fn causal_fill(g: &mut OnnxGraph, x: &Value, value: f64) -> Value {
    let r = x.rank();
    let (t, s) = (g.size(x, r - 2), g.size(x, r - 1));
    let square = g.concat_ints(&[t, s]);
    let one = Attr::Tensor(elem::FLOAT, vec![1], 1f32.to_le_bytes().to_vec());
    let ones = g.node("ConstantOfShape", &[&square], vec![("value", one)], 2);
    let lower = g.node("Trilu", &[&ones], vec![("upper", Attr::Int(0))], 2);
    let keep = g.node("Cast", &[&lower], vec![("to", Attr::Int(i64::from(elem::BOOL)))], 2);
    let value = g.scalar(value, elem::FLOAT);
    g.map("Where", &[&keep, x, &value])
}

/// The ids `0..t` as `[1, t]` (`t` an int64 vector of one entry).
pub fn positions(g: &mut OnnxGraph, t: &Value) -> Value {
    let zero_axis = g.ints(&[0]);
    let limit = g.node("Squeeze", &[t, &zero_axis], vec![], 0);
    let (start, step) = (g.scalar(0.0, elem::INT64), g.scalar(1.0, elem::INT64));
    let ids = g.node("Range", &[&start, &limit, &step], vec![], 1);
    g.node("Unsqueeze", &[&ids, &zero_axis], vec![], 2)
}
