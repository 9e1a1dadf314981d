// A hand-written layer that says it stays in float (`KeepsFloat`) takes
// part in the int8 form of a model around it: the int8 model runs it as
// it is, between its int8 layers, and saves and loads.
use blaze::nn::{Block, Ctx, Differentiable, GradSource, GradVisitor, Module, ParamMapper, ParamVisitor, StaticShape};
use blaze::prelude::*;
use blaze::{Backend, Rng};

/// Doubles its input; no parameters.
#[derive(Clone, Debug)]
pub struct Double<B: Backend>(std::marker::PhantomData<B>);

impl<B: Backend> Module<B> for Double<B> {
    type Grads = ();
    fn visit_params<V: ParamVisitor<B>>(&self, _: &str, _: &mut V) {}
    fn map_tensors<M: ParamMapper<B>>(&mut self, _: &str, _: &mut M) {}
    fn visit_grads<V: GradVisitor<B>>(&mut self, _: &(), _: &str, _: &mut V) {}
    fn visit_grad_tensors<V: ParamVisitor<B>>(_: &(), _: &str, _: &mut V) {}
    fn map_grad_tensors<M: ParamMapper<B>>(_: &mut (), _: &str, _: &mut M) {}
    fn make_grads<F: GradSource<B>>(&self, _: &str, _: &mut F) {}
}

impl<B: Backend> Block<B> for Double<B> {
    const INPUT: StaticShape = StaticShape::new(&[8]);
    const OUTPUT: StaticShape = StaticShape::new(&[8]);
    const NUM_PARAMS: usize = 0;
    fn init(_: &mut Rng, _: &B::Device) -> Self {
        Double(std::marker::PhantomData)
    }
}

impl<B: Backend> Differentiable<B> for Double<B> {
    type Input = Tensor<B, 2>;
    type Output = Tensor<B, 2>;
    type Cache = ();
    fn forward(&self, x: &Tensor<B, 2>) -> Tensor<B, 2> {
        x.mul_scalar(2.0)
    }
    fn forward_train(&mut self, x: &Tensor<B, 2>, _: &mut Ctx) -> (Tensor<B, 2>, ()) {
        (x.mul_scalar(2.0), ())
    }
    fn backward(&self, _: &(), g: &Tensor<B, 2>) -> (Tensor<B, 2>, ()) {
        (g.mul_scalar(2.0), ())
    }
}

impl<B: Backend> blaze::quant::KeepsFloat for Double<B> {}

#[model(input = [4])]
pub struct Outer {
    fc: Linear<4, 8>,
    double: Double,
    head: Linear<8, 2>,
}

fn main() {
    let m = Outer::<Cpu>::new_seeded(0, &CpuDevice);
    let q = blaze::quant::quantize_dynamic(&m);
    let x = Tensor::<Cpu, 2>::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], [1, 4], &CpuDevice);
    let (want, got) = (m.forward(&x).to_vec::<f32>(), q.forward(&x).to_vec::<f32>());
    assert!(want.iter().zip(&got).all(|(a, b)| (a - b).abs() < 0.05), "{want:?} vs {got:?}");
    let path = std::env::temp_dir().join(format!("outer-int8-{}.safetensors", std::process::id()));
    q.save(&path).unwrap();
    let back = OuterInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), got);
    std::fs::remove_file(path).unwrap();
}
