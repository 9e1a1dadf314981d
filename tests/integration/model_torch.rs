//! The generated LeNet agrees with PyTorch: same weights and input give the
//! same output and the same gradient for the input and every parameter, to
//! 1e-4 relative. The fixture comes from tests/fixtures/make_lenet_fixture.py.

use crate::common;
use crate::torch_fixture;

use blaze::nn::Ctx;
use blaze::prelude::*;
use common::LeNet;
use torch_fixture::{Load, assert_matches, read_fixture};

#[test]
fn lenet_output_and_gradients_match_pytorch() {
    let fx = read_fixture("lenet.bin");
    let mut model = LeNet::new_seeded(0, &CpuDevice);
    blaze::nn::Module::map_tensors(&mut model, "", &mut Load(&fx));
    let x = Tensor::<Cpu, 4>::from_data(fx["input"].clone(), &CpuDevice).expect("rank 4");
    let r = Tensor::<Cpu, 2>::from_data(fx["r"].clone(), &CpuDevice).expect("rank 2");

    assert_matches("output (inference)", &model.forward(&x).to_data(), &fx["output"]);
    let (y, cache) = model.forward_train(&x, &mut Ctx::eval());
    assert_matches("output (eval-mode training forward)", &y.to_data(), &fx["output"]);
    let (dx, grads) = model.backward(&cache, &r);
    assert_matches("grad.input", &dx.to_data(), &fx["grad.input"]);
    let named = blaze::nn::grads_dict::<Cpu, LeNet>(&grads);
    assert_eq!(named.len(), 8);
    for (name, g) in named {
        assert_matches(&format!("grad.{name}"), &g, &fx[&format!("grad.{name}")]);
    }
}
