//! Layers added on the one-definition path agree with PyTorch: the same
//! parameters and input give the same output and the same gradient for the
//! input and every parameter (and a batch norm the same running
//! statistics), to 1e-4 relative. The fixtures come from
//! tests/fixtures/make_norm_fixture.py, make_conv1d_fixture.py and
//! make_activation_fixture.py, make_resample_fixture.py,
//! make_attention_fixture.py and make_recurrent_fixture.py; the parameters load by PyTorch's names. The
//! same scripts save each family's `state_dict` with PyTorch's
//! safetensors: each loads into the Blaze model by name and gives
//! PyTorch's output.

use crate::torch_fixture;

use blaze::TensorData;
use blaze::nn::Ctx;
use blaze::prelude::*;
use torch_fixture::{Load, assert_matches, read_fixture};

/// Loads a fixture's parameters into a fresh `$model` by PyTorch's names and
/// checks its inference and training outputs, its input gradient and every
/// parameter gradient against the fixture's; gives the gradients by name,
/// the fixture and its input, for what a test checks besides.
macro_rules! matches_fixture {
    ($model:ident, $rank:literal, $file:literal) => {{
        let fx = read_fixture($file);
        let mut model = $model::new_seeded(0, &CpuDevice);
        blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
        let tensor = |name: &str| Tensor::<Cpu, $rank>::from_data(fx[name].clone(), &CpuDevice).expect("its rank");
        let (x, r) = (tensor("input"), tensor("r"));
        assert_matches("output", &model.forward(&x).to_data(), &fx["output"]);
        let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
        assert_matches("output (training forward)", &y.to_data(), &fx["output"]);
        let (dx, grads) = model.backward(&cache, &r);
        assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
        let named = blaze::nn::grads_dict::<Cpu, $model>(&grads);
        for (name, g) in &named {
            assert_matches(&format!("grad.{name}"), g, &fx[&format!("grad.{name}")]);
        }
        (named, fx, x)
    }};
}

/// `nn.GroupNorm(2, 4)` then `nn.SiLU()`.
#[model(input = [4, 5, 5])]
pub struct NormAct {
    groups: GroupNorm<2, 4>,
    act: Silu,
}

#[test]
fn group_norm_and_silu_match_pytorch() {
    let (named, ..) = matches_fixture!(NormAct, 4, "norm.bin");
    assert_eq!(named.len(), 2, "groups.weight and groups.bias");
}

#[test]
fn group_norm_refuses_channels_it_does_not_have() {
    use blaze::spec::{Layer, Options, StaticShape, output};
    let refused = output(Layer::GroupNorm, &[2, 4], &Options::DEFAULT, StaticShape::new(&[6, 5, 5]));
    assert_eq!(refused, Err(blaze::spec::ShapeError::Channels { expected: 4, got: 6 }));
    let refused = output(Layer::GroupNorm, &[3, 4], &Options::DEFAULT, StaticShape::new(&[4, 5]));
    assert_eq!(refused, Err(blaze::spec::ShapeError::Groups { groups: 3, cin: 4, cout: 4 }));
}

#[test]
fn batch_norm_1d_in_training_matches_pytorch_with_its_running_statistics() {
    use blaze::nn::{Layer, NormConfig, NormGrads};
    let fx = read_fixture("batchnorm1d.bin");
    let vector = |name: &str| Tensor::<Cpu, 1>::from_data(fx[name].clone(), &CpuDevice).expect("rank 1");
    let mut bn = BatchNorm1d::<Cpu, 4>::new(NormConfig::default(), &CpuDevice);
    bn.weight = vector("weight");
    bn.bias = vector("bias");
    bn.running_mean = vector("before.running_mean");
    bn.running_var = vector("before.running_var");
    let x = Tensor::<Cpu, 3>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 3");
    let r = Tensor::<Cpu, 3>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 3");

    let (y, cache) = Layer::<Cpu, 3, 3>::forward_train(&mut bn, &x, &mut Ctx::train(0));
    assert_matches("output", &y.to_data(), &fx["output"]);
    let (dx, NormGrads { weight, bias }) = Layer::<Cpu, 3, 3>::backward(&bn, &cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    assert_matches("grad.weight", &weight.to_data(), &fx["grad.weight"]);
    assert_matches("grad.bias", &bias.expect("a bias").to_data(), &fx["grad.bias"]);
    assert_matches("running_mean", &bn.running_mean.to_data(), &fx["after.running_mean"]);
    assert_matches("running_var", &bn.running_var.to_data(), &fx["after.running_var"]);
}

/// `nn.Conv1d(3, 4, 3, padding=1)`, SiLU, `nn.Conv1d(4, 6, 3, stride=2,
/// dilation=2, groups=2)`.
#[model(input = [3, 12])]
pub struct Conv1dNet {
    #[layer(padding = 1)]
    conv1: Conv1d<3, 4, 3>,
    act: Silu,
    #[layer(stride = 2, dilation = 2, groups = 2)]
    conv2: Conv1d<4, 6, 3>,
}

#[test]
fn conv1d_matches_pytorch() {
    let (named, ..) = matches_fixture!(Conv1dNet, 3, "conv1d.bin");
    assert_eq!(named.len(), 4);
}

/// Linear layers with `nn.Softplus(beta=2, threshold=0.5)`, `nn.Identity`,
/// `nn.ELU(alpha=0.7)` and `nn.Softmax(dim=1)` between them.
#[model(input = [6])]
pub struct Activations {
    fc1: Linear<6, 8>,
    #[layer(beta = 2.0, threshold = 0.5)]
    soft: Softplus,
    same: Identity,
    fc2: Linear<8, 8>,
    #[layer(alpha = 0.7)]
    elu: Elu,
    fc3: Linear<8, 4>,
    #[layer(dim = 1)]
    probs: Softmax,
}

#[test]
fn activations_match_pytorch() {
    let (named, ..) = matches_fixture!(Activations, 2, "activations.bin");
    assert_eq!(named.len(), 6);
}

/// Linear layers with the op table's activation layers between them
/// (`nn.ReLU6`, `nn.Hardswish`, `nn.Mish`, `nn.Softsign` then
/// `nn.LogSigmoid`, which run as one fused kernel, and `nn.Hardsigmoid`),
/// weights scaled so that the pre-activations cross every kink.
#[model(input = [6])]
pub struct TableLayers {
    fc1: Linear<6, 8>,
    relu6: Relu6,
    fc2: Linear<8, 8>,
    hswish: Hardswish,
    fc3: Linear<8, 8>,
    mish: Mish,
    fc4: Linear<8, 8>,
    soft: Softsign,
    logsig: LogSigmoid,
    fc5: Linear<8, 8>,
    hsig: Hardsigmoid,
    fc6: Linear<8, 4>,
}

#[test]
fn table_activation_layers_match_pytorch() {
    assert!(TableLayers::<Cpu>::FUSION.groups.iter().any(|g| g.ops == ["softsign", "logsigmoid"]));
    let (named, ..) = matches_fixture!(TableLayers, 2, "table_layers.bin");
    assert_eq!(named.len(), 12);
}

/// Softplus and ELU where a naive formula loses digits (`log(1 + u)` and
/// `exp(x) - 1` near 0) match PyTorch's `log1p` and `expm1` to 1e-5 of
/// each value, as do their derivatives.
#[test]
fn softplus_and_elu_keep_their_digits_where_pytorch_does() {
    use blaze::nn::{EluConfig, Layer, SoftplusConfig};
    let fx = read_fixture("activations.bin");
    let points = Tensor::<Cpu, 1>::from_data(fx["points.input"].clone(), &CpuDevice).expect("rank 1");
    let ones = points.ones_like();
    let close = |name: &str, got: &Tensor<Cpu, 1>| {
        let blaze::DataVec::F32(want) = &fx[name].values else { panic!("{name}: f32") };
        for (i, (a, b)) in got.to_vec::<f32>().iter().zip(want).enumerate() {
            assert!((a - b).abs() <= 1e-5 * b.abs() + 1e-30, "{name}[{i}]: blaze {a}, pytorch {b}");
        }
    };
    let mut softplus = Softplus::new(SoftplusConfig { beta: 2.0, threshold: 0.5 });
    let (y, cache) = Layer::<Cpu, 1, 1>::forward_train(&mut softplus, &points, &mut Ctx::train(0));
    close("points.softplus", &y);
    close("points.softplus_grad", &Layer::<Cpu, 1, 1>::backward(&softplus, &cache, &ones).0);
    let mut elu = Elu::new(EluConfig { alpha: 0.7 });
    let (y, cache) = Layer::<Cpu, 1, 1>::forward_train(&mut elu, &points, &mut Ctx::train(0));
    close("points.elu", &y);
    close("points.elu_grad", &Layer::<Cpu, 1, 1>::backward(&elu, &cache, &ones).0);
}

/// `nn.RMSNorm(8)` (PyTorch's default eps), an affine map, then
/// `nn.RMSNorm(8, eps=1e-3, elementwise_affine=False)`, as a forward body
/// over sequences of any length.
#[model]
pub struct Rms {
    scaled: RMSNorm<8>,
    #[layer(eps = 0.001, elementwise_affine = false)]
    plain: RMSNorm<8>,
}

#[model(input = [T, 8])]
impl Rms {
    fn forward(&self, x: Tensor) -> Tensor {
        self.plain(self.scaled(x) * 3.0 - 1.0)
    }
}

#[test]
fn rms_norm_with_and_without_weight_matches_pytorch() {
    let (named, ..) = matches_fixture!(Rms, 3, "rmsnorm.bin");
    assert_eq!(named.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["scaled.weight"]);
}

/// A U-Net-style decoder path: convolutions, a transposed convolution,
/// bilinear and nearest upsampling, and adaptive average pooling to 5x3
/// from 36x36.
#[model(input = [2, 6, 6])]
pub struct Decoder {
    #[layer(padding = 1)]
    conv1: Conv2d<2, 4, 3>,
    #[layer(stride = 2, padding = 1, output_padding = 1)]
    deconv: ConvTranspose2d<4, 4, 3>,
    #[layer(scale_factor = 1.5, mode = "bilinear")]
    up1: Upsample,
    #[layer(padding = 1)]
    conv2: Conv2d<4, 3, 3>,
    #[layer(scale_factor = 2.0)]
    up2: Upsample,
    pool: AdaptiveAvgPool2d<5, 3>,
}

#[test]
fn upsampling_and_adaptive_pooling_match_pytorch() {
    let (named, ..) = matches_fixture!(Decoder, 4, "resample.bin");
    assert_eq!(named.len(), 6);
}

/// Upsampling by factors that put source pixels between grid points, by
/// one below 1, and corner-aligned, picks the pixels and weights PyTorch
/// does; a grouped,
/// dilated transposed convolution with output padding and no bias places
/// its taps as PyTorch's.
#[test]
fn upsampling_by_odd_factors_matches_pytorch() {
    use blaze::nn::{ConvTranspose2dConfig, Layer, UpsampleConfig};
    use blaze::spec::Interpolation;
    let fx = read_fixture("resample.bin");
    for (name, scale_factor, mode, align_corners) in [
        ("bilinear", 1.7, Interpolation::Bilinear, false),
        ("nearest", 0.6, Interpolation::Nearest, false),
        ("corners", 1.7, Interpolation::Bilinear, true),
        ("corners2", 2.0, Interpolation::Bilinear, true),
    ] {
        let at = |t: &str| Tensor::<Cpu, 4>::from_data(fx[&format!("odd.{name}.{t}")].clone(), &CpuDevice).expect("4");
        let mut up = Upsample::new(UpsampleConfig { scale_factor, mode, align_corners });
        let (y, cache) = Layer::<Cpu, 4, 4>::forward_train(&mut up, &at("input"), &mut Ctx::train(0));
        assert_matches(&format!("{name} output"), &y.to_data(), &fx[&format!("odd.{name}.output")]);
        let dx = Layer::<Cpu, 4, 4>::backward(&up, &cache, &at("r")).0;
        assert_matches(&format!("{name} grad.input"), &dx.to_data(), &fx[&format!("odd.{name}.grad.input")]);
    }
    let at = |t: &str| Tensor::<Cpu, 4>::from_data(fx[&format!("odd.grouped.{t}")].clone(), &CpuDevice).expect("4");
    let config =
        ConvTranspose2dConfig { stride: 3, padding: 2, output_padding: 1, dilation: 2, groups: 2, bias: false };
    let mut deconv = ConvTranspose2d::<Cpu, 4, 6, 3>::new(config, &mut blaze::Rng::seed_from_u64(0), &CpuDevice);
    deconv.weight = at("weight");
    let (y, cache) = Layer::<Cpu, 4, 4>::forward_train(&mut deconv, &at("input"), &mut Ctx::train(0));
    assert_matches("grouped output", &y.to_data(), &fx["odd.grouped.output"]);
    let (dx, grads) = Layer::<Cpu, 4, 4>::backward(&deconv, &cache, &at("r"));
    assert_matches("grouped grad.input", &dx.to_data(), &fx["odd.grouped.grad.input"]);
    assert_matches("grouped grad.weight", &grads.weight.to_data(), &fx["odd.grouped.grad.weight"]);
    assert!(grads.bias.is_none());
}

/// A transposed convolution whose output padding is at least its stride
/// (PyTorch allows it below the dilation) places the rows past the last
/// window as PyTorch does: stride 1, dilation 2, output padding 1 turns
/// 3x3 into 8x8; stride 2, dilation 3, output padding 2 turns 5x4 into
/// 15x13. Output and every gradient, in evaluation and in training.
#[test]
fn transposed_convolutions_padded_past_the_stride_match_pytorch() {
    use blaze::nn::{ConvTranspose2dConfig, Layer};
    let fx = read_fixture("resample.bin");
    for (name, config) in [
        ("wide1", ConvTranspose2dConfig { dilation: 2, output_padding: 1, ..Default::default() }),
        (
            "wide2",
            ConvTranspose2dConfig { stride: 2, padding: 1, dilation: 3, output_padding: 2, ..Default::default() },
        ),
    ] {
        let data = |t: &str| fx[&format!("odd.{name}.{t}")].clone();
        let mut deconv = ConvTranspose2d::<Cpu, 4, 6, 3>::new(config, &mut blaze::Rng::seed_from_u64(0), &CpuDevice);
        deconv.weight = Tensor::from_data(data("weight"), &CpuDevice).expect("rank 4");
        deconv.bias = Some(Tensor::from_data(data("bias"), &CpuDevice).expect("rank 1"));
        let x = Tensor::<Cpu, 4>::from_data(data("input"), &CpuDevice).expect("rank 4");
        assert_matches(&format!("{name} output"), &Layer::<Cpu, 4, 4>::forward(&deconv, &x).to_data(), &data("output"));
        let (y, cache) = Layer::<Cpu, 4, 4>::forward_train(&mut deconv, &x, &mut Ctx::train(0));
        assert_matches(&format!("{name} training output"), &y.to_data(), &data("output"));
        let r = Tensor::<Cpu, 4>::from_data(data("r"), &CpuDevice).expect("rank 4");
        let (dx, grads) = Layer::<Cpu, 4, 4>::backward(&deconv, &cache, &r);
        assert_matches(&format!("{name} grad.input"), &dx.to_data(), &data("grad.input"));
        assert_matches(&format!("{name} grad.weight"), &grads.weight.to_data(), &data("grad.weight"));
        assert_matches(&format!("{name} grad.bias"), &grads.bias.expect("a bias").to_data(), &data("grad.bias"));
    }
}

/// The shape `#[model]` works out for such a layer is the one it makes.
#[model(input = [4, 3, 3])]
pub struct Widening {
    #[layer(dilation = 2, output_padding = 1)]
    up: ConvTranspose2d<4, 6, 3>,
    flat: Flatten,
    fc: Linear<384, 2>,
}

#[test]
fn a_model_with_output_padding_past_the_stride_trains() {
    let mut model = Widening::new_seeded(1, &CpuDevice);
    let x = Tensor::<Cpu, 4>::rand_normal([2, 4, 3, 3], &CpuDevice);
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    assert_eq!(y.shape(), [2, 2]);
    let (dx, _) = model.backward(&cache, &y.ones_like());
    assert_eq!(dx.shape(), x.shape());
    assert!(dx.to_vec::<f32>().iter().all(|v| v.is_finite()));
}

/// Causal self-attention, cross-attention to a memory with a key-padding
/// mask (no biases), residuals and a norm, as PyTorch's
/// `nn.MultiheadAttention(16, 4, batch_first=True)` blocks.
#[model]
pub struct AttentionBlock {
    #[layer(causal = true)]
    self_attn: MultiHeadAttention<16, 4>,
    #[layer(bias = false)]
    cross: MultiHeadAttention<16, 4>,
    norm: LayerNorm<16>,
}

#[model(input = ([T, 16], [S, 16], [S]))]
impl AttentionBlock {
    fn forward(&self, x: Tensor, memory: Tensor, padding: Tensor) -> Tensor {
        let h = x + self.self_attn(x);
        self.norm(h + self.cross(h, memory, memory, padding))
    }
}

#[test]
fn multi_head_attention_with_masks_matches_pytorch() {
    let fx = read_fixture("attention.bin");
    let mut model = AttentionBlock::new_seeded(0, &CpuDevice);
    blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
    let t3 = |name: &str| Tensor::<Cpu, 3>::from_data(fx[name].clone(), &CpuDevice).expect("rank 3");
    let (x, memory, r) = (t3("input"), t3("memory"), t3("r"));
    let padding = Tensor::<Cpu, 2>::from_data(fx["padding"].clone(), &CpuDevice).expect("rank 2");

    assert_matches("output", &model.forward(&x, &memory, &padding).to_data(), &fx["output"]);
    let (y, cache) = model.forward_train(&x, &memory, &padding, &mut Ctx::train(0));
    assert_matches("output (training forward)", &y.to_data(), &fx["output"]);
    let ((dx, dmemory, _), grads) = model.backward(&cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    assert_matches("grad.memory", &dmemory.to_data(), &fx["grad.memory"]);
    let named = blaze::nn::grads_dict::<Cpu, AttentionBlock>(&grads);
    let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "self_attn.in_proj_weight",
            "self_attn.in_proj_bias",
            "self_attn.out_proj.weight",
            "self_attn.out_proj.bias",
            "cross.in_proj_weight",
            "cross.out_proj.weight",
            "norm.weight",
            "norm.bias"
        ]
    );
    for (name, g) in named {
        assert_matches(&format!("grad.{name}"), &g, &fx[&format!("grad.{name}")]);
    }
}

/// Loads `<family>_state_dict.safetensors`, a state_dict PyTorch saved.
fn load_state_dict<M: blaze::nn::Module<Cpu>>(model: &mut M, family: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/{family}_state_dict.safetensors"));
    blaze::record::load_model(model, &path).unwrap_or_else(|e| panic!("{family}: {e}"));
}

#[test]
fn every_family_loads_a_state_dict_pytorch_saved() {
    let t = |fx: &std::collections::HashMap<String, TensorData>, name: &str| fx[name].clone();
    let fx = read_fixture("conv1d.bin");
    let mut conv = Conv1dNet::new_seeded(9, &CpuDevice);
    load_state_dict(&mut conv, "conv1d");
    let x = Tensor::<Cpu, 3>::from_data(t(&fx, "input"), &CpuDevice).expect("rank 3");
    assert_matches("conv1d output", &conv.forward(&x).to_data(), &fx["output"]);

    let fx = read_fixture("norm.bin");
    let mut norm = NormAct::new_seeded(9, &CpuDevice);
    load_state_dict(&mut norm, "norm");
    let x = Tensor::<Cpu, 4>::from_data(t(&fx, "input"), &CpuDevice).expect("rank 4");
    assert_matches("norm output", &norm.forward(&x).to_data(), &fx["output"]);

    let fx = read_fixture("batchnorm1d.bin");
    let mut bn = BatchNorm1d::<Cpu, 4>::new(blaze::nn::NormConfig::default(), &CpuDevice);
    load_state_dict(&mut bn, "batchnorm1d");
    assert_matches("running_mean", &bn.running_mean.to_data(), &fx["after.running_mean"]);
    assert_matches("running_var", &bn.running_var.to_data(), &fx["after.running_var"]);
    assert_matches("weight", &bn.weight.to_data(), &fx["weight"]);

    let fx = read_fixture("rmsnorm.bin");
    let mut rms = Rms::new_seeded(9, &CpuDevice);
    load_state_dict(&mut rms, "rmsnorm");
    let x = Tensor::<Cpu, 3>::from_data(t(&fx, "input"), &CpuDevice).expect("rank 3");
    assert_matches("rmsnorm output", &rms.forward(&x).to_data(), &fx["output"]);

    let fx = read_fixture("activations.bin");
    let mut act = Activations::new_seeded(9, &CpuDevice);
    load_state_dict(&mut act, "activations");
    let x = Tensor::<Cpu, 2>::from_data(t(&fx, "input"), &CpuDevice).expect("rank 2");
    assert_matches("activations output", &act.forward(&x).to_data(), &fx["output"]);

    let fx = read_fixture("resample.bin");
    let mut decoder = Decoder::new_seeded(9, &CpuDevice);
    load_state_dict(&mut decoder, "decoder");
    let x = Tensor::<Cpu, 4>::from_data(t(&fx, "input"), &CpuDevice).expect("rank 4");
    assert_matches("decoder output", &decoder.forward(&x).to_data(), &fx["output"]);

    let fx = read_fixture("attention.bin");
    let mut block = AttentionBlock::new_seeded(9, &CpuDevice);
    load_state_dict(&mut block, "attention");
    let t3 = |name: &str| Tensor::<Cpu, 3>::from_data(t(&fx, name), &CpuDevice).expect("rank 3");
    let padding = Tensor::<Cpu, 2>::from_data(t(&fx, "padding"), &CpuDevice).expect("rank 2");
    let y = block.forward(&t3("input"), &t3("memory"), &padding);
    assert_matches("attention output", &y.to_data(), &fx["output"]);
}

/// A two-layer bidirectional LSTM, a two-layer GRU over its outputs and a
/// linear head, over sequences of any length.
#[model]
pub struct Recurrent {
    #[layer(num_layers = 2, bidirectional = true)]
    lstm: Lstm<5, 6>,
    #[layer(num_layers = 2)]
    gru: Gru<12, 4>,
    head: Linear<4, 3>,
}

#[model(input = [T, 5])]
impl Recurrent {
    fn forward(&self, x: Tensor) -> Tensor {
        self.head(self.gru(self.lstm(x)))
    }
}

#[test]
fn stacked_lstm_and_gru_match_pytorch() {
    let (named, fx, x) = matches_fixture!(Recurrent, 3, "recurrent.bin");
    assert_eq!(named.len(), 16 + 8 + 2);
    assert_eq!(named[4].0, "lstm.weight_ih_l0_reverse");
    // The state_dict PyTorch saved loads by name.
    let mut loaded = Recurrent::new_seeded(1, &CpuDevice);
    load_state_dict(&mut loaded, "recurrent");
    assert_matches("output (state_dict)", &loaded.forward(&x).to_data(), &fx["output"]);
}

#[test]
fn an_lstm_without_biases_matches_pytorch() {
    use blaze::nn::{Layer, RnnConfig};
    let fx = read_fixture("recurrent.bin");
    let config = RnnConfig { num_layers: 1, bidirectional: false, bias: false, dropout: 0.0 };
    let mut lstm = Lstm::<Cpu, 5, 4>::new(config, &mut blaze::Rng::seed_from_u64(0), &CpuDevice);
    let prefixed = fx.iter().filter_map(|(k, v)| k.strip_prefix("plain.").map(|k| (k.replace("lstm.", ""), v.clone())));
    let fx: std::collections::HashMap<String, TensorData> = prefixed.collect();
    blaze::nn::Module::map_tensors(&mut lstm, "", &mut Load(&fx));
    let x = Tensor::<Cpu, 3>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 3");
    let (y, cache) = Layer::<Cpu, 3, 3>::forward_train(&mut lstm, &x, &mut Ctx::train(0));
    assert_matches("output", &y.to_data(), &fx["output"]);
    let r = Tensor::<Cpu, 3>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 3");
    let (dx, grads) = Layer::<Cpu, 3, 3>::backward(&lstm, &cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    assert_matches("grad.weight_ih_l0", &grads.weights[0].weight_ih.to_data(), &fx["grad.weight_ih_l0"]);
    assert_matches("grad.weight_hh_l0", &grads.weights[0].weight_hh.to_data(), &fx["grad.weight_hh_l0"]);
}
