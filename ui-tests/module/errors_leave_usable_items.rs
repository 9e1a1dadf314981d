// A struct with a refused field still gets its Module impl for the fields
// that parsed, so the use below adds no error of its own.
use blaze::nn::{self, Linear, LinearConfig};
use blaze::prelude::*;
use blaze::{Backend, Rng};

#[derive(Module, Clone, Debug)]
pub struct Net<B: Backend> {
    fc: Linear<B, 4, 2>,
    steps: usize,
}

fn main() {
    let mut rng = Rng::seed_from_u64(0);
    let net: Net<Cpu> = Net { fc: Linear::new(LinearConfig::default(), &mut rng, &CpuDevice), steps: 0 };
    let names: Vec<String> = nn::state_dict::<Cpu, _>(&net).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["fc.weight", "fc.bias"]);
}
