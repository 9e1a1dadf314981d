//! f16 and bf16: storage dtypes whose values round to nearest even on the
//! way in, and whose ops compute in f32 and round their result once.

use super::{noise, tensor, values};
use blaze_runtime::autodiff::Autodiff;
use blaze_runtime::{AdamStep, Backend, Conv2dOptions, DType, Tensor, bf16};

/// The 16-bit float dtypes.
const HALVES: [DType; 2] = [DType::F16, DType::BF16];

/// `x` rounded to `dtype` (to nearest, ties to even), as f64: worked out
/// here from the format (`bits` significand bits, the smallest normal
/// exponent, the largest finite value), independently of any conversion
/// routine.
fn rounded(x: f64, dtype: DType) -> f64 {
    let (bits, min_exp, max) = match dtype {
        DType::F16 => (11, -14, 65504.0),
        DType::BF16 => (8, -126, f64::from(bf16::MAX.to_f32())),
        other => panic!("rounded: {other} is not a 16-bit float"),
    };
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let mut exp = x.abs().log2().floor() as i32;
    if 2f64.powi(exp) > x.abs() {
        exp -= 1;
    }
    let exp = exp.max(min_exp);
    let step = 2f64.powi(exp - (bits - 1));
    let q = x / step;
    let mut r = q.round();
    if (q - q.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r -= q.signum();
    }
    let y = r * step;
    // Past the largest value by half a step or more: infinity.
    if y.abs() > max { x.signum() * f64::INFINITY } else { y }
}

/// The gap between `dtype`'s values just above 1.
fn step(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-10),
        _ => 2f64.powi(-7),
    }
}

/// Equal as values of a 16-bit float: NaN matches NaN, and zeros match
/// only with the same sign.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
}

/// Asserts that `half`, an op's result in `dtype`, is the same op's f32
/// result `wide` rounded to `dtype`, within `steps` of the dtype's
/// relative step (kernels that sum in another order round another f32).
#[track_caller]
fn assert_rounded<B: Backend, const D: usize>(
    what: &str,
    dtype: DType,
    half: &Tensor<B, D>,
    wide: &Tensor<B, D>,
    steps: f64,
) {
    assert_eq!(half.dtype(), dtype, "{what}: the result's dtype");
    assert_eq!(half.shape(), wide.shape(), "{what}: the result's shape");
    for (i, (&h, &w)) in values(half).iter().zip(&values(wide)).enumerate() {
        let want = rounded(w, dtype);
        let close = (h - want).abs() <= steps * step(dtype) * want.abs();
        assert!(same(h, want) || close, "{what} in {dtype}: [{i}] is {h}, the f32 result {w} rounds to {want}");
    }
}

/// f16 and bf16 tensors: conversion (nearest even, overflow to infinity,
/// subnormals, NaN, signed zero), every kind of op against the f32 op on
/// the same values, gradients and an Adam step.
pub fn half_precision<B: Backend>(dev: &B::Device) {
    let special = [1.0 / 3.0, -2049.0, 65504.0, 65520.0, 1e-6, -0.0, f64::NAN, f64::INFINITY, 3.0e38, -1.0e-40];
    for dtype in HALVES {
        // From the host (f64, one rounding) and from f32 on the device.
        let host = tensor::<B, 1>(&special, [special.len()], dtype, dev);
        let f32s = tensor::<B, 1>(&special, [special.len()], DType::F32, dev);
        let cast = f32s.to_dtype(dtype);
        assert_eq!((host.dtype(), cast.dtype()), (dtype, dtype));
        for (i, (&h, &c)) in values(&host).iter().zip(&values(&cast)).enumerate() {
            let (from_f64, from_f32) = (rounded(special[i], dtype), rounded(special[i] as f32 as f64, dtype));
            assert!(same(h, from_f64), "{} as {dtype}: {h}, want {from_f64}", special[i]);
            assert!(same(c, from_f32), "{} as f32 then {dtype}: {c}, want {from_f32}", special[i]);
        }
        // Back to f32 and f64 exactly; to bool and i64 as from f32.
        for wide in [DType::F32, DType::F64] {
            let back = values(&cast.to_dtype(wide));
            assert!(back.iter().zip(&values(&cast)).all(|(&x, &y)| same(x, y)), "{dtype} as {wide}: {back:?}");
        }
        let finite = tensor::<B, 1>(&[2.75, -0.5, 0.0, 7.0], [4], dtype, dev);
        assert_eq!(finite.to_dtype(DType::I64).to_vec::<i64>(), vec![2, 0, 0, 7]);
        assert_eq!(finite.to_dtype(DType::Bool).to_vec::<bool>(), vec![true, true, false, true]);
        assert_eq!(finite.to_dtype(DType::F16).dtype(), DType::F16);
        assert_eq!(
            Tensor::<B, 1>::full_dtype([3], 0.1, dtype, dev).to_data().values.to_f64_vec(),
            vec![rounded(0.1, dtype); 3]
        );

        // Ops: the same op on the values widened to f32, then rounded.
        let a = tensor::<B, 2>(&noise(24, 1).iter().map(|x| 3.0 * x).collect::<Vec<_>>(), [4, 6], dtype, dev);
        let b = tensor::<B, 2>(&noise(6, 2), [1, 6], dtype, dev);
        let c = tensor::<B, 2>(&noise(30, 3), [6, 5], dtype, dev);
        let w = |t: &Tensor<B, 2>| t.to_dtype(DType::F32);
        let (aw, bw, cw) = (w(&a), w(&b), w(&c));
        type Unary<B> = fn(&Tensor<B, 2>) -> Tensor<B, 2>;
        let unary: [(&str, Unary<B>); 8] = [
            ("exp", |t| t.exp()),
            ("tanh", |t| t.tanh()),
            ("sigmoid", |t| t.sigmoid()),
            ("gelu", |t| t.gelu()),
            ("relu", |t| t.relu()),
            ("sqrt of abs", |t| t.abs().sqrt()),
            ("x * 0.1 (an f32 scalar)", |t| t.mul_scalar(0.1)),
            ("softmax", |t| t.softmax(1)),
        ];
        for (what, f) in unary {
            assert_rounded(what, dtype, &f(&a), &f(&aw), 0.0);
        }
        assert_rounded("a + b (broadcast)", dtype, &a.add(&b), &aw.add(&bw), 0.0);
        assert_rounded("a / b (broadcast)", dtype, &a.div(&b), &aw.div(&bw), 0.0);
        assert_rounded("maximum", dtype, &a.maximum(&b), &aw.maximum(&bw), 0.0);
        assert_rounded("sum over rows", dtype, &a.sum_dim(1), &aw.sum_dim(1), 1.0);
        assert_rounded("max over rows", dtype, &a.max_dim(1), &aw.max_dim(1), 0.0);
        assert_eq!(a.argmax(1).to_vec::<i64>(), aw.argmax(1).to_vec::<i64>(), "argmax in {dtype}");
        assert_eq!(a.gt(&b).to_vec::<bool>(), aw.gt(&bw).to_vec::<bool>(), "a > b in {dtype}");
        assert_rounded("matmul", dtype, &a.matmul(&c), &aw.matmul(&cw), 1.0);
        let picked = Tensor::<B, 2>::where_cond(&a.gt(&b), &a, &b.expand([4, 6]));
        assert_rounded("where", dtype, &picked, &Tensor::where_cond(&aw.gt(&bw), &aw, &bw.expand([4, 6])), 0.0);
        // Movement is exact.
        let moved = Tensor::cat(&[a.permute([1, 0]).slice(&[1..4, 0..4]), c.slice(&[0..2, 1..5])], 0);
        let moved_w = Tensor::cat(&[aw.permute([1, 0]).slice(&[1..4, 0..4]), cw.slice(&[0..2, 1..5])], 0);
        assert_rounded("permute, slice, cat", dtype, &moved, &moved_w, 0.0);
        let idx = Tensor::<B, 2>::from_vec(vec![5i64, 0, 2, 2, 1, 4, 3, 0], [4, 2], dev);
        assert_rounded("gather", dtype, &a.gather(1, &idx), &aw.gather(1, &idx), 0.0);
        // Convolution, summed in f32.
        let x4 = tensor::<B, 4>(&noise(50, 4), [1, 2, 5, 5], dtype, dev);
        let k4 = tensor::<B, 4>(&noise(54, 5), [3, 2, 3, 3], dtype, dev);
        let bias = tensor::<B, 1>(&noise(3, 6), [3], dtype, dev);
        let o = Conv2dOptions { padding: [1, 1], ..Conv2dOptions::default() };
        let (x4w, k4w, biasw) = (x4.to_dtype(DType::F32), k4.to_dtype(DType::F32), bias.to_dtype(DType::F32));
        let y = x4.conv2d(&k4, Some(&bias), o);
        assert_rounded("conv2d", dtype, &y, &x4w.conv2d(&k4w, Some(&biasw), o), 1.0);

        // Gradients come back in the dtype: of sum(x * x) (2x, exactly)
        // and of sum(x c) (summed in f32).
        type Loss<B> = fn(&Tensor<Autodiff<B>, 2>, &Tensor<Autodiff<B>, 2>) -> Tensor<Autodiff<B>, 0>;
        let losses: [(&str, Loss<B>); 2] =
            [("sum(x * x)", |x, _| x.mul(x).sum()), ("sum(x c)", |x, c| x.matmul(c).sum())];
        for (what, loss) in losses {
            let grad = |x: &Tensor<B, 2>, c: &Tensor<B, 2>| {
                let leaf = Tensor::<Autodiff<B>, 2>::from_inner(x.clone()).require_grad();
                let g = loss(&leaf, &Tensor::from_inner(c.clone())).backward().get(&leaf);
                g.unwrap_or_else(|| panic!("{what}: no gradient in {}", x.dtype()))
            };
            assert_rounded(&format!("the gradient of {what}"), dtype, &grad(&a, &c), &grad(&aw, &cw), 1.0);
        }

        // An Adam step updates the parameter and both moments in the dtype.
        let o = AdamStep { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.1, decoupled: true, t: 3 };
        let g = c.slice(&[0..4, 0..5]).pad([(0, 0), (0, 1)], 0.0);
        let (mut p, mut m, mut v) = (a.clone(), a.reshape([24]).mul_scalar(0.1), a.mul(&a).reshape([24]));
        let (mut pw, mut mw, mut vw) = (w(&p), m.to_dtype(DType::F32), v.to_dtype(DType::F32));
        p.adam_(&mut m, &mut v, &g, o);
        pw.adam_(&mut mw, &mut vw, &w(&g), o);
        // A backend may run the update fused (one rounding) or composed of
        // ops (a rounding after each, as PyTorch's unfused half Adam):
        // a few steps of the dtype.
        assert_rounded("adam: the parameter", dtype, &p, &pw, 4.0);
        assert_rounded("adam: the first moment", dtype, &m, &mw, 4.0);
        assert_rounded("adam: the second moment", dtype, &v, &vw, 4.0);
    }
}

/// Products of f32 tensors under a 16-bit [`blaze_runtime::Precision`]: the
/// operands rounded (also read through a transposed view, and with a
/// broadcast batch dim), the sums f32, the result f32; outside the
/// scope nothing rounds; the tape's gradients round as their forward did,
/// whatever scope the backward runs in.
pub fn mixed_precision_products<B: Backend>(dev: &B::Device) {
    use blaze_runtime::{Precision, autocast};
    let (m, k, n) = (37, 70, 45);
    let a = tensor::<B, 3>(&noise(2 * m * k, 11), [2, m, k], DType::F32, dev);
    // Stored [n, k] and read transposed, as a linear layer's weight, for
    // both batch entries.
    let bt = tensor::<B, 3>(&noise(n * k, 12), [1, n, k], DType::F32, dev);
    let b = bt.transpose(1, 2);
    let g = tensor::<B, 3>(&noise(2 * m * n, 13), [2, m, n], DType::F32, dev);
    let (av, bv, gv) = (values(&a), values(&b), values(&g));
    // `x[rows x depth] y[depth x cols]` per batch entry, in f64 from the
    // values rounded to `dtype` (none: as they are), with the bound of an
    // f32 sum of its terms in any order.
    let product = |x: &[f64], y: &[f64], [rows, depth, cols]: [usize; 3], y_batched: bool, dtype: Option<DType>| {
        let r = |v: f64| dtype.map_or(v, |d| rounded(v, d));
        let mut out = Vec::new();
        for e in 0..2 {
            let (xe, ye) = (&x[e * rows * depth..], if y_batched { &y[e * depth * cols..] } else { y });
            for i in 0..rows {
                for j in 0..cols {
                    let terms = (0..depth).map(|d| r(xe[i * depth + d]) * r(ye[d * cols + j]));
                    let (sum, size) = terms.fold((0.0, 0.0), |(s, z), t: f64| (s + t, z + t.abs()));
                    out.push((sum, 2.0 * depth as f64 * f64::from(f32::EPSILON) * size));
                }
            }
        }
        out
    };
    let check = |what: &str, got: &Tensor<B, 3>, want: &[(f64, f64)]| {
        assert_eq!(got.dtype(), DType::F32, "{what}: the result's dtype");
        for (i, (&v, &(w, bound))) in values(got).iter().zip(want).enumerate() {
            assert!((v - w).abs() <= bound, "{what}: [{i}] is {v}, want {w} (within {bound:e})");
        }
    };
    let far = |what: &str, got: &Tensor<B, 3>, want: &[(f64, f64)]| {
        let off = values(got).iter().zip(want).filter(|&(&v, &(w, bound))| (v - w).abs() > bound).count();
        assert!(off > want.len() / 2, "{what}: only {off} of {} values differ from the unrounded product", want.len());
    };
    let exact = product(&av, &bv, [m, k, n], false, None);
    for precision in [Precision::Bf16, Precision::F16] {
        let dtype = precision.rounds_to();
        let p = precision.name();
        let want = product(&av, &bv, [m, k, n], false, dtype);
        let y = autocast(precision, || a.matmul(&b));
        check(&format!("matmul under {p}"), &y, &want);
        far(&format!("matmul under {p}"), &y, &exact);
        // The gradients through the tape, the backward outside the scope:
        // `g bᵀ` and `aᵀ g` (summed over the batch), rounded both.
        let (la, lb) = (
            Tensor::<Autodiff<B>, 3>::from_inner(a.clone()).require_grad(),
            Tensor::<Autodiff<B>, 3>::from_inner(b.clone()).require_grad(),
        );
        let y = autocast(precision, || la.matmul(&lb));
        check(&format!("the tape's matmul under {p}"), &y.inner(), &want);
        let grads = y.mul(&Tensor::from_inner(g.clone())).sum().backward();
        let ga = grads.get(&la).expect("a's gradient");
        let btv = values(&bt);
        check(&format!("the gradient of a under {p}"), &ga, &product(&gv, &btv, [m, n, k], false, dtype));
        let gb = grads.get(&lb).expect("b's gradient");
        let at = values(&a.transpose(1, 2));
        let per_entry = product(&at, &gv, [k, m, n], true, dtype);
        let summed: Vec<(f64, f64)> = (0..k * n)
            .map(|i| (per_entry[i].0 + per_entry[k * n + i].0, per_entry[i].1 + per_entry[k * n + i].1))
            .collect();
        check(&format!("the gradient of b under {p}"), &gb, &summed);
    }
    check("matmul outside autocast", &a.matmul(&b), &exact);
    // Shallower than the rule's depth: f32 under every policy.
    let (x, y) = (a.slice(&[0..2, 0..5, 0..31]), b.slice(&[0..1, 0..31, 0..7]));
    let shallow = product(&values(&x), &values(&y), [5, 31, 7], false, None);
    check("a product of depth 31 under bf16", &autocast(Precision::Bf16, || x.matmul(&y)), &shallow);
}

/// The rounding of a product under a 16-bit [`blaze_runtime::Precision`] at its
/// edges, through a product and a 1 x 1 convolution of depth 32 that add
/// only zeros to each value (`x[i, 0] * 1`): ties of bf16 and of f16 (to
/// even), the largest
/// finite values and the first that round to infinity, f16's
/// subnormals, infinities, NaN and random bit patterns, against the
/// format's own rounding. An f32 subnormal may read as zero (the bf16
/// kernels and GPUs flush them).
pub fn mixed_precision_rounding<B: Backend>(dev: &B::Device) {
    use blaze_runtime::{Precision, autocast};
    let mut specials: Vec<f32> = [
        // bf16: below, at and above a tie, from an even and an odd value.
        0x3f80_7fff, 0x3f80_8000, 0x3f80_8001, 0x3f81_8000,
        // f16: the same.
        0x3f80_0fff, 0x3f80_1000, 0x3f80_1001, 0x3f80_3000,
        // bf16's largest finite value, its tie towards infinity, f32's max.
        0x7f7f_0000, 0x7f7f_7fff, 0x7f7f_8000, 0x7f7f_ffff,
        // f16's largest (65504), just under the tie to infinity, the tie.
        0x477f_e000, 0x477f_efff, 0x477f_f000, 0x47c3_5000,
        // f16's subnormals: 2^-24, 2^-25 (a tie to 0), 1.5 and 3 times
        // 2^-25, just under and at 2^-14, and f32's smallest normal.
        0x3380_0000, 0x3300_0000, 0x3340_0000, 0x33c0_0000, 0x387f_ffff, 0x3880_0000, 0x0080_0000,
        // An f32 subnormal, zeros, infinities, NaN.
        0x0000_0001, 0x0000_0000, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0000,
    ]
    .map(f32::from_bits)
    .into_iter()
    .flat_map(|x| [x, -x])
    .collect();
    let mut state = 0x2545_f491_u32;
    specials.extend((0..2000).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        f32::from_bits(state)
    }));
    let n = specials.len();
    let mut x = vec![0.0; n * 32];
    for (row, &v) in x.chunks_mut(32).zip(&specials) {
        row[0] = f64::from(v);
    }
    let mut one = vec![0.0; 32];
    one[0] = 1.0;
    let (x, one) = (tensor::<B, 2>(&x, [n, 32], DType::F32, dev), tensor::<B, 2>(&one, [32, 1], DType::F32, dev));
    // The same as images of 32 channels of 1 x 1, and one filter.
    let (images, filter) = (x.reshape([n, 32, 1, 1]), one.reshape([1, 32, 1, 1]));
    for precision in [Precision::Bf16, Precision::F16] {
        let dtype = precision.rounds_to().expect("a 16-bit precision");
        let product = values(&autocast(precision, || x.matmul(&one)));
        let conv = values(&autocast(precision, || images.conv2d(&filter, None, Conv2dOptions::default())));
        for (what, got) in [("a product", product), ("a convolution", conv)] {
            for (&v, &s) in got.iter().zip(&specials) {
                let want = rounded(f64::from(s), dtype);
                let ok = if s.is_nan() { v.is_nan() } else { v == want || (s.is_subnormal() && v == 0.0) };
                assert!(ok, "{what} of {s} ({:#010x}) under {}: {v}, want {want}", s.to_bits(), precision.name());
            }
        }
    }
}

/// Convolutions of f32 tensors under a 16-bit [`blaze_runtime::Precision`]: the
/// forward and both gradients (through the tape, the backward outside
/// the scope) against the same ops in f64 on the rounded operands, within
/// the bound of f32 sums of their terms; a shallow convolution stays f32.
pub fn mixed_precision_convolutions<B: Backend>(dev: &B::Device) {
    use blaze_runtime::{Precision, autocast};
    let o = Conv2dOptions { padding: [1, 0], stride: [1, 2], ..Conv2dOptions::default() };
    let x = tensor::<B, 4>(&noise(2 * 8 * 9 * 11, 21), [2, 8, 9, 11], DType::F32, dev);
    let w = tensor::<B, 4>(&noise(40 * 8 * 9, 22), [40, 8, 3, 3], DType::F32, dev);
    let bias = tensor::<B, 1>(&noise(40, 23), [40], DType::F32, dev);
    let g = tensor::<B, 4>(&noise(2 * 40 * 9 * 5, 24), [2, 40, 9, 5], DType::F32, dev);
    let wide = |t: &Tensor<B, 4>, dtype: Option<DType>, abs: bool| {
        let t = match dtype {
            Some(d) => t.to_dtype(d).to_dtype(DType::F64),
            None => t.to_dtype(DType::F64),
        };
        if abs { t.abs() } else { t }
    };
    // Each value of `got` against `want` within 2 depth eps |terms|.
    let check = |what: &str, got: &Tensor<B, 4>, want: &Tensor<B, 4>, size: &Tensor<B, 4>, depth: usize| {
        assert_eq!(got.dtype(), DType::F32, "{what}: the result's dtype");
        let bound = 2.0 * depth as f64 * f64::from(f32::EPSILON);
        for (i, ((v, w), s)) in values(got).iter().zip(values(want)).zip(values(size)).enumerate() {
            assert!((v - w).abs() <= bound * s + 1e-30, "{what}: [{i}] is {v}, want {w}");
        }
    };
    let bias64 = bias.to_dtype(DType::F64);
    for precision in [Precision::Bf16, Precision::F16] {
        let (d, p) = (precision.rounds_to(), precision.name());
        let (xr, wr, gr) = (wide(&x, d, false), wide(&w, d, false), wide(&g, d, false));
        let (xa, wa, ga) = (wide(&x, d, true), wide(&w, d, true), wide(&g, d, true));
        let want = xr.conv2d(&wr, Some(&bias64), o);
        let size = xa.conv2d(&wa, Some(&bias64.abs()), o);
        let y = autocast(precision, || x.conv2d(&w, Some(&bias), o));
        check(&format!("conv2d under {p}"), &y, &want, &size, 72);
        let exact = wide(&x, None, false).conv2d(&wide(&w, None, false), Some(&bias64), o);
        let off =
            values(&y).iter().zip(values(&exact)).filter(|&(&v, w)| (v - w).abs() > 1e-6 * w.abs().max(1.0)).count();
        assert!(
            off > values(&y).len() / 2,
            "conv2d under {p}: only {off} values differ from the unrounded convolution"
        );

        let (lx, lw) = (
            Tensor::<Autodiff<B>, 4>::from_inner(x.clone()).require_grad(),
            Tensor::<Autodiff<B>, 4>::from_inner(w.clone()).require_grad(),
        );
        let y = autocast(precision, || lx.conv2d(&lw, Some(&Tensor::from_inner(bias.clone())), o));
        let grads = y.mul(&Tensor::from_inner(g.clone())).sum().backward();
        let gx = grads.get(&lx).expect("the input's gradient");
        let (want, size) = (gr.conv2d_input_grad(&wr, [2, 8, 9, 11], o), ga.conv2d_input_grad(&wa, [2, 8, 9, 11], o));
        check(&format!("the input gradient under {p}"), &gx, &want, &size, 40 * 9);
        let gw = grads.get(&lw).expect("the weight's gradient");
        let (want, size) = (xr.conv2d_weight_grad(&gr, [40, 8, 3, 3], o), xa.conv2d_weight_grad(&ga, [40, 8, 3, 3], o));
        check(&format!("the weight gradient under {p}"), &gw, &want, &size, 2 * 45);
    }
    // 2 input channels of a 3 x 3 window: depth 18, f32 under every policy.
    let (xs, ws) = (x.slice(&[0..2, 0..2, 0..9, 0..11]), w.slice(&[0..40, 0..2, 0..3, 0..3]));
    let want = xs.to_dtype(DType::F64).conv2d(&ws.to_dtype(DType::F64), None, o);
    let size = xs.to_dtype(DType::F64).abs().conv2d(&ws.to_dtype(DType::F64).abs(), None, o);
    check(
        "a convolution of depth 18 under bf16",
        &autocast(Precision::Bf16, || xs.conv2d(&ws, None, o)),
        &want,
        &size,
        18,
    );
}
