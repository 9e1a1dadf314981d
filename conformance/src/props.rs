//! Property tests: random shapes and values, every backend op against the
//! naive references. Each runs a fixed number of cases from a fixed seed, so
//! a failure reproduces.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::reference as r;
use super::{assert_close, tensor, tolerance};
use blaze_runtime::{Backend, Conv2dOptions, DType, Tensor};

fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

fn run<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    if let Err(e) = runner(cases).run(&strategy, test) {
        panic!("property failed: {e}");
    }
}

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![Just(DType::F32), Just(DType::F64)]
}

/// A pair of rank-3 shapes that broadcast: each dim is shared, or 1 on one side.
fn broadcast_pair() -> impl Strategy<Value = ([usize; 3], [usize; 3])> {
    proptest::array::uniform3((0usize..6, 0u8..3)).prop_map(|dims| {
        let mut a = [0; 3];
        let mut b = [0; 3];
        for (i, (d, mode)) in dims.into_iter().enumerate() {
            (a[i], b[i]) = match mode {
                0 => (d, d),
                1 => (d, 1),
                _ => (1, d),
            };
        }
        (a, b)
    })
}

fn values(n: usize) -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(-4.0f64..4.0, n)
}

/// Binary ops on random broadcasting shapes, optionally on a permuted lhs.
pub fn prop_binary_broadcast<B: Backend>(dev: &B::Device) {
    let strategy = (broadcast_pair(), dtype(), any::<bool>()).prop_flat_map(|((sa, sb), dt, permute)| {
        let (na, nb) = (sa.iter().product::<usize>(), sb.iter().product::<usize>());
        (Just((sa, sb, dt, permute)), values(na), values(nb))
    });
    run(96, strategy, |((sa, sb, dt, permute), a, b)| {
        // A permuted lhs: build [d2, d0, d1] and permute it back to `sa`.
        let ta = if permute {
            let src = [sa[2], sa[0], sa[1]];
            let av: Vec<f64> = r::indices(&src).iter().map(|i| a[(i[1] * sa[1] + i[2]) * sa[2] + i[0]]).collect();
            tensor::<B, 3>(&av, src, dt, dev).permute([1, 2, 0])
        } else {
            tensor::<B, 3>(&a, sa, dt, dev)
        };
        let tb = tensor::<B, 3>(&b, sb, dt, dev);
        let (want, shape) = r::binary(&a, &sa, &b, &sb, |x, y| x * y - y);
        assert_close("mul-sub", &(&ta * &tb - &tb), &want, &shape, tolerance(dt, false));
        let (want, shape) = r::binary(&a, &sa, &b, &sb, f64::max);
        assert_close("maximum", &ta.maximum(&tb), &want, &shape, tolerance(dt, false));
        let (want, _) = r::binary(&a, &sa, &b, &sb, |x, y| if x < y { 1.0 } else { 0.0 });
        assert_close("lt", &ta.lt(&tb).to_dtype(dt), &want, &shape, (0.0, 0.0));
        Ok(())
    });
}

/// Sum/max/argmin over a random dim of a random shape.
pub fn prop_reductions<B: Backend>(dev: &B::Device) {
    let strategy = (proptest::array::uniform3(1usize..7), 0usize..3, dtype())
        .prop_flat_map(|(s, d, dt)| (Just((s, d, dt)), values(s.iter().product())));
    run(96, strategy, |((shape, d, dt), x)| {
        let t = tensor::<B, 3>(&x, shape, dt, dev);
        let mut ks = shape;
        ks[d] = 1;
        let tol = tolerance(dt, true);
        assert_close("sum_dim", &t.sum_dim(d), &r::reduce(&x, &shape, d, |v| v.iter().sum()), &ks, tol);
        let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_close("max_dim", &t.max_dim(d), &r::reduce(&x, &shape, d, max), &ks, tol);
        let argmin = |v: &[f64]| v.iter().enumerate().fold(0, |b, (i, &x)| if x < v[b] { i } else { b }) as f64;
        // f32 rounding can reorder near-ties, so compare argmin on f64 only.
        if dt == DType::F64 {
            assert_close("argmin", &t.argmin(d), &r::reduce(&x, &shape, d, argmin), &ks, (0.0, 0.0));
        }
        Ok(())
    });
}

/// Random batched products, with the rhs optionally given transposed.
pub fn prop_matmul<B: Backend>(dev: &B::Device) {
    let strategy = ((1usize..4, 0usize..20, 0usize..20, 0usize..20), dtype(), any::<bool>())
        .prop_flat_map(|((b, m, k, n), dt, tr)| (Just((b, m, k, n, dt, tr)), values(b * m * k), values(k * n)));
    run(64, strategy, |((bs, m, k, n, dt, tr), a, b)| {
        let ta = tensor::<B, 3>(&a, [bs, m, k], dt, dev);
        let tb = if tr {
            let bt: Vec<f64> = r::indices(&[n, k]).iter().map(|i| b[i[1] * n + i[0]]).collect();
            tensor::<B, 3>(&bt, [1, n, k], dt, dev).transpose(1, 2)
        } else {
            tensor::<B, 3>(&b, [1, k, n], dt, dev)
        };
        let mut want = Vec::new();
        for i in 0..bs {
            want.extend(r::matmul(&a[i * m * k..(i + 1) * m * k], &b, m, k, n));
        }
        assert_close("matmul", &ta.matmul(&tb), &want, &[bs, m, n], tolerance(dt, true));
        Ok(())
    });
}

/// Random convolutions: sizes, stride, padding, dilation, groups, bias.
pub fn prop_conv2d<B: Backend>(dev: &B::Device) {
    let strategy = (
        (1usize..3, 1usize..3, 1usize..3, 1usize..3),
        (1usize..4, 1usize..4, 1usize..3, 0usize..3, 1usize..3),
        (3usize..9, 3usize..9, any::<bool>()),
    )
        .prop_filter("window fits", |((_, _, _, _), (kh, kw, s, p, d), (h, w, _))| {
            *h + 2 * p > d * (kh - 1) && *w + 2 * p > d * (kw - 1) && *s > 0
        })
        .prop_flat_map(|((n, g, cg, og), (kh, kw, s, p, d), (h, w, bias))| {
            let xs = [n, g * cg, h, w];
            let ws = [g * og, cg, kh, kw];
            let o = Conv2dOptions { stride: [s, s], padding: [p, p], dilation: [d, d], groups: g };
            (Just((xs, ws, o, bias)), values(xs.iter().product()), values(ws.iter().product()), values(ws[0]))
        });
    run(64, strategy, |((xs, ws, o, bias), x, w, b)| {
        let tx = tensor::<B, 4>(&x, xs, DType::F64, dev);
        let tw = tensor::<B, 4>(&w, ws, DType::F64, dev);
        let tb: Tensor<B, 1> = tensor(&b, [ws[0]], DType::F64, dev);
        let (want, shape) = r::conv2d(&x, xs, &w, ws, bias.then_some(&b[..]), &o);
        assert_close("conv2d", &tx.conv2d(&tw, bias.then_some(&tb), o), &want, &shape, tolerance(DType::F64, true));
        Ok(())
    });
}

/// permute then reshape then the inverse gives back the input; slicing
/// matches index arithmetic.
pub fn prop_movement_roundtrip<B: Backend>(dev: &B::Device) {
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    let strategy = (proptest::array::uniform3(1usize..6), 0usize..6, 0usize..3)
        .prop_flat_map(|(s, p, d)| (Just((s, p, d)), values(s.iter().product())));
    run(96, strategy, |((shape, p, d), x)| {
        let perm = perms[p];
        let t = tensor::<B, 3>(&x, shape, DType::F64, dev);
        let pt = t.permute(perm);
        let flat: Tensor<B, 1> = pt.reshape([-1]);
        let ps = pt.shape();
        let back: Tensor<B, 3> = flat.reshape(ps);
        let mut inv = [0; 3];
        for (i, &a) in perm.iter().enumerate() {
            inv[a] = i;
        }
        assert_close("permute roundtrip", &back.permute(inv), &x, &shape, (0.0, 0.0));
        let start = shape[d] / 2;
        let len = shape[d] - start;
        let want: Vec<f64> = r::indices(&shape)
            .iter()
            .filter(|i| i[d] >= start)
            .map(|i| x[(i[0] * shape[1] + i[1]) * shape[2] + i[2]])
            .collect();
        let mut ns = shape;
        ns[d] = len;
        assert_close("narrow", &t.narrow(d, start, len), &want, &ns, (0.0, 0.0));
        Ok(())
    });
}
