//! The checks. Each is generic over the backend and takes its device.

use super::reference as r;
use super::{FLOATS, assert_close, noise, panic_message, ramp, tensor, tolerance, values};
use blaze_runtime::{Backend, Conv2dOptions, DType, Pool2dOptions, Tensor, manual_seed};

/// zeros/ones/full/arange/eye/from_vec and reading back, in every dtype.
pub fn creation_and_readback<B: Backend>(dev: &B::Device) {
    let z = Tensor::<B, 2>::zeros([2, 3], dev);
    assert_eq!(z.shape(), [2, 3]);
    assert_eq!(z.dtype(), DType::F32);
    assert_eq!(z.to_vec::<f32>(), vec![0.0; 6]);
    assert_eq!(Tensor::<B, 1>::ones([3], dev).to_vec::<f32>(), vec![1.0; 3]);
    assert_eq!(Tensor::<B, 2>::full([1, 2], 2.5, dev).to_vec::<f32>(), vec![2.5, 2.5]);
    assert_eq!(Tensor::<B, 1>::full_dtype([2], 7.0, DType::I64, dev).to_vec::<i64>(), vec![7, 7]);
    assert_eq!(Tensor::<B, 1>::full_dtype([2], 1.0, DType::Bool, dev).to_vec::<bool>(), vec![true, true]);
    assert_eq!(Tensor::<B, 1>::arange(-2..3, dev).to_vec::<i64>(), vec![-2, -1, 0, 1, 2]);
    assert_eq!(Tensor::<B, 2>::eye(2, dev).to_vec::<f32>(), vec![1.0, 0.0, 0.0, 1.0]);
    let f = Tensor::<B, 2>::from_vec(vec![1.5f64, -2.0, 3.0, 4.0], [2, 2], dev);
    assert_eq!(f.dtype(), DType::F64);
    assert_eq!(f.to_vec::<f64>(), vec![1.5, -2.0, 3.0, 4.0]);
    let b = Tensor::<B, 1>::from_vec(vec![true, false], [2], dev);
    assert_eq!(b.to_vec::<bool>(), vec![true, false]);
    let s = Tensor::<B, 0>::from_vec(vec![3.0f32], [], dev);
    assert_eq!(s.item(), 3.0);
    assert_eq!(s.shape(), [0usize; 0]);
    let empty = Tensor::<B, 2>::zeros([0, 4], dev);
    assert_eq!(empty.numel(), 0);
    assert!(empty.to_vec::<f32>().is_empty());
    let like = f.ones_like();
    assert_eq!((like.dtype(), like.shape()), (DType::F64, [2, 2]));
    assert_eq!(f.size(-1), 2);
    let data = f.to_data();
    let back = Tensor::<B, 2>::from_data(data.clone(), dev).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.to_data(), data);
    assert!(Tensor::<B, 3>::from_data(data, dev).is_err(), "rank mismatch must be an error");
    // Printing nests by dim and elides the middle of long dims, as PyTorch.
    let m = Tensor::<B, 2>::from_vec(vec![1i64, 2, 3, 4], [2, 2], dev);
    assert_eq!(m.to_string(), "[[1, 2], [3, 4]]");
    let long = Tensor::<B, 1>::arange(0..10, dev);
    assert_eq!(long.to_string(), "[0, 1, 2, ..., 7, 8, 9]");
    assert_eq!(Tensor::<B, 0>::from_vec(vec![0.5f32], [], dev).to_string(), "0.5000");
    let dbg = format!("{:?}", Tensor::<B, 1>::from_vec(vec![true], [1], dev));
    assert!(dbg.contains("shape=[1], dtype=bool, [true]"), "{dbg}");
}

/// `manual_seed` reproduces values; the ranges are right.
pub fn random_is_seeded<B: Backend>(dev: &B::Device) {
    let mut rng = blaze_runtime::Rng::seed_from_u64(42);
    let a = Tensor::<B, 2>::uniform_with([4, 5], -2.0, 3.0, &mut rng, dev).to_vec::<f32>();
    let mut rng = blaze_runtime::Rng::seed_from_u64(42);
    let b = Tensor::<B, 2>::uniform_with([4, 5], -2.0, 3.0, &mut rng, dev).to_vec::<f32>();
    assert_eq!(a, b);
    assert!(a.iter().all(|v| (-2.0..3.0).contains(v)));
    manual_seed(9);
    let c = Tensor::<B, 1>::rand_normal([64], dev).to_vec::<f32>();
    manual_seed(9);
    let d = Tensor::<B, 1>::rand_normal([64], dev).to_vec::<f32>();
    assert_eq!(c, d);
    let u = Tensor::<B, 1>::rand_uniform([1000], dev).to_vec::<f32>();
    assert!(u.iter().all(|v| (0.0..1.0).contains(v)));
    let mean = u.iter().sum::<f32>() / 1000.0;
    assert!((mean - 0.5).abs() < 0.05, "uniform mean {mean}");
}

/// Every unary op against std's f64 math, in f32 and f64, on a contiguous
/// and on a transposed input.
pub fn unary_ops<B: Backend>(dev: &B::Device) {
    let xs = [-3.0, -1.5, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 7.5];
    let gelu = |x: f64| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
    type Reference = fn(f64) -> f64;
    type Op<B> = fn(&Tensor<B, 2>) -> Tensor<B, 2>;
    let cases: Vec<(&str, Op<B>, Reference)> = vec![
        ("neg", |t| t.neg(), |x| -x),
        ("abs", |t| t.abs(), f64::abs),
        ("exp", |t| t.exp(), f64::exp),
        ("log", |t| t.abs().add_scalar(0.1).log(), |x| (x.abs() + 0.1).ln()),
        ("sqrt", |t| t.abs().sqrt(), |x| x.abs().sqrt()),
        ("recip", |t| t.add_scalar(10.0).recip(), |x| 1.0 / (x + 10.0)),
        ("tanh", |t| t.tanh(), f64::tanh),
        ("sigmoid", |t| t.sigmoid(), |x| 1.0 / (1.0 + (-x).exp())),
        ("relu", |t| t.relu(), |x| x.max(0.0)),
        ("leaky_relu", |t| t.leaky_relu(0.1), |x| if x > 0.0 { x } else { 0.1 * x }),
        ("sin", |t| t.sin(), f64::sin),
        ("cos", |t| t.cos(), f64::cos),
        ("erf", |t| t.erf(), libm::erf),
        ("floor", |t| t.floor(), f64::floor),
        ("ceil", |t| t.ceil(), f64::ceil),
        (
            "sign",
            |t| t.sign(),
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            },
        ),
        ("square", |t| t.square(), |x| x * x),
        ("powf", |t| t.abs().powf(1.5), |x| x.abs().powf(1.5)),
        ("clamp", |t| t.clamp(-1.0, 2.0), |x| x.clamp(-1.0, 2.0)),
    ];
    for dtype in FLOATS {
        let t = tensor::<B, 2>(&xs, [2, 5], dtype, dev);
        let tt = tensor::<B, 2>(&xs, [5, 2], dtype, dev).t();
        let xt: Vec<f64> = r::indices(&[2, 5]).iter().map(|i| xs[i[1] * 2 + i[0]]).collect();
        for (name, op, reference) in &cases {
            let expected: Vec<f64> = xs.iter().map(|&x| reference(x)).collect();
            assert_close(&format!("{name} ({dtype})"), &op(&t), &expected, &[2, 5], tolerance(dtype, false));
            let expected_t: Vec<f64> = xt.iter().map(|&x| reference(x)).collect();
            assert_close(
                &format!("{name} transposed ({dtype})"),
                &op(&tt),
                &expected_t,
                &[2, 5],
                tolerance(dtype, false),
            );
        }
        let expected: Vec<f64> = xs.iter().map(|&x| gelu(x)).collect();
        assert_close(&format!("gelu ({dtype})"), &t.gelu(), &expected, &[2, 5], tolerance(dtype, false));
    }
}

fn check_binary<B: Backend>(dtype: DType, sa: &[usize], sb: &[usize], dev: &B::Device) {
    let na: usize = sa.iter().product();
    let nb: usize = sb.iter().product();
    let a = noise(na, 1);
    let b: Vec<f64> = noise(nb, 2).iter().map(|v| v + 1.5).collect();
    macro_rules! run {
        ($D:literal) => {{
            let ta = tensor::<B, $D>(&a, sa.try_into().expect("rank"), dtype, dev);
            let tb = tensor::<B, $D>(&b, sb.try_into().expect("rank"), dtype, dev);
            let cases: [(&str, Tensor<B, $D>, fn(f64, f64) -> f64); 7] = [
                ("add", &ta + &tb, |x, y| x + y),
                ("sub", &ta - &tb, |x, y| x - y),
                ("mul", &ta * &tb, |x, y| x * y),
                ("div", &ta / &tb, |x, y| x / y),
                ("maximum", ta.maximum(&tb), f64::max),
                ("minimum", ta.minimum(&tb), f64::min),
                ("pow", ta.abs().pow(&tb), |x, y| x.abs().powf(y)),
            ];
            for (name, got, f) in cases {
                let (want, shape) = r::binary(&a, sa, &b, sb, f);
                assert_close(&format!("{name} {sa:?} {sb:?} ({dtype})"), &got, &want, &shape, tolerance(dtype, false));
            }
        }};
    }
    match sa.len() {
        0 => run!(0),
        1 => run!(1),
        2 => run!(2),
        3 => run!(3),
        4 => run!(4),
        _ => unreachable!("test shapes have rank <= 4"),
    }
}

/// NumPy broadcasting in every pattern the kernels special-case and more:
/// equal shapes, a bias row, a per-row scalar, an outer product, a scalar,
/// interleaved size-1 dims, empty and rank-0 tensors.
pub fn binary_broadcasting<B: Backend>(dev: &B::Device) {
    let cases: &[(&[usize], &[usize])] = &[
        (&[2, 3], &[2, 3]),
        (&[4, 3], &[1, 3]),
        (&[1, 3], &[4, 3]),
        (&[4, 3], &[4, 1]),
        (&[4, 1], &[4, 3]),
        (&[4, 1], &[1, 3]),
        (&[4, 3], &[1, 1]),
        (&[1, 1], &[4, 3]),
        (&[3, 1, 4], &[1, 5, 1]),
        (&[2, 3, 4], &[2, 1, 4]),
        (&[2, 3, 4, 5], &[1, 3, 1, 5]),
        (&[0, 3], &[1, 3]),
        (&[0, 3], &[0, 1]),
        (&[1], &[7]),
        (&[], &[]),
    ];
    for dtype in FLOATS {
        for (sa, sb) in cases {
            check_binary::<B>(dtype, sa, sb, dev);
        }
    }
    // Large enough to cross the parallel threshold on the CPU backend.
    check_binary::<B>(DType::F32, &[300, 1000], &[1, 1000], dev);
    check_binary::<B>(DType::F32, &[300, 1000], &[300, 1], dev);
    check_binary::<B>(DType::F32, &[600, 500], &[600, 500], dev);
}

/// Binary ops on transposed and sliced (non-contiguous) operands.
pub fn binary_strided_inputs<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let a = ramp::<B, 2>([3, 4], 1.0, 0.0, dtype, dev);
        let at = a.t(); // [4, 3], strided
        let b = ramp::<B, 2>([4, 3], 0.5, 1.0, dtype, dev);
        let av: Vec<f64> = r::indices(&[4, 3]).iter().map(|i| (i[1] * 4 + i[0]) as f64).collect();
        let bv = values(&b);
        let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| x * y).collect();
        assert_close("transposed * contiguous", &(&at * &b), &want, &[4, 3], tolerance(dtype, false));
        let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| y - x).collect();
        assert_close("contiguous - transposed", &(&b - &at), &want, &[4, 3], tolerance(dtype, false));
        // A slice with a gap between rows, broadcast against a row.
        let s = a.slice(&[1..3, 1..4]); // [2, 3]
        let row = ramp::<B, 2>([1, 3], 1.0, 10.0, dtype, dev);
        let want = vec![5.0 + 10.0, 6.0 + 11.0, 7.0 + 12.0, 9.0 + 10.0, 10.0 + 11.0, 11.0 + 12.0];
        assert_close("slice + row", &(&s + &row), &want, &[2, 3], tolerance(dtype, false));
        // A transposed column broadcast: [3, 1] viewed from [1, 3].
        let col = ramp::<B, 2>([1, 3], 1.0, 0.0, dtype, dev).t();
        let m = Tensor::<B, 2>::ones([3, 2], dev).to_dtype(dtype);
        assert_close("ones * column", &(&m * &col), &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0], &[3, 2], tolerance(dtype, false));
    }
}

/// Scalar ops, reversed scalar ops and the operator overloads.
pub fn scalar_ops_and_operators<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let x = tensor::<B, 1>(&[1.0, -2.0, 4.0], [3], dtype, dev);
        let tol = tolerance(dtype, false);
        assert_close("x + 2", &(&x + 2.0), &[3.0, 0.0, 6.0], &[3], tol);
        assert_close("x - 1", &(&x - 1), &[0.0, -3.0, 3.0], &[3], tol);
        assert_close("x * 0.5", &(x.clone() * 0.5f32), &[0.5, -1.0, 2.0], &[3], tol);
        assert_close("x / 4", &(&x / 4.0), &[0.25, -0.5, 1.0], &[3], tol);
        assert_close("1 - x", &(1.0 - &x), &[0.0, 3.0, -3.0], &[3], tol);
        assert_close("2 / x", &(2.0 / &x), &[2.0, -1.0, 0.5], &[3], tol);
        assert_close("3 * x", &(3 * x.clone()), &[3.0, -6.0, 12.0], &[3], tol);
        assert_close("10 + x", &(10.0 + &x), &[11.0, 8.0, 14.0], &[3], tol);
        assert_close("-x", &(-&x), &[-1.0, 2.0, -4.0], &[3], tol);
        assert_close("x + x", &(x.clone() + x.clone()), &[2.0, -4.0, 8.0], &[3], tol);
        assert_close("clamp_min", &x.clamp_min(0.0), &[1.0, 0.0, 4.0], &[3], tol);
        assert_close("clamp_max", &x.clamp_max(0.0), &[0.0, -2.0, 0.0], &[3], tol);
    }
}

/// i64 arithmetic (integer division rounds toward zero) and bool logic.
pub fn integer_and_bool_ops<B: Backend>(dev: &B::Device) {
    let a = Tensor::<B, 1>::from_vec(vec![7i64, -7, 3, 0], [4], dev);
    let b = Tensor::<B, 1>::from_vec(vec![2i64, 2, -3, 5], [4], dev);
    assert_eq!((&a + &b).to_vec::<i64>(), vec![9, -5, 0, 5]);
    assert_eq!((&a - &b).to_vec::<i64>(), vec![5, -9, 6, -5]);
    assert_eq!((&a * &b).to_vec::<i64>(), vec![14, -14, -9, 0]);
    assert_eq!((&a / &b).to_vec::<i64>(), vec![3, -3, -1, 0]);
    assert_eq!(a.maximum(&b).to_vec::<i64>(), vec![7, 2, 3, 5]);
    assert_eq!(a.abs().to_vec::<i64>(), vec![7, 7, 3, 0]);
    assert_eq!((-&a).to_vec::<i64>(), vec![-7, 7, -3, 0]);
    assert_eq!((&a * 2).to_vec::<i64>(), vec![14, -14, 6, 0]);
    assert_eq!(a.sign().to_vec::<i64>(), vec![1, -1, 1, 0]);
    assert_eq!(a.sum().item(), 3.0);
    assert_eq!(a.max().item(), 7.0);
    let p = Tensor::<B, 1>::from_vec(vec![true, true, false, false], [4], dev);
    let q = Tensor::<B, 1>::from_vec(vec![true, false, true, false], [4], dev);
    assert_eq!(p.logical_and(&q).to_vec::<bool>(), vec![true, false, false, false]);
    assert_eq!(p.logical_or(&q).to_vec::<bool>(), vec![true, true, true, false]);
    assert_eq!(p.logical_not().to_vec::<bool>(), vec![false, false, true, true]);
}

/// Comparisons (with broadcasting), `where_cond` and `masked_fill`.
pub fn comparisons_where_and_masks<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let a = tensor::<B, 2>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], dtype, dev);
        let row = tensor::<B, 2>(&[2.0, 2.0, 6.0], [1, 3], dtype, dev);
        assert_eq!(a.gt(&row).to_vec::<bool>(), vec![false, false, false, true, true, false]);
        assert_eq!(a.ge(&row).to_vec::<bool>(), vec![false, true, false, true, true, true]);
        assert_eq!(a.lt(&row).to_vec::<bool>(), vec![true, false, true, false, false, false]);
        assert_eq!(a.le(&row).to_vec::<bool>(), vec![true, true, true, false, false, true]);
        assert_eq!(a.eq(&row).to_vec::<bool>(), vec![false, true, false, false, false, true]);
        assert_eq!(a.ne(&row).to_vec::<bool>(), vec![true, false, true, true, true, false]);
        assert_eq!(a.gt_scalar(3.5).to_vec::<bool>(), vec![false, false, false, true, true, true]);
        assert_eq!(a.eq_scalar(2.0).to_vec::<bool>(), vec![false, true, false, false, false, false]);
        let cond = a.gt_scalar(3.5);
        let other = a.neg();
        let w = Tensor::where_cond(&cond, &a, &other);
        assert_close("where", &w, &[-1.0, -2.0, -3.0, 4.0, 5.0, 6.0], &[2, 3], tolerance(dtype, false));
        // Broadcast condition [1, 3] and a [2, 1] branch.
        let c = Tensor::<B, 2>::from_vec(vec![true, false, true], [1, 3], dev);
        let col = tensor::<B, 2>(&[10.0, 20.0], [2, 1], dtype, dev);
        let w = Tensor::where_cond(&c, &col, &a);
        assert_close("where broadcast", &w, &[10.0, 2.0, 10.0, 20.0, 5.0, 20.0], &[2, 3], tolerance(dtype, false));
        // A causal mask, as attention uses it.
        let scores = Tensor::<B, 2>::zeros([3, 3], dev).to_dtype(dtype);
        let i = Tensor::<B, 1>::arange(0..3, dev);
        let mask = i.reshape([1, 3]).gt(&i.reshape([3, 1]));
        let m = scores.masked_fill(&mask, f64::NEG_INFINITY);
        let inf = f64::NEG_INFINITY;
        assert_close(
            "causal mask",
            &m,
            &[0.0, inf, inf, 0.0, 0.0, inf, 0.0, 0.0, 0.0],
            &[3, 3],
            tolerance(dtype, false),
        );
    }
}

fn check_reductions<B: Backend>(x: &[f64], shape: [usize; 3], dtype: DType, dev: &B::Device) {
    let t = tensor::<B, 3>(x, shape, dtype, dev);
    let tol = tolerance(dtype, true);
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let argmax = |v: &[f64]| v.iter().enumerate().fold(0, |b, (i, &x)| if x > v[b] { i } else { b }) as f64;
    let argmin = |v: &[f64]| v.iter().enumerate().fold(0, |b, (i, &x)| if x < v[b] { i } else { b }) as f64;
    for d in 0..3 {
        let mut ks = shape;
        ks[d] = 1;
        let n = shape[d] as f64;
        assert_close(&format!("sum_dim {d}"), &t.sum_dim(d), &r::reduce(x, &shape, d, sum), &ks, tol);
        let mean: Vec<f64> = r::reduce(x, &shape, d, sum).iter().map(|s| s / n).collect();
        assert_close(&format!("mean_dim {d}"), &t.mean_dim(d), &mean, &ks, tol);
        assert_close(&format!("max_dim {d}"), &t.max_dim(d), &r::reduce(x, &shape, d, max), &ks, tol);
        assert_close(&format!("min_dim {d}"), &t.min_dim(d), &r::reduce(x, &shape, d, min), &ks, tol);
        assert_close(&format!("argmax {d}"), &t.argmax(d), &r::reduce(x, &shape, d, argmax), &ks, tol);
        assert_close(&format!("argmin {d}"), &t.argmin(d), &r::reduce(x, &shape, d, argmin), &ks, tol);
        let var: Vec<f64> = r::reduce(x, &shape, d, |v| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64
        });
        assert_close(&format!("var_dim {d}"), &t.var_dim(d, 1), &var, &ks, tol);
    }
    assert_close("sum", &t.sum(), &[sum(x)], &[], tol);
    assert_close("mean", &t.mean(), &[sum(x) / x.len() as f64], &[], tol);
    assert_close("max", &t.max(), &[max(x)], &[], tol);
    assert_close("min", &t.min(), &[min(x)], &[], tol);
}

/// Sums, means, max/min and argmax/argmin over every dim and over all.
pub fn reductions<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        check_reductions::<B>(&noise(2 * 3 * 4, 5), [2, 3, 4], dtype, dev);
        check_reductions::<B>(&noise(3 * 70 * 5, 6), [3, 70, 5], dtype, dev);
    }
    // Long rows cross the 16-lane accumulator and the parallel threshold.
    check_reductions::<B>(&noise(4 * 100_003, 7), [4, 1, 100_003], DType::F32, dev);
    let t = ramp::<B, 2>([3, 4], 1.0, 0.0, DType::F32, dev);
    // Reducing a transposed view reduces the logical dims.
    assert_close("sum of transposed", &t.t().sum_dim(1), &[12.0, 15.0, 18.0, 21.0], &[4, 1], (0.0, 0.0));
    assert_close("sum_dim -1", &t.sum_dim(-1), &[6.0, 22.0, 38.0], &[3, 1], (0.0, 0.0));
    let s: Tensor<B, 1> = t.sum_dim(1).squeeze(1);
    assert_eq!(s.shape(), [3]);
}

/// NaN propagation, first-index ties, empty sums and i64.
pub fn reductions_edge_cases<B: Backend>(dev: &B::Device) {
    let nan = f64::NAN;
    for dtype in FLOATS {
        let x = tensor::<B, 2>(&[1.0, nan, 3.0, 2.0, 5.0, 5.0], [2, 3], dtype, dev);
        let tol = tolerance(dtype, false);
        assert_close("max with NaN", &x.max_dim(1), &[nan, 5.0], &[2, 1], tol);
        assert_close("min with NaN", &x.min_dim(1), &[nan, 2.0], &[2, 1], tol);
        assert_close("argmax NaN wins", &x.argmax(1), &[1.0, 1.0], &[2, 1], tol);
        assert_close("argmin ties take the first", &x.argmin(1), &[1.0, 0.0], &[2, 1], tol);
        assert!(x.sum().item().is_nan());
        let e = Tensor::<B, 2>::zeros([0, 3], dev).to_dtype(dtype);
        assert_close("empty sum_dim", &e.sum_dim(0), &[0.0, 0.0, 0.0], &[1, 3], tol);
        assert_close("empty sum", &e.sum(), &[0.0], &[], tol);
        // Composites::sum_squares, which gradient norms use: strided, long
        // enough for every unrolled lane, empty.
        let v = noise(3 * 37, 90);
        let t = tensor::<B, 2>(&v, [3, 37], dtype, dev).t();
        let want: f64 = v.iter().map(|x| x * x).sum();
        let got = Tensor::<B, 0>::wrap(B::sum_squares(t.storage()));
        assert_close("sum_squares", &got, &[want], &[], tolerance(dtype, true));
        assert_close("sum_squares of nothing", &Tensor::<B, 0>::wrap(B::sum_squares(e.storage())), &[0.0], &[], tol);
    }
    let i = Tensor::<B, 2>::from_vec(vec![3i64, -1, 4, 1, -5, 9], [2, 3], dev);
    assert_eq!(i.sum_dim(0).to_vec::<i64>(), vec![4, -6, 13]);
    assert_eq!(i.max_dim(1).to_vec::<i64>(), vec![4, 9]);
    assert_eq!(i.argmin(1).to_vec::<i64>(), vec![1, 1]);
}

fn check_matmul<B: Backend>(m: usize, k: usize, n: usize, dtype: DType, dev: &B::Device) {
    let a = noise(m * k, 11);
    let b = noise(k * n, 12);
    let ta = tensor::<B, 2>(&a, [m, k], dtype, dev);
    let tb = tensor::<B, 2>(&b, [k, n], dtype, dev);
    let want = r::matmul(&a, &b, m, k, n);
    assert_close(&format!("matmul {m}x{k}x{n} ({dtype})"), &ta.matmul(&tb), &want, &[m, n], tolerance(dtype, true));
}

/// 2-D products of many sizes, including degenerate ones and sizes that
/// cross the kernel's blocking and the parallel threshold.
pub fn matmul<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        for (m, k, n) in [(1, 1, 1), (2, 3, 4), (1, 64, 10), (7, 1, 5), (17, 33, 9), (0, 3, 4), (3, 0, 4), (3, 4, 0)] {
            check_matmul::<B>(m, k, n, dtype, dev);
        }
    }
    check_matmul::<B>(129, 131, 127, DType::F32, dev);
    check_matmul::<B>(64, 300, 96, DType::F64, dev);
}

/// Batched products with broadcast batch dims and strided operands.
pub fn matmul_batched_and_strided<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let (bsz, m, k, n) = (3, 4, 5, 2);
        let a = noise(bsz * m * k, 21);
        let b = noise(k * n, 22);
        let ta = tensor::<B, 3>(&a, [bsz, m, k], dtype, dev);
        let tb = tensor::<B, 3>(&b, [1, k, n], dtype, dev);
        let mut want = Vec::new();
        for i in 0..bsz {
            want.extend(r::matmul(&a[i * m * k..(i + 1) * m * k], &b, m, k, n));
        }
        let tol = tolerance(dtype, true);
        assert_close("batched, rhs broadcast", &ta.matmul(&tb), &want, &[bsz, m, n], tol);
        // The same product with the rhs given transposed: [1, n, k] -> [1, k, n].
        let bt: Vec<f64> = r::indices(&[n, k]).iter().map(|i| b[i[1] * n + i[0]]).collect();
        let tbt = tensor::<B, 3>(&bt, [1, n, k], dtype, dev).transpose(1, 2);
        assert_close("batched, rhs transposed", &ta.matmul(&tbt), &want, &[bsz, m, n], tol);
        // Both batch dims broadcast: [2, 1, m, k] x [1, 3, k, n].
        let a4 = noise(2 * m * k, 23);
        let b4 = noise(3 * k * n, 24);
        let t4a = tensor::<B, 4>(&a4, [2, 1, m, k], dtype, dev);
        let t4b = tensor::<B, 4>(&b4, [1, 3, k, n], dtype, dev);
        let mut want = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                want.extend(r::matmul(&a4[i * m * k..(i + 1) * m * k], &b4[j * k * n..(j + 1) * k * n], m, k, n));
            }
        }
        assert_close("batch dims broadcast both ways", &t4a.matmul(&t4b), &want, &[2, 3, m, n], tol);
        // x @ w.t() as a Linear layer computes it.
        let w = noise(n * k, 25);
        let tw = tensor::<B, 2>(&w, [n, k], dtype, dev);
        let x2 = tensor::<B, 2>(&a[..m * k], [m, k], dtype, dev);
        let wt: Vec<f64> = r::indices(&[k, n]).iter().map(|i| w[i[1] * k + i[0]]).collect();
        assert_close("x @ w.t()", &x2.matmul(&tw.t()), &r::matmul(&a[..m * k], &wt, m, k, n), &[m, n], tol);
    }
    // Large enough to run on several threads, which split the output along
    // its longer side: once along columns, once along rows, with both
    // operands transposed and sizes no block multiple divides.
    for (m, k, n) in [(70, 90, 250), (250, 90, 70)] {
        let a = noise(m * k, 26);
        let b = noise(k * n, 27);
        let at: Vec<f64> = r::indices(&[k, m]).iter().map(|i| a[i[1] * k + i[0]]).collect();
        let bt: Vec<f64> = r::indices(&[n, k]).iter().map(|i| b[i[1] * n + i[0]]).collect();
        let ta = tensor::<B, 2>(&at, [k, m], DType::F32, dev).t();
        let tb = tensor::<B, 2>(&bt, [n, k], DType::F32, dev).t();
        let name = format!("{m}x{k}x{n}, both transposed");
        assert_close(&name, &ta.matmul(&tb), &r::matmul(&a, &b, m, k, n), &[m, n], tolerance(DType::F32, true));
    }
}

/// reshape (with -1), flatten, squeeze/unsqueeze, permute/transpose,
/// expand, narrow and slice.
pub fn shape_ops<B: Backend>(dev: &B::Device) {
    let t = ramp::<B, 3>([2, 3, 4], 1.0, 0.0, DType::F32, dev);
    let v = values(&t);
    let r2: Tensor<B, 2> = t.reshape([-1, 4]);
    assert_eq!(r2.shape(), [6, 4]);
    assert_eq!(values(&r2), v);
    let f: Tensor<B, 2> = t.flatten(1, 2);
    assert_eq!(f.shape(), [2, 12]);
    let u: Tensor<B, 4> = t.unsqueeze(1);
    assert_eq!(u.shape(), [2, 1, 3, 4]);
    let u2: Tensor<B, 4> = t.unsqueeze(-1);
    assert_eq!(u2.shape(), [2, 3, 4, 1]);
    let s: Tensor<B, 3> = u.squeeze(1);
    assert_eq!(s.shape(), [2, 3, 4]);
    let p = t.permute([2, 0, 1]);
    assert_eq!(p.shape(), [4, 2, 3]);
    let want: Vec<f64> = r::indices(&[4, 2, 3]).iter().map(|i| (i[1] * 12 + i[2] * 4 + i[0]) as f64).collect();
    assert_close("permute", &p, &want, &[4, 2, 3], (0.0, 0.0));
    // Reshaping a permuted (strided) tensor reads it in logical order.
    let pr: Tensor<B, 1> = p.reshape([24]);
    assert_close("reshape of permuted", &pr, &want, &[24], (0.0, 0.0));
    let tr = t.transpose(0, 2);
    assert_eq!(tr.shape(), [4, 3, 2]);
    let e: Tensor<B, 3> = ramp::<B, 2>([3, 1], 1.0, 0.0, DType::F32, dev).expand([2, 3, 4]);
    let want: Vec<f64> = r::indices(&[2, 3, 4]).iter().map(|i| i[1] as f64).collect();
    assert_close("expand", &e, &want, &[2, 3, 4], (0.0, 0.0));
    let e2: Tensor<B, 2> = ramp::<B, 2>([3, 1], 1.0, 0.0, DType::F32, dev).expand([-1, 2]);
    assert_close("expand -1", &e2, &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0], &[3, 2], (0.0, 0.0));
    let n = t.narrow(2, 1, 2);
    let want: Vec<f64> = r::indices(&[2, 3, 2]).iter().map(|i| (i[0] * 12 + i[1] * 4 + i[2] + 1) as f64).collect();
    assert_close("narrow", &n, &want, &[2, 3, 2], (0.0, 0.0));
    let sl = t.slice(&[1..2, 0..3]);
    assert_close("slice", &sl, &v[12..], &[1, 3, 4], (0.0, 0.0));
    // Ops compose on views: a slice of a transpose.
    let st = t.transpose(1, 2).slice(&[0..1, 1..3, 0..1]);
    assert_close("slice of transpose", &st, &[1.0, 2.0], &[1, 2, 1], (0.0, 0.0));
    let empty = t.narrow(1, 1, 0);
    assert_eq!(empty.shape(), [2, 0, 4]);
}

/// cat, stack, split, chunk and pad, in several dtypes.
pub fn cat_stack_split_pad<B: Backend>(dev: &B::Device) {
    let a = ramp::<B, 2>([2, 2], 1.0, 0.0, DType::F32, dev);
    let b = ramp::<B, 2>([2, 1], 1.0, 10.0, DType::F32, dev);
    let c = Tensor::cat(&[a.clone(), b], 1);
    assert_close("cat dim 1", &c, &[0.0, 1.0, 10.0, 2.0, 3.0, 11.0], &[2, 3], (0.0, 0.0));
    let c0 = Tensor::cat(&[a.clone(), a.clone()], 0);
    assert_close("cat dim 0", &c0, &[0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0], &[4, 2], (0.0, 0.0));
    let ci = Tensor::cat(&[Tensor::<B, 1>::arange(0..2, dev), Tensor::<B, 1>::arange(5..6, dev)], 0);
    assert_eq!(ci.to_vec::<i64>(), vec![0, 1, 5]);
    let st: Tensor<B, 3> = Tensor::stack(&[a.clone(), a.add_scalar(10.0)], 2);
    assert_close("stack", &st, &[0.0, 10.0, 1.0, 11.0, 2.0, 12.0, 3.0, 13.0], &[2, 2, 2], (0.0, 0.0));
    let parts = ramp::<B, 1>([5], 1.0, 0.0, DType::F32, dev).split(2, 0);
    assert_eq!(parts.iter().map(|p| values(p)).collect::<Vec<_>>(), vec![vec![0.0, 1.0], vec![2.0, 3.0], vec![4.0]]);
    let chunks = ramp::<B, 1>([6], 1.0, 0.0, DType::F32, dev).chunk(3, 0);
    assert_eq!(chunks.len(), 3);
    assert_eq!(values(&chunks[2]), vec![4.0, 5.0]);
    for dtype in FLOATS {
        let p = ramp::<B, 2>([2, 2], 1.0, 1.0, dtype, dev).pad([(1, 0), (0, 2)], -1.0);
        let want = [-1.0, -1.0, -1.0, -1.0, 1.0, 2.0, -1.0, -1.0, 3.0, 4.0, -1.0, -1.0];
        assert_close("pad", &p, &want, &[3, 4], (0.0, 0.0));
    }
}

/// gather, scatter_add, index_select and index_add.
pub fn indexing<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let x = ramp::<B, 2>([3, 4], 1.0, 0.0, dtype, dev);
        let idx = Tensor::<B, 2>::from_vec(vec![3i64, 0, 1, 1, 2, 2], [3, 2], dev);
        assert_close("gather dim 1", &x.gather(1, &idx), &[3.0, 0.0, 5.0, 5.0, 10.0, 10.0], &[3, 2], (0.0, 0.0));
        let idx0 = Tensor::<B, 2>::from_vec(vec![2i64, 0, 1, 0], [1, 4], dev);
        assert_close("gather dim 0", &x.gather(0, &idx0), &[8.0, 1.0, 6.0, 3.0], &[1, 4], (0.0, 0.0));
        let z = Tensor::<B, 2>::zeros([3, 4], dev).to_dtype(dtype);
        let src = tensor::<B, 2>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2], dtype, dev);
        let s = z.scatter_add(1, &idx, &src);
        let want = [2.0, 0.0, 0.0, 1.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 11.0, 0.0];
        assert_close("scatter_add accumulates duplicates", &s, &want, &[3, 4], (0.0, 0.0));
        let sel = Tensor::<B, 1>::from_vec(vec![2i64, 0, 2], [3], dev);
        let want = [8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0];
        assert_close("index_select dim 0", &x.index_select(0, &sel), &want, &[3, 4], (0.0, 0.0));
        let want = [2.0, 0.0, 2.0, 6.0, 4.0, 6.0, 10.0, 8.0, 10.0];
        assert_close("index_select dim 1", &x.narrow(1, 0, 3).index_select(1, &sel), &want, &[3, 3], (0.0, 0.0));
        let ones = Tensor::<B, 2>::ones([3, 4], dev).to_dtype(dtype);
        let added = z.index_add(0, &sel, &ones);
        let want = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0];
        assert_close("index_add accumulates duplicates", &added, &want, &[3, 4], (0.0, 0.0));
        // Gathering from a transposed input.
        let xt = x.t(); // [4, 3]
        let i = Tensor::<B, 2>::from_vec(vec![1i64, 2, 0, 3], [4, 1], dev);
        assert_close(
            "gather of transposed",
            &xt.gather(0, &i.reshape([1, 4]).narrow(1, 0, 3)),
            &[1.0, 6.0, 8.0],
            &[1, 3],
            (0.0, 0.0),
        );
    }
}

/// NaN propagates as in PyTorch: through ReLU (plain and fused with a
/// bias), maximum/minimum and clamp whichever operand holds it, max/min
/// reductions and softmax over its row, and max pooling, whose index (and
/// argmax's, argmin's) points at the first NaN.
pub fn nan_propagation<B: Backend>(dev: &B::Device) {
    let nan = f64::NAN;
    for dtype in FLOATS {
        let tol = tolerance(dtype, false);
        let x = tensor::<B, 1>(&[1.0, nan, -2.0, 3.0], [4], dtype, dev);
        assert_close("relu", &x.relu(), &[1.0, nan, 0.0, 3.0], &[4], tol);
        for act in super::table_activations() {
            let bias = tensor::<B, 1>(&[0.5, 0.0], [2], dtype, dev);
            let y = x.reshape([2, 2]).bias_act(Some(&bias), 1, Some(act));
            assert!(values(&y)[1].is_nan(), "bias_act {act:?} ({dtype}): {:?}", values(&y));
            assert!(values(&x.reshape([2, 2]).bias_act(None, 1, Some(act)))[1].is_nan(), "{act:?} without bias");
        }
        assert!(values(&x.leaky_relu(0.1))[1].is_nan(), "leaky_relu ({dtype})");
        // Long enough for the vector loops, with NaN in their bodies and
        // in a tail.
        let at = [1, 33, 66];
        let long: Vec<f64> = (0..67).map(|i| if at.contains(&i) { nan } else { i as f64 / 8.0 - 4.0 }).collect();
        let long = tensor::<B, 1>(&long, [67], dtype, dev);
        for (name, y) in
            super::table_activations().map(|act| (act.name(), long.unary(act))).chain([("exp", long.exp())])
        {
            let y = values(&y);
            assert!(at.iter().all(|&i| y[i].is_nan()), "{name} ({dtype}) over 67 values: {y:?}");
            assert!(y.iter().filter(|v| v.is_nan()).count() == at.len(), "{name} ({dtype}): {y:?}");
        }
        // Comparisons with NaN are false, but `ne`, as IEEE 754 says.
        let t = |b: Tensor<B, 1>| b.to_vec::<bool>();
        assert_eq!(t(x.eq(&x)), [true, false, true, true], "eq ({dtype})");
        assert_eq!(t(x.ne(&x)), [false, true, false, false], "ne ({dtype})");
        assert_eq!(t(x.lt_scalar(2.0)), [true, false, true, false], "lt ({dtype})");
        assert_eq!(t(x.ge_scalar(-5.0)), [true, false, true, true], "ge ({dtype})");
        assert_eq!(t(x.le(&x)), [true, false, true, true], "le ({dtype})");
        assert_eq!(t(x.gt_scalar(f64::NEG_INFINITY)), [true, false, true, true], "gt ({dtype})");
        assert_eq!(t(x.to_dtype(DType::Bool)), [true, true, true, true], "NaN is non-zero ({dtype})");
        let y = tensor::<B, 1>(&[nan, 0.0, 5.0, -1.0], [4], dtype, dev);
        assert_close("maximum", &x.maximum(&y), &[nan, nan, 5.0, 3.0], &[4], tol);
        assert_close("maximum, operands swapped", &y.maximum(&x), &[nan, nan, 5.0, 3.0], &[4], tol);
        assert_close("minimum", &x.minimum(&y), &[nan, nan, -2.0, -1.0], &[4], tol);
        assert_close("minimum, operands swapped", &y.minimum(&x), &[nan, nan, -2.0, -1.0], &[4], tol);
        let row = tensor::<B, 2>(&[nan], [1, 1], dtype, dev);
        assert_close("maximum broadcast", &x.reshape([1, 4]).maximum(&row), &[nan; 4], &[1, 4], tol);
        assert_close("clamp", &x.clamp(0.0, 2.0), &[1.0, nan, 0.0, 2.0], &[4], tol);
        assert_close("clamp_min", &x.clamp_min(0.0), &[1.0, nan, 0.0, 3.0], &[4], tol);
        assert_close("clamp_max", &x.clamp_max(0.0), &[0.0, nan, -2.0, 0.0], &[4], tol);
        assert!(x.max().item().is_nan() && x.min().item().is_nan() && x.sum().item().is_nan(), "reductions ({dtype})");
        // Rows short and long (a GPU reduces long ones in a tree), NaN
        // early and late, and a reduction over a middle dim.
        for (n, at) in [(5, 0), (5, 4), (300, 7), (300, 299)] {
            let mut v = noise(3 * n, 60);
            v[n + at] = nan;
            let t = tensor::<B, 2>(&v, [3, n], dtype, dev);
            let what = format!("rows of {n}, NaN at {at} ({dtype})");
            let (mx, mn) = (values(&t.max_dim(1)), values(&t.min_dim(1)));
            assert!(mx[1].is_nan() && mn[1].is_nan() && !mx[0].is_nan() && !mn[2].is_nan(), "max/min_dim, {what}");
            assert_eq!(t.argmax(1).to_vec::<i64>()[1], at as i64, "argmax, {what}");
            assert_eq!(t.argmin(1).to_vec::<i64>()[1], at as i64, "argmin, {what}");
            let mid = t.reshape([3, n, 1]).permute([1, 0, 2]);
            assert!(values(&mid.max_dim(0))[1].is_nan(), "max over dim 0, {what}");
            assert_eq!(mid.argmax(0).to_vec::<i64>()[1], at as i64, "argmax over dim 0, {what}");
            let sm = values(&t.softmax(1));
            assert!(sm[n..2 * n].iter().all(|v| v.is_nan()), "softmax: the NaN row, {what}");
            assert!(sm[..n].iter().chain(&sm[2 * n..]).all(|v| v.is_finite()), "softmax: other rows, {what}");
        }
        // The first NaN wins over an earlier larger value and a later NaN.
        let t = tensor::<B, 1>(&[9.0, nan, 10.0, nan], [4], dtype, dev);
        assert_eq!(t.argmax(0).to_vec::<i64>(), [1], "argmax takes the first NaN ({dtype})");
        assert_eq!(t.argmin(0).to_vec::<i64>(), [1], "argmin takes the first NaN ({dtype})");
        for o in [Pool2dOptions::new(2), Pool2dOptions::new(3).stride(2).padding(1)] {
            let mut v = noise(2 * 36, 61);
            v[36 + 14] = nan; // plane 1, row 2, column 2
            let t = tensor::<B, 4>(&v, [1, 2, 6, 6], dtype, dev);
            let (out, idx) = t.max_pool2d_with_indices(o);
            let (vals, idx) = (values(&out), idx.to_vec::<i64>());
            let per = vals.len() / 2;
            let hits: Vec<usize> = (0..vals.len()).filter(|&i| vals[i].is_nan()).collect();
            assert!(!hits.is_empty() && hits.iter().all(|&i| i >= per), "max_pool2d {o:?} ({dtype}): NaN in {hits:?}");
            assert!(hits.iter().all(|&i| idx[i] == 14), "max_pool2d {o:?} indices point at the NaN");
            assert!(values(&t.max_pool2d(o)).iter().filter(|v| v.is_nan()).count() == hits.len(), "max_pool2d {o:?}");
        }
    }
}

/// Conversions between every pair of dtypes.
pub fn casts<B: Backend>(dev: &B::Device) {
    let f = Tensor::<B, 1>::from_vec(vec![-1.7f32, 0.0, 2.5], [3], dev);
    assert_eq!(f.to_dtype(DType::I64).to_vec::<i64>(), vec![-1, 0, 2]);
    assert_eq!(f.to_dtype(DType::Bool).to_vec::<bool>(), vec![true, false, true]);
    assert_eq!(f.to_dtype(DType::F64).to_vec::<f64>(), vec![-1.7f32 as f64, 0.0, 2.5]);
    let i = Tensor::<B, 1>::arange(0..3, dev);
    assert_eq!(i.to_dtype(DType::F32).to_vec::<f32>(), vec![0.0, 1.0, 2.0]);
    let b = Tensor::<B, 1>::from_vec(vec![true, false], [2], dev);
    assert_eq!(b.to_dtype(DType::F32).to_vec::<f32>(), vec![1.0, 0.0]);
    assert_eq!(b.to_dtype(DType::I64).to_vec::<i64>(), vec![1, 0]);
    // A cast of a strided view keeps the logical order.
    let t = ramp::<B, 2>([2, 3], 1.0, 0.0, DType::F32, dev).t().to_dtype(DType::I64);
    assert_eq!(t.to_vec::<i64>(), vec![0, 3, 1, 4, 2, 5]);
}

/// Misuse panics with the op and the shapes.
pub fn misuse_messages<B: Backend>(dev: &B::Device) {
    let expect = |needle: &str, f: &dyn Fn(&B::Device)| {
        let msg = panic_message(|| f(dev)).unwrap_or_else(|| panic!("expected a panic containing {needle:?}"));
        assert!(msg.contains(needle), "panic message {msg:?} does not contain {needle:?}");
    };
    expect("matmul: [2, 3] times [4, 5]: inner dims 3 and 4 differ", &|d| {
        let _ = Tensor::<B, 2>::zeros([2, 3], d).matmul(&Tensor::zeros([4, 5], d));
    });
    expect("add: shapes [2, 3] and [4, 3] do not broadcast (dim 0: 2 vs 4)", &|d| {
        let _ = Tensor::<B, 2>::zeros([2, 3], d) + Tensor::zeros([4, 3], d);
    });
    expect("reshape: [2, 3] has 6 elements, [4, 2] has 8", &|d| {
        let _: Tensor<B, 2> = Tensor::<B, 2>::zeros([2, 3], d).reshape([4, 2]);
    });
    expect(
        "conv2d: input [1, 3, 8, 8] and weight [4, 2, 3, 3]: the weight expects 2 input channels, the input has 3",
        &|d| {
            let x = Tensor::<B, 4>::zeros([1, 3, 8, 8], d);
            let _ = x.conv2d(&Tensor::zeros([4, 2, 3, 3], d), None, Conv2dOptions::default());
        },
    );
    expect("the 5x5 kernel (dilation [1, 1]) is larger than the padded 4x4 input", &|d| {
        let x = Tensor::<B, 4>::zeros([1, 1, 4, 4], d);
        let _ = x.conv2d(&Tensor::zeros([1, 1, 5, 5], d), None, Conv2dOptions::default());
    });
    expect("sum_dim: dim 2 is out of range for a tensor of rank 2", &|d| {
        let _ = Tensor::<B, 2>::zeros([2, 3], d).sum_dim(2);
    });
    expect("index_select: index values span 0..=3, outside 0..3", &|d| {
        let idx = Tensor::<B, 1>::from_vec(vec![0i64, 3], [2], d);
        let _ = Tensor::<B, 2>::zeros([3, 2], d).index_select(0, &idx);
    });
    expect("to_vec: the tensor holds f32, not i64", &|d| {
        let _ = Tensor::<B, 1>::zeros([2], d).to_vec::<i64>();
    });
    expect("add: dtypes f32 and f64 differ", &|d| {
        let _ = Tensor::<B, 1>::zeros([2], d) + Tensor::<B, 1>::zeros([2], d).to_dtype(DType::F64);
    });
}

pub use super::props::{prop_binary_broadcast, prop_conv2d, prop_matmul, prop_movement_roundtrip, prop_reductions};
