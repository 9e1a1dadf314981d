//! `#[model]` end to end: the LeNet, nested models, names, summary,
//! gradients against finite differences, and training with the generated
//! backward.

use crate::common;

use blaze::nn::gradcheck::check_block;
use blaze::nn::{self, Ctx};
use blaze::prelude::*;
use blaze::{Rng, TensorData};
use common::LeNet;

#[model(input = [8])]
pub struct Mlp {
    fc1: Linear<8, 16>,
    act: Tanh,
    fc2: Linear<16, 3>,
}

/// A small image model with every image layer kind, kept tiny for f64
/// finite differences.
#[model(input = [2, 6, 6])]
pub struct TinyCnn {
    #[layer(padding = 1)]
    conv: Conv2d<2, 4, 3>,
    bn: BatchNorm2d<4>,
    act: LeakyRelu,
    #[layer(stride = 1)]
    pool: AvgPool2d<2>,
    #[layer(groups = 2, bias = false)]
    conv2: Conv2d<4, 4, 3>,
    gelu: Gelu,
    max: MaxPool2d<2>,
    gap: GlobalAvgPool,
    norm: LayerNorm<4>,
    out: Linear<4, 3>,
    sig: Sigmoid,
}

/// A model whose second field is another model.
#[model(input = [8])]
pub struct Nested {
    body: Mlp,
    act: Relu,
    head: Linear<3, 2>,
}

/// The ui cases' hand-written layer, twice its input: `nn::Block` and its
/// supertraits are what a `#[model]` needs of a field it cannot see.
#[path = "../../ui-tests/common/double.rs"]
mod double;
use double::Double;

/// A hand-written layer between two built-in ones.
#[model(input = [8])]
pub struct Doubled {
    fc1: Linear<8, 8>,
    double: Double,
    fc2: Linear<8, 3>,
}

/// Stateless layers before the first layer with parameters.
#[model(input = [2, 3, 2])]
pub struct FlatHead {
    flat: Flatten,
    act: Relu,
    fc: Linear<12, 5>,
    act2: Tanh,
    out: Linear<5, 2>,
}

/// No parameters at all: the backend parameter is still used.
#[model(input = [4])]
pub struct Stateless {
    a: Relu,
    b: Tanh,
}

fn images(n: usize, seed: u64) -> Tensor<Cpu, 4> {
    Tensor::normal_with([n, 1, 28, 28], 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice)
}

#[test]
fn lenet_shapes_consts_and_names() {
    let model = LeNet::new_seeded(0, &CpuDevice);
    assert_eq!(LeNet::<Cpu>::INPUT_SHAPE, &[1, 28, 28]);
    assert_eq!(LeNet::<Cpu>::OUTPUT_SHAPE, &[10]);
    // conv1 156, conv2 2416, fc1 48120, fc2 1210.
    assert_eq!(LeNet::<Cpu>::NUM_PARAMS, 156 + 2416 + 48120 + 1210);
    assert_eq!(nn::num_params::<Cpu, _>(&model), LeNet::<Cpu>::NUM_PARAMS);
    let y = model.forward(&images(3, 1));
    assert_eq!(y.shape(), [3, 10]);
    let names: Vec<String> = nn::state_dict::<Cpu, _>(&model).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "conv1.weight",
            "conv1.bias",
            "conv2.weight",
            "conv2.bias",
            "fc1.weight",
            "fc1.bias",
            "fc2.weight",
            "fc2.bias"
        ]
    );
    let summary = model.summary();
    assert!(summary.contains("conv1") && summary.contains("Conv2d<1, 6, 5>") && summary.contains("[batch, 6, 28, 28]"));
    assert!(summary.contains("Total params: 51,902"), "{summary}");
}

#[test]
fn seeded_init_is_reproducible_and_pytorch_scaled() {
    let a = nn::state_dict::<Cpu, _>(&LeNet::new_seeded(5, &CpuDevice));
    let b = nn::state_dict::<Cpu, _>(&LeNet::new_seeded(5, &CpuDevice));
    let c = nn::state_dict::<Cpu, _>(&LeNet::new_seeded(6, &CpuDevice));
    assert_eq!(a, b);
    assert_ne!(a, c);
    // fc1 weights are uniform in ±1/sqrt(400) = ±0.05 and fill that range.
    let fc1: &TensorData = &a[4].1;
    let v = fc1.to_vec::<f32>().expect("f32");
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    assert!(max <= 0.05 && max > 0.049, "max |w| = {max}");
}

#[test]
#[should_panic(expected = "LeNet::forward: expects input [batch, 1, 28, 28], got [2, 1, 32, 32]")]
fn forward_checks_the_input_shape() {
    let model = LeNet::new_seeded(0, &CpuDevice);
    let _ = model.forward(&Tensor::zeros([2, 1, 32, 32], &CpuDevice));
}

#[test]
#[should_panic(expected = "Linear<4, 2>: expects input [.., 4], got [3, 5]")]
fn a_linear_layer_names_its_sizes_and_the_input_it_got() {
    let fc = Linear::<Cpu, 4, 2>::new(Default::default(), &mut Rng::seed_from_u64(0), &CpuDevice);
    let _ = fc.forward(&Tensor::<Cpu, 2>::zeros([3, 5], &CpuDevice));
}

#[test]
fn mlp_gradients_match_finite_differences() {
    let model = Mlp::new_seeded(1, &CpuDevice);
    let x = Tensor::<Cpu, 2>::normal_with([4, 8], 0.0, 1.0, &mut Rng::seed_from_u64(2), &CpuDevice);
    check_block::<Cpu, _, 2, 2>(&model, &x, true);
}

#[test]
fn cnn_gradients_match_finite_differences_in_train_and_eval() {
    let model = TinyCnn::new_seeded(3, &CpuDevice);
    let x = Tensor::<Cpu, 4>::normal_with([2, 2, 6, 6], 0.0, 1.0, &mut Rng::seed_from_u64(4), &CpuDevice);
    check_block::<Cpu, _, 4, 2>(&model, &x, true);
    check_block::<Cpu, _, 4, 2>(&model, &x, false);
}

#[test]
fn lenet_gradients_match_finite_differences() {
    let model = LeNet::new_seeded(7, &CpuDevice);
    check_block::<Cpu, _, 4, 2>(&model, &images(2, 8), true);
}

#[test]
fn nested_models_check_name_and_differentiate() {
    let model = Nested::new_seeded(1, &CpuDevice);
    assert_eq!(Nested::<Cpu>::OUTPUT_SHAPE, &[2]);
    assert_eq!(Nested::<Cpu>::NUM_PARAMS, Mlp::<Cpu>::NUM_PARAMS + 3 * 2 + 2);
    let names: Vec<String> = nn::state_dict::<Cpu, _>(&model).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["body.fc1.weight", "body.fc1.bias", "body.fc2.weight", "body.fc2.bias", "head.weight", "head.bias"]
    );
    let x = Tensor::<Cpu, 2>::normal_with([3, 8], 0.0, 1.0, &mut Rng::seed_from_u64(2), &CpuDevice);
    check_block::<Cpu, _, 2, 2>(&model, &x, true);
}

#[test]
fn dropout_and_batchnorm_follow_the_mode() {
    let mut model = TinyCnn::new_seeded(3, &CpuDevice);
    let x = Tensor::<Cpu, 4>::normal_with([4, 2, 6, 6], 0.0, 1.0, &mut Rng::seed_from_u64(4), &CpuDevice);
    let before = model.bn.running_mean.to_vec::<f32>();
    let (train_out, _) = model.forward_train(&x, &mut Ctx::train(0));
    assert_ne!(model.bn.running_mean.to_vec::<f32>(), before, "training updates running statistics");
    let (eval_out, _) = model.forward_train(&x, &mut Ctx::eval());
    assert_eq!(eval_out.to_vec::<f32>(), model.forward(&x).to_vec::<f32>(), "eval mode is the inference path");
    assert_ne!(train_out.to_vec::<f32>(), eval_out.to_vec::<f32>());
}

/// The acceptance test: a hand-written SGD loop over the generated
/// backward learns.
#[test]
fn lenet_trains_with_a_hand_written_sgd_loop() {
    let mut model = LeNet::new_seeded(0, &CpuDevice);
    let x = images(16, 3);
    let labels = Tensor::<Cpu, 1>::from_vec((0..16).map(|i| i % 10).collect::<Vec<i64>>(), [16], &CpuDevice);
    let target: Tensor<Cpu, 2> = labels.reshape([-1, 1]);
    let classes = Tensor::<Cpu, 1>::arange(0..10, &CpuDevice).reshape([1, 10]);
    let onehot = target.eq(&classes.expand([16, 10])).to_dtype(DType::F32);
    let mut ctx = Ctx::train(1);
    let mut losses = Vec::new();
    for _ in 0..30 {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let logp = logits.log_softmax(1);
        losses.push(-logp.gather(1, &target).mean().item());
        // d(mean cross-entropy)/d logits = (softmax - onehot) / n.
        let grad = (logp.exp() - &onehot) / 16.0;
        let (_, grads) = model.backward(&cache, &grad);
        nn::sgd_step(&mut model, &grads, 0.1);
    }
    assert!(losses[29] < 0.5 * losses[0], "loss {} -> {}", losses[0], losses[29]);
}

#[test]
fn summary_lists_every_layer() {
    let s = LeNet::new_seeded(0, &CpuDevice).summary();
    println!("{s}");
    let rows: Vec<&str> = s.lines().collect();
    assert!(rows[0].starts_with("LeNet (input [batch, 1, 28, 28])"));
    for name in ["conv1", "act1", "pool1", "conv2", "act2", "pool2", "flat", "fc1", "act3", "drop", "fc2"] {
        assert!(rows.iter().any(|r| r.starts_with(name)), "no row for {name}\n{s}");
    }
    assert!(s.contains("[batch, 16, 5, 5]") && s.contains("[batch, 400]") && s.contains("48,120"), "{s}");
}

/// `backward_params` skips the input gradient and gives the very parameter
/// gradients `backward` gives, whatever comes first in the model.
#[test]
fn backward_params_equals_the_full_backward() {
    fn check<M, const DI: usize>(mut model: M, x: Tensor<Cpu, DI>)
    where
        M: nn::Block<Cpu, Input = Tensor<Cpu, DI>, Output = Tensor<Cpu, 2>>,
    {
        let (y, cache) = model.forward_train(&x, &mut Ctx::train(5));
        let g = Tensor::normal_with(y.shape(), 0.0, 1.0, &mut Rng::seed_from_u64(6), &CpuDevice);
        let full = nn::grads_dict::<Cpu, M>(&model.backward(&cache, &g).1);
        let params = nn::grads_dict::<Cpu, M>(&model.backward_params(&cache, &g));
        assert_eq!(full, params);
        // Handed over layer by layer: the same gradients, fields last first.
        struct Seen(Vec<(String, Vec<f32>)>);
        impl nn::ParamVisitor<Cpu> for Seen {
            fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<Cpu, D>) {
                self.0.push((name.to_owned(), t.to_vec::<f32>()));
            }
        }
        let mut handed = Seen(Vec::new());
        let each = model.backward_params_each(&cache, &g, &mut handed);
        assert_eq!(nn::grads_dict::<Cpu, M>(&each), params);
        let mut in_order = Seen(Vec::new());
        M::visit_grad_tensors(&each, "", &mut in_order);
        let field = |name: &str| name.split('.').next().unwrap_or_default().to_owned();
        let mut fields: Vec<String> = in_order.0.iter().map(|(n, _)| field(n)).collect();
        fields.dedup();
        let want: Vec<(String, Vec<f32>)> = fields
            .iter()
            .rev()
            .flat_map(|f| in_order.0.iter().filter(|(n, _)| field(n) == *f).cloned().collect::<Vec<_>>())
            .collect();
        assert!(!want.is_empty());
        assert_eq!(handed.0, want);
    }
    let rng = |seed| Rng::seed_from_u64(seed);
    check(LeNet::new_seeded(0, &CpuDevice), images(2, 1));
    check(TinyCnn::new_seeded(0, &CpuDevice), Tensor::normal_with([3, 2, 6, 6], 0.0, 1.0, &mut rng(2), &CpuDevice));
    check(Nested::new_seeded(0, &CpuDevice), Tensor::normal_with([3, 8], 0.0, 1.0, &mut rng(3), &CpuDevice));
    check(FlatHead::new_seeded(0, &CpuDevice), Tensor::normal_with([3, 2, 3, 2], 0.0, 1.0, &mut rng(4), &CpuDevice));
}

/// A hand-written `Block` as a field: its shape checked by const
/// assertions, its passes called through `Differentiable`.
#[test]
fn hand_written_blocks_are_fields_too() {
    let model = Doubled::new_seeded(4, &CpuDevice);
    assert_eq!(Doubled::<Cpu>::OUTPUT_SHAPE, &[3]);
    assert_eq!(Doubled::<Cpu>::NUM_PARAMS, 8 * 8 + 8 + 8 * 3 + 3);
    let x = Tensor::<Cpu, 2>::normal_with([3, 8], 0.0, 1.0, &mut Rng::seed_from_u64(5), &CpuDevice);
    let by_hand = model.fc2.forward(&model.fc1.forward(&x).mul_scalar(2.0));
    assert_eq!(model.forward(&x).to_vec::<f32>(), by_hand.to_vec::<f32>());
    check_block::<Cpu, _, 2, 2>(&model, &x, true);
}

/// A model of stateless layers compiles, runs and has no parameters.
#[test]
fn a_model_without_parameters_works() {
    let mut model = Stateless::new_seeded(0, &CpuDevice);
    assert_eq!(Stateless::<Cpu>::NUM_PARAMS, 0);
    let x = Tensor::<Cpu, 2>::from_vec(vec![-1.0f32, 0.5, 2.0, -3.0], [1, 4], &CpuDevice);
    // The CPU's tanh is within 4e-7 of libm's (`blaze::runtime::math`).
    let want = [0.0f32, 0.5, 2.0, 0.0].map(f32::tanh);
    let got = model.forward(&x).to_vec::<f32>();
    assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 4e-7), "{got:?} against {want:?}");
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    let (dx, _) = model.backward(&cache, &y.ones_like());
    assert_eq!(dx.shape(), [1, 4]);
    assert!(nn::state_dict::<Cpu, _>(&model).is_empty());
}

/// `Silu`, a layer that is its spec entry and its runtime type: in a
/// sequential model its values are PyTorch's `x * sigmoid(x)`, the summary
/// names it, and its generated backward passes the f64 gradient check.
#[model(input = [4])]
pub struct SiluHead {
    fc: Linear<4, 3>,
    act: Silu,
}

#[test]
fn silu_computes_pytorchs_values_and_gradients() {
    let xs = [-3.0f64, -0.5, 0.0, 0.25, 2.0, 6.0];
    let x = Tensor::<Cpu, 1>::from_vec(xs.to_vec(), [6], &CpuDevice);
    let got = blaze::nn::Layer::<Cpu, 1, 1>::forward(&Silu, &x).to_vec::<f64>();
    for (g, x) in got.iter().zip(xs) {
        let want = x / (1.0 + (-x).exp());
        assert!((g - want).abs() < 1e-12, "silu({x}) = {g}, want {want}");
    }
    let model = SiluHead::<Cpu>::new_seeded(3, &CpuDevice);
    assert!(model.summary().contains("Silu"), "{}", model.summary());
    let x = Tensor::<Cpu, 2>::rand_normal([5, 4], &CpuDevice);
    blaze::nn::gradcheck::check_block(&model, &x, true);
}

/// PyTorch's `nn.LSTM(dropout=..)`: dropout on every layer's outputs but
/// the last's, in training only; the default is none.
#[model(input = [6, 3])]
pub struct DroppedStack {
    #[layer(num_layers = 3, dropout = 0.5)]
    lstm: Lstm<3, 8>,
}

#[test]
fn recurrent_dropout_acts_between_layers_in_training_only() {
    let mut model = DroppedStack::new_seeded(2, &CpuDevice);
    assert_eq!(model.lstm.config.dropout, 0.5);
    let x = Tensor::<Cpu, 3>::rand_normal([4, 6, 3], &CpuDevice);
    let eval = model.forward(&x).to_vec::<f32>();
    let (in_eval_mode, _) = model.forward_train(&x, &mut Ctx::eval());
    assert_eq!(in_eval_mode.to_vec::<f32>(), eval, "evaluation mode drops nothing");
    let (trained, _) = model.forward_train(&x, &mut Ctx::train(1));
    assert_ne!(trained.to_vec::<f32>(), eval, "training mode drops between layers");
    let (again, _) = model.forward_train(&x, &mut Ctx::train(1));
    assert_eq!(again.to_vec::<f32>(), trained.to_vec::<f32>(), "masks follow the context's seed");
    assert_eq!(blaze::nn::RnnConfig::default().dropout, 0.0);
    assert_eq!(blaze::spec::Layer::Gru.defaults().p, 0.0);
}
