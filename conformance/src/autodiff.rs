//! Autodiff checks, generic over the inner backend: every primitive's
//! gradient against central finite differences (f64), accumulation,
//! detach/no_grad, and the graph being freed.

use super::{noise, tensor};
use blaze_runtime::autodiff::{Autodiff, live_nodes, no_grad};
use std::mem::MaybeUninit;

use blaze_runtime::kernel::KernelFloat;
use blaze_runtime::{Backend, Conv2dOptions, DType, Pool2dOptions, SoftmaxOptions, Tensor};

const EPS: f64 = 1e-6;
const TOL: f64 = 1e-6;

/// Checks the tape gradient of `f` at `x` (f64) against finite differences.
#[track_caller]
fn check<B: Backend, const D: usize>(
    what: &str,
    x: &Tensor<B, D>,
    f: impl Fn(&Tensor<Autodiff<B>, D>) -> Tensor<Autodiff<B>, 0>,
) {
    let leaf = Tensor::<Autodiff<B>, D>::from_inner(x.clone()).require_grad();
    let grads = f(&leaf).backward();
    let g = grads.get(&leaf).map(|t| t.to_data().values.to_f64_vec()).unwrap_or_else(|| vec![0.0; x.numel()]);
    assert_eq!(g.len(), x.numel(), "{what}: gradient size");
    let base = x.to_data().values.to_f64_vec();
    let eval = |v: &[f64]| {
        let t = Tensor::<B, D>::from_data(
            blaze_runtime::TensorData::new(v.to_vec(), x.shape()).expect("data"),
            &x.device(),
        )
        .expect("rank");
        f(&Tensor::from_inner(t)).item()
    };
    let step = base.len().div_ceil(40).max(1);
    for i in (0..base.len()).step_by(step) {
        let (mut up, mut down) = (base.clone(), base.clone());
        up[i] += EPS;
        down[i] -= EPS;
        let numeric = (eval(&up) - eval(&down)) / (2.0 * EPS);
        let scale = 1f64.max(numeric.abs()).max(g[i].abs());
        assert!((g[i] - numeric).abs() <= TOL * scale, "{what}[{i}]: tape {}, finite differences {numeric}", g[i]);
    }
}

fn t<B: Backend, const D: usize>(shape: [usize; D], seed: u64, dev: &B::Device) -> Tensor<B, D> {
    tensor::<B, D>(&noise(shape.iter().product(), seed), shape, DType::F64, dev)
}

/// Weights the output so that every element counts with its own factor.
fn weigh<B: Backend, const D: usize>(y: &Tensor<Autodiff<B>, D>) -> Tensor<Autodiff<B>, 0> {
    let r = noise(y.numel(), 777);
    let r = Tensor::<Autodiff<B>, D>::from_inner(tensor::<B, D>(&r, y.shape(), DType::F64, &y.device().clone()));
    y.mul(&r).sum()
}

/// Every elementwise primitive, broadcasting included.
pub fn autodiff_elementwise<B: Backend>(dev: &B::Device) {
    let x = t::<B, 2>([3, 4], 1, dev);
    let pos = x.abs().add_scalar(0.5);
    type Op<B> = fn(&Tensor<Autodiff<B>, 2>) -> Tensor<Autodiff<B>, 2>;
    let unary: Vec<(&str, Op<B>)> = vec![
        ("neg", |x| x.neg()),
        ("abs", |x| x.abs()),
        ("exp", |x| x.exp()),
        ("tanh", |x| x.tanh()),
        ("sigmoid", |x| x.sigmoid()),
        ("relu", |x| x.relu()),
        ("gelu", |x| x.gelu()),
        ("leaky_relu", |x| x.leaky_relu(0.1)),
        ("sin", |x| x.sin()),
        ("cos", |x| x.cos()),
        ("erf", |x| x.erf()),
        ("square", |x| x.square()),
        ("scalar ops", |x| ((x * 3.0 - 1.0) / 2.0 + 0.5).clamp(-0.6, 0.7)),
        ("rsub rdiv", |x| (1.0 - x) * (2.0 / x.add_scalar(3.0))),
        ("powf", |x| x.add_scalar(2.0).powf(1.7)),
    ];
    for (name, f) in unary {
        check::<B, 2>(name, &x, |x| weigh(&f(x)));
    }
    for (name, f) in [("log", (|x| x.log()) as Op<B>), ("sqrt", |x| x.sqrt()), ("recip", |x| x.recip())] {
        check::<B, 2>(name, &pos, |x| weigh(&f(x)));
    }
    // Binary ops with broadcasting, differentiated in each argument.
    let row = t::<B, 2>([1, 4], 2, dev).abs().add_scalar(0.5);
    let col = t::<B, 2>([3, 1], 3, dev);
    type Bin<B> = fn(&Tensor<Autodiff<B>, 2>, &Tensor<Autodiff<B>, 2>) -> Tensor<Autodiff<B>, 2>;
    let binary: Vec<(&str, Bin<B>)> = vec![
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("pow", |a, b| a.abs().add_scalar(0.5).pow(b)),
    ];
    for (name, f) in binary {
        check::<B, 2>(&format!("{name} lhs"), &x, |a| weigh(&f(a, &Tensor::from_inner(row.clone()))));
        check::<B, 2>(&format!("{name} broadcast rhs"), &row, |b| weigh(&f(&Tensor::from_inner(x.clone()), b)));
        check::<B, 2>(&format!("{name} broadcast column"), &col, |b| weigh(&f(&Tensor::from_inner(x.clone()), b)));
    }
    // `a ^ b` at a zero base and at a zero exponent: PyTorch's gradients
    // (0 where `b a^b / a` or `0 ln 0` would be NaN).
    let a = Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[0.0, 2.0, 0.0, 3.0], [4], DType::F64, dev));
    let b = Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[2.0, 3.0, 0.0, 0.5], [4], DType::F64, dev));
    let (a, b) = (a.require_grad(), b.require_grad());
    let grads = a.pow(&b).sum().backward();
    let got = |t| super::values(&grads.get(t).expect("a gradient"));
    let want_a = [0.0, 12.0, 0.0, 0.5 / 3f64.sqrt()];
    let want_b = [0.0, 8.0 * 2f64.ln(), 0.0, 3f64.sqrt() * 3f64.ln()];
    for (what, g, w) in [("pow, d/da", got(&a), want_a), ("pow, d/db", got(&b), want_b)] {
        assert!(g.iter().zip(w).all(|(g, w)| (g - w).abs() < 1e-12), "{what}: {g:?}, not {w:?}");
    }
    // PyTorch's maximum and minimum split a tie's gradient and pass it to
    // both operands where one is NaN; clamp passes it at its bounds.
    let a = Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[1.0, 2.0, 3.0, f64::NAN], [4], DType::F64, dev));
    let b = Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[1.0, 3.0, 2.0, 0.0], [4], DType::F64, dev));
    let (a, b) = (a.require_grad(), b.require_grad());
    let grads = (a.maximum(&b) + a.minimum(&b) * 10.0).sum().backward();
    let got = |t| super::values(&grads.get(t).expect("a gradient"));
    assert_eq!(got(&a), [5.5, 10.0, 1.0, 11.0], "maximum and minimum, d/da");
    assert_eq!(got(&b), [5.5, 1.0, 10.0, 11.0], "maximum and minimum, d/db");
    let c = Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(
        &[-1.0, -0.5, 0.2, 0.5, 0.9, f64::NAN],
        [6],
        DType::F64,
        dev,
    ));
    let c = c.require_grad();
    let grads = c.clamp(-0.5, 0.5).sum().backward();
    assert_eq!(super::values(&grads.get(&c).expect("a gradient")), [0.0, 1.0, 1.0, 1.0, 0.0, 0.0], "clamp");
    // `x.powf(s)`: `s x^(s-1)`, but 0 for `s = 0` (not `0 x^-1`, NaN at 0).
    let z =
        Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[0.0, 2.0, -1.5], [3], DType::F64, dev)).require_grad();
    let grads = (z.powf(0.0) + z.powf(2.0) * 3.0).sum().backward();
    assert_eq!(super::values(&grads.get(&z).expect("a gradient")), [0.0, 12.0, -9.0], "powf by 0 and 2");
    let cond = x.gt_scalar(0.0);
    check::<B, 2>("where lhs", &x, |a| {
        let c = Tensor::<Autodiff<B>, 2>::from_inner(cond.clone());
        weigh(&Tensor::where_cond(&c, a, &Tensor::from_inner(row.clone())))
    });
    check::<B, 2>("where broadcast rhs", &row, |b| {
        let c = Tensor::<Autodiff<B>, 2>::from_inner(cond.clone());
        weigh(&Tensor::where_cond(&c, &Tensor::from_inner(x.clone()), b))
    });
    check::<B, 2>("masked_fill", &x, |a| weigh(&a.masked_fill(&Tensor::from_inner(cond.clone()), 0.25)));
    // Through an f32 round trip the function is quantised, so compare the
    // tape's gradient with the identity's instead of finite differences.
    let leaf = Tensor::<Autodiff<B>, 2>::from_inner(x.clone()).require_grad();
    let through = weigh(&leaf.to_dtype(DType::F32).to_dtype(DType::F64)).backward().get(&leaf).expect("grad");
    let direct = weigh(&leaf).backward().get(&leaf).expect("grad");
    for (a, b) in super::values(&through).iter().zip(super::values(&direct)) {
        assert!((a - b).abs() < 1e-6, "cast: {a} vs {b}");
    }
}

/// Reductions, softmax and the losses built on them.
pub fn autodiff_reductions<B: Backend>(dev: &B::Device) {
    let x = t::<B, 3>([2, 3, 4], 4, dev);
    for d in 0..3 {
        check::<B, 3>("sum_dim", &x, |x| weigh(&x.sum_dim(d)));
        check::<B, 3>("mean_dim", &x, |x| weigh(&x.mean_dim(d)));
        check::<B, 3>("max_dim", &x, |x| weigh(&x.max_dim(d)));
        check::<B, 3>("min_dim", &x, |x| weigh(&x.min_dim(d)));
        check::<B, 3>("var_dim", &x, |x| weigh(&x.var_dim(d, 1)));
        check::<B, 3>("softmax", &x, |x| weigh(&x.softmax(d)));
        check::<B, 3>("log_softmax", &x, |x| weigh(&x.log_softmax(d)));
    }
    let (scaled, causal) = (SoftmaxOptions::default().scale(0.7), SoftmaxOptions::default().scale(0.7).causal());
    check::<B, 3>("softmax_with scaled", &x, |x| weigh(&x.softmax_with(1, scaled)));
    check::<B, 3>("softmax_with causal", &x, |x| weigh(&x.softmax_with(2, causal)));
    check::<B, 3>("log_softmax_with scaled", &x, |x| weigh(&x.softmax_with(2, scaled.log())));
    check::<B, 3>("sum", &x, |x| x.sum());
    check::<B, 3>("mean", &x, |x| x.mean().mul_scalar(3.0));
    check::<B, 3>("max", &x, |x| x.max());
    let logits = t::<B, 2>([4, 5], 5, dev);
    let targets = Tensor::<Autodiff<B>, 1>::from_vec(vec![0i64, 4, 2, 2], [4], dev);
    check::<B, 2>("cross_entropy", &logits, |z| blaze_nn::loss::cross_entropy(z, &targets, 0.1).value);
}

/// Matmul (batched, broadcast) and the movement ops.
pub fn autodiff_linear_algebra_and_movement<B: Backend>(dev: &B::Device) {
    let a = t::<B, 3>([2, 3, 4], 6, dev);
    let b = t::<B, 3>([1, 4, 5], 7, dev);
    check::<B, 3>("matmul lhs", &a, |a| weigh(&a.matmul(&Tensor::from_inner(b.clone()))));
    check::<B, 3>("matmul broadcast rhs", &b, |b| weigh(&Tensor::from_inner(a.clone()).matmul(b)));
    check::<B, 3>("matmul transposed rhs", &b, |b| {
        weigh(&Tensor::from_inner(a.clone()).matmul(&b.transpose(1, 2).transpose(1, 2)))
    });
    check::<B, 3>("reshape", &a, |x| weigh(&x.reshape::<2>([6, 4])));
    check::<B, 3>("permute", &a, |x| weigh(&x.permute([2, 0, 1])));
    check::<B, 3>("expand", &b, |x| weigh(&x.expand([3, 4, 5])));
    check::<B, 3>("slice", &a, |x| weigh(&x.slice(&[0..2, 1..3, 1..4])));
    check::<B, 3>("narrow", &a, |x| weigh(&x.narrow(2, 1, 2)));
    check::<B, 3>("pad", &a, |x| weigh(&x.pad([(1, 0), (0, 2), (1, 1)], 0.5)));
    check::<B, 3>("cat", &a, |x| weigh(&Tensor::cat(&[x.clone(), x.mul_scalar(2.0)], 1)));
    check::<B, 3>("split and stack", &a, |x| {
        let parts = x.split(1, 0);
        weigh(&Tensor::<Autodiff<B>, 3>::stack::<4>(&[parts[1].clone(), parts[0].clone()], 3))
    });
    let idx = Tensor::<Autodiff<B>, 3>::from_vec(vec![2i64, 0, 1, 1, 0, 0, 3, 2, 1, 0, 2, 2], [2, 3, 2], dev);
    check::<B, 3>("gather", &a, |x| weigh(&x.gather(2, &idx)));
    let src = t::<B, 3>([2, 3, 2], 8, dev);
    check::<B, 3>("scatter_add self", &a, |x| weigh(&x.scatter_add(2, &idx, &Tensor::from_inner(src.clone()))));
    check::<B, 3>("scatter_add src", &src, |s| weigh(&Tensor::from_inner(a.clone()).scatter_add(2, &idx, s)));
    let sel = Tensor::<Autodiff<B>, 1>::from_vec(vec![3i64, 0, 3], [3], dev);
    check::<B, 3>("index_select", &a, |x| weigh(&x.index_select(2, &sel)));
    let rows = t::<B, 3>([2, 3, 3], 9, dev);
    check::<B, 3>("index_add src", &rows, |s| weigh(&Tensor::from_inner(a.clone()).index_add(2, &sel, s)));
}

/// Convolution and pooling.
pub fn autodiff_conv_and_pool<B: Backend>(dev: &B::Device) {
    let x = t::<B, 4>([2, 4, 5, 5], 10, dev);
    let w = t::<B, 4>([6, 2, 3, 3], 11, dev);
    let bias = t::<B, 1>([6], 12, dev);
    let o = Conv2dOptions::default().padding(1).groups(2).stride(2);
    check::<B, 4>("conv2d input", &x, |x| weigh(&x.conv2d(&Tensor::from_inner(w.clone()), None, o)));
    check::<B, 4>("conv2d weight", &w, |w| weigh(&Tensor::from_inner(x.clone()).conv2d(w, None, o)));
    check::<B, 1>("conv2d bias", &bias, |b| {
        weigh(&Tensor::from_inner(x.clone()).conv2d(&Tensor::from_inner(w.clone()), Some(b), o))
    });
    // A transposed convolution: conv2d's input gradient as a forward op, to
    // an output one larger than the stride alone maps back (output padding).
    let y = t::<B, 4>([2, 6, 3, 3], 13, dev);
    check::<B, 4>("conv2d_input_grad input", &y, |y| {
        weigh(&y.conv2d_input_grad(&Tensor::from_inner(w.clone()), [2, 4, 6, 6], o))
    });
    check::<B, 4>("conv2d_input_grad weight", &w, |w| {
        weigh(&Tensor::from_inner(y.clone()).conv2d_input_grad(w, [2, 4, 6, 6], o))
    });
    check::<B, 4>("max_pool2d", &x, |x| weigh(&x.max_pool2d(Pool2dOptions::new(3).stride(2).padding(1))));
    check::<B, 4>("avg_pool2d", &x, |x| weigh(&x.avg_pool2d(Pool2dOptions::new(2).stride(1))));
    check::<B, 4>("avg_pool2d ceil_mode", &x, |x| weigh(&x.avg_pool2d(Pool2dOptions::new(2).ceil_mode(true))));
}

/// Uses accumulate, detach and no_grad cut the graph, and the graph is
/// freed after each step (live nodes return to where they were).
pub fn autodiff_graph_semantics<B: Backend>(dev: &B::Device) {
    let x =
        Tensor::<Autodiff<B>, 1>::from_inner(tensor::<B, 1>(&[1.0, -2.0, 3.0], [3], DType::F64, dev)).require_grad();
    // d/dx sum(x * x + x) = 2x + 1: both uses of x add up.
    let g = (x.clone() * x.clone() + x.clone()).sum().backward();
    assert_eq!(super::values(&g.get(&x).expect("grad")), vec![3.0, -3.0, 7.0]);
    // A detached use contributes nothing.
    let g = (x.clone() * x.detach()).sum().backward();
    assert_eq!(super::values(&g.get(&x).expect("grad")), vec![1.0, -2.0, 3.0]);
    let y = no_grad(|| x.mul_scalar(2.0));
    assert!(!y.is_tracked(), "no_grad records nothing");
    assert!(y.sum().backward().get(&x).is_none());
    // A loss that does not depend on a leaf gives it no gradient.
    let other = Tensor::<Autodiff<B>, 1>::ones([3], dev).require_grad();
    assert!(x.sum().backward().get(&other).is_none());

    // Memory stays flat over many steps: a small regression trained by hand.
    let w0 = t::<B, 2>([4, 3], 13, dev);
    let data = Tensor::<Autodiff<B>, 2>::from_inner(t::<B, 2>([8, 4], 14, dev));
    let target = Tensor::<Autodiff<B>, 2>::from_inner(t::<B, 2>([8, 3], 15, dev));
    let mut w = w0;
    let before = live_nodes();
    let mut first_loss = None;
    let mut peak = 0;
    let mut loss_value = 0.0;
    for step in 0..10_000 {
        let wt = Tensor::<Autodiff<B>, 2>::from_inner(w.clone()).require_grad();
        let pred = data.matmul(&wt).tanh();
        let loss = (pred - &target).square().mean();
        loss_value = loss.item();
        first_loss.get_or_insert(loss_value);
        let grads = loss.backward();
        peak = peak.max(live_nodes());
        w = w.sub(&grads.get(&wt).expect("grad").mul_scalar(0.1));
        drop((wt, loss));
        if step % 1000 == 0 {
            assert_eq!(live_nodes(), before, "step {step}: the graph was not freed");
        }
    }
    assert_eq!(live_nodes(), before);
    assert!(peak < before + 32, "a step's graph holds {} nodes", peak - before);
    assert!(loss_value < 0.5 * first_loss.expect("ran"), "loss {first_loss:?} -> {loss_value}");

    // Batch-norm statistics updated in a tape-trained step do not keep the
    // step's graph alive.
    let mut bn = blaze_nn::BatchNorm2d::<Autodiff<B>, 2>::new(Default::default(), dev);
    let img =
        Tensor::<Autodiff<B>, 4>::from_inner(t::<B, 4>([3, 2, 4, 4], 16, dev).to_dtype(DType::F32)).require_grad();
    let base = live_nodes();
    for _ in 0..5 {
        let (y, _) = blaze_nn::Layer::<Autodiff<B>, 4, 4>::forward_train(&mut bn, &img, &mut blaze_nn::Ctx::train(0));
        let _ = y.square().sum().backward();
    }
    assert_eq!(live_nodes(), base, "running statistics hold on to old graphs");
    assert!(!bn.running_mean.is_tracked());
    drop(img);

    // A long chain (an unrolled recurrence) frees without overflowing the
    // stack. In f64, which the GPU backends keep on the host: the tape is
    // what is tested, and 200k launches would only time the driver.
    let h0 = Tensor::<Autodiff<B>, 1>::from_inner(t::<B, 1>([2], 17, dev)).require_grad();
    let mut h = h0.clone();
    for _ in 0..200_000 {
        h = h.mul_scalar(1.0);
    }
    drop(h);
    drop(h0);
    assert_eq!(live_nodes(), before);
}

/// A hand-written elementwise kernel, as `kernel!` would generate it:
/// `f(x, y, s) = x * y + s * exp(-x)`, with its partials and WGSL.
#[derive(Clone, Copy, Debug)]
struct MulAddExp;

impl blaze_runtime::kernel::Elementwise for MulAddExp {
    const NAME: &'static str = "mul_add_exp";
    const ARGS: &'static [&'static str] = &["x", "y", "s"];
    const WGSL: &'static str = "fn mul_add_exp(a_x: f32, a_y: f32, a_s: f32) -> f32 {
    return a_x * a_y + a_s * exp(-a_x);
}
fn mul_add_exp_d_x(a_x: f32, a_y: f32, a_s: f32) -> f32 {
    return a_y - a_s * exp(-a_x);
}
fn mul_add_exp_d_y(a_x: f32, a_y: f32, a_s: f32) -> f32 {
    return a_x;
}
fn mul_add_exp_d_s(a_x: f32, a_y: f32, a_s: f32) -> f32 {
    return exp(-a_x);
}
";

    #[inline(always)]
    fn map<T: KernelFloat>(args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        for (i, o) in out.iter_mut().enumerate() {
            let (x, y, s) = (args[0][i], args[1][i], args[2][i]);
            o.write(x * y + s * (-x).exp());
        }
    }

    #[inline(always)]
    fn map_partial<T: KernelFloat>(arg: usize, args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        for (i, o) in out.iter_mut().enumerate() {
            let (x, y, s) = (args[0][i], args[1][i], args[2][i]);
            o.write(match arg {
                0 => y - s * (-x).exp(),
                1 => x,
                _ => (-x).exp(),
            });
        }
    }

    fn onnx<G: blaze_runtime::kernel::OnnxExpr>(g: &mut G, args: &[G::Value]) -> G::Value {
        let (x, y, s) = (&args[0], &args[1], &args[2]);
        let (xy, nx) = (g.op("Mul", &[x, y]), g.op("Neg", &[x]));
        let e = g.op("Exp", &[&nx]);
        let se = g.op("Mul", &[s, &e]);
        g.op("Add", &[&xy, &se])
    }

    fn onnx_partial<G: blaze_runtime::kernel::OnnxExpr>(g: &mut G, arg: usize, args: &[G::Value]) -> G::Value {
        let (x, y, s) = (&args[0], &args[1], &args[2]);
        if arg == 1 {
            return x.clone();
        }
        let nx = g.op("Neg", &[x]);
        let e = g.op("Exp", &[&nx]);
        if arg == 2 {
            return e;
        }
        let se = g.op("Mul", &[s, &e]);
        g.op("Sub", &[y, &se])
    }
}

/// `Kernels::elementwise` through `kernel::call`: broadcasting tensors,
/// numbers, strided inputs, f32 and f64, the partials, and the tape's
/// gradients for tensors used directly and broadcast.
pub fn kernels<B: Backend>(dev: &B::Device) {
    use blaze_runtime::kernel::{Arg, call, partial};
    let f = |x: f64, y: f64, s: f64| x * y + s * (-x).exp();
    let (xs, ys) = (noise(6, 51), noise(3, 52));
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
        let x = tensor::<B, 2>(&xs, [2, 3], dtype, dev);
        let y = tensor::<B, 2>(&ys, [1, 3], dtype, dev);
        let args = [Arg::Tensor(&x), Arg::Tensor(&y), Arg::Number(0.5)];
        let got = call::<MulAddExp, B, 2>(&args);
        let want: Vec<f64> = (0..6).map(|i| f(xs[i], ys[i % 3], 0.5)).collect();
        super::assert_close("kernel, broadcast row and a number", &got, &want, &[2, 3], (tol, tol));
        let want: Vec<f64> = (0..6).map(|i| ys[i % 3] - 0.5 * (-xs[i]).exp()).collect();
        super::assert_close("kernel partial in x", &partial::<MulAddExp, B, 2>(0, &args), &want, &[2, 3], (tol, tol));
        // A transposed input reads by value.
        let xt = tensor::<B, 2>(&xs, [3, 2], dtype, dev).t();
        let got = call::<MulAddExp, B, 2>(&[Arg::Tensor(&xt), Arg::Number(2.0), Arg::Number(0.0)]);
        let want: Vec<f64> = [0, 2, 4, 1, 3, 5].iter().map(|&i| 2.0 * xs[i]).collect();
        super::assert_close("kernel on a transposed input", &got, &want, &[2, 3], (tol, tol));
    }
    // Gradients through the tape, for the tensor and the broadcast row.
    let x = tensor::<B, 2>(&xs, [2, 3], DType::F64, dev);
    let y = tensor::<B, 2>(&ys, [1, 3], DType::F64, dev);
    let yd = Tensor::<Autodiff<B>, 2>::from_inner(y.clone());
    check("kernel, d/dx", &x, |x| call::<MulAddExp, _, 2>(&[Arg::Tensor(x), Arg::Tensor(&yd), Arg::Number(0.5)]).sum());
    let xd = Tensor::<Autodiff<B>, 2>::from_inner(x.clone());
    check("kernel, d/dy broadcast", &y, |y| {
        call::<MulAddExp, _, 2>(&[Arg::Tensor(&xd), Arg::Tensor(y), Arg::Number(0.5)]).sum()
    });
}

/// `bias_act` under the tape, without an activation and with each of the
/// table's: the gradients of the input and of the bias.
pub fn autodiff_bias_act<B: Backend>(dev: &B::Device) {
    // Away from ReLU's kink at 0.
    let xs: Vec<f64> = noise(24, 61).iter().map(|v| v + 0.037).collect();
    let x = tensor::<B, 3>(&xs, [2, 3, 4], DType::F64, dev);
    for dim in 0..3 {
        let n = [2, 3, 4][dim];
        let b = tensor::<B, 1>(&noise(n, 62 + dim as u64), [n], DType::F64, dev);
        let bd = Tensor::<Autodiff<B>, 1>::from_inner(b.clone());
        let xd = Tensor::<Autodiff<B>, 3>::from_inner(x.clone());
        for act in std::iter::once(None).chain(super::table_activations().map(Some)) {
            // A weighting so the sum does not hide a wrong gradient.
            let w = Tensor::<Autodiff<B>, 3>::from_inner(tensor::<B, 3>(&noise(24, 63), [2, 3, 4], DType::F64, dev));
            check(&format!("bias_act {act:?} along {dim}, d/dx"), &x, |x| {
                (x.clone().bias_act(Some(&bd), dim, act) * &w).sum()
            });
            check(&format!("bias_act {act:?} along {dim}, d/dbias"), &b, |b| {
                (xd.clone().bias_act(Some(b), dim, act) * &w).sum()
            });
        }
    }
}

/// Softmax over scores masked with `-inf` where every entry of a row is
/// masked (the first query of a left-padded sequence under a causal
/// mask): the tape's gradient is finite and matches finite differences,
/// 0 for the masked scores.
pub fn autodiff_masked_softmax<B: Backend>(dev: &B::Device) {
    let x = t::<B, 2>([3, 4], 21, dev);
    let mask =
        tensor::<B, 2>(&[1., 1., 1., 1., 1., 0., 1., 1., 0., 0., 0., 1.], [3, 4], DType::F64, dev).ne_scalar(0.0);
    for log in [false, true] {
        check::<B, 2>(&format!("masked softmax (log {log})"), &x, |x| {
            let mask = Tensor::<Autodiff<B>, 2>::from_inner(mask.clone());
            let scores = x.masked_fill(&mask, f64::NEG_INFINITY);
            // The log form is -inf where masked: weigh only what it keeps.
            if log { weigh(&scores.log_softmax(1).masked_fill(&mask, 0.0)) } else { weigh(&scores.softmax(1)) }
        });
    }
}
