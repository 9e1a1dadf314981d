//! What training runs on: every layer's backward against finite
//! differences, layers' training modes, losses and optimizers.

use super::reference as r;
use super::{FLOATS, assert_close, noise, panic_message, tensor, tolerance, values};
use blaze_runtime::{Backend, DType, Tensor};

/// A layer's backward against finite differences (f64), in training and
/// evaluation mode: layers that differ between them (dropout, batch
/// statistics) are checked in both, and so is the rest.
fn both_modes<B: Backend, L: blaze_nn::Layer<B, DI, DO> + Clone, const DI: usize, const DO: usize>(
    layer: &L,
    x: &Tensor<B, DI>,
) {
    blaze_nn::gradcheck::check_layer::<B, L, DI, DO>(layer, x, true);
    blaze_nn::gradcheck::check_layer::<B, L, DI, DO>(layer, x, false);
}

/// `noise` of `shape`'s size as an f64 tensor.
fn input<B: Backend, const D: usize>(shape: [usize; D], seed: u64, dev: &B::Device) -> Tensor<B, D> {
    tensor::<B, D>(&noise(shape.iter().product(), seed), shape, DType::F64, dev)
}

/// The convolution, pooling, resampling and reshaping layers' backward
/// against finite differences (f64). The layers' gradient checks are split
/// over several tests by family, so that a test run spreads them over its
/// threads.
pub fn layer_gradients<B: Backend>(dev: &B::Device) {
    use blaze_nn::*;
    let mut rng = blaze_runtime::Rng::seed_from_u64(3);
    let x2 = input::<B, 2>([3, 4], 61, dev);
    let x3 = input::<B, 3>([2, 3, 4], 62, dev);
    let img = input::<B, 4>([2, 4, 5, 5], 63, dev);

    both_modes::<B, _, 2, 2>(&Linear::<B, 4, 3>::new(LinearConfig::default(), &mut rng, dev), &x2);
    both_modes::<B, _, 3, 3>(&Linear::<B, 4, 2>::new(LinearConfig { bias: false }, &mut rng, dev), &x3);
    for config in [
        Conv2dConfig::default(),
        Conv2dConfig { padding: 1, stride: 2, ..Default::default() },
        Conv2dConfig { groups: 2, bias: false, dilation: 2, padding: 1, ..Default::default() },
    ] {
        both_modes::<B, _, 4, 4>(&Conv2d::<B, 4, 6, 3>::new(config, &mut rng, dev), &img);
    }
    for config in [
        ConvTranspose2dConfig::default(),
        ConvTranspose2dConfig { stride: 2, padding: 1, output_padding: 1, ..Default::default() },
        ConvTranspose2dConfig {
            groups: 2,
            bias: false,
            dilation: 2,
            stride: 3,
            output_padding: 2,
            ..Default::default()
        },
        // An output padding of at least the stride, below the dilation:
        // output positions past the last window.
        ConvTranspose2dConfig { dilation: 2, output_padding: 1, ..Default::default() },
        ConvTranspose2dConfig { stride: 2, padding: 1, dilation: 3, output_padding: 2, ..Default::default() },
    ] {
        both_modes::<B, _, 4, 4>(&ConvTranspose2d::<B, 4, 6, 3>::new(config, &mut rng, dev), &img);
    }
    let seq = input::<B, 3>([2, 4, 9], 65, dev);
    for config in [
        Conv1dConfig::default(),
        Conv1dConfig { padding: 2, stride: 2, ..Default::default() },
        Conv1dConfig { groups: 2, bias: false, dilation: 2, padding: 1, ..Default::default() },
    ] {
        both_modes::<B, _, 3, 3>(&Conv1d::<B, 4, 6, 3>::new(config, &mut rng, dev), &seq);
    }
    both_modes::<B, _, 4, 4>(&MaxPool2d::<2>::default(), &img);
    both_modes::<B, _, 4, 4>(&MaxPool2d::<3>::new(PoolConfig { stride: Some(2), padding: 1, ceil_mode: false }), &img);
    both_modes::<B, _, 4, 4>(&AvgPool2d::<2>::default(), &img);
    both_modes::<B, _, 4, 4>(&AvgPool2d::<3>::new(PoolConfig { stride: Some(2), padding: 1, ceil_mode: false }), &img);
    both_modes::<B, _, 4, 4>(&AvgPool2d::<2>::new(PoolConfig { stride: Some(2), padding: 0, ceil_mode: true }), &img);
    // Windows of two sizes that overlap (5 -> 2 and 3), and more cells than pixels (5 -> 7).
    both_modes::<B, _, 4, 4>(&AdaptiveAvgPool2d::<2, 3>, &img);
    both_modes::<B, _, 4, 4>(&AdaptiveAvgPool2d::<7, 1>, &img);
    for mode in [blaze_spec::Interpolation::Nearest, blaze_spec::Interpolation::Bilinear] {
        for scale_factor in [2.0, 1.5, 0.7] {
            let config = UpsampleConfig { scale_factor, mode, align_corners: false };
            both_modes::<B, _, 4, 4>(&Upsample::new(config), &img);
        }
    }
    for scale_factor in [2.0, 1.5, 0.7] {
        let config = UpsampleConfig { scale_factor, mode: blaze_spec::Interpolation::Bilinear, align_corners: true };
        both_modes::<B, _, 4, 4>(&Upsample::new(config), &img);
    }
    both_modes::<B, _, 4, 2>(&GlobalAvgPool, &img);
    both_modes::<B, _, 4, 2>(&Flatten, &img);
    both_modes::<B, _, 3, 2>(&Flatten, &x3);
    let ids = Tensor::<B, 2>::from_vec(vec![1i64, 4, 4, 0, 9, 2], [2, 3], dev);
    both_modes::<B, _, 2, 3>(&Embedding::<B, 10, 4>::new(&mut rng, dev), &ids);
}

/// The activations', softmax's and dropout's backward against finite
/// differences (f64).
pub fn activation_gradients<B: Backend>(dev: &B::Device) {
    use blaze_nn::*;
    let x3 = input::<B, 3>([2, 3, 4], 62, dev);
    let img = input::<B, 4>([2, 4, 5, 5], 63, dev);
    both_modes::<B, _, 3, 3>(&Relu, &x3);
    both_modes::<B, _, 3, 3>(&LeakyRelu::new(LeakyReluConfig { negative_slope: 0.2 }), &x3);
    both_modes::<B, _, 3, 3>(&Gelu, &x3);
    both_modes::<B, _, 3, 3>(&Silu, &x3);
    both_modes::<B, _, 3, 3>(&Identity, &x3);
    // Some inputs above the threshold (beta x > 0.6), some below.
    both_modes::<B, _, 3, 3>(&Softplus::new(SoftplusConfig { beta: 1.5, threshold: 0.6 }), &x3);
    both_modes::<B, _, 3, 3>(&Softplus::default(), &x3);
    both_modes::<B, _, 3, 3>(&Elu::new(EluConfig { alpha: 0.7 }), &x3);
    both_modes::<B, _, 3, 3>(&Softmax::new(-1), &x3);
    both_modes::<B, _, 3, 3>(&Softmax::new(1), &x3);
    both_modes::<B, _, 4, 4>(&Softmax::new(1), &img);
    both_modes::<B, _, 3, 3>(&Sigmoid, &x3);
    both_modes::<B, _, 3, 3>(&Tanh, &x3);
    both_modes::<B, _, 3, 3>(&Dropout::new(DropoutConfig { p: 0.3 }), &x3);
}

/// The normalisation layers' backward against finite differences (f64).
pub fn norm_gradients<B: Backend>(dev: &B::Device) {
    use blaze_nn::*;
    let x2 = input::<B, 2>([3, 4], 61, dev);
    let x3 = input::<B, 3>([2, 3, 4], 62, dev);
    let img = input::<B, 4>([2, 4, 5, 5], 63, dev);
    let mut bn = BatchNorm2d::<B, 4>::new(NormConfig::default(), dev);
    // Non-trivial affine parameters and running statistics.
    bn.weight = tensor(&[0.5, 1.5, -1.0, 2.0], [4], DType::F32, dev);
    bn.bias = tensor(&[0.1, -0.2, 0.3, 0.0], [4], DType::F32, dev);
    bn.running_mean = tensor(&[0.1, 0.0, -0.1, 0.2], [4], DType::F32, dev);
    bn.running_var = tensor(&[0.5, 1.0, 2.0, 1.5], [4], DType::F32, dev);
    both_modes::<B, _, 4, 4>(&bn, &img);
    let mut ln = LayerNorm::<B, 4>::new(NormConfig::default(), dev);
    ln.weight = tensor(&[0.5, 1.5, -1.0, 2.0], [4], DType::F32, dev);
    ln.bias = tensor(&[0.1, -0.2, 0.3, 0.0], [4], DType::F32, dev);
    both_modes::<B, _, 3, 3>(&ln, &x3);
    both_modes::<B, _, 2, 2>(&ln, &x2);
    let mut rms = RMSNorm::<B, 4>::new(RMSNormConfig { eps: 1e-3, ..Default::default() }, dev);
    rms.weight = Some(tensor(&[0.5, 1.5, -1.0, 2.0], [4], DType::F32, dev));
    both_modes::<B, _, 3, 3>(&rms, &x3);
    both_modes::<B, _, 2, 2>(&rms, &x2);
    let plain = RMSNormConfig { elementwise_affine: false, ..Default::default() };
    both_modes::<B, _, 3, 3>(&RMSNorm::<B, 4>::new(plain, dev), &x3);
    let mut gn = GroupNorm::<B, 2, 4>::new(NormConfig::default(), dev);
    gn.weight = tensor(&[0.5, 1.5, -1.0, 2.0], [4], DType::F32, dev);
    gn.bias = tensor(&[0.1, -0.2, 0.3, 0.0], [4], DType::F32, dev);
    both_modes::<B, _, 4, 4>(&gn, &img);
    both_modes::<B, _, 2, 2>(&gn, &x2);
    // One group per channel (instance norm) over a sequence.
    let x3c = input::<B, 3>([2, 4, 3], 64, dev);
    both_modes::<B, _, 3, 3>(&GroupNorm::<B, 4, 4>::new(NormConfig::default(), dev), &x3c);
    let mut bn1 = BatchNorm1d::<B, 4>::new(NormConfig::default(), dev);
    bn1.weight = tensor(&[0.5, 1.5, -1.0, 2.0], [4], DType::F32, dev);
    bn1.bias = tensor(&[0.1, -0.2, 0.3, 0.0], [4], DType::F32, dev);
    bn1.running_mean = tensor(&[0.1, 0.0, -0.1, 0.2], [4], DType::F32, dev);
    bn1.running_var = tensor(&[0.5, 1.0, 2.0, 1.5], [4], DType::F32, dev);
    both_modes::<B, _, 2, 2>(&bn1, &x2);
    both_modes::<B, _, 3, 3>(&bn1, &x3c);
}

/// Multi-head attention's backward against finite differences (f64).
pub fn attention_gradients<B: Backend>(dev: &B::Device) {
    use blaze_nn::*;
    let x3 = input::<B, 3>([2, 3, 4], 62, dev);
    // Attention: self-attention as a layer (parameters included), plain,
    // causal without biases, and with dropout on the weights.
    let mha = |config| MultiHeadAttention::<B, 4, 2>::new(config, &mut blaze_runtime::Rng::seed_from_u64(5), dev);
    both_modes::<B, _, 3, 3>(&mha(MultiHeadAttentionConfig::default()), &x3);
    let causal = MultiHeadAttentionConfig { causal: true, bias: false, ..Default::default() };
    both_modes::<B, _, 3, 3>(&mha(causal), &x3);
    let dropped = MultiHeadAttentionConfig { dropout: 0.3, ..Default::default() };
    both_modes::<B, _, 3, 3>(&mha(dropped), &x3);
    attention_inputs::<B>(dev);
}

/// Recurrent stacks: one layer, two layers both ways, no biases, and
/// dropout between three layers (training draws masks, evaluation none).
const RECURRENT_CONFIGS: [blaze_nn::RnnConfig; 4] = [
    blaze_nn::RnnConfig { num_layers: 1, bidirectional: false, bias: true, dropout: 0.0 },
    blaze_nn::RnnConfig { num_layers: 2, bidirectional: true, bias: true, dropout: 0.0 },
    blaze_nn::RnnConfig { num_layers: 2, bidirectional: false, bias: false, dropout: 0.0 },
    blaze_nn::RnnConfig { num_layers: 3, bidirectional: true, bias: true, dropout: 0.4 },
];

/// `Lstm`'s backward against finite differences (f64).
pub fn lstm_gradients<B: Backend>(dev: &B::Device) {
    let mut rng = blaze_runtime::Rng::seed_from_u64(3);
    let seq = input::<B, 3>([2, 4, 3], 66, dev);
    for config in RECURRENT_CONFIGS {
        both_modes::<B, _, 3, 3>(&blaze_nn::Lstm::<B, 3, 2>::new(config, &mut rng, dev), &seq);
    }
}

/// `Gru`'s backward against finite differences (f64).
pub fn gru_gradients<B: Backend>(dev: &B::Device) {
    let mut rng = blaze_runtime::Rng::seed_from_u64(4);
    let seq = input::<B, 3>([2, 4, 3], 66, dev);
    for config in RECURRENT_CONFIGS {
        both_modes::<B, _, 3, 3>(&blaze_nn::Gru::<B, 3, 2>::new(config, &mut rng, dev), &seq);
    }
}

/// Layers in training mode: dropout statistics, batch-norm running
/// statistics, and eval-mode outputs.
pub fn layer_modes<B: Backend>(dev: &B::Device) {
    use blaze_nn::*;
    let ones = Tensor::<B, 2>::ones([200, 50], dev);
    let mut drop = Dropout::new(DropoutConfig { p: 0.25 });
    let (y, _) = Layer::<B, 2, 2>::forward_train(&mut drop, &ones, &mut Ctx::train(1));
    let kept = y.gt_scalar(0.0).to_dtype(DType::F32).mean().item();
    assert!((kept - 0.75).abs() < 0.02, "dropout kept {kept}");
    assert!((y.mean().item() - 1.0).abs() < 0.03, "dropout is unbiased: mean {}", y.mean().item());
    assert_eq!(values(&Layer::<B, 2, 2>::forward(&drop, &ones)), values(&ones), "eval dropout is the identity");
    // The mask is the counter-based generator's at each index, whatever
    // the backend and the dtype; the backward draws it again from the seed.
    let (y, seed) = Layer::<B, 2, 2>::forward_train(&mut drop, &ones, &mut Ctx::train(1));
    let seed = seed.expect("training dropout keeps its seed");
    let want: Vec<f64> = (0..ones.numel())
        .map(|i| {
            if f64::from(blaze_runtime::rng::counter_uniform(seed, i as u32)) < drop.threshold() {
                0.0
            } else {
                1.0 / 0.75
            }
        })
        .collect();
    assert_close("dropout mask", &y, &want, &[200, 50], (0.0, 1e-6));
    let (g, ()) = Layer::<B, 2, 2>::backward(&drop, &Some(seed), &ones);
    assert_eq!(values(&g), values(&y), "dropout's backward applies its forward's mask");
    let ones64 = ones.to_dtype(DType::F64);
    let (y64, _) = Layer::<B, 2, 2>::forward_train(&mut drop, &ones64, &mut Ctx::train(1));
    assert_close("dropout mask in f64", &y64, &want, &[200, 50], (0.0, 1e-12));

    let mut bn = BatchNorm2d::<B, 2>::new(NormConfig::default(), dev);
    let x = tensor::<B, 4>(&noise(4 * 2 * 3 * 3, 71), [4, 2, 3, 3], DType::F32, dev).mul_scalar(3.0).add_scalar(1.0);
    let (y, _) = Layer::<B, 4, 4>::forward_train(&mut bn, &x, &mut Ctx::train(0));
    // Batch statistics: every channel of the output has mean 0, variance 1.
    let mean = y.mean_dim(0).mean_dim(2).mean_dim(3);
    assert_close("batchnorm output mean", &mean, &[0.0, 0.0], &[1, 2, 1, 1], (0.0, 1e-5));
    let xs = values(&x);
    for c in 0..2 {
        let vals: Vec<f64> = r::indices(&[4, 2, 3, 3])
            .iter()
            .filter(|i| i[1] == c)
            .map(|i| xs[((i[0] * 2 + c) * 3 + i[2]) * 3 + i[3]])
            .collect();
        let m = vals.iter().sum::<f64>() / vals.len() as f64;
        let var = vals.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (vals.len() - 1) as f64;
        let rm = values(&bn.running_mean)[c];
        let rv = values(&bn.running_var)[c];
        assert!((rm - 0.1 * m).abs() < 1e-5, "running_mean {rm} vs {}", 0.1 * m);
        assert!((rv - (0.9 + 0.1 * var)).abs() < 1e-4, "running_var {rv} vs {}", 0.9 + 0.1 * var);
    }
}

/// Losses: values worked by hand, gradients against finite differences.
pub fn losses<B: Backend>(dev: &B::Device) {
    use blaze_nn::gradcheck::check_function;
    use blaze_nn::loss::*;
    let logits = tensor::<B, 2>(&[1.0, 2.0, 3.0, 1.0, 1.0, 1.0], [2, 3], DType::F64, dev);
    let targets = Tensor::<B, 1>::from_vec(vec![2i64, 0], [2], dev);
    // Row 0: -log(e^3 / (e + e^2 + e^3)) = 0.40760596; row 1: log 3 = 1.09861229.
    let ce = cross_entropy(&logits, &targets, 0.0);
    assert!((ce.item() - (0.407_605_964_444_380_1 + 1.098_612_288_668_109_8) / 2.0).abs() < 1e-12);
    for smoothing in [0.0, 0.1] {
        let l = cross_entropy(&logits, &targets, smoothing);
        check_function(&logits, |z| cross_entropy(z, &targets, smoothing).value, &l.grad);
    }
    // With smoothing 0.1 over 3 classes, row 1 (uniform logits) still costs log 3.
    let smooth = cross_entropy(&logits.narrow(0, 1, 1), &targets.narrow(0, 1, 1), 0.1);
    assert!((smooth.item() - 1.098_612_288_668_109_8).abs() < 1e-12);
    // Huge logits stay finite.
    let big = tensor::<B, 2>(&[1000.0, -1000.0], [1, 2], DType::F32, dev);
    let l = cross_entropy(&big, &Tensor::<B, 1>::from_vec(vec![1i64], [1], dev), 0.0);
    assert!((l.item() - 2000.0).abs() < 1e-3 && values(&l.grad).iter().all(|g| g.is_finite()));

    let logp = logits.log_softmax(1);
    let n = nll(&logp, &targets);
    assert!((n.item() - ce.item()).abs() < 1e-12, "nll of log_softmax is cross-entropy");
    check_function(&logp, |z| nll(z, &targets).value, &n.grad);

    class_targets::<B>(dev);

    let p = tensor::<B, 2>(&[1.0, 2.0, 3.0, 4.0], [2, 2], DType::F64, dev);
    let t = tensor::<B, 2>(&[1.5, 2.0, 2.0, 6.0], [2, 2], DType::F64, dev);
    let m = mse(&p, &t);
    assert!((m.item() - (0.25 + 0.0 + 1.0 + 4.0) / 4.0).abs() < 1e-12);
    check_function(&p, |z| mse(z, &t).value, &m.grad);

    let x = tensor::<B, 2>(&[0.5, -2.0, 30.0, -30.0], [2, 2], DType::F64, dev);
    let y = tensor::<B, 2>(&[1.0, 0.0, 0.0, 1.0], [2, 2], DType::F64, dev);
    let b = binary_cross_entropy_with_logits(&x, &y);
    let direct: f64 = [(0.5, 1.0), (-2.0, 0.0), (30.0, 0.0), (-30.0, 1.0)]
        .iter()
        .map(|&(x, t): &(f64, f64)| -(t * (1.0 / (1.0 + (-x).exp())).ln() + (1.0 - t) * (1.0 / (1.0 + x.exp())).ln()))
        .sum::<f64>()
        / 4.0;
    assert!((b.item() - direct).abs() < 1e-9, "{} vs {direct}", b.item());
    check_function(&x, |z| binary_cross_entropy_with_logits(z, &y).value, &b.grad);
}

/// Class indices are checked (PyTorch: "Target 7 is out of bounds"), and
/// rows whose target is `ignore_index` (-100 unless set) leave the mean.
fn class_targets<B: Backend>(dev: &B::Device) {
    use blaze_nn::gradcheck::check_function;
    use blaze_nn::loss::*;
    let logits = tensor::<B, 2>(&noise(12, 70), [4, 3], DType::F64, dev);
    let ids = |v: Vec<i64>| Tensor::<B, 1>::from_vec(v, [4], dev);
    for (bad, at) in [(7, 2), (-1, 0), (3, 3), (-100_000, 1)] {
        let mut v = vec![0i64, 1, 2, 1];
        v[at] = bad;
        let t = ids(v);
        let want = format!("target {bad} at position {at} is out of bounds for 3 classes");
        let msg = panic_message(|| drop(cross_entropy(&logits, &t, 0.0))).unwrap_or_default();
        assert!(msg.starts_with(&format!("cross_entropy: {want}")), "{msg}");
        let msg = panic_message(|| drop(nll(&logits, &t))).unwrap_or_default();
        assert!(msg.starts_with(&format!("nll: {want}")), "{msg}");
        let err = check_class_targets(&t, 3, IGNORE_INDEX).expect_err("out of range");
        assert_eq!((err.value, err.position, err.classes), (bad, at, 3));
    }
    assert!(check_class_targets(&ids(vec![0, 2, -100, 1]), 3, IGNORE_INDEX).is_ok());

    // Ignored rows: the loss is the mean over the others, their gradient zero.
    let t = ids(vec![2, IGNORE_INDEX, 0, IGNORE_INDEX]);
    let kept = logits.index_select(0, &Tensor::<B, 1>::from_vec(vec![0i64, 2], [2], dev));
    let kept_t = Tensor::<B, 1>::from_vec(vec![2i64, 0], [2], dev);
    for smoothing in [0.0, 0.2] {
        let l = cross_entropy(&logits, &t, smoothing);
        let k = cross_entropy(&kept, &kept_t, smoothing);
        assert!((l.item() - k.item()).abs() < 1e-12, "ignored rows leave the mean");
        let g = values(&l.grad);
        assert!(g[3..6].iter().chain(&g[9..]).all(|&v| v == 0.0), "ignored rows get no gradient: {g:?}");
        check_function(&logits, |z| cross_entropy(z, &t, smoothing).value, &l.grad);
    }
    let logp = logits.log_softmax(1);
    let n = nll(&logp, &t);
    assert!((n.item() - nll(&kept.log_softmax(1), &kept_t).item()).abs() < 1e-12);
    check_function(&logp, |z| nll(z, &t).value, &n.grad);
    // Another ignore_index; -100 is then a bad target.
    let t = ids(vec![2, 1, 0, 1]);
    let l = cross_entropy_with(&logits, &t, CrossEntropyOptions { ignore_index: 1, ..Default::default() });
    assert!((l.item() - cross_entropy(&kept, &kept_t, 0.0).item()).abs() < 1e-12);
    assert!((nll_with(&logp, &t, 1).item() - nll(&kept.log_softmax(1), &kept_t).item()).abs() < 1e-12);
    let t = ids(vec![2, IGNORE_INDEX, 0, 1]);
    let opts = CrossEntropyOptions { ignore_index: 1, ..Default::default() };
    assert!(panic_message(|| drop(cross_entropy_with(&logits, &t, opts))).is_some_and(|m| m.contains("target -100")));
    // A larger batch, some rows ignored, against the formula in ops (a
    // backend may compute it in one pass per row); rows longer than a GPU
    // workgroup, and more rows than a GPU grid holds in one dimension.
    for (n, c, dtype) in FLOATS.into_iter().map(|d| (37, 11, d)).chain([(3, 150, DType::F32), (66_000, 2, DType::F32)])
    {
        let z = tensor::<B, 2>(&noise(n * c, 72), [n, c], dtype, dev).mul_scalar(4.0);
        let classes: Vec<i64> =
            (0..n as i64).map(|i| if i % 5 == 3 { IGNORE_INDEX } else { (i * 7) % c as i64 }).collect();
        let kept = classes.iter().filter(|&&t| t != IGNORE_INDEX).count() as f64;
        let t = Tensor::<B, 1>::from_vec(classes.clone(), [n], dev);
        let weights = tensor::<B, 2>(
            &classes.iter().map(|&t| f64::from(u8::from(t != IGNORE_INDEX))).collect::<Vec<_>>(),
            [n, 1],
            dtype,
            dev,
        );
        let safe = Tensor::<B, 1>::from_vec(classes.iter().map(|&t| t.max(0)).collect(), [n], dev);
        for smoothing in [0.0, 0.1] {
            let q = one_hot(&safe, c, dtype).mul_scalar(1.0 - smoothing).add_scalar(smoothing / c as f64);
            let logp = z.log_softmax(1);
            let want = logp.mul(&q).mul(&weights).sum().neg().div_scalar(kept);
            let want_grad = logp.exp().sub(&q).mul(&weights).div_scalar(kept);
            let l = cross_entropy(&z, &t, smoothing);
            let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
            assert!((l.item() - want.item()).abs() < tol, "cross_entropy ({dtype}) {} vs {}", l.item(), want.item());
            assert_close("cross_entropy gradient", &l.grad, &values(&want_grad), &[n, c], (0.0, tol / 10.0));
        }
    }
    // Every row ignored: NaN, as PyTorch's mean over nothing.
    let l = cross_entropy(&logits, &ids(vec![IGNORE_INDEX; 4]), 0.0);
    assert!(l.item().is_nan() && values(&l.grad).iter().all(|&g| g == 0.0));
}

/// Optimizer updates against PyTorch's formulas, written out per scalar.
pub fn optimizers<B: Backend>(dev: &B::Device) {
    use blaze_nn::optim::*;
    use blaze_nn::{Linear, LinearConfig, LinearGrads};
    let p0 = [1.0, -2.0];
    let gs = [[0.5, 0.25], [-0.1, 0.4], [0.3, -0.2]];
    let model = || {
        let mut m =
            Linear::<B, 2, 1>::new(LinearConfig { bias: false }, &mut blaze_runtime::Rng::seed_from_u64(0), dev);
        m.weight = tensor(&p0, [1, 2], DType::F64, dev);
        m
    };
    let grads = |g: [f64; 2]| LinearGrads { weight: tensor::<B, 2>(&g, [1, 2], DType::F64, dev), bias: None };
    let run = |opt: &mut dyn FnMut(&mut Linear<B, 2, 1>, &LinearGrads<B>)| {
        let mut m = model();
        for g in gs {
            opt(&mut m, &grads(g));
        }
        values(&m.weight)
    };
    // Scalar references.
    let sgd = |lr: f64, mu: f64, wd: f64, nesterov: bool| {
        let mut out = Vec::new();
        for i in 0..2 {
            let (mut p, mut buf) = (p0[i], None::<f64>);
            for g in gs {
                let d = g[i] + wd * p;
                let b = buf.map_or(d, |b| mu * b + d);
                buf = Some(b);
                let step = if mu == 0.0 {
                    d
                } else if nesterov {
                    d + mu * b
                } else {
                    b
                };
                p -= lr * step;
            }
            out.push(p);
        }
        out
    };
    let adam = |lr: f64, wd: f64, decoupled: bool| {
        let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
        let mut out = Vec::new();
        for i in 0..2 {
            let (mut p, mut m, mut v) = (p0[i], 0.0, 0.0);
            for (t, g) in gs.iter().enumerate() {
                let t = t as i32 + 1;
                let mut g = g[i];
                if decoupled {
                    p *= 1.0 - lr * wd;
                } else {
                    g += wd * p;
                }
                m = b1 * m + (1.0 - b1) * g;
                v = b2 * v + (1.0 - b2) * g * g;
                let mh = m / (1.0 - b1.powi(t));
                let vh = v / (1.0 - b2.powi(t));
                p -= lr * mh / (vh.sqrt() + eps);
            }
            out.push(p);
        }
        out
    };
    let close = |what: &str, got: Vec<f64>, want: Vec<f64>| {
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12, "{what}: got {got:?}, want {want:?}");
        }
    };
    let mut o = Sgd::new(0.1);
    close("sgd", run(&mut |m, g| o.step(m, g)), sgd(0.1, 0.0, 0.0, false));
    let mut o = Sgd::new(0.1).momentum(0.9).weight_decay(0.01);
    close("sgd momentum", run(&mut |m, g| o.step(m, g)), sgd(0.1, 0.9, 0.01, false));
    let mut o = Sgd::new(0.1).momentum(0.9).nesterov(true);
    close("sgd nesterov", run(&mut |m, g| o.step(m, g)), sgd(0.1, 0.9, 0.0, true));
    let mut o = Adam::new(0.01);
    close("adam", run(&mut |m, g| o.step(m, g)), adam(0.01, 0.0, false));
    let mut o = Adam::new(0.01).weight_decay(0.1);
    close("adam l2", run(&mut |m, g| o.step(m, g)), adam(0.01, 0.1, false));
    let mut o = Adam::adamw(0.01).weight_decay(0.1);
    close("adamw", run(&mut |m, g| o.step(m, g)), adam(0.01, 0.1, true));

    // The Adam composite (one pass where a backend fuses it) against its
    // composed form, in both dtypes, Adam and AdamW, from nonzero moments;
    // a tensor sharing the parameter's buffer keeps its values.
    for dtype in FLOATS {
        let n = 40;
        let (p0, m0, g0) = (noise(n, 41), noise(n, 42), noise(n, 43));
        let v0: Vec<f64> = noise(n, 44).iter().map(|x| x * x).collect();
        for decoupled in [false, true] {
            let o = blaze_runtime::AdamStep {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.1,
                decoupled,
                t: 3,
            };
            let mut p = tensor::<B, 2>(&p0, [5, 8], dtype, dev);
            let (mut m, mut v) = (tensor::<B, 1>(&m0, [n], dtype, dev), tensor::<B, 1>(&v0, [n], dtype, dev));
            let g = tensor::<B, 2>(&g0, [5, 8], dtype, dev);
            p.adam_(&mut m, &mut v, &g, o);
            // Again with the parameter's buffer shared: updated by value.
            let mut p2 = tensor::<B, 2>(&p0, [5, 8], dtype, dev);
            let shared = p2.clone();
            let (mut m2, mut v2) = (tensor::<B, 1>(&m0, [n], dtype, dev), tensor::<B, 1>(&v0, [n], dtype, dev));
            p2.adam_(&mut m2, &mut v2, &g, o);
            let (mut cp, mut cm, mut cv) = (
                tensor::<B, 2>(&p0, [5, 8], dtype, dev).into_storage(),
                tensor::<B, 1>(&m0, [n], dtype, dev).into_storage(),
                tensor::<B, 1>(&v0, [n], dtype, dev).into_storage(),
            );
            blaze_runtime::backend::composed_adam::<B>(&mut cp, &mut cm, &mut cv, g.storage(), o);
            let tol = tolerance(dtype, false);
            let what = if decoupled { "adamw" } else { "adam" };
            assert_close(&format!("{what} parameter"), &p, &values(&Tensor::<B, 2>::from_storage(cp)), &[5, 8], tol);
            assert_close(&format!("{what} exp_avg"), &m, &values(&Tensor::<B, 1>::from_storage(cm)), &[n], tol);
            assert_close(&format!("{what} exp_avg_sq"), &v, &values(&Tensor::<B, 1>::from_storage(cv)), &[n], tol);
            assert_close(&format!("{what} leaves a sharing tensor alone"), &shared, &p0, &[5, 8], tol);
            assert_close(&format!("{what} of a shared parameter"), &p2, &values(&p), &[5, 8], tol);
        }
    }

    // The in-place update leaves tensors that share the old buffer alone,
    // and updates strided views by value.
    for dtype in FLOATS {
        let y0 = noise(6, 31);
        let x0 = noise(6, 32);
        let want: Vec<f64> = y0.iter().zip(&x0).map(|(y, x)| 0.5 * y - 2.0 * x).collect();
        let mut y = tensor::<B, 2>(&y0, [2, 3], dtype, dev);
        let shared = y.clone();
        y.axpby_(0.5, &tensor::<B, 2>(&x0, [2, 3], dtype, dev), -2.0);
        assert_close("axpby_", &y, &want, &[2, 3], tolerance(dtype, false));
        assert_close("axpby_ leaves a sharing tensor alone", &shared, &y0, &[2, 3], tolerance(dtype, false));
        let xt: Vec<f64> = r::indices(&[3, 2]).iter().map(|i| x0[i[1] * 3 + i[0]]).collect();
        let mut yt = tensor::<B, 2>(&y0, [2, 3], dtype, dev);
        yt.axpby_(0.5, &tensor::<B, 2>(&xt, [3, 2], dtype, dev).t(), -2.0);
        assert_close("axpby_ from a transposed view", &yt, &want, &[2, 3], tolerance(dtype, false));
    }

    // Saving and restoring the state continues the same trajectory.
    let mut a = Adam::<B>::new(0.01);
    let mut m = model();
    a.step(&mut m, &grads(gs[0]));
    let (state, steps) = a.state();
    assert_eq!(steps, 1);
    assert_eq!(state.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["weight.exp_avg", "weight.exp_avg_sq"]);
    let mut b = Adam::<B>::new(0.01);
    b.load_state(state, steps, dev);
    let mut m2 = m.clone();
    a.step(&mut m, &grads(gs[1]));
    b.step(&mut m2, &grads(gs[1]));
    assert_eq!(values(&m.weight), values(&m2.weight));

    // Clipping by global norm: |(3, 4)| = 5 scaled to 1.
    let mut g = grads([3.0, 4.0]);
    let norm = clip_grad_norm::<B, Linear<B, 2, 1>>(&mut g, 1.0);
    assert!((norm - 5.0).abs() < 1e-12);
    let v = values(&g.weight);
    assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6, "{v:?}");
    let mut g = grads([0.3, 0.4]);
    clip_grad_norm::<B, Linear<B, 2, 1>>(&mut g, 1.0);
    assert_eq!(values(&g.weight), vec![0.3, 0.4], "below the limit nothing changes");

    // Schedules.
    let s = StepLr { base: 1.0, step_size: 10, gamma: 0.5 };
    assert_eq!([s.lr_at(0), s.lr_at(9), s.lr_at(10), s.lr_at(25)], [1.0, 1.0, 0.5, 0.25]);
    let c = CosineWithWarmup { base: 1.0, min: 0.0, warmup: 4, total: 14 };
    assert_eq!([c.lr_at(0), c.lr_at(3)], [0.25, 1.0]);
    assert!((c.lr_at(4) - 1.0).abs() < 1e-12 && (c.lr_at(9) - 0.5).abs() < 1e-12 && c.lr_at(14).abs() < 1e-12);
    assert!(c.lr_at(100).abs() < 1e-12);
    let l = LinearDecay { base: 1.0, end: 0.0, total: 10 };
    assert_eq!([l.lr_at(0), l.lr_at(5), l.lr_at(10), l.lr_at(20)], [1.0, 0.5, 0.0, 0.0]);
}

/// Attention's query, keys and values apart (cross-attention, 3 queries
/// to 5 keys), with a key-padding mask and a causal mask over unequal
/// lengths: each input's gradient against finite differences (f64).
fn attention_inputs<B: Backend>(dev: &B::Device) {
    use blaze_nn::gradcheck::{check_function, projection};
    use blaze_nn::{Attend, Ctx, MultiHeadAttention, MultiHeadAttentionConfig, to_dtype};
    for causal in [false, true] {
        let config = MultiHeadAttentionConfig { causal, ..Default::default() };
        let mut mha = MultiHeadAttention::<B, 4, 2>::new(config, &mut blaze_runtime::Rng::seed_from_u64(6), dev);
        to_dtype(&mut mha, DType::F64);
        let q = projection::<B, 3>([2, 3, 4], 1, dev);
        let k = projection::<B, 3>([2, 5, 4], 2, dev);
        let v = projection::<B, 3>([2, 5, 4], 3, dev);
        // The second sample's last two keys are padding.
        let mask = tensor::<B, 2>(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0], [2, 5], DType::F64, dev);
        let r = projection::<B, 3>([2, 3, 4], 4, dev);
        let (_, cache) = mha.clone().attend_train(&q, &k, &v, Some(&mask), &mut Ctx::eval());
        let ((dq, dk, dv), _) = mha.attend_backward(&cache, &r);
        let loss =
            |q: &Tensor<B, 3>, k: &Tensor<B, 3>, v: &Tensor<B, 3>| mha.attend(q, k, v, Some(&mask)).mul(&r).sum();
        check_function(&q, |q| loss(q, &k, &v), &dq);
        check_function(&k, |k| loss(&q, k, &v), &dk);
        check_function(&v, |v| loss(&q, &k, v), &dv);
    }
}
