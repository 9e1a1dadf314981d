//! Int8 products (`blaze::quant`) on every backend: the backend's
//! `linear_int8` gives the portable loop's bits, and the int8 layers'
//! plumbing (a convolution's unfolded windows with stride, padding,
//! dilation and groups, an embedding's rows) gives what the float layers
//! give on values that quantize exactly.

use super::{noise, tensor};
use blaze_nn::quant::weight::linear_int8;
use blaze_nn::quant::{InputQuant, QWeight, Quantize};
use blaze_nn::{Conv1d, Conv1dConfig, Conv2d, Conv2dConfig, Embedding, Linear, LinearConfig};
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, DType, Tensor};

/// The backend's int8 product against the portable loop, bit for bit.
pub fn int8_products<B: Backend>(dev: &B::Device) {
    let inputs = [InputQuant::Dynamic, InputQuant::Static { scale: 0.02, zero_point: 100 }];
    for (m, k, n) in [(1, 5, 3), (7, 130, 70), (40, 200, 10), (33, 64, 65)] {
        let x: Vec<f32> = noise(m * k, 21).into_iter().map(|v| v as f32).collect();
        let w: Vec<f32> = noise(n * k, 22).into_iter().map(|v| v as f32).collect();
        let w = QWeight::quantize(&w, &[n, k]);
        let rows = Tensor::<B, 2>::from_vec(x.clone(), [m, k], dev);
        for input in inputs {
            let mut want = vec![0f32; m * n];
            linear_int8(&x, m, &w, input, &mut want);
            let got = Tensor::<B, 2>::from_storage(B::linear_int8(rows.storage(), &w, input));
            assert_eq!(got.shape(), [m, n], "linear_int8 {m} x {k} x {n}: the shape");
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.to_vec::<f32>()), bits(&want), "linear_int8 {m} x {k} x {n} ({input:?})");
        }
    }
}

/// The backend's int8 convolution against the portable loop, bit for bit:
/// images quantized on their own or as calibrated, windows with stride,
/// padding, dilation and groups.
pub fn int8_convolutions<B: Backend>(dev: &B::Device) {
    use blaze_nn::quant::weight::{ConvShape, conv2d_int8};
    let cases =
        [([2, 4, 9, 7], [3, 3], [2, 1], [1, 1], [1, 1], 2, 6), ([1, 3, 6, 20], [1, 5], [1, 2], [0, 2], [1, 2], 1, 5)];
    for (dims, kernel, stride, padding, dilation, groups, outs) in cases {
        let options = blaze_runtime::Conv2dOptions { stride, padding, dilation, groups };
        let shape = ConvShape { input: dims, kernel, options };
        let [n, c, _, _] = dims;
        let [oh, ow] = shape.output().expect("the cases fit");
        let x: Vec<f32> = noise(dims.iter().product(), 23).into_iter().map(|v| v as f32).collect();
        let depth = c / groups * kernel[0] * kernel[1];
        let ws: Vec<QWeight> = (0..groups)
            .map(|g| {
                let w: Vec<f32> = noise(outs / groups * depth, 30 + g as u64).into_iter().map(|v| v as f32).collect();
                QWeight::quantize(&w, &[outs / groups, depth])
            })
            .collect();
        let parts: Vec<&QWeight> = ws.iter().collect();
        let images = Tensor::<B, 4>::from_vec(x.clone(), dims, dev);
        for input in [InputQuant::Dynamic, InputQuant::Static { scale: 0.03, zero_point: 120 }] {
            let mut want = vec![0f32; n * outs * oh * ow];
            conv2d_int8(&x, &shape, &parts, input, &mut want);
            let got = Tensor::<B, 4>::from_storage(B::conv2d_int8(images.storage(), &parts, &shape, input));
            assert_eq!(got.shape(), [n, outs, oh, ow], "conv2d_int8 {shape:?}: the shape");
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.to_vec::<f32>()), bits(&want), "conv2d_int8 {shape:?} ({input:?})");
        }
    }
}

/// Weights `q / 128` with `q` in -127..=127 and each output channel
/// reaching 127 (so its scale is 1/128 exactly): int8 holds them as they
/// are.
fn exact_weights(count: usize, per_channel: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::seed_from_u64(seed);
    (0..count)
        .map(|i| if i % per_channel == 0 { 127.0 / 128.0 } else { ((rng.next_u64() % 255) as f32 - 127.0) / 128.0 })
        .collect()
}

/// Inputs `j / 4` with `j` in -20..=20, which a calibrated scale of 1/4
/// and zero point 128 quantize exactly.
fn exact_inputs(count: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::seed_from_u64(seed);
    (0..count).map(|_| ((rng.next_u64() % 41) as f32 - 20.0) / 4.0).collect()
}

const EXACT: InputQuant = InputQuant::Static { scale: 0.25, zero_point: 128 };

/// Int8 layers against their float layers on values that quantize
/// exactly: every sum is a multiple of 2^-9 well inside f32's integers,
/// so both give the same bits whatever the order of their sums.
pub fn int8_layers_match_float_layers<B: Backend>(dev: &B::Device) {
    let mut rng = Rng::seed_from_u64(5);
    // Convolutions: stride and padding; dilation and groups.
    for (stride, padding, dilation, groups) in [(2, 1, 1, 1), (1, 2, 2, 2), (1, 0, 1, 4)] {
        let config = Conv2dConfig { stride, padding, dilation, groups, bias: true };
        let mut conv = Conv2d::<B, 4, 8, 3>::new(config, &mut rng, dev);
        let per = 4 / groups * 9;
        conv.weight = Tensor::from_vec(exact_weights(8 * per, per, 6), [8, 4 / groups, 3, 3], dev);
        conv.bias = Some(Tensor::from_vec((0..8).map(|i| i as f32 / 8.0).collect(), [8], dev));
        let mut int8 = conv.quantize();
        int8.input = EXACT;
        let x = Tensor::<B, 4>::from_vec(exact_inputs(2 * 4 * 9 * 7, 7), [2, 4, 9, 7], dev);
        let (want, got) = (conv.forward(&x), int8.forward(&x));
        assert_eq!(got.shape(), want.shape(), "Int8Conv2d {config:?}: the shape");
        assert_eq!(got.to_vec::<f32>(), want.to_vec::<f32>(), "Int8Conv2d {config:?}");
        let relu = int8.forward_act(&x, Some(blaze_runtime::UnaryOp::Relu));
        assert_eq!(relu.to_vec::<f32>(), want.relu().to_vec::<f32>(), "Int8Conv2d {config:?} with ReLU");
    }
    let config = Conv1dConfig { stride: 1, padding: 1, dilation: 2, groups: 1, bias: false };
    let mut conv = Conv1d::<B, 3, 5, 3>::new(config, &mut rng, dev);
    conv.weight = Tensor::from_vec(exact_weights(5 * 9, 9, 8), [5, 3, 3], dev);
    let mut int8 = conv.quantize();
    int8.input = EXACT;
    let x = Tensor::<B, 3>::from_vec(exact_inputs(2 * 3 * 11, 9), [2, 3, 11], dev);
    assert_eq!(
        int8.forward(&x).to_vec::<f32>(),
        blaze_nn::Layer::<B, 3, 3>::forward(&conv, &x).to_vec::<f32>(),
        "Int8Conv1d"
    );

    // A linear layer quantizes its rows at run time: rows whose range
    // is [-5, 5] in steps that 255 levels hold exactly (`j / 4` up to
    // 5 = 20 / 4, scale 10 / 255 is no multiple: compare within its step).
    let mut fc = Linear::<B, 12, 6>::new(LinearConfig { bias: true }, &mut rng, dev);
    fc.weight = Tensor::from_vec(exact_weights(6 * 12, 12, 10), [6, 12], dev);
    let int8 = fc.quantize();
    let x = Tensor::<B, 3>::from_vec(exact_inputs(2 * 3 * 12, 11), [2, 3, 12], dev);
    let (want, got) = (fc.forward(&x), int8.forward(&x));
    let step = 10.0 / 255.0 * 12.0 * 0.5 + 1e-4;
    for (a, b) in got.to_vec::<f32>().iter().zip(want.to_vec::<f32>()) {
        assert!((a - b).abs() <= step, "Int8Linear: {a} vs {b}");
    }

    // An embedding's rows come back as the quantized table holds them.
    let mut table = Embedding::<B, 10, 4>::new(&mut rng, dev);
    table.weight = Tensor::from_vec(exact_weights(40, 4, 12), [10, 4], dev);
    let int8 = table.quantize();
    let ids = tensor::<B, 2>(&[3.0, 0.0, 9.0, 3.0], [2, 2], DType::I64, dev);
    let (want, got) =
        (blaze_nn::Layer::<B, 2, 3>::forward(&table, &ids), blaze_nn::quant::Infer::<B, 2, 3>::forward(&int8, &ids));
    assert_eq!(got.to_vec::<f32>(), want.to_vec::<f32>(), "Int8Embedding");
}
