//! The tape and the generated backward agree: for an MLP, LeNet, a
//! residual block and a transformer block (forward bodies), and models
//! holding every built-in layer (in evaluation and training mode), the
//! gradients `Autodiff<Cpu>` records equal those `#[model]` generates, to
//! 1e-6 relative, in f64.

use crate::common;
use crate::transformer;

use blaze::autodiff::{Autodiff, Gradients};
use blaze::nn::{self, Block, Ctx, Differentiable, Graph, ParamMapper, ParamVisitor};
use blaze::prelude::*;
use blaze::{Rng, TensorData};
use common::LeNet;
use transformer::TransformerBlock;

type Ad = Autodiff<Cpu>;

#[model(input = [12])]
pub struct Mlp {
    fc1: Linear<12, 16>,
    act1: Gelu,
    fc2: Linear<16, 8>,
    act2: Tanh,
    norm: LayerNorm<8>,
    fc3: Linear<8, 4>,
}

#[model]
pub struct ResBlock {
    norm: LayerNorm<12>,
    fc1: Linear<12, 24>,
    act: Silu,
    fc2: Linear<24, 12>,
}

#[model(input = [T, 12])]
impl ResBlock {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = gelu(self.fc1(self.norm(x)));
        x + self.fc2(self.act(h))
    }
}

struct RequireGrad;
impl ParamMapper<Ad> for RequireGrad {
    fn map<const D: usize>(&mut self, _: &str, t: Tensor<Ad, D>) -> Tensor<Ad, D> {
        t.require_grad()
    }
}

struct Collect<'a>(&'a Gradients<Cpu>, Vec<(String, TensorData)>);
impl ParamVisitor<Ad> for Collect<'_> {
    fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<Ad, D>) {
        let g = self.0.get(t).unwrap_or_else(|| panic!("no tape gradient for {name}"));
        self.1.push((name.to_owned(), g.to_data()));
    }
}

fn compare(generated: Vec<(String, TensorData)>, tape: Vec<(String, TensorData)>) {
    assert_eq!(
        generated.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        tape.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same parameters"
    );
    for ((name, a), (_, b)) in generated.iter().zip(&tape) {
        let (a, b) = (a.values.to_f64_vec(), b.values.to_f64_vec());
        // A gradient that is zero in exact arithmetic (a bias before a
        // batch norm in training) is rounding noise on both sides.
        let scale = a.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-10);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!((x - y).abs() <= 1e-6 * scale, "{name}[{i}]: generated {x}, tape {y}");
        }
    }
}

/// Runs both differentiations of `sum(model(x) * r)` and compares them:
/// the generated passes of `M` and the tape through `MA`'s forward.
fn check_with<M, MA, C, const DI: usize, const DO: usize>(
    seed: u64,
    x: Tensor<Cpu, DI>,
    run: impl Fn(&mut M, &Tensor<Cpu, DI>) -> (Tensor<Cpu, DO>, C),
    back: impl Fn(&M, &C, &Tensor<Cpu, DO>) -> M::Grads,
    forward: impl Fn(&MA, &Tensor<Ad, DI>) -> Tensor<Ad, DO>,
) where
    M: Graph<Cpu>,
    MA: Graph<Ad>,
{
    // The same seed gives the same weights on both backends.
    let mut generated = M::init(&mut Rng::seed_from_u64(seed), &CpuDevice);
    let mut taped = MA::init(&mut Rng::seed_from_u64(seed), &CpuDevice);
    nn::to_dtype(&mut generated, DType::F64);
    nn::to_dtype(&mut taped, DType::F64);
    taped.map_tensors("", &mut RequireGrad);
    let x = if x.dtype().is_float() { x.to_dtype(DType::F64) } else { x };

    let (y, cache) = run(&mut generated, &x);
    let r = Tensor::<Cpu, DO>::normal_with(y.shape(), 0.0, 1.0, &mut Rng::seed_from_u64(1), &CpuDevice)
        .to_dtype(DType::F64);
    let grads = back(&generated, &cache, &r);

    let y_tape = forward(&taped, &Tensor::from_inner(x.clone()));
    // The same values, up to rounding (the tape composes some fused ops).
    for (a, b) in y_tape.inner().to_vec::<f64>().iter().zip(y.to_vec::<f64>()) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "forward: tape {a}, generated {b}");
    }
    let tape = y_tape.mul(&Tensor::from_inner(r)).sum().backward();
    let mut collect = Collect(&tape, Vec::new());
    taped.visit_params("", &mut collect);
    compare(nn::grads_dict::<Cpu, M>(&grads), collect.1);
}

/// [`check_with`] for sequential models in evaluation mode.
fn check<M, MA, const DI: usize>(seed: u64, x: Tensor<Cpu, DI>)
where
    M: Block<Cpu, Input = Tensor<Cpu, DI>, Output = Tensor<Cpu, 2>> + Graph<Cpu>,
    MA: Block<Ad, Input = Tensor<Ad, DI>, Output = Tensor<Ad, 2>> + Graph<Ad>,
{
    check_mode::<M, MA, DI>(seed, x, None);
}

/// [`check_with`] for sequential models; with a seed, in training mode
/// (dropout masks and batch statistics drawn the same way on both sides).
fn check_mode<M, MA, const DI: usize>(seed: u64, x: Tensor<Cpu, DI>, train: Option<u64>)
where
    M: Block<Cpu, Input = Tensor<Cpu, DI>, Output = Tensor<Cpu, 2>> + Graph<Cpu>,
    MA: Block<Ad, Input = Tensor<Ad, DI>, Output = Tensor<Ad, 2>> + Graph<Ad>,
{
    let ctx = || train.map_or_else(Ctx::eval, Ctx::train);
    check_with::<M, MA, _, DI, 2>(
        seed,
        x,
        |m, x| Differentiable::forward_train(m, x, &mut ctx()),
        |m, c, g| Differentiable::backward(m, c, g).1,
        |m, x| Differentiable::forward_train(&mut m.clone(), x, &mut ctx()).0,
    );
}

#[test]
fn mlp_tape_gradients_equal_generated_gradients() {
    let x = Tensor::<Cpu, 2>::rand_normal([5, 12], &CpuDevice);
    check::<Mlp<Cpu>, Mlp<Ad>, 2>(3, x);
}

#[test]
fn lenet_tape_gradients_equal_generated_gradients() {
    let x = Tensor::<Cpu, 4>::rand_normal([2, 1, 28, 28], &CpuDevice);
    check::<LeNet<Cpu>, LeNet<Ad>, 4>(4, x);
}

#[test]
fn resblock_tape_gradients_equal_generated_gradients() {
    let x = Tensor::<Cpu, 3>::rand_normal([3, 5, 12], &CpuDevice);
    check_with::<ResBlock<Cpu>, ResBlock<Ad>, _, 3, 3>(
        5,
        x,
        |m, x| m.forward_train(x, &mut Ctx::eval()),
        |m, c, g| m.backward(c, g).1,
        |m, x| m.forward(x),
    );
}

/// The op table's ops of two tensors in a forward body: as methods and
/// functions, broadcast, and with numbers (`powf`, `clamp`), with the
/// arithmetic ones written as methods too.
#[model]
pub struct TwoOperand {
    fc: Linear<6, 6>,
    gate: Linear<6, 1>,
}

#[model(input = [6])]
impl TwoOperand {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        let g = self.gate(x);
        let peaks = h.maximum(g) + minimum(h, x.clamp(-0.5, 0.5));
        let powers = x.abs().add_scalar(0.5).pow(g.tanh()) + h.powf(2.0).mul(g);
        let kinks = h.clamp_min(-0.25).clamp_max(0.75).sub(pow(x.abs().add(h.abs()).add_scalar(0.1), x));
        peaks.div_scalar(2.0) + powers + kinks
    }
}

#[test]
fn table_ops_of_two_tensors_in_a_forward_body_match_the_tape() {
    let x = Tensor::<Cpu, 2>::rand_normal([5, 6], &CpuDevice);
    check_with::<TwoOperand<Cpu>, TwoOperand<Ad>, _, 2, 2>(
        21,
        x,
        |m, x| m.forward_train(x, &mut Ctx::eval()),
        |m, c, g| m.backward(c, g).1,
        |m, x| m.forward(x),
    );
}

/// Attention as layers: causal self-attention with dropout through one
/// input, and cross-attention to a projection of the input.
#[model]
pub struct Attending {
    #[layer(causal = true, dropout = 0.2)]
    attn: MultiHeadAttention<8, 2>,
    proj: Linear<8, 8>,
    #[layer(bias = false)]
    cross: MultiHeadAttention<8, 4>,
}

#[model(input = [T, 8])]
impl Attending {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.attn(x);
        let m = self.proj(x);
        self.cross(h, m, m)
    }
}

#[test]
fn attention_tape_gradients_equal_generated_gradients() {
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 8], &CpuDevice);
    check_with::<Attending<Cpu>, Attending<Ad>, _, 3, 3>(
        13,
        x,
        |m, x| m.forward_train(x, &mut Ctx::train(3)),
        |m, c, g| m.backward(c, g).1,
        |m, x| m.clone().forward_train(x, &mut Ctx::train(3)).0,
    );
}

/// Causal self-attention over a left-padded sequence, the regression of a
/// query that may see no key: position 0 sees only itself, and it is
/// padding.
#[model]
pub struct PaddedAttention {
    #[layer(causal = true)]
    attn: MultiHeadAttention<4, 2>,
}

#[model(input = ([T, 4], [T]))]
impl PaddedAttention {
    fn forward(&self, x: Tensor, pad: Tensor) -> Tensor {
        self.attn(x, x, x, pad)
    }
}

/// A query whose every key is masked gets zero attention, as PyTorch
/// gives: its output row is the out-projection's bias, its input gets no
/// gradient, and the other rows (and every gradient) are those of the
/// sequence without the padding; the generated backward and the tape agree.
#[test]
fn fully_masked_attention_rows_give_the_bias_and_finite_gradients() {
    let f64s = |t: &Tensor<Cpu, 3>| t.to_vec::<f64>();
    let close = |what: &str, a: &[f64], b: &[f64]| {
        assert_eq!(a.len(), b.len(), "{what}: sizes");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(x.is_finite() && (x - y).abs() <= 1e-12 * y.abs().max(1.0), "{what}[{i}]: {x} vs {y}");
        }
    };
    let mut model = PaddedAttention::<Cpu>::init(&mut Rng::seed_from_u64(8), &CpuDevice);
    nn::to_dtype(&mut model, DType::F64);
    let x = Tensor::<Cpu, 3>::rand_normal([1, 3, 4], &CpuDevice).to_dtype(DType::F64);
    let pad = Tensor::<Cpu, 2>::from_vec(vec![1.0f32, 0.0, 0.0], [1, 3], &CpuDevice);
    let r =
        Tensor::<Cpu, 3>::normal_with([1, 3, 4], 0.0, 1.0, &mut Rng::seed_from_u64(1), &CpuDevice).to_dtype(DType::F64);

    let (y, cache) = model.forward_train(&x, &pad, &mut Ctx::eval());
    assert_eq!(f64s(&model.forward(&x, &pad)), f64s(&y), "inference and training forwards");
    let bias = model.attn.out_proj.bias.as_ref().expect("a bias").to_vec::<f64>();
    close("output of the masked query", &f64s(&y.narrow(1, 0, 1)), &bias);
    let ((dx, _), grads) = model.backward(&cache, &r);
    assert!(f64s(&dx.narrow(1, 0, 1)).iter().all(|&v| v == 0.0), "gradient of the padding: {dx:?}");

    // The same sequence without its padding.
    let short = x.narrow(1, 1, 2);
    let (y_short, cache_short) = model.forward_train(&short, &pad.narrow(1, 1, 2), &mut Ctx::eval());
    close("the other rows", &f64s(&y.narrow(1, 1, 2)), &f64s(&y_short));
    let ((dx_short, _), grads_short) = model.backward(&cache_short, &r.narrow(1, 1, 2));
    close("their input gradient", &f64s(&dx.narrow(1, 1, 2)), &f64s(&dx_short));
    let named = nn::grads_dict::<Cpu, PaddedAttention<Cpu>>(&grads);
    for ((name, g), (_, g_short)) in named.iter().zip(nn::grads_dict::<Cpu, PaddedAttention<Cpu>>(&grads_short)) {
        let mut want = g_short.values.to_f64_vec();
        if name == "attn.out_proj.bias" {
            // The masked row still adds its bias.
            want.iter_mut().zip(r.narrow(1, 0, 1).to_vec::<f64>()).for_each(|(w, r0)| *w += r0);
        }
        close(name, &g.values.to_f64_vec(), &want);
    }

    // The tape through the same forward.
    let mut taped = PaddedAttention::<Ad>::init(&mut Rng::seed_from_u64(8), &CpuDevice);
    nn::to_dtype(&mut taped, DType::F64);
    taped.map_tensors("", &mut RequireGrad);
    let y_tape = taped.forward(&Tensor::from_inner(x.clone()), &Tensor::from_inner(pad.clone()));
    close("tape forward", &y_tape.inner().to_vec::<f64>(), &f64s(&y));
    let tape = y_tape.mul(&Tensor::from_inner(r)).sum().backward();
    let mut collect = Collect(&tape, Vec::new());
    taped.visit_params("", &mut collect);
    compare(named, collect.1);
}

#[test]
fn transformer_block_tape_gradients_equal_generated_gradients() {
    let x = Tensor::<Cpu, 3>::rand_normal([2, 6, 16], &CpuDevice);
    check_with::<TransformerBlock<Cpu>, TransformerBlock<Ad>, _, 3, 3>(
        6,
        x,
        |m, x| m.forward_train(x, &mut Ctx::eval()),
        |m, c, g| m.backward(c, g).1,
        |m, x| m.forward(x),
    );
}

blaze::kernel! {
    /// Swish with a fixed slope, as a `Map` layer.
    pub fn swish(x: f32) -> f32 {
        x / (1.0 + exp(-1.5 * x))
    }
}

/// Every built-in image layer, with non-default options.
#[model(input = [2, 9, 9])]
pub struct Images {
    #[layer(padding = 1)]
    conv1: Conv2d<2, 4, 3>,
    norm: BatchNorm2d<4>,
    groups: GroupNorm<2, 4>,
    #[layer(negative_slope = 0.2)]
    act1: LeakyRelu,
    #[layer(stride = 1)]
    pool1: MaxPool2d<2>,
    #[layer(groups = 2, dilation = 2, padding = 2)]
    conv2: Conv2d<4, 4, 3>,
    act2: Sigmoid,
    #[layer(stride = 2, padding = 1)]
    pool2: AvgPool2d<3>,
    gap: GlobalAvgPool,
    #[layer(bias = false)]
    fc1: Linear<4, 6>,
    act3: Relu,
    #[layer(p = 0.3)]
    drop: Dropout,
    act4: Map<swish::Kernel>,
    fc2: Linear<6, 3>,
}

/// A decoder path: a transposed convolution, upsampling both ways and
/// adaptive pooling.
#[model(input = [2, 5, 5])]
pub struct Decoder {
    #[layer(padding = 1)]
    conv: Conv2d<2, 3, 3>,
    #[layer(stride = 2, padding = 1, output_padding = 1)]
    deconv: ConvTranspose2d<3, 3, 3>,
    #[layer(mode = "bilinear", scale_factor = 1.6)]
    up1: Upsample,
    act: Tanh,
    up2: Upsample,
    pool: AdaptiveAvgPool2d<3, 4>,
    flat: Flatten,
    fc: Linear<36, 2>,
}

/// Sequences through 1-D convolutions.
#[model(input = [3, 12])]
pub struct Sequences {
    // No bias before a batch norm, whose mean takes it out again.
    #[layer(padding = 1, bias = false)]
    conv1: Conv1d<3, 4, 3>,
    norm: BatchNorm1d<4>,
    act: Silu,
    #[layer(stride = 2, dilation = 2, groups = 2)]
    conv2: Conv1d<4, 6, 3>,
    flat: Flatten,
    fc: Linear<24, 2>,
}

/// The activation layers with options, the identity, and RMS norms with
/// and without a weight.
#[model(input = [6])]
pub struct Activations {
    fc1: Linear<6, 8>,
    #[layer(beta = 2.0, threshold = 0.5)]
    soft: Softplus,
    same: Identity,
    fc2: Linear<8, 8>,
    rms: RMSNorm<8>,
    #[layer(alpha = 0.7)]
    elu: Elu,
    #[layer(elementwise_affine = false, eps = 0.001)]
    plain: RMSNorm<8>,
    fc3: Linear<8, 4>,
    #[layer(dim = 1)]
    probs: Softmax,
}

/// Recurrent layers: an LSTM both ways, a two-layer GRU with dropout
/// between its layers.
#[model(input = [6, 4])]
pub struct Recurrence {
    #[layer(bidirectional = true)]
    lstm: Lstm<4, 3>,
    #[layer(num_layers = 2, bias = false, dropout = 0.3)]
    gru: Gru<6, 5>,
    flat: Flatten,
    fc: Linear<30, 2>,
}

/// Token ids through an embedding, a normalisation and a flatten, to
/// log-probabilities.
#[model(input = [5])]
pub struct Tokens {
    emb: Embedding<20, 8>,
    norm: LayerNorm<8>,
    act: Gelu,
    bn: BatchNorm1d<5>,
    silu: Silu,
    flat: Flatten,
    fc: Linear<40, 3>,
    logp: LogSoftmax,
}

#[test]
fn every_built_in_layer_has_tape_gradients_equal_to_generated_ones() {
    let x = Tensor::<Cpu, 4>::rand_normal([3, 2, 9, 9], &CpuDevice);
    check::<Images<Cpu>, Images<Ad>, 4>(7, x.clone());
    check_mode::<Images<Cpu>, Images<Ad>, 4>(7, x, Some(9));
    let ids = Tensor::<Cpu, 2>::from_vec((0..15).map(|i| (i * 7) % 20).collect::<Vec<i64>>(), [3, 5], &CpuDevice);
    let seqs = Tensor::<Cpu, 3>::rand_normal([4, 3, 12], &CpuDevice);
    check::<Sequences<Cpu>, Sequences<Ad>, 3>(10, seqs.clone());
    check_mode::<Sequences<Cpu>, Sequences<Ad>, 3>(10, seqs, Some(9));
    let images = Tensor::<Cpu, 4>::rand_normal([2, 2, 5, 5], &CpuDevice);
    check::<Decoder<Cpu>, Decoder<Ad>, 4>(12, images.clone());
    check_mode::<Decoder<Cpu>, Decoder<Ad>, 4>(12, images, Some(9));
    let seqs = Tensor::<Cpu, 3>::rand_normal([3, 6, 4], &CpuDevice);
    check::<Recurrence<Cpu>, Recurrence<Ad>, 3>(14, seqs.clone());
    check_mode::<Recurrence<Cpu>, Recurrence<Ad>, 3>(14, seqs, Some(9));
    let v = Tensor::<Cpu, 2>::rand_normal([5, 6], &CpuDevice);
    check::<Activations<Cpu>, Activations<Ad>, 2>(11, v.clone());
    check_mode::<Activations<Cpu>, Activations<Ad>, 2>(11, v, Some(9));
    check::<Tokens<Cpu>, Tokens<Ad>, 2>(8, ids.clone());
    check_mode::<Tokens<Cpu>, Tokens<Ad>, 2>(8, ids, Some(9));
}
