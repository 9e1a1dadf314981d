// A hand-written layer implementing `Differentiable` and `Block` is a field
// of a #[model], and
// models nest; Embedding-first models take token ids. With `Export`
// implemented too, the model exports to ONNX.
use blaze::prelude::*;
use blaze::Backend;

#[path = "../common/double.rs"]
mod double;

use double::Double;

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
