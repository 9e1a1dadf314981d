//! The int8 layers: `Linear`, `Conv1d`, `Conv2d`, `Embedding`,
//! `MultiHeadAttention` and the recurrent stacks with int8 weights, f32 in
//! and out. Products go through the backend's
//! [`blaze_runtime::backend::Composites::linear_int8`], convolutions through its
//! `conv2d_int8`; an embedding looks its rows up and scales them.

use std::sync::{Arc, Mutex};

use super::state::host_f32;
use super::weight::{ConvShape, InputQuant, QWeight, input_params};
use super::{Infer, InferAttend, KeepsFloat, Phase, QuantModule, Quantize, StateReader, StateWriter};
use crate::{
    BatchNorm1d, BatchNorm2d, Cell, Conv1d, Conv2d, ConvTranspose2d, Embedding, GateProjections, GroupNorm, KvCache,
    LayerNorm, Linear, MultiHeadAttention, MultiHeadAttentionConfig, Projections, RMSNorm, Recurrent, RnnConfig, join,
};
use blaze_runtime::{Backend, Conv2dOptions, DType, Tensor, UnaryOp};

/// Layers a quantized model keeps in floating point (see [`KeepsFloat`]);
/// the stateless ones say so where they implement `Module`.
impl<B: Backend, const C: usize> KeepsFloat for BatchNorm2d<B, C> {}
impl<B: Backend, const C: usize> KeepsFloat for BatchNorm1d<B, C> {}
impl<B: Backend, const N: usize> KeepsFloat for LayerNorm<B, N> {}
impl<B: Backend, const N: usize> KeepsFloat for RMSNorm<B, N> {}
impl<B: Backend, const G: usize, const C: usize> KeepsFloat for GroupNorm<B, G, C> {}
impl<B: Backend, const CI: usize, const CO: usize, const K: usize> KeepsFloat for ConvTranspose2d<B, CI, CO, K> {}
impl<B: Backend, const D: usize> KeepsFloat for Tensor<B, D> {}

/// `x w^T` over the last dim of `x` through the backend's int8 product
/// (f32 out whatever the input's float dtype); `layer` names the layer in
/// a shape panic.
fn product<B: Backend, const D: usize>(w: &QWeight, x: &Tensor<B, D>, input: InputQuant, layer: &str) -> Tensor<B, D> {
    let (o, i) = (w.rows(), w.cols());
    let mut out = x.shape();
    assert!(D >= 2 && out[D - 1] == i, "{layer}: expects input [.., {i}], got {out:?}");
    out[D - 1] = o;
    let rows: Tensor<B, 2> = x.reshape([-1, i as i64]);
    let rows = if rows.dtype() == DType::F32 { rows } else { rows.to_dtype(DType::F32) };
    Tensor::<B, 2>::from_storage(B::linear_int8(rows.storage(), w, input)).reshape(out)
}

/// Records the range of a layer's inputs while calibration runs.
#[derive(Clone, Debug, Default)]
pub struct Observer {
    on: bool,
    range: Arc<Mutex<Option<(f32, f32)>>>,
}

impl Observer {
    /// Takes in `x`'s range while calibrating (a read to the host: the
    /// calibration pass is not timed).
    fn see<B: Backend, const D: usize>(&self, x: &Tensor<B, D>) {
        if !self.on {
            return;
        }
        let v = host_f32(x);
        let (lo, hi) = v.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let mut range = self.range.lock().unwrap_or_else(|e| e.into_inner());
        *range = Some(match *range {
            Some((l, h)) => (l.min(lo), h.max(hi)),
            None => (lo, hi),
        });
    }

    /// Applies a calibration phase to `input`.
    fn phase(&mut self, phase: Phase, input: &mut InputQuant) {
        match phase {
            Phase::Start => {
                // A fresh range: clones of the layer no longer share it.
                *self = Observer { on: true, range: Arc::default() };
                *input = InputQuant::Dynamic;
            }
            Phase::Finish => {
                let seen = self.range.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let (true, Some((lo, hi))) = (self.on, seen) {
                    let (scale, zero_point) = input_params(lo, hi);
                    *input = InputQuant::Static { scale, zero_point };
                }
                self.on = false;
            }
        }
    }
}

/// [`Linear`] with an int8 weight; its input quantized per row.
#[derive(Clone, Debug)]
pub struct Int8Linear<B: Backend, const I: usize, const O: usize> {
    /// `[O, I]`, per output channel.
    pub weight: Arc<QWeight>,
    /// `[O]`, in f32.
    pub bias: Option<Tensor<B, 1>>,
}

impl<B: Backend, const I: usize, const O: usize> Int8Linear<B, I, O> {
    /// `x W^T + b` over the last dim of `x`.
    pub fn forward<const D: usize>(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        self.forward_fused(x, None, None)
    }

    /// `act(x W^T + b)` (as [`Linear::forward_act`]).
    pub fn forward_act<const D: usize>(&self, x: &Tensor<B, D>, act: Option<UnaryOp>) -> Tensor<B, D> {
        self.forward_fused(x, act, None)
    }

    /// `act(x W^T + b) + residual` (as [`Linear::forward_fused`]).
    pub fn forward_fused<const D: usize>(
        &self,
        x: &Tensor<B, D>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, D>>,
    ) -> Tensor<B, D> {
        let product = |rows: &Tensor<B, 2>| product(&self.weight, rows, InputQuant::Dynamic, "Int8Linear");
        crate::rows_through("Int8Linear", [O, I], x, product, self.bias.as_ref(), act, residual)
    }
}

impl<B: Backend, const I: usize, const O: usize> Quantize<B> for Linear<B, I, O> {
    type Quantized = Int8Linear<B, I, O>;

    fn quantize(&self) -> Int8Linear<B, I, O> {
        let weight = Arc::new(QWeight::quantize(&host_f32(&self.weight), &[O, I]));
        Int8Linear { weight, bias: self.bias.clone() }
    }
}

impl<B: Backend, const I: usize, const O: usize> QuantModule<B> for Int8Linear<B, I, O> {
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        out.int8(&join(prefix, "weight"), &self.weight);
        if let Some(b) = &self.bias {
            out.float(&join(prefix, "bias"), b);
        }
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        if let Some(w) = src.int8(&join(prefix, "weight"), &self.weight) {
            self.weight = Arc::new(w);
        }
        if let Some(b) = self.bias.take() {
            self.bias = Some(src.tensor(&join(prefix, "bias"), b));
        }
    }

    fn device(&self) -> Option<B::Device> {
        self.bias.as_ref().map(Tensor::device)
    }
}

impl<B: Backend, const I: usize, const O: usize, const D: usize> Infer<B, D, D> for Int8Linear<B, I, O> {
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        Int8Linear::forward(self, x)
    }
}

/// A convolution's int8 product through the backend's
/// [`blaze_runtime::backend::Composites::conv2d_int8`] (each image quantized on
/// its own, or as calibrated), then `act(y + bias) (+ residual)`.
#[allow(clippy::too_many_arguments)]
fn conv<B: Backend>(
    x: &Tensor<B, 4>,
    weights: &[Arc<QWeight>],
    kernel: [usize; 2],
    bias: Option<&Tensor<B, 1>>,
    options: &Conv2dOptions,
    input: InputQuant,
    act: Option<UnaryOp>,
    residual: Option<&Tensor<B, 4>>,
) -> Tensor<B, 4> {
    let shape = ConvShape { input: x.shape(), kernel, options: *options };
    assert!(
        shape.output().is_some(),
        "Int8Conv2d: the {}x{} kernel (dilation {:?}) is larger than the input {:?} padded by {:?}",
        kernel[0],
        kernel[1],
        options.dilation,
        x.shape(),
        options.padding
    );
    let x = if x.dtype() == DType::F32 { x.clone() } else { x.to_dtype(DType::F32) };
    let parts: Vec<&QWeight> = weights.iter().map(|w| &**w).collect();
    let y = Tensor::<B, 4>::from_storage(B::conv2d_int8(x.storage(), &parts, &shape, input));
    crate::conv_epilogue(y, bias, act, residual, &|| "Int8Conv2d".to_owned())
}

/// A convolution weight `[out, in / groups, ..]` quantized per output
/// channel, one weight per group.
fn group_weights<B: Backend, const D: usize>(weight: &Tensor<B, D>, groups: usize) -> Vec<Arc<QWeight>> {
    let all = QWeight::quantize(&host_f32(weight), &weight.shape());
    let per = all.rows() / groups;
    (0..groups).map(|g| Arc::new(all.rows_of(g * per..(g + 1) * per))).collect()
}

/// Saves group weights as the one weight they split.
fn save_groups(name: &str, weights: &[Arc<QWeight>], out: &mut StateWriter) {
    let parts: Vec<&QWeight> = weights.iter().map(|w| &**w).collect();
    out.int8(name, &QWeight::stack(&parts));
}

/// Loads the one weight and splits it into groups like `weights`.
fn load_groups<B: Backend>(name: &str, weights: &mut [Arc<QWeight>], src: &mut StateReader<'_, B>) {
    let parts: Vec<&QWeight> = weights.iter().map(|w| &**w).collect();
    if let Some(all) = src.int8(name, &QWeight::stack(&parts)) {
        let per = all.rows() / weights.len();
        for (g, w) in weights.iter_mut().enumerate() {
            *w = Arc::new(all.rows_of(g * per..(g + 1) * per));
        }
    }
}

/// [`Conv2d`] with an int8 weight; its input quantized per image, or
/// with a calibrated range.
#[derive(Clone, Debug)]
pub struct Int8Conv2d<B: Backend, const CIN: usize, const COUT: usize, const K: usize> {
    /// One weight per group, `[COUT / groups, CIN / groups, K, K]`.
    pub weights: Vec<Arc<QWeight>>,
    /// `[COUT]`, in f32.
    pub bias: Option<Tensor<B, 1>>,
    /// Stride, padding, dilation and groups.
    pub options: Conv2dOptions,
    /// How the input is quantized.
    pub input: InputQuant,
    /// The input's range while calibrating.
    pub observer: Observer,
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Int8Conv2d<B, CIN, COUT, K> {
    /// The convolution of a batch `[n, CIN, h, w]`.
    pub fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        self.forward_fused(x, None, None)
    }

    /// `act(conv(x) + b)` (as [`Conv2d::forward_act`]).
    pub fn forward_act(&self, x: &Tensor<B, 4>, act: Option<UnaryOp>) -> Tensor<B, 4> {
        self.forward_fused(x, act, None)
    }

    /// `act(conv(x) + b) + residual` (as [`Conv2d::forward_fused`]).
    pub fn forward_fused(
        &self,
        x: &Tensor<B, 4>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, 4>>,
    ) -> Tensor<B, 4> {
        assert!(x.shape()[1] == CIN, "Int8Conv2d<{CIN}, {COUT}, {K}>: expects [n, {CIN}, h, w], got {:?}", x.shape());
        self.observer.see(x);
        conv(x, &self.weights, [K, K], self.bias.as_ref(), &self.options, self.input, act, residual)
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Quantize<B> for Conv2d<B, CIN, COUT, K> {
    type Quantized = Int8Conv2d<B, CIN, COUT, K>;

    fn quantize(&self) -> Self::Quantized {
        Int8Conv2d {
            weights: group_weights(&self.weight, self.options.groups),
            bias: self.bias.clone(),
            options: self.options,
            input: InputQuant::Dynamic,
            observer: Observer::default(),
        }
    }
}

/// `QuantModule` for a convolution's int8 form: its grouped weight, its
/// bias and its calibrated input.
macro_rules! conv_state {
    ($t:ident) => {
        impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> QuantModule<B> for $t<B, CIN, COUT, K> {
            fn save_state(&self, prefix: &str, out: &mut StateWriter) {
                save_groups(&join(prefix, "weight"), &self.weights, out);
                if let Some(b) = &self.bias {
                    out.float(&join(prefix, "bias"), b);
                }
                out.input(prefix, self.input);
            }

            fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
                load_groups(&join(prefix, "weight"), &mut self.weights, src);
                if let Some(b) = self.bias.take() {
                    self.bias = Some(src.tensor(&join(prefix, "bias"), b));
                }
                self.input = src.input(prefix);
            }

            fn calibrate(&mut self, phase: Phase) {
                self.observer.phase(phase, &mut self.input);
            }

            fn device(&self) -> Option<B::Device> {
                self.bias.as_ref().map(Tensor::device)
            }
        }
    };
}

conv_state!(Int8Conv2d);
conv_state!(Int8Conv1d);

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Infer<B, 4, 4> for Int8Conv2d<B, CIN, COUT, K> {
    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        Int8Conv2d::forward(self, x)
    }
}

/// [`Conv1d`] with an int8 weight (see [`Int8Conv2d`]).
#[derive(Clone, Debug)]
pub struct Int8Conv1d<B: Backend, const CIN: usize, const COUT: usize, const K: usize> {
    /// One weight per group, `[COUT / groups, CIN / groups, K]`.
    pub weights: Vec<Arc<QWeight>>,
    /// `[COUT]`, in f32.
    pub bias: Option<Tensor<B, 1>>,
    /// Stride, padding and dilation along the width of a height-one
    /// image, and groups (as [`Conv1d`]).
    pub options: Conv2dOptions,
    /// How the input is quantized.
    pub input: InputQuant,
    /// The input's range while calibrating.
    pub observer: Observer,
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Int8Conv1d<B, CIN, COUT, K> {
    /// The convolution of a batch `[n, CIN, L]`.
    pub fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        let [n, c, l] = x.shape();
        assert!(c == CIN, "Int8Conv1d<{CIN}, {COUT}, {K}>: expects [n, {CIN}, L], got {:?}", x.shape());
        self.observer.see(x);
        let y = conv(
            &x.reshape([n, c, 1, l]),
            &self.weights,
            [1, K],
            self.bias.as_ref(),
            &self.options,
            self.input,
            None,
            None,
        );
        let [n, o, _, l] = y.shape();
        y.reshape([n, o, l])
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Quantize<B> for Conv1d<B, CIN, COUT, K> {
    type Quantized = Int8Conv1d<B, CIN, COUT, K>;

    fn quantize(&self) -> Self::Quantized {
        Int8Conv1d {
            weights: group_weights(&self.weight, self.options.groups),
            bias: self.bias.clone(),
            options: self.options,
            input: InputQuant::Dynamic,
            observer: Observer::default(),
        }
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Infer<B, 3, 3> for Int8Conv1d<B, CIN, COUT, K> {
    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        Int8Conv1d::forward(self, x)
    }
}

/// [`Embedding`] with its table quantized per row: a lookup scales the
/// rows it reads back to f32.
#[derive(Clone, Debug)]
pub struct Int8Embedding<B: Backend, const V: usize, const D: usize> {
    /// `[V, D]`, per row.
    pub weight: Arc<QWeight>,
    device: B::Device,
}

impl<B: Backend, const V: usize, const D: usize> Int8Embedding<B, V, D> {
    /// The rows of `ids` (i64, any rank up to 2), as `[.., D]` f32.
    fn lookup<const R: usize, const RO: usize>(&self, ids: &Tensor<B, R>) -> Tensor<B, RO> {
        assert!(ids.dtype() == DType::I64, "Int8Embedding<{V}, {D}>: ids must be i64, got {}", ids.dtype());
        let flat: Tensor<B, 1> = ids.reshape([-1]);
        crate::check_ids::<B, V, D>(&flat, &ids.shape());
        let (values, scales) = (self.weight.values(), self.weight.scales());
        let mut out = Vec::with_capacity(flat.numel() * D);
        for id in flat.to_vec::<i64>() {
            let row = id as usize;
            out.extend(values[row * D..(row + 1) * D].iter().map(|&q| f32::from(q) * scales[row]));
        }
        let mut shape = [D; RO];
        shape[..R].copy_from_slice(&ids.shape());
        Tensor::from_vec(out, shape, &self.device)
    }
}

impl<B: Backend, const V: usize, const D: usize> Quantize<B> for Embedding<B, V, D> {
    type Quantized = Int8Embedding<B, V, D>;

    fn quantize(&self) -> Self::Quantized {
        let weight = Arc::new(QWeight::quantize(&host_f32(&self.weight), &[V, D]));
        Int8Embedding { weight, device: self.weight.device() }
    }
}

impl<B: Backend, const V: usize, const D: usize> QuantModule<B> for Int8Embedding<B, V, D> {
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        out.int8(&join(prefix, "weight"), &self.weight);
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        if let Some(w) = src.int8(&join(prefix, "weight"), &self.weight) {
            self.weight = Arc::new(w);
        }
    }

    fn device(&self) -> Option<B::Device> {
        Some(self.device.clone())
    }
}

impl<B: Backend, const V: usize, const D: usize> Infer<B, 1, 2> for Int8Embedding<B, V, D> {
    fn forward(&self, ids: &Tensor<B, 1>) -> Tensor<B, 2> {
        self.lookup(ids)
    }
}

impl<B: Backend, const V: usize, const D: usize> Infer<B, 2, 3> for Int8Embedding<B, V, D> {
    fn forward(&self, ids: &Tensor<B, 2>) -> Tensor<B, 3> {
        self.lookup(ids)
    }
}

/// [`MultiHeadAttention`] with int8 projections (the attention itself
/// in f32).
#[derive(Clone, Debug)]
pub struct Int8MultiHeadAttention<B: Backend, const D: usize, const H: usize> {
    /// The query, key and value projections, `[D, D]` each.
    pub in_proj: [Arc<QWeight>; 3],
    /// `[3 D]`, in f32.
    pub in_proj_bias: Option<Tensor<B, 1>>,
    /// The output projection.
    pub out_proj: Int8Linear<B, D, D>,
    /// Dropout (unused: inference), bias and causality.
    pub config: MultiHeadAttentionConfig,
}

impl<B: Backend, const D: usize, const H: usize> Projections<B> for Int8MultiHeadAttention<B, D, H> {
    fn config(&self) -> &MultiHeadAttentionConfig {
        &self.config
    }

    fn project(&self, rows: &Tensor<B, 2>, i: usize) -> Tensor<B, 2> {
        let b = self.in_proj_bias.as_ref().map(|b| b.narrow(0, i * D, D));
        product(&self.in_proj[i], rows, InputQuant::Dynamic, "Int8MultiHeadAttention").bias_act(b.as_ref(), 1, None)
    }

    fn project_out(&self, joined: &Tensor<B, 3>) -> Tensor<B, 3> {
        self.out_proj.forward(joined)
    }
}

impl<B: Backend, const D: usize, const H: usize> Int8MultiHeadAttention<B, D, H> {
    /// Causal self-attention of new positions after those `cache` holds
    /// (as [`MultiHeadAttention::attend_step`]).
    pub fn attend_step(&self, x: &Tensor<B, 3>, cache: &mut KvCache<B>) -> Tensor<B, 3> {
        MultiHeadAttention::<B, D, H>::step(self, x, cache)
    }
}

impl<B: Backend, const D: usize, const H: usize> Quantize<B> for MultiHeadAttention<B, D, H> {
    type Quantized = Int8MultiHeadAttention<B, D, H>;

    fn quantize(&self) -> Self::Quantized {
        let all = QWeight::quantize(&host_f32(&self.in_proj_weight), &[3 * D, D]);
        Int8MultiHeadAttention {
            in_proj: std::array::from_fn(|i| Arc::new(all.rows_of(i * D..(i + 1) * D))),
            in_proj_bias: self.in_proj_bias.clone(),
            out_proj: self.out_proj.quantize(),
            config: self.config,
        }
    }
}

impl<B: Backend, const D: usize, const H: usize> QuantModule<B> for Int8MultiHeadAttention<B, D, H> {
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        save_groups(&join(prefix, "in_proj_weight"), &self.in_proj, out);
        if let Some(b) = &self.in_proj_bias {
            out.float(&join(prefix, "in_proj_bias"), b);
        }
        self.out_proj.save_state(&join(prefix, "out_proj"), out);
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        load_groups(&join(prefix, "in_proj_weight"), &mut self.in_proj, src);
        if let Some(b) = self.in_proj_bias.take() {
            self.in_proj_bias = Some(src.tensor(&join(prefix, "in_proj_bias"), b));
        }
        self.out_proj.load_state(&join(prefix, "out_proj"), src);
    }

    fn device(&self) -> Option<B::Device> {
        self.in_proj_bias.as_ref().map(Tensor::device).or_else(|| self.out_proj.device())
    }
}

impl<B: Backend, const D: usize, const H: usize> Infer<B, 3, 3> for Int8MultiHeadAttention<B, D, H> {
    /// Self-attention, as [`MultiHeadAttention`]'s layer forward.
    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        MultiHeadAttention::<B, D, H>::infer(self, x, x, x, None)
    }
}

impl<B: Backend, const D: usize, const H: usize> InferAttend<B> for Int8MultiHeadAttention<B, D, H> {
    fn attend(
        &self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3> {
        MultiHeadAttention::<B, D, H>::infer(self, q, k, v, key_padding_mask)
    }
}

/// One direction of one layer of an [`Int8Recurrent`]: both products in
/// int8 (their inputs quantized per row), the biases in f32.
#[derive(Clone, Debug)]
pub struct Int8RnnWeights<B: Backend> {
    /// `[gates H, in]`.
    pub weight_ih: Arc<QWeight>,
    /// `[gates H, H]`.
    pub weight_hh: Arc<QWeight>,
    /// `[gates H]`, in f32.
    pub bias_ih: Option<Tensor<B, 1>>,
    /// `[gates H]`, in f32.
    pub bias_hh: Option<Tensor<B, 1>>,
}

impl<B: Backend> GateProjections<B> for Int8RnnWeights<B> {
    fn input_gates(&self, x: &Tensor<B, 2>) -> Tensor<B, 2> {
        product(&self.weight_ih, x, InputQuant::Dynamic, "Int8Recurrent").bias_act(self.bias_ih.as_ref(), 1, None)
    }

    fn hidden_gates(&self, h: &Tensor<B, 2>) -> Tensor<B, 2> {
        product(&self.weight_hh, h, InputQuant::Dynamic, "Int8Recurrent").bias_act(self.bias_hh.as_ref(), 1, None)
    }
}

/// A recurrent stack ([`crate::Lstm`], [`crate::Gru`]) with its input and
/// hidden products in int8, as `quantize_dynamic` makes PyTorch's LSTM
/// and GRU: the cells' gates in f32.
#[derive(Clone, Debug)]
pub struct Int8Recurrent<B: Backend, C, const I: usize, const H: usize> {
    /// Per layer, per direction (the reverse one second).
    pub weights: Vec<Int8RnnWeights<B>>,
    /// Layers, directions, biases (dropout is off: inference).
    pub config: RnnConfig,
    names: Arc<[&'static str]>,
    cell: std::marker::PhantomData<C>,
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> Quantize<B> for Recurrent<B, C, I, H> {
    type Quantized = Int8Recurrent<B, C, I, H>;

    fn quantize(&self) -> Self::Quantized {
        let int8 = |w: &Tensor<B, 2>| Arc::new(QWeight::quantize(&host_f32(w), &w.shape()));
        let weights = self
            .weights
            .iter()
            .map(|w| Int8RnnWeights {
                weight_ih: int8(&w.weight_ih),
                weight_hh: int8(&w.weight_hh),
                bias_ih: w.bias_ih.clone(),
                bias_hh: w.bias_hh.clone(),
            })
            .collect();
        Int8Recurrent { weights, config: self.config, names: self.names().clone(), cell: std::marker::PhantomData }
    }
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> QuantModule<B> for Int8Recurrent<B, C, I, H> {
    /// Under the float layer's names (`weight_ih_l0`, `bias_hh_l1_reverse`).
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        let mut names = self.names.iter().map(|n| join(prefix, n));
        for w in &self.weights {
            out.int8(&names.next().expect("a name per tensor"), &w.weight_ih);
            out.int8(&names.next().expect("a name per tensor"), &w.weight_hh);
            for b in w.bias_ih.iter().chain(&w.bias_hh) {
                out.float(&names.next().expect("a name per tensor"), b);
            }
        }
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        let mut names = self.names.iter().map(|n| join(prefix, n));
        for w in &mut self.weights {
            for slot in [&mut w.weight_ih, &mut w.weight_hh] {
                if let Some(q) = src.int8(&names.next().expect("a name per tensor"), slot) {
                    *slot = Arc::new(q);
                }
            }
            for b in [&mut w.bias_ih, &mut w.bias_hh] {
                if let Some(t) = b.take() {
                    *b = Some(src.tensor(&names.next().expect("a name per tensor"), t));
                }
            }
        }
    }

    fn device(&self) -> Option<B::Device> {
        self.weights.iter().flat_map(|w| w.bias_ih.iter().chain(&w.bias_hh)).map(Tensor::device).next()
    }
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> Infer<B, 3, 3> for Int8Recurrent<B, C, I, H> {
    /// Every step's hidden state, as the float layer's forward.
    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        Recurrent::<B, C, I, H>::run_with(&self.weights, &self.config, x, None).0
    }
}
