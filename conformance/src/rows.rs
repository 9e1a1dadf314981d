//! The row ops' checks: a bias with an activation, the softmax family,
//! the norms and attention, against their unfused ops and references.

use super::reference as r;
use super::{FLOATS, assert_close, noise, tensor, tolerance, values};
use blaze_runtime::{Backend, DType, Tensor};

/// `bias_act` equals a broadcast add followed by the activation (the
/// unfused ops), along every dim and for every activation of the table,
/// and leaves a tensor sharing its input alone.
pub fn bias_and_activation<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::UnaryOp;
    let shape = [2, 3, 4];
    let x0 = noise(24, 41);
    for dtype in FLOATS {
        for dim in 0..3 {
            let b0 = noise(shape[dim], 42 + dim as u64);
            let mut along = [1; 3];
            along[dim] = shape[dim];
            let added = tensor::<B, 3>(&x0, shape, dtype, dev) + tensor::<B, 3>(&b0, along, dtype, dev);
            for act in std::iter::once(None).chain(super::table_activations().map(Some)) {
                let want = values(&act.map_or(added.clone(), |op: UnaryOp| added.unary(op)));
                let x = tensor::<B, 3>(&x0, shape, dtype, dev);
                let shared = x.clone();
                let bias = tensor::<B, 1>(&b0, [shape[dim]], dtype, dev);
                let what = format!("bias_act along dim {dim}, {act:?} ({dtype})");
                assert_close(&what, &x.bias_act(Some(&bias), dim, act), &want, &shape, tolerance(dtype, false));
                assert_close("bias_act leaves a sharing tensor alone", &shared, &x0, &shape, tolerance(dtype, false));
            }
        }
        // Without a bias, and on a strided input.
        let xt = tensor::<B, 3>(&x0, shape, dtype, dev).transpose(0, 2);
        let want: Vec<f64> = r::indices(&[4, 3, 2]).iter().map(|i| x0[i[2] * 12 + i[1] * 4 + i[0]].max(0.0)).collect();
        let got = xt.bias_act(None, 1, Some(UnaryOp::Relu));
        assert_close("bias_act on a transposed input", &got, &want, &[4, 3, 2], tolerance(dtype, false));
    }
}

/// softmax and log_softmax against the definition, including inputs that
/// overflow a naive `exp`.
pub fn softmax_family<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        let xs = [1.0, 2.0, 3.0, -1.0, 0.0, 1000.0, 1000.0, 999.0, -1000.0];
        let t = tensor::<B, 2>(&xs, [3, 3], dtype, dev);
        let rows: Vec<&[f64]> = xs.chunks(3).collect();
        let mut sm = Vec::new();
        let mut lsm = Vec::new();
        let mut lse = Vec::new();
        for row in rows {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = row.iter().map(|x| (x - m).exp()).sum();
            sm.extend(row.iter().map(|x| (x - m).exp() / z));
            lsm.extend(row.iter().map(|x| x - m - z.ln()));
            lse.push(m + z.ln());
        }
        let tol = tolerance(dtype, false);
        assert_close("softmax", &t.softmax(1), &sm, &[3, 3], tol);
        assert_close("log_softmax", &t.log_softmax(-1), &lsm, &[3, 3], tol);
        assert_close("logsumexp", &t.logsumexp_dim(1), &lse, &[3, 1], tol);
        // Over dim 0 of the transpose equals over dim 1.
        assert_close("softmax of transposed", &t.t().softmax(0).t(), &sm, &[3, 3], tol);
    }
    scaled_causal_softmax::<B>(dev);
    long_and_many_softmax_rows::<B>(dev);
    attention::<B>(dev);
}

/// LayerNorm and RMSNorm, and their gradients, over rows longer than a
/// GPU workgroup and over more rows (and, for the parameters' gradients,
/// more columns) than a GPU grid holds in one dimension, against the
/// composed norm.
fn long_and_many_norm_rows<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::{composed_norm, composed_norm_backward};
    for (rows, n) in [(3usize, 200usize), (66_000, 2), (2, 66_000)] {
        let xs: Vec<f64> = (0..rows * n).map(|i| ((i * 13) % 17) as f64 * 0.3 - 2.0).collect();
        let gs: Vec<f64> = (0..rows * n).map(|i| ((i * 7) % 5) as f64 * 0.4 - 0.9).collect();
        let ws: Vec<f64> = (0..n).map(|i| 0.5 + (i % 10) as f64 * 0.1).collect();
        let x = tensor::<B, 2>(&xs, [rows, n], DType::F32, dev);
        let g = tensor::<B, 2>(&gs, [rows, n], DType::F32, dev);
        let (w, b) = (tensor::<B, 1>(&ws, [n], DType::F32, dev), tensor::<B, 1>(&ws, [n], DType::F32, dev));
        // Sums of up to 66 000 terms in f32.
        let tol = tolerance(DType::F32, true);
        let storage = |t: &Tensor<B, 1>| t.storage().clone();
        for centre in [true, false] {
            let what = format!("norm of [{rows}, {n}] (centre {centre})");
            let (y, stats) = x.norm_with_stats(Some(&w), Some(&b), 1e-5, centre);
            let [cy, cstats] = composed_norm::<B>(x.storage(), Some(&storage(&w)), Some(&storage(&b)), 1e-5, centre);
            assert_close(&what, &y, &super::values(&Tensor::<B, 2>::from_storage(cy)), &[rows, n], tol);
            let cstats = super::values(&Tensor::<B, 2>::from_storage(cstats));
            assert_close(&format!("{what} statistics"), &stats, &cstats, &[rows, 2], tol);
            let (dx, dw, db) = g.norm_backward(&x, &stats, Some(&w), centre);
            let [cdx, cdw, cdb] =
                composed_norm_backward::<B>(g.storage(), x.storage(), stats.storage(), Some(&storage(&w)), centre);
            let cdx = super::values(&Tensor::<B, 2>::from_storage(cdx));
            assert_close(&format!("{what} input gradient"), &dx, &cdx, &[rows, n], tol);
            let (cdw, cdb) = (Tensor::<B, 1>::from_storage(cdw), Tensor::<B, 1>::from_storage(cdb));
            // Sums over many rows: compared as the sums they are.
            let k = (rows as f64).sqrt();
            let loose = (tol.0 * k, tol.1 * k);
            assert_close(&format!("{what} weight gradient"), &dw, &super::values(&cdw), &[n], loose);
            assert_close(&format!("{what} bias gradient"), &db, &super::values(&cdb), &[n], loose);
        }
    }
}

/// Softmax and its backward over rows longer than a GPU workgroup and
/// over more rows than a GPU grid holds in one dimension (the GPU
/// backends' row kernels stride past both), against the definition.
fn long_and_many_softmax_rows<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::{SoftmaxOptions, composed_softmax_backward};
    for (rows, n) in [(3usize, 200usize), (66_000, 2)] {
        let xs: Vec<f64> = (0..rows * n).map(|i| ((i * 7) % 13) as f64 * 0.3 - 1.8).collect();
        let gs: Vec<f64> = (0..rows * n).map(|i| ((i * 5) % 9) as f64 * 0.2 - 0.7).collect();
        let mut want = Vec::with_capacity(rows * n);
        for row in xs.chunks(n) {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
            want.extend(row.iter().map(|v| v - m - z.ln()));
        }
        let x = tensor::<B, 2>(&xs, [rows, n], DType::F32, dev);
        let g = tensor::<B, 2>(&gs, [rows, n], DType::F32, dev);
        let tol = tolerance(DType::F32, false);
        let what = format!("log_softmax of [{rows}, {n}]");
        let y = x.log_softmax(1);
        assert_close(&what, &y, &want, &[rows, n], tol);
        let o = SoftmaxOptions::default().log();
        let fused = Tensor::<B, 2>::from_storage(B::softmax_backward(g.storage(), y.storage(), 1, o));
        let composed = composed_softmax_backward::<B>(g.storage(), y.storage(), 1, o);
        let composed = super::values(&Tensor::<B, 2>::from_storage(composed));
        assert_close(&format!("{what} backward"), &fused, &composed, &[rows, n], tol);
    }
}

/// `scaled_dot_product_attention` against the definition on small
/// tensors, and against the composite's composed form on ones with more
/// keys than a tiled kernel's block and enough work to split, causal or
/// not, with more queries than keys and fewer.
fn attention<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::composed_attention;
    let data =
        |n: usize, seed: usize| -> Vec<f64> { (0..n).map(|i| ((i * 31 + seed * 7) % 23) as f64 * 0.1 - 1.1).collect() };
    for dtype in FLOATS {
        let tol = tolerance(dtype, false);
        // [1, 2, 3] queries of width 2, 3 keys, values of width 1.
        let (q, k, v) = (data(6, 1), data(6, 2), vec![1.0, 2.0, 4.0]);
        let (qt, kt, vt) = (
            tensor::<B, 3>(&q, [1, 3, 2], dtype, dev),
            tensor::<B, 3>(&k, [1, 3, 2], dtype, dev),
            tensor::<B, 3>(&v, [1, 3, 1], dtype, dev),
        );
        for causal in [false, true] {
            let mut want = Vec::new();
            for i in 0..3 {
                let seen = if causal { i + 1 } else { 3 };
                let s: Vec<f64> =
                    (0..seen).map(|j| (q[2 * i] * k[2 * j] + q[2 * i + 1] * k[2 * j + 1]) * 0.5).collect();
                let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
                want.push(s.iter().enumerate().map(|(j, x)| (x - m).exp() / z * v[j]).sum::<f64>());
            }
            let got = qt.scaled_dot_product_attention(&kt, &vt, causal, Some(0.5));
            assert_close(&format!("attention (causal {causal})"), &got, &want, &[1, 3, 1], tol);
        }
        // Values 8 wide, and 24 (a whole vector of 16 and part of one).
        for (t, s, e) in [(300usize, 300usize, 8usize), (40, 600, 24), (520, 70, 8)] {
            let shape = |len: usize, w: usize| [2usize, 3, len, w];
            let qt = tensor::<B, 4>(&data(2 * 3 * t * 16, 3), shape(t, 16), dtype, dev);
            let kt = tensor::<B, 4>(&data(2 * 3 * s * 16, 4), shape(s, 16), dtype, dev);
            let vt = tensor::<B, 4>(&data(2 * 3 * s * e, 5), shape(s, e), dtype, dev);
            for causal in [false, true] {
                let got = qt.scaled_dot_product_attention(&kt, &vt, causal, None);
                let mut o = blaze_runtime::SoftmaxOptions::default().scale(0.25);
                if causal {
                    o = o.causal();
                }
                let want =
                    Tensor::<B, 4>::from_storage(composed_attention::<B>(qt.storage(), kt.storage(), vt.storage(), o));
                assert_close(
                    &format!("attention {t}x{s}x{e} (causal {causal})"),
                    &got,
                    &super::values(&want),
                    &shape(t, e),
                    tol,
                );
            }
        }
    }
}

/// `layer_norm` and `rms_norm` against the definition, and the
/// normalisation composites (the ones LayerNorm and RMSNorm run, forward
/// and backward) against their compositions of primitives, with and
/// without weight and bias, on a strided input too.
pub fn normalisation<B: Backend>(dev: &B::Device) {
    long_and_many_norm_rows::<B>(dev);
    use blaze_runtime::backend::{composed_norm, composed_norm_backward};
    let shape = [3usize, 2, 20];
    let xs: Vec<f64> = (0..120).map(|i| ((i * 13) % 17) as f64 * 0.3 - 2.0).collect();
    let gs: Vec<f64> = (0..120).map(|i| ((i * 7) % 5) as f64 * 0.4 - 0.9).collect();
    let ws: Vec<f64> = (0..20).map(|i| 0.5 + i as f64 * 0.1).collect();
    let bs: Vec<f64> = (0..20).map(|i| i as f64 * 0.05 - 0.3).collect();
    for dtype in FLOATS {
        let tol = tolerance(dtype, false);
        let x = tensor::<B, 3>(&xs, shape, dtype, dev);
        let g = tensor::<B, 3>(&gs, shape, dtype, dev);
        let (w, b) = (tensor::<B, 1>(&ws, [20], dtype, dev), tensor::<B, 1>(&bs, [20], dtype, dev));
        let eps = 1e-5;
        let mut ln = Vec::new();
        let mut rms = Vec::new();
        for row in xs.chunks(20) {
            let mean = row.iter().sum::<f64>() / 20.0;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 20.0;
            let ms = row.iter().map(|v| v * v).sum::<f64>() / 20.0;
            for (j, v) in row.iter().enumerate() {
                ln.push((v - mean) / (var + eps).sqrt() * ws[j] + bs[j]);
                rms.push(v / (ms + eps).sqrt() * ws[j]);
            }
        }
        assert_close("layer_norm", &x.layer_norm(Some(&w), Some(&b), eps), &ln, &shape, tol);
        assert_close("rms_norm", &x.rms_norm(Some(&w), eps), &rms, &shape, tol);
        let strided = tensor::<B, 3>(&xs, [20, 2, 3], dtype, dev).permute([2, 1, 0]);
        let on_strided = strided.layer_norm(Some(&w), Some(&b), eps);
        let same: Vec<f64> = r::indices(&shape).iter().map(|i| xs[i[2] * 6 + i[1] * 3 + i[0]]).collect();
        let want = super::values(&tensor::<B, 3>(&same, shape, dtype, dev).layer_norm(Some(&w), Some(&b), eps));
        assert_close("layer_norm of a strided input", &on_strided, &want, &shape, tol);
        for centre in [true, false] {
            for (weight, bias) in [(Some(&w), Some(&b)), (Some(&w), None), (None, None)] {
                let what = format!("norm(centre {centre}, weight {}, bias {})", weight.is_some(), bias.is_some());
                let (y, stats) = x.norm_with_stats(weight, bias, eps, centre);
                let [cy, cstats] = composed_norm::<B>(
                    x.storage(),
                    weight.map(|t| t.storage()),
                    bias.map(|t| t.storage()),
                    eps,
                    centre,
                );
                let (cy, cstats) = (Tensor::<B, 3>::from_storage(cy), Tensor::<B, 3>::from_storage(cstats));
                assert_close(&what, &y, &super::values(&cy), &shape, tol);
                assert_close(&format!("{what} statistics"), &stats, &super::values(&cstats), &[3, 2, 2], tol);
                let (dx, dw, db) = g.norm_backward(&x, &stats, weight, centre);
                let [cdx, cdw, cdb] = composed_norm_backward::<B>(
                    g.storage(),
                    x.storage(),
                    stats.storage(),
                    weight.map(|t| t.storage()),
                    centre,
                );
                let cdx = super::values(&Tensor::<B, 3>::from_storage(cdx));
                assert_close(&format!("{what} input gradient"), &dx, &cdx, &shape, tol);
                assert_close(
                    &format!("{what} weight gradient"),
                    &dw,
                    &super::values(&Tensor::<B, 1>::from_storage(cdw)),
                    &[20],
                    tol,
                );
                assert_close(
                    &format!("{what} bias gradient"),
                    &db,
                    &super::values(&Tensor::<B, 1>::from_storage(cdb)),
                    &[20],
                    tol,
                );
            }
        }
    }
    // Large enough for a backend to split the work between threads.
    let big = [512usize, 2, 272];
    let n: usize = big.iter().product();
    let xs: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 * 0.05 - 2.5).collect();
    let gs: Vec<f64> = (0..n).map(|i| ((i * 11) % 13) as f64 * 0.2 - 1.2).collect();
    let ws: Vec<f64> = (0..272).map(|i| 0.5 + (i % 9) as f64 * 0.1).collect();
    for dtype in FLOATS {
        let (x, g) = (tensor::<B, 3>(&xs, big, dtype, dev), tensor::<B, 3>(&gs, big, dtype, dev));
        let w = tensor::<B, 1>(&ws, [272], dtype, dev);
        let tol = tolerance(dtype, false);
        let values = |s: B::Storage| {
            super::values(&Tensor::<B, 1>::from_storage(B::reshape(&s, &[B::shape(&s).iter().product()])))
        };
        let (y, stats) = x.norm_with_stats(Some(&w), Some(&w), 1e-5, true);
        let [cy, _] = composed_norm::<B>(x.storage(), Some(w.storage()), Some(w.storage()), 1e-5, true);
        assert_close("large norm", &y, &values(cy), &big, tol);
        let (dx, dw, db) = g.norm_backward(&x, &stats, Some(&w), true);
        let [cdx, cdw, cdb] =
            composed_norm_backward::<B>(g.storage(), x.storage(), stats.storage(), Some(w.storage()), true);
        assert_close("large norm input gradient", &dx, &values(cdx), &big, tol);
        // Sums over 1024 rows: a looser tolerance in f32.
        let sums = (tol.0 * 10.0, tol.1 * 10.0);
        assert_close("large norm weight gradient", &dw, &values(cdw), &[272], sums);
        assert_close("large norm bias gradient", &db, &values(cdb), &[272], sums);
    }
}

/// `softmax_with`: scaled, causal (query `i` of dim -2 sees keys `0..=i`),
/// log or not, against the definition; and its backward (the composite
/// the tape and generated code call) against the one composed of
/// primitives, including a gradient at masked entries, which must not count.
fn scaled_causal_softmax<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::{SoftmaxOptions, composed_softmax_backward};
    let shape = [2usize, 3, 4];
    let xs: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 * 0.37 - 1.5).collect();
    let gs: Vec<f64> = (0..24).map(|i| ((i * 5) % 7) as f64 * 0.21 - 0.6).collect();
    for dtype in FLOATS {
        let tol = tolerance(dtype, false);
        let x = tensor::<B, 3>(&xs, shape, dtype, dev);
        let g = tensor::<B, 3>(&gs, shape, dtype, dev);
        for (log, causal) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut o = SoftmaxOptions::default().scale(0.5);
            if log {
                o = o.log();
            }
            if causal {
                o = o.causal();
            }
            let mut want = Vec::new();
            for (r, row) in xs.chunks(4).enumerate() {
                let seen = if causal { r % 3 + 1 } else { 4 };
                let m = row[..seen].iter().map(|v| v * 0.5).fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = row[..seen].iter().map(|v| (v * 0.5 - m).exp()).sum();
                for (j, v) in row.iter().enumerate() {
                    want.push(match (j < seen, log) {
                        (true, false) => (v * 0.5 - m).exp() / z,
                        (true, true) => v * 0.5 - m - z.ln(),
                        (false, false) => 0.0,
                        (false, true) => f64::NEG_INFINITY,
                    });
                }
            }
            let what = format!("softmax_with(log {log}, causal {causal})");
            let y = x.softmax_with(-1, o);
            assert_close(&what, &y, &want, &shape, tol);
            let fused = Tensor::<B, 3>::from_storage(B::softmax_backward(g.storage(), y.storage(), 2, o));
            let composed = composed_softmax_backward::<B>(g.storage(), y.storage(), 2, o);
            let composed = super::values(&Tensor::<B, 3>::from_storage(composed));
            assert_close(&format!("{what} backward"), &fused, &composed, &shape, tol);
        }
        // A dim other than the last takes the composed path on every backend.
        let over0 = x.softmax_with(0, SoftmaxOptions::default().scale(2.0));
        assert_close("softmax_with over dim 0", &over0, &super::values(&x.mul_scalar(2.0).softmax(0)), &shape, tol);
    }
}

/// A row whose every entry is masked (`-inf`: a query that may see no
/// key) weighs nothing, as PyTorch's attention gives: softmax 0,
/// log-softmax `-inf`, and a gradient of 0 through it, on the fused
/// path, the composed one (a dim other than the last), with a scale and
/// under a causal mask; a row with one key left keeps it whole.
pub fn masked_softmax_rows<B: Backend>(dev: &B::Device) {
    use blaze_runtime::backend::SoftmaxOptions;
    let inf = f64::INFINITY;
    // Row 0 masked whole, row 1 all but one entry, row 2 none.
    let xs = [-inf, -inf, -inf, -inf, -inf, 0.7, -inf, -inf, 0.5, -1.0, 2.0, 0.25];
    let gs = [0.3, -0.2, 0.9, 0.4, -0.7, 0.6, 0.1, 0.8, -0.5, 0.2, 0.3, -0.4];
    for dtype in FLOATS {
        let tol = tolerance(dtype, false);
        let x = tensor::<B, 2>(&xs, [3, 4], dtype, dev);
        let mut want = vec![0.0; 4];
        want.extend([0.0, 1.0, 0.0, 0.0]);
        let z: f64 = xs[8..].iter().map(|v| (v - 2.0).exp()).sum();
        want.extend(xs[8..].iter().map(|v| (v - 2.0).exp() / z));
        let log_want: Vec<f64> = want.iter().map(|w: &f64| w.ln()).collect();
        assert_close("softmax of masked rows", &x.softmax(-1), &want, &[3, 4], tol);
        assert_close("log_softmax of masked rows", &x.log_softmax(-1), &log_want, &[3, 4], tol);
        assert_close("softmax of masked columns (composed)", &x.t().softmax(0).t(), &want, &[3, 4], tol);
        assert_close("log_softmax of masked columns (composed)", &x.t().log_softmax(0).t(), &log_want, &[3, 4], tol);
        let scaled = x.softmax_with(1, SoftmaxOptions::default().scale(0.5));
        assert!(scaled.to_data().values.to_f64_vec().iter().all(|v| v.is_finite()), "scaled softmax of masked rows");
        // Under a causal mask, query 0 sees only key 0: masked, it weighs nothing.
        let causal = tensor::<B, 2>(&[-inf, 1.0, 2.0, 3.0, 0.5, 0.25], [2, 3], dtype, dev)
            .softmax_with(1, SoftmaxOptions::default().causal());
        let z = 3f64.exp() + 0.5f64.exp();
        let causal_want = [0.0, 0.0, 0.0, 3f64.exp() / z, 0.5f64.exp() / z, 0.0];
        assert_close("causal softmax of a masked first key", &causal, &causal_want, &[2, 3], tol);
        // The gradient through a row that weighs nothing is 0, not NaN.
        let g = tensor::<B, 2>(&gs, [3, 4], dtype, dev);
        for log in [false, true] {
            let o = if log { SoftmaxOptions::default().log() } else { SoftmaxOptions::default() };
            let y = x.softmax_with(1, o);
            let dx = super::values(&Tensor::<B, 2>::from_storage(B::softmax_backward(g.storage(), y.storage(), 1, o)));
            assert!(dx.iter().all(|v| v.is_finite()), "softmax_backward (log {log}) of masked rows: {dx:?}");
            if !log {
                assert!(dx[..8].iter().all(|&v| v == 0.0), "softmax_backward of masked rows: {dx:?}");
            }
        }
    }
}
