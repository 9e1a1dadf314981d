//! Layers added on the one-definition path agree with PyTorch: the same
//! parameters and input give the same output and the same gradient for the
//! input and every parameter, to 1e-4 relative. The fixture comes from
//! tests/fixtures/make_norm_fixture.py.

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
