//! Layers added on the one-definition path agree with PyTorch: the same
//! parameters and input give the same output and the same gradient for the
//! input and every parameter (and a batch norm the same running
//! statistics), to 1e-4 relative. The fixtures come from
//! tests/fixtures/make_norm_fixture.py and make_conv1d_fixture.py.

#[path = "common/torch_fixture.rs"]
mod torch_fixture;

use blaze::nn::Ctx;
use blaze::prelude::*;
use torch_fixture::{Load, assert_matches, read_fixture};

/// `nn.GroupNorm(2, 4)` then `nn.SiLU()`.
#[model(input = [4, 5, 5])]
pub struct NormAct {
    groups: GroupNorm<2, 4>,
    act: Silu,
}

#[test]
fn group_norm_and_silu_match_pytorch() {
    let fx = read_fixture("norm.bin");
    let mut model = NormAct::new_seeded(0, &CpuDevice);
    blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
    let x = Tensor::<Cpu, 4>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 4");
    let r = Tensor::<Cpu, 4>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 4");

    assert_matches("output (inference)", &model.forward(&x).to_data(), &fx["output"]);
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    assert_matches("output (training forward)", &y.to_data(), &fx["output"]);
    let (dx, grads) = model.backward(&cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    let named = blaze::nn::grads_dict::<Cpu, NormAct>(&grads);
    assert_eq!(named.len(), 2, "groups.weight and groups.bias");
    for (name, g) in named {
        assert_matches(&format!("grad.{name}"), &g, &fx[&format!("grad.{name}")]);
    }
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
    let fx = read_fixture("conv1d.bin");
    let mut model = Conv1dNet::new_seeded(0, &CpuDevice);
    blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
    let x = Tensor::<Cpu, 3>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 3");
    let r = Tensor::<Cpu, 3>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 3");

    assert_matches("output", &model.forward(&x).to_data(), &fx["output"]);
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    assert_matches("output (training forward)", &y.to_data(), &fx["output"]);
    let (dx, grads) = model.backward(&cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    let named = blaze::nn::grads_dict::<Cpu, Conv1dNet>(&grads);
    assert_eq!(named.len(), 4);
    for (name, g) in named {
        assert_matches(&format!("grad.{name}"), &g, &fx[&format!("grad.{name}")]);
    }
}
