//! `kernel!` end to end: CPU results against hand-written references for
//! every intrinsic, broadcasting and scalar arguments, generated partial
//! derivatives against finite differences through the tape, and the WGSL
//! it emits.

use blaze::autodiff::Autodiff;
use blaze::nn::gradcheck::check_function;
use blaze::prelude::*;
use blaze::{Rng, kernel};
use expect_test::expect;

kernel! {
    /// Swish activation.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

kernel! {
    /// Every unary intrinsic once, each term scaled apart.
    fn unary_mix(x: f32) -> f32 {
        let p = abs(x) + 0.5;
        exp(x) + 2.0 * exp2(x) + 3.0 * log(p) + 4.0 * log2(p) + 5.0 * sqrt(p) + 6.0 * rsqrt(p)
            + 7.0 * tanh(x) + 8.0 * sin(x) + 9.0 * cos(x) + 10.0 * sign(x) + 11.0 * floor(x) + 12.0 * ceil(x)
            + 13.0 * erf(x)
    }
}

kernel! {
    /// The intrinsics of several arguments, comparisons and branches.
    fn binary_mix(a: f32, b: f32, c: f32) -> f32 {
        let base = abs(a) + 1.0;
        let picked = if a > b { a * c } else { b - c };
        pow(base, b) + min(a, b) + 2.0 * max(b, c) + 3.0 * clamp(a, -0.5, 0.5) + 4.0 * fma(a, b, c)
            + 5.0 * select(a <= c && !(b == c), 1.0, -1.0) + picked + (a % 0.75) + a / (b * b + 1.0) + PI
    }
}

kernel! {
    /// `max` and `min` of the same pair, weighted apart.
    fn extremes(a: f32, b: f32) -> f32 {
        max(a, b) + 2.0 * min(a, b)
    }
}

fn reference_unary(x: f64) -> f64 {
    let p = x.abs() + 0.5;
    x.exp()
        + 2.0 * x.exp2()
        + 3.0 * p.ln()
        + 4.0 * p.log2()
        + 5.0 * p.sqrt()
        + 6.0 / p.sqrt()
        + 7.0 * x.tanh()
        + 8.0 * x.sin()
        + 9.0 * x.cos()
        + 10.0
            * if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        + 11.0 * x.floor()
        + 12.0 * x.ceil()
        + 13.0 * libm::erf(x)
}

fn reference_binary(a: f64, b: f64, c: f64) -> f64 {
    let picked = if a > b { a * c } else { b - c };
    let cond = a <= c && b != c;
    (a.abs() + 1.0).powf(b)
        + a.min(b)
        + 2.0 * b.max(c)
        + 3.0 * a.clamp(-0.5, 0.5)
        + 4.0 * (a * b + c)
        + 5.0 * if cond { 1.0 } else { -1.0 }
        + picked
        + a % 0.75
        + a / (b * b + 1.0)
        + std::f64::consts::PI
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::seed_from_u64(seed);
    Tensor::<Cpu, 1>::normal_with([n], 0.0, 1.5, &mut rng, &CpuDevice).to_data().values.to_f64_vec()
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn every_intrinsic_matches_a_hand_written_reference() {
    // Enough elements for several loop pieces and the parallel path.
    let n = 40_000;
    let (a, b, c) = (values(n, 1), values(n, 2), values(n, 3));
    for dtype in [DType::F32, DType::F64] {
        let t = |v: &[f64]| Tensor::<Cpu, 1>::from_vec(v.to_vec(), [n], &CpuDevice).to_dtype(dtype);
        let tol = if dtype == DType::F32 { 2e-5 } else { 1e-12 };
        let got = unary_mix(&t(&a)).to_dtype(DType::F64).to_vec::<f64>();
        close("unary_mix", &got, &a.iter().map(|&x| reference_unary(x)).collect::<Vec<_>>(), tol);
        let got = binary_mix(&t(&a), &t(&b), &t(&c)).to_dtype(DType::F64).to_vec::<f64>();
        let want: Vec<f64> = (0..n).map(|i| reference_binary(a[i], b[i], c[i])).collect();
        close("binary_mix", &got, &want, tol * 10.0);
    }
}

#[test]
fn tensors_broadcast_and_scalars_splat() {
    let x = Tensor::<Cpu, 2>::from_vec(vec![-2.0f32, -0.5, 0.0, 0.5, 1.0, 3.0], [2, 3], &CpuDevice);
    let beta = Tensor::<Cpu, 2>::from_vec(vec![0.5f32, 1.0, 2.0], [1, 3], &CpuDevice);
    let sw = |x: f64, b: f64| x / (1.0 + (-b * x).exp());
    let got = swish(&x, &beta).to_dtype(DType::F64).to_vec::<f64>();
    let xs = [-2.0, -0.5, 0.0, 0.5, 1.0, 3.0];
    let want: Vec<f64> = xs.iter().enumerate().map(|(i, &v)| sw(v, [0.5, 1.0, 2.0][i % 3])).collect();
    close("swish(x, beta row)", &got, &want, 1e-6);
    // A scalar in either position; the result takes the tensor's shape.
    let got = swish(&x, 1.0).to_dtype(DType::F64).to_vec::<f64>();
    close("swish(x, 1.0)", &got, &xs.iter().map(|&v| sw(v, 1.0)).collect::<Vec<_>>(), 1e-6);
    let got = swish(0.5, &beta);
    assert_eq!(got.shape(), [1, 3]);
    // A transposed (strided) input.
    let got = swish(&x.t(), 2.0).to_dtype(DType::F64).to_vec::<f64>();
    let want: Vec<f64> = [0, 3, 1, 4, 2, 5].iter().map(|&i| sw(xs[i], 2.0)).collect();
    close("swish(x^T, 2.0)", &got, &want, 1e-6);
}

#[test]
fn broadcast_operands_read_in_place_match_materialised_ones() {
    // A block repeated along the leading dims (shorter and longer than a
    // piece of the CPU loop, so windows wrap and do not), values spread
    // along the trailing dims, and a broadcast in the middle (copied);
    // f32 and f64; one and two threads.
    let mut rng = Rng::seed_from_u64(6);
    let cases: [([usize; 3], [usize; 3]); 6] = [
        ([300, 1, 7], [1, 1, 7]),
        ([3, 1, 2500], [1, 1, 2500]),
        ([4, 5, 6], [1, 5, 6]),
        ([40, 50, 6], [40, 50, 1]),
        ([40, 5, 60], [40, 1, 1]),
        ([4, 50, 6], [4, 1, 6]),
    ];
    for dtype in [DType::F32, DType::F64] {
        for (shape, small) in cases {
            let x = Tensor::<Cpu, 3>::normal_with(shape, 0.0, 1.0, &mut rng, &CpuDevice).to_dtype(dtype);
            let b = Tensor::<Cpu, 3>::normal_with(small, 0.0, 1.0, &mut rng, &CpuDevice).to_dtype(dtype);
            let values = b.expand(shape).to_dtype(DType::F64).to_vec::<f64>();
            let full = Tensor::<Cpu, 3>::from_vec(values, shape, &CpuDevice).to_dtype(dtype);
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
                let (got, want) = pool.install(|| (swish(&x, &b), swish(&x, &full)));
                let (got2, want2) = pool.install(|| (swish(&b, &x), swish(&full, &x)));
                let what = format!("{shape:?} with {small:?}, {dtype}, {threads} threads");
                let v = |t: Tensor<Cpu, 3>| t.to_dtype(DType::F64).to_vec::<f64>();
                assert_eq!(v(got), v(want), "{what}");
                assert_eq!(v(got2), v(want2), "{what}, operand first");
            }
        }
    }
}

#[test]
fn a_sum_after_a_kernel_matches_the_kernel_then_the_sum() {
    use blaze::runtime::kernel::{Arg, call, call_sum};
    // Rows longer than a piece of the CPU loop, a broadcast row operand
    // and a scalar; one and two threads; f32 and f64; sum and mean.
    let mut rng = Rng::seed_from_u64(3);
    for dtype in [DType::F32, DType::F64] {
        let x = Tensor::<Cpu, 2>::normal_with([5, 2500], 0.0, 1.0, &mut rng, &CpuDevice).to_dtype(dtype);
        let b = Tensor::<Cpu, 2>::normal_with([1, 2500], 0.0, 1.0, &mut rng, &CpuDevice).to_dtype(dtype);
        let args =
            |row: bool| [Arg::Tensor(&x), if row { Arg::Tensor(&b) } else { Arg::Number(0.5) }, Arg::Number(2.0)];
        for row in [true, false] {
            let full = call::<binary_mix::Kernel, Cpu, 2>(&args(row));
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
                for mean in [false, true] {
                    let got = pool.install(|| call_sum::<binary_mix::Kernel, Cpu, 2>(&args(row), mean));
                    let want = if mean { full.mean_dim(1) } else { full.sum_dim(1) };
                    assert_eq!(got.shape(), [5, 1]);
                    let tol = if dtype == DType::F32 { 1e-4 } else { 1e-10 };
                    close("call_sum", &got.to_dtype(DType::F64).to_vec(), &want.to_dtype(DType::F64).to_vec(), tol);
                }
            }
        }
    }
}

#[test]
fn a_softmax_after_a_kernel_matches_the_kernel_then_the_softmax() {
    use blaze::runtime::kernel::{Arg, call, call_softmax};
    // Rows longer than a piece of the CPU loop and rows of a few; a NaN
    // row stays NaN; one and two threads; f32 and f64; softmax and log.
    let mut rng = Rng::seed_from_u64(4);
    for dtype in [DType::F32, DType::F64] {
        for width in [2500, 7] {
            let mut v = Tensor::<Cpu, 2>::normal_with([5, width], 0.0, 3.0, &mut rng, &CpuDevice).to_vec::<f32>();
            v[2 * width + 1] = f32::NAN;
            let x = Tensor::<Cpu, 2>::from_vec(v, [5, width], &CpuDevice).to_dtype(dtype);
            let b = Tensor::<Cpu, 2>::normal_with([1, width], 0.0, 1.0, &mut rng, &CpuDevice).to_dtype(dtype);
            let args = [Arg::Tensor(&x), Arg::Tensor(&b), Arg::Number(2.0)];
            let full = call::<binary_mix::Kernel, Cpu, 2>(&args);
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
                for log in [false, true] {
                    let got = pool.install(|| call_softmax::<binary_mix::Kernel, Cpu, 2>(&args, log));
                    let want = if log { full.log_softmax(1) } else { full.softmax(1) };
                    let (got, want) =
                        (got.to_dtype(DType::F64).to_vec::<f64>(), want.to_dtype(DType::F64).to_vec::<f64>());
                    assert!(got[2 * width..3 * width].iter().all(|v| v.is_nan()), "the NaN row");
                    let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
                    let rows = |v: &[f64]| [&v[..2 * width], &v[3 * width..]].concat();
                    close("call_softmax", &rows(&got), &rows(&want), tol);
                }
            }
        }
    }
}

kernel! {
    /// A parameter whose name is a keyword, written raw.
    pub fn shifted(r#in: f32, by: f32) -> f32 {
        r#in * r#in + by
    }
}

#[test]
fn raw_parameter_names_work_and_name_their_partials_plainly() {
    use blaze::runtime::kernel::Elementwise;
    assert_eq!(<shifted::Kernel as Elementwise>::ARGS, ["in", "by"]);
    assert!(shifted::WGSL.contains("fn shifted_d_in("), "{}", shifted::WGSL);
    let x = Tensor::<Cpu, 1>::from_vec(vec![1.0f32, -2.0, 3.0], [3], &CpuDevice);
    assert_eq!(shifted(&x, 0.5).to_vec::<f32>(), [1.5, 4.5, 9.5]);
    let leaf = Tensor::<Autodiff<Cpu>, 1>::from_inner(x).require_grad();
    let grads = shifted(&leaf, 0.5).sum().backward();
    assert_eq!(grads.get(&leaf).expect("a gradient").to_vec::<f32>(), [2.0, -4.0, 6.0]);
}

#[test]
#[should_panic(expected = "swish: argument shapes do not broadcast: `x` [2, 3], `beta` [2, 2]")]
fn mismatched_shapes_name_the_kernel_and_arguments() {
    let x = Tensor::<Cpu, 2>::zeros([2, 3], &CpuDevice);
    let _ = swish(&x, &Tensor::zeros([2, 2], &CpuDevice));
}

#[test]
#[should_panic(expected = "swish: at least one argument must be a tensor")]
fn a_call_needs_a_tensor() {
    let _: Tensor<Cpu, 1> = swish(1.0, 2.0);
}

type Ad = Autodiff<Cpu>;

/// The generated partials, through the tape, against central differences
/// of the kernel itself (f64), for each argument in turn.
#[test]
fn generated_partials_match_finite_differences() {
    let n = 12;
    let (a, b, c) = (values(n, 4), values(n, 5), values(n, 6));
    let t = |v: &[f64]| Tensor::<Ad, 1>::from_vec(v.to_vec(), [n], &CpuDevice);
    // Keep away from the kinks of sign, floor, clamp, min/max and %.
    let shift = |v: &[f64], by: f64| v.iter().map(|x| x + by).collect::<Vec<_>>();
    let (a, b, c) = (shift(&a, 0.013), shift(&b, 0.029), shift(&c, -0.041));

    let x = t(&a).require_grad();
    let grads = unary_mix(&x).sum().backward();
    check_function(&t(&a), |x| unary_mix(x).sum(), &Tensor::from_inner(grads.get(&x).expect("a gradient")));

    for which in 0..3 {
        let args = [t(&a), t(&b), t(&c)];
        let tracked = args[which].clone().require_grad();
        let call = |ts: &[Tensor<Ad, 1>; 3], w: &Tensor<Ad, 1>| {
            let pick = |i: usize| if i == which { w.clone() } else { ts[i].clone() };
            binary_mix(&pick(0), &pick(1), &pick(2)).sum()
        };
        let grads = call(&args, &tracked).backward();
        let g = Tensor::from_inner(grads.get(&tracked).expect("a gradient"));
        check_function(&args[which], |w| call(&args, w), &g);
    }

    // Broadcast arguments receive summed gradients; scalars none.
    let x = Tensor::<Ad, 2>::from_vec(values(6, 7), [2, 3], &CpuDevice);
    let beta = Tensor::<Ad, 2>::from_vec(vec![0.5, 1.0, 2.0], [1, 3], &CpuDevice).require_grad();
    let grads = swish(&x, &beta).sum().backward();
    let g = Tensor::from_inner(grads.get(&beta).expect("a gradient"));
    assert_eq!(g.shape(), [1, 3]);
    check_function(&beta, |b| swish(&x, b).sum(), &g);
}

#[test]
fn max_and_min_differentiate_as_the_tensor_ops_do() {
    use blaze::runtime::kernel::{Arg, partial};
    // A tie splits the gradient, NaN passes it to both arguments: PyTorch's
    // `maximum`/`minimum`, which the tape computes from the op table.
    let nan = f64::NAN;
    let (a0, b0) = ([1.0, 2.0, -1.0, nan, 0.5, -0.0], [1.0, 1.0, 3.0, 1.0, nan, 0.0]);
    let want_a = [1.5, 1.0, 2.0, 3.0, 3.0, 1.5];
    let want_b = [1.5, 2.0, 1.0, 3.0, 3.0, 1.5];
    let (a, b) =
        (Tensor::<Cpu, 1>::from_vec(a0.to_vec(), [6], &CpuDevice), Tensor::from_vec(b0.to_vec(), [6], &CpuDevice));
    let args = [Arg::Tensor(&a), Arg::Tensor(&b)];
    let d = |i| partial::<extremes::Kernel, Cpu, 1>(i, &args).to_vec::<f64>();
    assert_eq!(d(0), want_a, "d/da at {a0:?}, {b0:?}");
    assert_eq!(d(1), want_b, "d/db at {a0:?}, {b0:?}");

    let (ta, tb) = (Tensor::<Ad, 1>::from_inner(a).require_grad(), Tensor::<Ad, 1>::from_inner(b).require_grad());
    let grads = ta.maximum(&tb).add(&ta.minimum(&tb).mul_scalar(2.0)).sum().backward();
    let tape = |t: &Tensor<Ad, 1>| Tensor::<Ad, 1>::from_inner(grads.get(t).expect("a gradient")).to_vec::<f64>();
    assert_eq!(tape(&ta), want_a, "the tape by a");
    assert_eq!(tape(&tb), want_b, "the tape by b");
}

/// The WGSL the kernel and its partials compile to (naga validated it
/// while the test compiled). `UPDATE_EXPECT=1 cargo test` rewrites it.
#[test]
fn wgsl_of_the_kernel_and_its_partials() {
    expect![[r#"
        fn swish(x_0: f32, beta_1: f32) -> f32 {
            return (x_0 / (1.0 + exp(((-beta_1) * x_0))));
        }

        fn swish_d_x(x_0: f32, beta_1: f32) -> f32 {
            let v2 = ((-beta_1) * x_0);
            let v3 = exp(v2);
            let v4 = (1.0 + v3);
            return ((1.0 / v4) - ((x_0 * (v3 * (-beta_1))) / (v4 * v4)));
        }
        fn swish_d0(a0: f32, a1: f32) -> f32 {
            return swish_d_x(a0, a1);
        }

        fn swish_d_beta(x_0: f32, beta_1: f32) -> f32 {
            let v2 = ((-beta_1) * x_0);
            let v3 = exp(v2);
            let v4 = (1.0 + v3);
            return (-((x_0 * (v3 * (-x_0))) / (v4 * v4)));
        }
        fn swish_d1(a0: f32, a1: f32) -> f32 {
            return swish_d_beta(a0, a1);
        }
    "#]]
    .assert_eq(swish::WGSL);
}

kernel! {
    /// Swish with beta = 1 (SiLU), as a one-argument activation.
    pub fn silu(x: f32) -> f32 {
        x / (1.0 + exp(-x))
    }
}

/// A model with a kernel as its activation.
#[model(input = [6])]
pub struct KernelMlp {
    fc1: Linear<6, 8>,
    act: Map<silu::Kernel>,
    fc2: Linear<8, 3>,
}

/// In a `#[model]`, the generated backward goes through the kernel's
/// partial; gradients match finite differences (f64), and the forward
/// equals the same function composed from tensor ops.
#[test]
fn a_kernel_activation_in_a_model_differentiates() {
    let model = KernelMlp::<Cpu>::new_seeded(0, &CpuDevice);
    assert!(model.summary().contains("Map<silu::Kernel>"), "{}", model.summary());
    let x = Tensor::<Cpu, 2>::normal_with([4, 6], 0.0, 1.0, &mut Rng::seed_from_u64(8), &CpuDevice);
    blaze::nn::gradcheck::check_block::<Cpu, _, 2, 2>(&model, &x, true);
    // The same through a plain silu on the tape.
    let want = {
        let h = model.fc1.forward(&x);
        model.fc2.forward(&(h.clone() / (h.neg().exp() + 1.0)))
    };
    let got = model.forward(&x).to_vec::<f32>();
    close(
        "model forward",
        &got.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &want.to_dtype(DType::F64).to_vec::<f64>(),
        1e-5,
    );
}
