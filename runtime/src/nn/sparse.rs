//! `Embedding<B, V, D>`: a lookup table of `V` vectors of size `D`, as
//! `torch.nn.Embedding`.

use super::{Ctx, GradVisitor, Layer, Module, ParamMapper, ParamVisitor, join};
use crate::rng::Rng;
use crate::{Backend, DType, Tensor};

/// A table of `V` learned vectors of size `D`, indexed by i64 ids.
#[derive(Clone, Debug)]
pub struct Embedding<B: Backend, const V: usize, const D: usize> {
    /// `[V, D]`, initially standard normal (PyTorch's default).
    pub weight: Tensor<B, 2>,
}

/// The gradient of an [`Embedding`].
#[derive(Clone, Debug)]
pub struct EmbeddingGrads<B: Backend> {
    /// Gradient of the table.
    pub weight: Tensor<B, 2>,
}

impl<B: Backend, const V: usize, const D: usize> Embedding<B, V, D> {
    /// A table drawn from the standard normal.
    pub fn new(rng: &mut Rng, device: &B::Device) -> Self {
        let p = blaze_spec::Layer::Embedding.params(&[V, D], &blaze_spec::Options::DEFAULT);
        Embedding { weight: super::spec::init_param(&p[0], rng, device) }
    }

    fn lookup<const R: usize, const RO: usize>(&self, ids: &Tensor<B, R>) -> Tensor<B, RO> {
        assert!(ids.dtype() == DType::I64, "Embedding<{V}, {D}>: ids must be i64, got {}", ids.dtype());
        let flat: Tensor<B, 1> = ids.reshape([-1]);
        let rows = self.weight.index_select(0, &flat);
        let mut shape = [D; RO];
        shape[..R].copy_from_slice(&ids.shape());
        rows.reshape(shape)
    }
}

impl<B: Backend, const V: usize, const D: usize> Module<B> for Embedding<B, V, D> {
    type Grads = EmbeddingGrads<B>;

    fn visit_params<Vis: ParamVisitor<B>>(&self, prefix: &str, v: &mut Vis) {
        v.visit(&join(prefix, "weight"), &self.weight);
    }

    fn map_tensors<M: ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        self.weight = m.map(&join(prefix, "weight"), self.weight.clone());
    }

    fn visit_grads<Vis: GradVisitor<B>>(&mut self, g: &EmbeddingGrads<B>, prefix: &str, v: &mut Vis) {
        v.visit(&join(prefix, "weight"), &mut self.weight, &g.weight);
    }

    fn visit_grad_tensors<Vis: ParamVisitor<B>>(g: &EmbeddingGrads<B>, prefix: &str, v: &mut Vis) {
        v.visit(&join(prefix, "weight"), &g.weight);
    }

    fn make_grads<F: super::GradSource<B>>(&self, prefix: &str, f: &mut F) -> EmbeddingGrads<B> {
        EmbeddingGrads { weight: f.grad(&join(prefix, "weight"), &self.weight) }
    }

    fn map_grad_tensors<M: ParamMapper<B>>(g: &mut EmbeddingGrads<B>, prefix: &str, m: &mut M) {
        g.weight = m.map(&join(prefix, "weight"), g.weight.clone());
    }
}

macro_rules! embedding_layer {
    ($($r:literal => $ro:literal),*) => {$(
        impl<B: Backend, const V: usize, const D: usize> Layer<B, $r, $ro> for Embedding<B, V, D> {
            type Cache = Tensor<B, $r>;

            fn forward(&self, ids: &Tensor<B, $r>) -> Tensor<B, $ro> {
                self.lookup(ids)
            }

            fn forward_train(&mut self, ids: &Tensor<B, $r>, _: &mut Ctx) -> (Tensor<B, $ro>, Tensor<B, $r>) {
                (self.lookup(ids), ids.clone())
            }

            /// The ids get no gradient (they are integers): the returned
            /// input gradient is zeros.
            fn backward(&self, ids: &Tensor<B, $r>, g: &Tensor<B, $ro>) -> (Tensor<B, $r>, EmbeddingGrads<B>) {
                // The lookup is an index_select of the table's rows.
                let flat: Tensor<B, 1> = ids.reshape([-1]);
                let rows: Tensor<B, 2> = g.reshape([-1, D as i64]);
                let weight = crate::adjoint::index_select::<B>(rows.storage(), &[V, D], 0, flat.storage());
                (ids.zeros_like(), EmbeddingGrads { weight: Tensor::from_storage(weight) })
            }
        }
    )*};
}
embedding_layer!(1 => 2, 2 => 3);

impl<B: Backend, const V: usize, const D: usize> super::FromSpec<B> for Embedding<B, V, D> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Embedding;
    fn from_spec(_: &blaze_spec::Options, rng: &mut Rng, device: &B::Device) -> Self {
        Embedding::new(rng, device)
    }
}
