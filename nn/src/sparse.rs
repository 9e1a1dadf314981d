//! `Embedding<B, V, D>`: a lookup table of `V` vectors of size `D`, as
//! `torch.nn.Embedding`.

use super::{Ctx, GradVisitor, Layer, Module, ParamMapper, ParamVisitor, join};
use blaze_runtime::rng::Rng;
use blaze_runtime::tensor::check_same_device;
use blaze_runtime::{Backend, DType, Tensor};

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
        check_ids::<B, V, D>(&flat, &ids.shape());
        check_same_device::<B>("Embedding", &[self.weight.storage(), flat.storage()]);
        // The ids are checked: the primitive itself, not `index_select`,
        // which would check them again.
        let rows = Tensor::<B, 2>::wrap(B::index_select(self.weight.storage(), 0, flat.storage()));
        let mut shape = [D; RO];
        shape[..R].copy_from_slice(&ids.shape());
        rows.reshape(shape)
    }
}

/// Panics unless every id is in `0..V`, naming the layer, the first id
/// outside, where it sits in `shape` and the vocabulary. Negative ids
/// are refused too, as `torch.nn.Embedding` refuses them (they do not
/// count from the end). Two reductions in the common case, as
/// cross-entropy checks its targets; the ids are read back only to name
/// the one that is wrong.
pub(crate) fn check_ids<B: Backend, const V: usize, const D: usize>(flat: &Tensor<B, 1>, shape: &[usize]) {
    if flat.numel() == 0 || crate::loss::in_range(flat, V) {
        return;
    }
    let ids = flat.to_vec::<i64>();
    let Some(at) = ids.iter().position(|&id| !(0..V as i64).contains(&id)) else { return };
    // The flat position as an index into the ids' shape.
    let mut index = vec![0; shape.len()];
    let mut rest = at;
    for (i, &n) in shape.iter().enumerate().rev() {
        index[i] = rest % n.max(1);
        rest /= n.max(1);
    }
    panic!(
        "Embedding<{V}, {D}>: id {} at {index:?} of the ids {shape:?} is outside its vocabulary of {V} \
         (valid ids: 0 to {})",
        ids[at],
        V.saturating_sub(1)
    );
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
                let weight = blaze_runtime::adjoint::index_select::<B>(rows.storage(), &[V, D], 0, flat.storage());
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
