//! The hand-written layer of the user-layer cases: doubles its input, has
//! no parameters, implements `Module`, `Block` and `Differentiable` (and
//! nothing else: each case adds what it tests).
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
