//! Every example model, and models that use every other layer and forward
//! body op, export to ONNX files that ONNX Runtime runs to Blaze's outputs.
//!
//! The files themselves are not committed: `BLAZE_BLESS=1` writes them to
//! `tests/fixtures/onnx_export/out/`, and
//! `tests/fixtures/onnx_export/check_with_onnxruntime.py` checks each with
//! `onnx.checker`, runs it in ONNX Runtime, and commits what it saw to
//! `NAME.safetensors`: the input, ONNX Runtime's output, and a digest of the
//! file. Here each model is exported again: the bytes must have that digest
//! (the file ONNX Runtime ran is the one Blaze writes now), and Blaze's
//! output must match ONNX Runtime's.

use std::path::PathBuf;

use blaze::export::{OnnxModel, to_onnx};
use blaze::nn::Differentiable;
use blaze::prelude::*;
use blaze::record::{load_tensors, save_tensors};
use blaze::{DataVec, TensorData};

use crate::gpt_model;
use crate::tabular::tables as tabular;

use crate::digits;
use crate::readers;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx_export")
}

/// FNV-1a, 64 bits: the digest the checking script computes too.
fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `n` floats in [-1, 1) that are not all alike.
fn floats(shape: &[usize]) -> TensorData {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 7919 + 13) % 1000) as f32 / 500.0 - 1.0).collect();
    TensorData::new(v, shape.to_vec()).expect("values fill the shape")
}

/// Ids below `vocab`.
fn ids(shape: &[usize], vocab: usize) -> TensorData {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n).map(|i| ((i * 31 + 7) % vocab) as i64).collect();
    TensorData::new(v, shape.to_vec()).expect("values fill the shape")
}

/// Exports `model`, runs it on `input`, and holds both to the fixture.
fn check<M, const R: usize, const RO: usize>(name: &str, model: &M, input: TensorData)
where
    M: OnnxModel + Differentiable<Cpu, Input = Tensor<Cpu, R>, Output = Tensor<Cpu, RO>>,
{
    let x = Tensor::<Cpu, R>::from_data(input.clone(), &CpuDevice).expect("input");
    let y = model.forward(&x).to_dtype(DType::F32).to_data();
    check_outputs(name, &to_onnx(model), &[input], y);
}

/// Holds an export's bytes and Blaze's output `y` for `inputs` (named
/// `input`, `input_1`, ... as the file names them) to the fixture.
fn check_outputs(name: &str, bytes: &[u8], inputs: &[TensorData], y: TensorData) {
    let names: Vec<String> =
        (0..inputs.len()).map(|i| if i == 0 { "input".to_string() } else { format!("input_{i}") }).collect();
    if std::env::var_os("BLAZE_BLESS").is_some() {
        let out = fixtures().join("out");
        std::fs::create_dir_all(&out).expect("out folder");
        std::fs::write(out.join(format!("{name}.onnx")), bytes).expect("write the ONNX file");
        let mut tensors: Vec<(String, TensorData)> = names.iter().cloned().zip(inputs.iter().cloned()).collect();
        tensors.push(("blaze".to_string(), y));
        save_tensors(&out.join(format!("{name}_input.safetensors")), &tensors, &[]).expect("write the input");
        return;
    }
    let path = fixtures().join(format!("{name}.safetensors"));
    let (tensors, meta) =
        load_tensors(&path).unwrap_or_else(|e| panic!("{e}: run the bless steps in this file's header"));
    let get = |n: &str| tensors.iter().find(|(k, _)| k == n).map(|(_, t)| t.clone()).expect(n);
    assert_eq!(
        meta.get("fnv1a64").map(String::as_str),
        Some(fnv1a(bytes).as_str()),
        "{name}: the export changed since ONNX Runtime ran it; bless again (this file's header)"
    );
    for (n, input) in names.iter().zip(inputs) {
        assert_eq!(&get(n), input, "{name}: the fixture's `{n}` is not this test's");
    }
    let want = get("onnxruntime");
    assert_eq!(want.shape, y.shape, "{name}: ONNX Runtime's output shape");
    let (DataVec::F32(w), DataVec::F32(g)) = (&want.values, &y.values) else { panic!("{name}: f32 outputs") };
    let worst = w.iter().zip(g).map(|(a, b)| (a - b).abs() / a.abs().max(1.0)).fold(0.0f32, f32::max);
    assert!(worst <= 1e-4, "{name}: Blaze and ONNX Runtime differ by {worst:e} (relative, at most 1e-4)");
}

#[test]
fn mnist_models_export() {
    check("digits_cnn", &digits::DigitsCnn::<Cpu>::new_seeded(1, &CpuDevice), floats(&[3, 1, 8, 8]));
    check("digits_mlp", &digits::DigitsMlp::<Cpu>::new_seeded(2, &CpuDevice), floats(&[3, 1, 8, 8]));
    check("mnist_cnn", &digits::MnistCnn::<Cpu>::new_seeded(3, &CpuDevice), floats(&[2, 1, 28, 28]));
    check("mnist_mlp", &digits::MnistMlp::<Cpu>::new_seeded(4, &CpuDevice), floats(&[2, 1, 28, 28]));
}

#[test]
fn tabular_models_export() {
    check("wine_mlp", &tabular::WineMlp::<Cpu>::new_seeded(5, &CpuDevice), floats(&[4, 13]));
    check("mpg_mlp", &tabular::MpgMlp::<Cpu>::new_seeded(6, &CpuDevice), floats(&[4, 9]));
}

#[test]
fn verses_models_export() {
    check("lstm_reader", &readers::LstmReader::<Cpu>::new_seeded(7, &CpuDevice), ids(&[2, 11], readers::VOCAB));
    check("gru_reader", &readers::GruReader::<Cpu>::new_seeded(8, &CpuDevice), ids(&[2, 11], readers::VOCAB));
}

#[test]
fn gpt_exports() {
    check("gpt", &gpt_model::Gpt::<Cpu>::new_seeded(9, &CpuDevice), ids(&[2, 13], gpt_model::VOCAB));
}

blaze::kernel! {
    /// A bump that is negative on the left: every kind of expression a
    /// kernel prints as ONNX (a binding, a select, a comparison, calls).
    pub fn bump(x: f32, width: f32) -> f32 {
        let e = exp(-x * x / width);
        select(x > 0.0, e * x, min(e - 1.0, tanh(x)) + pow(abs(x), 0.5) * 0.1)
    }
}

blaze::kernel! {
    /// A narrow bump: a `Map` layer's kernel.
    pub fn narrow_bump(x: f32) -> f32 {
        let e = exp(-2.0 * x * x);
        select(x >= 0.0 && x != 1.0, e, -e) * clamp(x, -2.0, 2.0) + floor(x) * 0.01
    }
}

/// Images through every image layer and option.
#[model(input = [3, 12, 12])]
pub struct ImageZoo {
    #[layer(padding = 1)]
    conv: Conv2d<3, 8, 3>, // [8, 12, 12]
    bn: BatchNorm2d<8>,
    #[layer(negative_slope = 0.2)]
    leaky: LeakyRelu,
    #[layer(stride = 2, padding = 1, ceil_mode = true)]
    avg: AvgPool2d<3>, // [8, 7, 7]
    #[layer(scale_factor = 2, mode = "bilinear")]
    up: Upsample, // [8, 14, 14]
    gn: GroupNorm<2, 8>,
    silu: Silu,
    #[layer(stride = 2, padding = 1, output_padding = 1)]
    tconv: ConvTranspose2d<8, 4, 3>, // [4, 28, 28]
    #[layer(stride = 2, padding = 1, ceil_mode = true)]
    max: MaxPool2d<3>, // [4, 15, 15]
    hswish: Hardswish,
    #[layer(groups = 2)]
    grouped: Conv2d<4, 4, 3>, // [4, 13, 13]
    #[layer(dilation = 2)]
    dilated: Conv2d<4, 6, 3>, // [6, 9, 9]
    adapt: AdaptiveAvgPool2d<3, 3>, // [6, 3, 3]
    #[layer(scale_factor = 2)]
    nearest: Upsample, // [6, 6, 6]
    #[layer(alpha = 0.5)]
    elu: Elu,
    gap: GlobalAvgPool, // [6]
    fc: Linear<6, 5>,
    #[layer(dim = 1)]
    log_probs: LogSoftmax,
}

/// Sequences `[channels, length]` through the other layers and the op
/// table's activations.
#[model(input = [6, 10])]
pub struct SequenceZoo {
    #[layer(padding = 1)]
    conv: Conv1d<6, 8, 3>, // [8, 10]
    bn: BatchNorm1d<8>,
    gelu: Gelu,
    ln: LayerNorm<10>,
    rms: RMSNorm<10>,
    #[layer(beta = 2.0)]
    softplus: Softplus,
    relu6: Relu6,
    hsig: Hardsigmoid,
    softsign: Softsign,
    logsig: LogSigmoid,
    tanh: Tanh,
    bump: Map<narrow_bump::Kernel>,
    #[layer(p = 0.3)]
    drop: Dropout,
    id: Identity,
    sigmoid: Sigmoid,
    #[layer(dim = -1)]
    softmax: Softmax,
    flat: Flatten,
    #[layer(bias = false)]
    fc: Linear<80, 4>,
}

/// A forward body with every op of the body language.
#[model]
pub struct Mixer {
    proj: Linear<8, 8>,
    attn: MultiHeadAttention<8, 2>,
    pos: Embedding<16, 8>,
}

#[model(input = [T, 8])]
impl Mixer {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.proj(x) + self.pos(positions(T));
        let a = self.attn(h, x, x);
        let s = h.matmul(x.transpose(0, 1)).masked_fill(causal_mask(T), -1e9).softmax(-1);
        let y = s.matmul(a) - x.sum_dim(-1) * 0.25 + x.mean_dim(0);
        let [l, r] = y.chunk(2, -1);
        let z = cat([l.sigmoid().clamp(0.1, 0.9), (1.0 - r) / 2.0], -1);
        let w = z.reshape([T * 4, 2]).permute([1, 0]).reshape([T, 8]);
        let q = w.maximum(z * 0.5) + pow(z.abs() + 1.0, w) + z.powf(2.0) + mish(w) + logsigmoid(w) + hardsigmoid(w);
        let k = bump(q, 2.0) - 2.0 / (w.exp() + 1.0) + relu6(-q) * elu_like(q);
        k.log_softmax(-1)
    }
}

blaze::kernel! {
    /// A kernel of one argument called in a body.
    pub fn elu_like(x: f32) -> f32 {
        select(x > 0.0, x, exp(x) - 1.0)
    }
}

/// Running statistics that are not the initial zeros and ones.
fn with_statistics<const C: usize>(bn: &mut Tensor<Cpu, 1>, var: &mut Tensor<Cpu, 1>) {
    let mean: Vec<f32> = (0..C).map(|c| c as f32 * 0.1 - 0.3).collect();
    let v: Vec<f32> = (0..C).map(|c| 0.5 + c as f32 * 0.2).collect();
    *bn = Tensor::from_vec(mean, [C], &CpuDevice);
    *var = Tensor::from_vec(v, [C], &CpuDevice);
}

#[test]
fn every_layer_exports() {
    let mut image = ImageZoo::<Cpu>::new_seeded(10, &CpuDevice);
    with_statistics::<8>(&mut image.bn.running_mean, &mut image.bn.running_var);
    check("image_zoo", &image, floats(&[2, 3, 12, 12]));
    let mut seq = SequenceZoo::<Cpu>::new_seeded(11, &CpuDevice);
    with_statistics::<8>(&mut seq.bn.running_mean, &mut seq.bn.running_var);
    check("sequence_zoo", &seq, floats(&[3, 6, 10]));
}

#[test]
fn every_body_op_exports() {
    check("mixer", &Mixer::<Cpu>::new_seeded(12, &CpuDevice), floats(&[2, 7, 8]));
}

#[test]
fn gpt_base_exports() {
    check("gpt_base", &gpt_model::GptBase::<Cpu>::new_seeded(13, &CpuDevice), ids(&[1, 9], gpt_model::VOCAB));
}

/// Attention over a sequence with a key-padding mask, a second input.
#[model]
pub struct PaddedAttention {
    attn: MultiHeadAttention<8, 2>,
    head: Linear<8, 3>,
}

#[model(input = ([T, 8], [T]))]
impl PaddedAttention {
    fn forward(&self, x: Tensor, pad: Tensor) -> Tensor {
        self.head(self.attn(x, x, x, pad))
    }
}

#[test]
fn a_second_input_and_a_key_padding_mask_export() {
    let model = PaddedAttention::<Cpu>::new_seeded(14, &CpuDevice);
    let x = floats(&[2, 5, 8]);
    // The last key of the first sequence and the last two of the second
    // are padding (nonzero); every query still sees a key.
    let pad = TensorData::new(vec![0.0f32, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0], vec![2, 5]).expect("mask");
    let xt = Tensor::<Cpu, 3>::from_data(x.clone(), &CpuDevice).expect("x");
    let pt = Tensor::<Cpu, 2>::from_data(pad.clone(), &CpuDevice).expect("pad");
    let y = model.forward(&xt, &pt).to_data();
    check_outputs("padded_attention", &to_onnx(&model), &[x, pad], y);
}

/// Two inputs of token ids, the second read through a view.
#[model]
pub struct TwoIds {
    tok: Embedding<16, 8>,
    seg: Embedding<3, 8>,
    head: Linear<8, 4>,
}

#[model(input = ([T], [T]))]
impl TwoIds {
    fn forward(&self, ids: Tensor, types: Tensor) -> Tensor {
        self.head(self.tok(ids) + self.seg(types.reshape([T])))
    }
}

#[test]
fn every_input_of_ids_is_int64() {
    use blaze::export::OnnxModel;
    assert!(TwoIds::<Cpu>::input_is_ids(0) && TwoIds::<Cpu>::input_is_ids(1));
    assert!(!PaddedAttention::<Cpu>::input_is_ids(0) && !PaddedAttention::<Cpu>::input_is_ids(1));
    let model = TwoIds::<Cpu>::new_seeded(15, &CpuDevice);
    let (a, b) = (ids(&[2, 5], 16), ids(&[2, 5], 3));
    let at = Tensor::<Cpu, 2>::from_data(a.clone(), &CpuDevice).expect("ids");
    let bt = Tensor::<Cpu, 2>::from_data(b.clone(), &CpuDevice).expect("types");
    let y = model.forward(&at, &bt).to_data();
    check_outputs("two_ids", &to_onnx(&model), &[a, b], y);
}
