//! The compositions the traits' defaults run: each composite op built
//! from primitives (and each kernel op from composites), for a backend that
//! has no faster way. A backend that overrides one may call it for the
//! cases it leaves alone.

use super::*;

/// [`Kernels::elementwise_norm`] in two passes: the kernel's values, then
/// [`Composites::norm`] over them.
pub fn composed_elementwise_norm<B: Kernels, K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<B::Storage>],
    shape: &[usize],
    dtype: DType,
    norm: RowNorm<'_, B::Storage>,
    keep: bool,
) -> (B::Storage, B::Storage, Option<B::Storage>) {
    let x = B::elementwise::<K>(f, inputs, shape, dtype);
    let [y, stats] = B::norm(&x, norm.weight, norm.bias, norm.eps, norm.centre);
    (y, stats, keep.then_some(x))
}

/// [`Composites::linear_int8`] on the host, with the portable kernel.
pub fn composed_linear_int8<B: Primitives>(
    x: &B::Storage,
    w: &crate::int8::QWeight,
    input: crate::int8::InputQuant,
) -> B::Storage {
    let device = B::device(x);
    let data = B::to_data(x);
    let m = data.shape.first().copied().unwrap_or(0);
    assert!(
        data.shape.len() == 2 && data.shape[1] == w.cols(),
        "linear_int8: expects f32 rows [m, {}], got {:?}",
        w.cols(),
        data.shape
    );
    let rows = data.to_vec::<f32>().unwrap_or_else(|_| panic!("linear_int8: expects f32 rows, got {}", data.dtype()));
    let mut y = vec![0f32; m * w.rows()];
    crate::int8::linear_int8(&rows, m, w, input, &mut y);
    B::from_data(TensorData { shape: vec![m, w.rows()], values: crate::DataVec::F32(y) }, &device)
}

/// [`Composites::conv2d_int8`] on the host, with the portable loop.
pub fn composed_conv2d_int8<B: Primitives>(
    x: &B::Storage,
    weights: &[&crate::int8::QWeight],
    shape: &crate::int8::ConvShape,
    input: crate::int8::InputQuant,
) -> B::Storage {
    let device = B::device(x);
    let data = B::to_data(x);
    let image =
        data.to_vec::<f32>().unwrap_or_else(|_| panic!("conv2d_int8: expects f32 images, got {}", data.dtype()));
    let [n, _, _, _] = shape.input;
    let [oh, ow] = shape.output().expect("conv2d_int8: the kernel fits the padded input");
    let outs = weights.len() * weights[0].rows();
    let mut y = vec![0f32; n * outs * oh * ow];
    crate::int8::conv2d_int8(&image, shape, weights, input, &mut y);
    B::from_data(TensorData { shape: vec![n, outs, oh, ow], values: crate::DataVec::F32(y) }, &device)
}

/// [`Composites::axpby`] from primitives: two scalings and an add.
pub fn composed_axpby<B: Primitives>(y: &mut B::Storage, a: f64, x: &B::Storage, b: f64) {
    let ay = if a == 1.0 { y.clone() } else { B::binary_scalar(BinaryOp::Mul, y, a) };
    *y = B::binary(BinaryOp::Add, &ay, &B::binary_scalar(BinaryOp::Mul, x, b));
}

/// [`Composites::max_pool2d_input_grad`] from primitives: the gradients
/// scattered into zeros, with each plane flattened.
pub fn composed_max_pool2d_input_grad<B: Primitives>(
    g: &B::Storage,
    indices: &B::Storage,
    from: [usize; 4],
) -> B::Storage {
    let gs = B::shape(g);
    let flat = [gs[0], gs[1], gs[2] * gs[3]];
    let planes = B::full(&[from[0], from[1], from[2] * from[3]], 0.0, B::dtype(g), &B::device(g));
    let dx = B::scatter_add(&planes, 2, &B::reshape(indices, &flat), &B::reshape(g, &flat));
    B::reshape(&dx, &from)
}

/// [`Composites::sum_squares`] from primitives: a square, then a sum.
pub fn composed_sum_squares<B: Primitives>(x: &B::Storage) -> B::Storage {
    let n = B::shape(x).iter().product::<usize>();
    let squares = B::reshape(&B::binary(BinaryOp::Mul, x, x), &[n]);
    B::reshape(&B::reduce(ReduceOp::Sum, &squares, 0), &[])
}

/// [`Composites::bias_act`] from primitives: a broadcast add, then the activation.
pub fn composed_bias_act<B: Primitives>(
    x: B::Storage,
    bias: Option<&B::Storage>,
    dim: usize,
    act: Option<UnaryOp>,
) -> B::Storage {
    let mut y = x;
    if let Some(b) = bias {
        let shape = B::shape(&y);
        let mut along = vec![1; shape.len()];
        along[dim] = shape[dim];
        y = B::binary(BinaryOp::Add, &y, &B::reshape(b, &along));
    }
    match act {
        Some(op) => B::unary(op, &y),
        None => y,
    }
}

/// Where a causal softmax over the last dim of `shape` masks: `[.., i, j]`
/// with `j > i`, as a bool tensor `[1, .., 1, t, s]` that broadcasts.
pub fn causal_mask<B: Composites>(shape: &[usize], device: &B::Device) -> B::Storage {
    let r = shape.len();
    let (t, s) = (shape[r - 2], shape[r - 1]);
    let ones = ones(r);
    let (mut rows, mut cols) = (ones.clone(), ones);
    rows[r - 2] = t;
    cols[r - 1] = s;
    let i = B::reshape(&B::arange(0..t as i64, device), &rows);
    let j = B::reshape(&B::arange(0..s as i64, device), &cols);
    B::compare(CmpOp::Gt, &j, &i)
}

/// `[1; rank]`, without allocating.
fn ones(rank: usize) -> Dims {
    let mut d = Dims::new();
    d.extend(std::iter::repeat_n(1, rank));
    d
}

/// `x` with the entries a causal softmax masks set to `value`.
fn causal_fill<B: Composites>(x: &B::Storage, value: f64) -> B::Storage {
    let shape = B::shape(x);
    let mask = causal_mask::<B>(shape, &B::device(x));
    let fill = B::full(&ones(shape.len()), value, B::dtype(x), &B::device(x));
    B::where_cond(&mask, &fill, x)
}

/// [`Composites::matmul_rounded`] composed: the operands rounded by two
/// casts, multiplied in f32.
pub fn composed_matmul_rounded<B: Composites>(a: &B::Storage, b: &B::Storage, dtype: DType) -> B::Storage {
    B::matmul(&B::round_to(a, dtype), &B::round_to(b, dtype))
}

/// `x`'s f32 values rounded to `dtype` and back: what a product under a
/// 16-bit precision multiplies.
pub fn rounded<B: Primitives>(x: &B::Storage, dtype: DType) -> B::Storage {
    B::cast(&B::cast(x, dtype), DType::F32)
}

/// [`Composites::softmax`] from primitives: the input scaled and masked
/// first, then the max subtracted so no exponent overflows (it cancels in
/// the ratio).
pub fn composed_softmax<B: Composites>(x: &B::Storage, dim: usize, o: SoftmaxOptions) -> B::Storage {
    let mut x = x.clone();
    if o.scale != 1.0 {
        x = B::binary_scalar(BinaryOp::Mul, &x, o.scale);
    }
    if o.causal {
        x = causal_fill::<B>(&x, f64::NEG_INFINITY);
    }
    let (x, log) = (&x, o.log);
    let shape = B::shape(x);
    let max = B::reduce(ReduceOp::Max, x, dim);
    // A row whose max is -inf has every entry masked and weighs nothing
    // (see `SoftmaxOptions`): shifted by 0 instead, its exponentials are 0.
    let empty = B::compare_scalar(CmpOp::Eq, &max, f64::NEG_INFINITY);
    let max = B::where_cond(&empty, &B::full(B::shape(&max), 0.0, B::dtype(&max), &B::device(&max)), &max);
    let shifted = B::binary(BinaryOp::Sub, x, &B::expand(&max, shape));
    let e = B::unary(UnaryOp::Exp, &shifted);
    let sum = B::reduce(ReduceOp::Sum, &e, dim);
    // Their sum is 0 too; dividing by 1 keeps them 0 (and the log -inf).
    let sum = B::where_cond(&empty, &B::full(B::shape(&sum), 1.0, B::dtype(&sum), &B::device(&sum)), &sum);
    let sum = B::expand(&sum, shape);
    if log {
        B::binary(BinaryOp::Sub, &shifted, &B::unary(UnaryOp::Log, &sum))
    } else {
        B::binary(BinaryOp::Div, &e, &sum)
    }
}

/// [`Composites::adam`] from primitives and [`Composites::axpby`].
pub fn composed_adam<B: Composites>(
    p: &mut B::Storage,
    m: &mut B::Storage,
    v: &mut B::Storage,
    g: &B::Storage,
    o: AdamStep,
) {
    let (c1, c2) = o.corrections();
    let flat = [B::shape(m)[0]];
    let g = B::reshape(g, &flat);
    let g = if !o.decoupled && o.weight_decay != 0.0 {
        B::binary(BinaryOp::Add, &g, &B::binary_scalar(BinaryOp::Mul, &B::reshape(p, &flat), o.weight_decay))
    } else {
        g
    };
    B::axpby(m, o.beta1, &g, 1.0 - o.beta1);
    B::axpby(v, o.beta2, &B::binary(BinaryOp::Mul, &g, &g), 1.0 - o.beta2);
    let denom =
        B::binary_scalar(BinaryOp::Add, &B::unary(UnaryOp::Sqrt, &B::binary_scalar(BinaryOp::Div, v, c2)), o.eps);
    let step = B::binary(BinaryOp::Div, m, &denom);
    B::axpby(p, o.keep(), &B::reshape(&step, B::shape(p)), -o.lr / c1);
}

/// [`Composites::attention`] from a product, the softmax and a product.
pub fn composed_attention<B: Composites>(
    q: &B::Storage,
    k: &B::Storage,
    v: &B::Storage,
    o: SoftmaxOptions,
) -> B::Storage {
    let r = B::shape(k).len();
    let mut axes = Dims::new();
    axes.extend(0..r);
    axes.swap(r - 2, r - 1);
    let scores = B::matmul(q, &B::permute(k, &axes));
    B::matmul(&B::softmax(&scores, r - 1, o), v)
}

/// `t` (`[n]`) shaped `[1, .., 1, n]` to broadcast along the last dim of a rank-`r` tensor.
fn along_last<B: Primitives>(t: &B::Storage, r: usize) -> B::Storage {
    let mut shape = ones(r);
    shape[r - 1] = B::shape(t)[0];
    B::reshape(t, &shape)
}

/// [`Composites::norm`] from primitives.
pub fn composed_norm<B: Primitives>(
    x: &B::Storage,
    weight: Option<&B::Storage>,
    bias: Option<&B::Storage>,
    eps: f64,
    centre: bool,
) -> [B::Storage; 2] {
    let r = B::shape(x).len();
    let n = B::shape(x)[r - 1] as f64;
    let mean_of = |t: &B::Storage| B::binary_scalar(BinaryOp::Div, &B::reduce(ReduceOp::Sum, t, r - 1), n);
    let mean = if centre {
        mean_of(x)
    } else {
        let mut rows = Dims::from(B::shape(x));
        rows[r - 1] = 1;
        B::full(&rows, 0.0, B::dtype(x), &B::device(x))
    };
    let centred = if centre { B::binary(BinaryOp::Sub, x, &mean) } else { x.clone() };
    let var = mean_of(&B::binary(BinaryOp::Mul, &centred, &centred));
    let rstd = B::unary(UnaryOp::Recip, &B::unary(UnaryOp::Sqrt, &B::binary_scalar(BinaryOp::Add, &var, eps)));
    let mut y = B::binary(BinaryOp::Mul, &centred, &rstd);
    if let Some(w) = weight {
        y = B::binary(BinaryOp::Mul, &y, &along_last::<B>(w, r));
    }
    if let Some(b) = bias {
        y = B::binary(BinaryOp::Add, &y, &along_last::<B>(b, r));
    }
    [y, B::cat(&[mean, rstd], r - 1)]
}

/// [`Composites::norm_backward`] from primitives.
pub fn composed_norm_backward<B: Primitives>(
    g: &B::Storage,
    x: &B::Storage,
    stats: &B::Storage,
    weight: Option<&B::Storage>,
    centre: bool,
) -> [B::Storage; 3] {
    let shape = B::shape(x);
    let r = shape.len();
    let n = shape[r - 1];
    let stat = |i: usize| {
        let mut ranges: Vec<Range<usize>> = B::shape(stats).iter().map(|&d| 0..d).collect();
        ranges[r - 1] = i..i + 1;
        B::slice(stats, &ranges)
    };
    let (mean, rstd) = (stat(0), stat(1));
    let mean_of = |t: &B::Storage| B::binary_scalar(BinaryOp::Div, &B::reduce(ReduceOp::Sum, t, r - 1), n as f64);
    let x_hat = B::binary(BinaryOp::Mul, &B::binary(BinaryOp::Sub, x, &mean), &rstd);
    let gx = match weight {
        Some(w) => B::binary(BinaryOp::Mul, g, &along_last::<B>(w, r)),
        None => g.clone(),
    };
    let mut inner = B::binary(
        BinaryOp::Sub,
        &gx,
        &B::binary(BinaryOp::Mul, &x_hat, &mean_of(&B::binary(BinaryOp::Mul, &gx, &x_hat))),
    );
    if centre {
        inner = B::binary(BinaryOp::Sub, &inner, &mean_of(&gx));
    }
    let dx = B::binary(BinaryOp::Mul, &inner, &rstd);
    let rows = shape.iter().product::<usize>() / n.max(1);
    let column_sums = |t: &B::Storage| B::reshape(&B::reduce(ReduceOp::Sum, &B::reshape(t, &[rows, n]), 0), &[n]);
    [dx, column_sums(&B::binary(BinaryOp::Mul, g, &x_hat)), column_sums(g)]
}

/// [`Composites::softmax_backward`] from primitives.
pub fn composed_softmax_backward<B: Composites>(
    g: &B::Storage,
    y: &B::Storage,
    dim: usize,
    o: SoftmaxOptions,
) -> B::Storage {
    let shape = B::shape(g);
    let dx = if o.log {
        // Masked outputs are constants: their gradients do not count.
        let g = &if o.causal { causal_fill::<B>(g, 0.0) } else { g.clone() };
        let total = B::expand(&B::reduce(ReduceOp::Sum, g, dim), shape);
        B::binary(BinaryOp::Sub, g, &B::binary(BinaryOp::Mul, &B::unary(UnaryOp::Exp, y), &total))
    } else {
        let gy = B::binary(BinaryOp::Mul, g, y);
        let total = B::expand(&B::reduce(ReduceOp::Sum, &gy, dim), shape);
        B::binary(BinaryOp::Sub, &gy, &B::binary(BinaryOp::Mul, y, &total))
    };
    let dx = if o.causal { causal_fill::<B>(&dx, 0.0) } else { dx };
    if o.scale != 1.0 { B::binary_scalar(BinaryOp::Mul, &dx, o.scale) } else { dx }
}
