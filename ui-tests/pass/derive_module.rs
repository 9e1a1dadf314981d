// derive(Module) on a hand-written model: nested structs, Vec and array
// entries, Option fields, raw tensors and skipped fields, with PyTorch-style
// names, dtype and device moves, and a safetensors round trip.
use blaze::nn::{self, Layer, Linear, LinearConfig};
use blaze::prelude::*;
use blaze::{Backend, Rng};

#[derive(Module, Clone, Debug)]
pub struct Block<B: Backend> {
    fc: Linear<B, 4, 4>,
    norm: LayerNorm<B, 4>,
}

#[derive(Module, Clone, Debug)]
pub struct Net<B: Backend, const DEPTH: usize> {
    blocks: Vec<Block<B>>,
    pair: [Linear<B, 4, 4>; 2],
    head: Option<Linear<B, 4, 2>>,
    scale: Tensor<B, 1>,
    #[module(skip)]
    steps: usize,
}

#[derive(Module, Clone, Debug)]
pub struct Pair<B: Backend>(Linear<B, 4, 4>, #[module(skip)] String);

fn main() {
    let dev = CpuDevice;
    let mut rng = Rng::seed_from_u64(0);
    let c = LinearConfig::default();
    let block = |rng: &mut Rng| Block { fc: Linear::new(c, rng, &dev), norm: LayerNorm::new(Default::default(), &dev) };
    let mut net: Net<Cpu, 2> = Net {
        blocks: vec![block(&mut rng), block(&mut rng)],
        pair: [Linear::new(c, &mut rng, &dev), Linear::new(LinearConfig { bias: false }, &mut rng, &dev)],
        head: Some(Linear::new(c, &mut rng, &dev)),
        scale: Tensor::ones([4], &dev),
        steps: 0,
    };
    let names: Vec<String> = nn::state_dict::<Cpu, _>(&net).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[..4], ["blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.norm.weight", "blocks.0.norm.bias"]);
    assert!(names.contains(&"pair.1.weight".to_owned()) && !names.contains(&"pair.1.bias".to_owned()));
    assert!(names.contains(&"head.weight".to_owned()) && names.contains(&"scale".to_owned()));
    nn::to_dtype(&mut net, DType::F64);
    nn::to_device(&mut net, &dev).expect("the CPU does not fail");
    let path = std::env::temp_dir().join(format!("blaze-derive-{}.safetensors", std::process::id()));
    blaze::record::save_model(&net, &path).expect("saves");
    blaze::record::load_model(&mut net, &path).expect("loads");
    std::fs::remove_file(&path).ok();
    let x = Tensor::<Cpu, 2>::zeros([3, 4], &dev).to_dtype(DType::F64);
    let _ = Layer::forward(&net.pair[0], &x);
    let p = Pair(Linear::new(c, &mut rng, &dev), String::from("name"));
    assert_eq!(nn::state_dict::<Cpu, _>(&p)[0].0, "0.weight");
}
