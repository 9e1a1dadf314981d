// A hand-written layer implementing `Differentiable` and `Block` is a field
// of a #[model], and
// models nest; Embedding-first models take token ids. With `Export`
// implemented too, the model exports to ONNX.
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

/// Its ONNX form: one `Mul` by a scalar.
impl<B: Backend> blaze::export::Export for Double<B> {
    fn export(&self, g: &mut blaze::export::OnnxGraph, _: &str, x: &[blaze::export::Value]) -> blaze::export::Value {
        let two = g.scalar(2.0, blaze::export::elem::FLOAT);
        g.map("Mul", &[&x[0], &two])
    }
}

#[model(input = [4])]
pub struct Inner {
    fc: Linear<4, 8>,
    act: Gelu,
}

#[model(input = [4])]
pub struct Outer {
    inner: Inner,
    double: Double,
    norm: LayerNorm<8>,
    head: Linear<8, 2>,
}

#[model(input = [6])]
pub struct Tagger {
    emb: Embedding<50, 8>,
    norm: LayerNorm<8>,
    out: Linear<8, 3>,
}

fn main() {
    let m = Outer::new_seeded(0, &CpuDevice);
    assert_eq!(Outer::<Cpu>::OUTPUT_SHAPE, &[2]);
    let y = m.forward(&Tensor::zeros([3, 4], &CpuDevice));
    assert_eq!(y.shape(), [3, 2]);
    let ops = blaze::export::to_graph(&m).op_counts();
    assert!(ops.contains(&("LayerNormalization", 1)) && ops.iter().any(|&(op, _)| op == "Mul"), "{ops:?}");
    let t = Tagger::new_seeded(0, &CpuDevice);
    let ids = Tensor::<Cpu, 2>::from_vec(vec![1i64; 12], [2, 6], &CpuDevice);
    assert_eq!(t.forward(&ids).shape(), [2, 6, 3]);
}
