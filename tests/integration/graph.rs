//! Models with a `forward` body: every expression form and whole blocks
//! against finite differences (f64), shapes, the parameter-only backward,
//! nesting, loops over arrays of blocks and several inputs.

use crate::transformer;

use blaze::nn::gradcheck::check_model;
use blaze::nn::{Block, Ctx, grads_dict};
use blaze::prelude::*;
use transformer::TransformerBlock;

#[model]
pub struct ResBlock {
    norm: LayerNorm<16>,
    fc1: Linear<16, 32>,
    fc2: Linear<32, 16>,
}

#[model(input = [16])]
impl ResBlock {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.norm(x);
        let h = gelu(self.fc1(h));
        x + self.fc2(h)
    }
}

kernel! {
    /// Swish, for a kernel call inside a forward body.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

/// One model that uses every expression form a forward body supports.
#[model]
pub struct Forms {
    fc: Linear<8, 8>,
    #[layer(p = 0.25)]
    drop: Dropout,
}

#[model(input = [T, 8])]
impl Forms {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        let a = h / ((h * h).sum_dim(-1) + 1.0);
        let b = h - h.mean_dim(0);
        let c = (2.0 - a) * 0.5 + b / 3.0 - (-b);
        let d = 1.0 / (c * c + 1.0);
        let e = exp(d * 0.1) + log(c * c + 1.0) + sqrt(c * c + 1.0) + tanh(c) + sigmoid(c) + relu(c) + c.gelu();
        let f = e.matmul(e.transpose(0, 1)) / 10.0;
        let f = f.masked_fill(causal_mask(T), -1e9).softmax(-1);
        let g = matmul(f, e);
        let [g1, g2] = g.split(4, -1);
        let [h1, h2] = e.chunk(2, 1);
        let k = cat([g1 * h2, g2 + h1], -1);
        let k = k.reshape([T, 2, 4]).permute([2, 0, 1]).flatten();
        let k = k.reshape([T, 8]).narrow(1, 2, 4);
        let k = swish(k, 1.5).log_softmax(-1) + (tanh(k) * 0.5).exp().log_softmax(0);
        self.drop(k)
    }
}

/// A sequential model nested in a graph model.
#[model(input = [8])]
pub struct Mlp {
    fc1: Linear<8, 12>,
    act: Tanh,
    fc2: Linear<12, 8>,
}

/// Nesting, an array of blocks in a loop, indexing into it, positions, a
/// nested model that changes the shape.
#[model]
pub struct Stack {
    emb: Embedding<10, 8>,
    pos: Embedding<6, 8>,
    mlp: Mlp,
    blocks: [ResBlock8; 2],
    extra: [Linear<8, 8>; 1],
    #[layer(output = [3])]
    head: Head,
}

/// `[8]` to `[3]`.
#[model]
pub struct Head {
    fc: Linear<8, 3>,
}

#[model(input = [8])]
impl Head {
    fn forward(&self, x: Tensor) -> Tensor {
        sigmoid(self.fc(x))
    }
}

#[model]
pub struct ResBlock8 {
    fc: Linear<8, 8>,
}

#[model(input = [T, 8])]
impl ResBlock8 {
    fn forward(&self, x: Tensor) -> Tensor {
        x + tanh(self.fc(x))
    }
}

#[model(input = [T])]
impl Stack {
    fn forward(&self, ids: Tensor) -> Tensor {
        let mut x = self.emb(ids) + self.pos(positions(T));
        for b in &self.blocks {
            x = b(x);
        }
        let y = self.extra[0](x);
        let z = y.sum_dim(0).reshape([8]) + self.mlp(y.mean_dim(0).reshape([8]));
        self.head(z)
    }
}

/// Two inputs.
#[model]
pub struct Pair {
    fc: Linear<4, 4>,
}

#[model(input = ([T, 4], [T, 4]))]
impl Pair {
    fn forward(&self, a: Tensor, b: Tensor) -> Tensor {
        self.fc(a) * b + a
    }
}

fn normal<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<Cpu, D> {
    let mut rng = blaze::Rng::seed_from_u64(seed);
    Tensor::normal_with(shape, 0.0, 1.0, &mut rng, &CpuDevice)
}

#[test]
fn resblock_backward_matches_finite_differences() {
    let m = ResBlock::new_seeded(1, &CpuDevice);
    let x = normal([3, 16], 2);
    check_model(&m, &x, true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    // One input of fixed dims: also a Block.
    assert_eq!(<ResBlock as Block<Cpu>>::INPUT.as_slice(), &[16]);
    assert_eq!(ResBlock::<Cpu>::NUM_PARAMS, 2 * 16 + 16 * 32 + 32 + 32 * 16 + 16);
}

#[test]
fn every_expression_form_matches_finite_differences() {
    let m = Forms::new_seeded(3, &CpuDevice);
    let x = normal([2, 5, 8], 4);
    for train in [true, false] {
        check_model(&m, &x, train, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    }
    assert_eq!(m.forward(&x).shape(), [2, 5, 4]);
    // Another sequence length, same model.
    assert_eq!(m.forward(&normal([2, 3, 8], 5)).shape(), [2, 3, 4]);
}

#[test]
fn transformer_block_matches_finite_differences() {
    let m = TransformerBlock::new_seeded(5, &CpuDevice);
    let x = normal([2, 4, 16], 6);
    check_model(&m, &x, false, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn nested_models_arrays_and_positions_differentiate() {
    let m = Stack::new_seeded(7, &CpuDevice);
    let ids = Tensor::<Cpu, 2>::from_vec(vec![1i64, 4, 9, 0, 2, 2, 7, 3], [2, 4], &CpuDevice);
    check_model(&m, &ids, false, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    let names: Vec<String> = grads_dict::<Cpu, Stack>(
        &m.backward_params(&m.clone().forward_train(&ids, &mut Ctx::eval()).1, &m.forward(&ids).ones_like()),
    )
    .into_iter()
    .map(|(n, _)| n)
    .collect();
    assert!(
        names.contains(&"blocks.1.fc.weight".to_owned()) && names.contains(&"mlp.fc2.bias".to_owned()),
        "{names:?}"
    );
}

#[test]
fn several_inputs_each_get_their_gradient() {
    let m = Pair::new_seeded(8, &CpuDevice);
    let (a, b) = (normal([2, 3, 4], 9), normal([2, 3, 4], 10));
    let (ac, bc) = (a.to_dtype(DType::F64), b.to_dtype(DType::F64));
    check_model(
        &m,
        &a,
        false,
        move |m, a, ctx| m.forward_train(a, &bc, ctx),
        |m, c, g| {
            let ((da, _), grads) = m.backward(c, g);
            (da, grads)
        },
    );
    check_model(
        &m,
        &b,
        false,
        move |m, b, ctx| m.forward_train(&ac, b, ctx),
        |m, c, g| {
            let ((_, db), grads) = m.backward(c, g);
            (db, grads)
        },
    );
}

#[test]
fn backward_params_equals_the_full_backward() {
    let m = TransformerBlock::new_seeded(11, &CpuDevice);
    let x = normal([2, 5, 16], 12);
    let (y, cache) = m.clone().forward_train(&x, &mut Ctx::eval());
    let g = normal(y.shape(), 13);
    let full = grads_dict::<Cpu, TransformerBlock>(&m.backward(&cache, &g).1);
    let params = grads_dict::<Cpu, TransformerBlock>(&m.backward_params(&cache, &g));
    assert_eq!(full.len(), 12);
    for ((n, a), (_, b)) in full.iter().zip(&params) {
        assert_eq!(a.values.to_f64_vec(), b.values.to_f64_vec(), "{n}");
    }
}

#[test]
fn inference_forward_equals_the_training_forward() {
    let m = TransformerBlock::new_seeded(14, &CpuDevice);
    let x = normal([3, 7, 16], 15);
    let a = m.forward(&x).to_vec::<f32>();
    let b = m.clone().forward_train(&x, &mut Ctx::eval()).0.to_vec::<f32>();
    assert_eq!(a, b);
}

#[test]
#[should_panic(expected = "TransformerBlock::forward: expects input [batch, T, 16], got [2, 5, 8]")]
fn a_wrong_input_shape_panics_with_the_model_and_shapes() {
    let m = TransformerBlock::new_seeded(16, &CpuDevice);
    m.forward(&normal([2, 5, 8], 17));
}

#[test]
fn summary_shows_symbolic_shapes() {
    let s = TransformerBlock::new_seeded(18, &CpuDevice).summary();
    assert!(s.contains("TransformerBlock (input [batch, T, 16])"), "{s}");
    assert!(s.contains("fc1") && s.contains("[batch, T, 64]") && s.contains("Attention"), "{s}");
}

/// The same MLP as fields in sequence and as a forward body.
#[model(input = [8])]
pub struct SeqMlp {
    fc1: Linear<8, 16>,
    act: Relu,
    fc2: Linear<16, 4>,
}

#[model]
pub struct BodyMlp {
    fc1: Linear<8, 16>,
    fc2: Linear<16, 4>,
}

#[model(input = [8])]
impl BodyMlp {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc2(relu(self.fc1(x)))
    }
}

#[test]
fn a_forward_body_computes_what_the_sequential_model_does() {
    let (seq, body) = (SeqMlp::new_seeded(19, &CpuDevice), BodyMlp::new_seeded(19, &CpuDevice));
    let x = normal([5, 8], 20);
    assert_eq!(seq.forward(&x).to_vec::<f32>(), body.forward(&x).to_vec::<f32>());
    let (ys, cs) = seq.clone().forward_train(&x, &mut Ctx::train(0));
    let (yb, cb) = body.clone().forward_train(&x, &mut Ctx::train(0));
    assert_eq!(ys.to_vec::<f32>(), yb.to_vec::<f32>());
    let g = normal([5, 4], 21);
    let (gs, gb) = (seq.backward(&cs, &g), body.backward(&cb, &g));
    assert_eq!(gs.0.to_vec::<f32>(), gb.0.to_vec::<f32>(), "input gradient");
    let (gs, gb) = (grads_dict::<Cpu, SeqMlp>(&gs.1), grads_dict::<Cpu, BodyMlp>(&gb.1));
    for ((name, a), (_, b)) in gs.iter().zip(&gb) {
        assert_eq!(a.values.to_f64_vec(), b.values.to_f64_vec(), "{name}");
    }
}

/// The last step of a sequence of any length: `narrow` with a negative
/// start counts from the end, as `torch.narrow`.
#[model]
pub struct LastStep {
    gru: Gru<3, 4>,
    head: Linear<4, 2>,
}

#[model(input = [T, 3])]
impl LastStep {
    fn forward(&self, x: Tensor) -> Tensor {
        self.head(self.gru(x).narrow(0, -1, 1).reshape([4]))
    }
}

#[test]
fn a_negative_narrow_takes_the_last_step_of_any_length() {
    let m = LastStep::new_seeded(3, &CpuDevice);
    for t in [1, 4, 7] {
        let x = normal([2, t, 3], t as u64);
        let states = blaze::nn::Layer::<Cpu, 3, 3>::forward(&m.gru, &x);
        let want = m.head.forward(&states.narrow(1, t - 1, 1).reshape([2, 4]));
        assert_eq!(m.forward(&x).to_vec::<f32>(), want.to_vec::<f32>(), "T = {t}");
        check_model(&m, &x, true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    }
}
