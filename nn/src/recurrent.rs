//! Recurrent layers over sequences `[n, T, I]` of any length: the stack
//! driver (layers, directions, steps and backpropagation through time,
//! written once) and the [`Cell`]s it drives. Each layer's parameters are
//! PyTorch's (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`,
//! `..._reverse`), named by the spec; the output is every step's hidden
//! state, both directions side by side.

use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::Arc;

use super::spec::init_param;
use super::{Ctx, Layer, Module};
use blaze_runtime::adjoint;
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor, UnaryOp};
use blaze_spec::{Layer as Spec, Options};

/// One direction of one layer: PyTorch's tensors for it.
#[derive(Clone, Debug)]
pub struct RnnWeights<B: Backend> {
    /// `[gates H, in]`.
    pub weight_ih: Tensor<B, 2>,
    /// `[gates H, H]`.
    pub weight_hh: Tensor<B, 2>,
    /// `[gates H]`, when the layer has biases.
    pub bias_ih: Option<Tensor<B, 1>>,
    /// `[gates H]`, when the layer has biases.
    pub bias_hh: Option<Tensor<B, 1>>,
}

impl<B: Backend> RnnWeights<B> {
    fn tensors(&self) -> Vec<&Tensor<B, 2>> {
        vec![&self.weight_ih, &self.weight_hh]
    }

    fn biases(&self) -> Vec<&Tensor<B, 1>> {
        self.bias_ih.iter().chain(&self.bias_hh).collect()
    }
}

/// Options of the recurrent layers, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct RnnConfig {
    /// Layers stacked, each reading the previous one's outputs (default 1).
    pub num_layers: usize,
    /// Whether each layer also runs from the last step to the first
    /// (default false).
    pub bidirectional: bool,
    /// Whether the gates add biases (default true).
    pub bias: bool,
    /// Dropout on each layer's outputs but the last's, in training
    /// (default 0), as PyTorch's `dropout`.
    pub dropout: f64,
}

impl From<&Options> for RnnConfig {
    fn from(o: &Options) -> Self {
        RnnConfig { num_layers: o.num_layers, bidirectional: o.bidirectional, bias: o.bias, dropout: o.p }
    }
}

impl Default for RnnConfig {
    fn default() -> Self {
        (&Spec::Lstm.defaults()).into()
    }
}

impl RnnConfig {
    /// 2 when bidirectional, else 1.
    pub fn directions(&self) -> usize {
        if self.bidirectional { 2 } else { 1 }
    }

    fn options(&self) -> Options {
        Options {
            num_layers: self.num_layers,
            bidirectional: self.bidirectional,
            bias: self.bias,
            p: self.dropout,
            ..Options::DEFAULT
        }
    }
}

/// A recurrent cell's state: the hidden state, and an LSTM's cell state.
#[derive(Clone, Debug)]
pub struct CellState<B: Backend> {
    /// `[n, H]`.
    pub h: Tensor<B, 2>,
    /// `[n, H]` (LSTM only).
    pub c: Option<Tensor<B, 2>>,
}

/// One step of a recurrent layer, forward and back.
pub trait Cell<B: Backend>: Clone + Debug + Send + Sync + 'static {
    /// Gates per unit (PyTorch's order within the stacked weights).
    const GATES: usize;
    /// The spec's layer.
    const LAYER: Spec;
    /// What a step keeps for its backward.
    type Step: Clone + Debug;

    /// A step from the state `prev`, given the input's projection
    /// `xw = x W_ihᵀ + b_ih` and the previous hidden state's
    /// `hw = h W_hhᵀ + b_hh` (both `[n, GATES H]`).
    fn step(xw: &Tensor<B, 2>, hw: &Tensor<B, 2>, prev: &CellState<B>) -> (CellState<B>, Self::Step);

    /// Back through a step, from the gradient `d` of its new state: the
    /// gradients of `xw`, of `h W_hhᵀ + b_hh`, and of the previous state.
    fn step_back(step: &Self::Step, d: &CellState<B>, w: &RnnWeights<B>) -> (Tensor<B, 2>, Tensor<B, 2>, CellState<B>);

    /// The zero state for a batch of `n` like `like`.
    fn zero(like: &Tensor<B, 2>, n: usize, h: usize) -> CellState<B>;
}

/// A stack of recurrent layers of cell `C`, `H` units over `I` features.
#[derive(Clone, Debug)]
pub struct Recurrent<B: Backend, C, const I: usize, const H: usize> {
    /// Per layer, per direction (the reverse one second).
    pub weights: Vec<RnnWeights<B>>,
    /// Options.
    pub config: RnnConfig,
    /// The spec's names of the tensors, in `weights`' order: drawn once,
    /// so visiting parameters and gradients every step builds no list.
    names: Arc<[&'static str]>,
    cell: PhantomData<C>,
}

impl<B: Backend, C, const I: usize, const H: usize> Recurrent<B, C, I, H> {
    /// The spec's names of the tensors, in `weights`' order (per direction
    /// of each layer: `weight_ih`, `weight_hh`, then the biases).
    pub(crate) fn names(&self) -> &Arc<[&'static str]> {
        &self.names
    }
}

/// What one direction of one layer keeps: its input, and per step the
/// previous hidden state and the cell's own cache.
#[derive(Clone, Debug)]
pub struct DirectionCache<B: Backend, S> {
    input: Tensor<B, 2>,
    steps: Vec<(Tensor<B, 2>, S)>,
}

/// What a recurrent stack's training forward keeps: per layer, per
/// direction, and the seed of the dropout mask on each layer's outputs,
/// where one was drawn.
#[derive(Clone, Debug)]
pub struct RecurrentCache<B: Backend, S> {
    layers: Vec<Vec<DirectionCache<B, S>>>,
    masks: Vec<Option<u64>>,
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> Recurrent<B, C, I, H> {
    /// Initialised as PyTorch does (the spec's parameter list): every
    /// tensor uniform in `±1/sqrt(H)`.
    pub fn new(config: RnnConfig, rng: &mut Rng, device: &B::Device) -> Self {
        assert!(
            (0.0..1.0).contains(&config.dropout),
            "{}<{I}, {H}>: dropout {} is outside [0, 1)",
            C::LAYER.name(),
            config.dropout
        );
        assert!(
            (1..=blaze_spec::MAX_RNN_LAYERS).contains(&config.num_layers),
            "{}<{I}, {H}>: num_layers {} is outside 1..={}",
            C::LAYER.name(),
            config.num_layers,
            blaze_spec::MAX_RNN_LAYERS
        );
        let params = C::LAYER.params(&[I, H], &config.options());
        let per = if config.bias { 4 } else { 2 };
        let weights = params
            .chunks(per)
            .map(|p| RnnWeights {
                weight_ih: init_param(&p[0], rng, device),
                weight_hh: init_param(&p[1], rng, device),
                bias_ih: config.bias.then(|| init_param(&p[2], rng, device)),
                bias_hh: config.bias.then(|| init_param(&p[3], rng, device)),
            })
            .collect();
        let names = params.iter().map(|p| p.name).collect();
        Recurrent { weights, config, names, cell: PhantomData }
    }

    /// One direction over rows `x` (`[n T, in]`) of `n` sequences,
    /// through its projections `w` (float, or int8 in `blaze::quant`): its
    /// outputs `[n, T, H]` and, in training, its cache.
    fn direction<P: GateProjections<B>>(
        w: &P,
        x: &Tensor<B, 2>,
        n: usize,
        reverse: bool,
    ) -> (Tensor<B, 3>, DirectionCache<B, C::Step>) {
        let g = C::GATES * H;
        let xw: Tensor<B, 3> = w.input_gates(x).reshape([n as i64, -1, g as i64]);
        let t = xw.shape()[1];
        let mut state = C::zero(x, n, H);
        let mut outs = vec![None; t];
        let mut steps = Vec::with_capacity(t);
        let order: Vec<usize> = if reverse { (0..t).rev().collect() } else { (0..t).collect() };
        for &i in &order {
            let xw_t: Tensor<B, 2> = xw.narrow(1, i, 1).reshape([n, g]);
            let (next, step) = C::step(&xw_t, &w.hidden_gates(&state.h), &state);
            steps.push((state.h.clone(), step));
            outs[i] = Some(next.h.reshape([n, 1, H]));
            state = next;
        }
        let outs: Vec<Tensor<B, 3>> = outs.into_iter().flatten().collect();
        (Tensor::cat(&outs, 1), DirectionCache { input: x.clone(), steps })
    }

    /// Back through one direction from the gradient of its outputs
    /// (`[n, T, H]`): the gradient of its input rows and of its tensors.
    fn direction_back(
        &self,
        w: &RnnWeights<B>,
        cache: &DirectionCache<B, C::Step>,
        d_out: &Tensor<B, 3>,
        reverse: bool,
    ) -> (Tensor<B, 2>, RnnWeights<B>) {
        let [n, t, _] = d_out.shape();
        let bias = w.bias_ih.is_some();
        let mut d_state: Option<CellState<B>> = None;
        let mut d_xw = vec![None; t];
        let (mut d_whh, mut d_bhh): (Option<Tensor<B, 2>>, Option<Tensor<B, 1>>) = (None, None);
        let order: Vec<usize> = if reverse { (0..t).collect() } else { (0..t).rev().collect() };
        for (k, &i) in order.iter().enumerate() {
            let (h_prev, step) = &cache.steps[t - 1 - k];
            let d_h: Tensor<B, 2> = d_out.narrow(1, i, 1).reshape([n, H]);
            let d = match d_state.take() {
                Some(s) => CellState { h: s.h.add(&d_h), c: s.c },
                None => CellState { h: d_h, c: None },
            };
            let (dx_t, dh_t, prev) = C::step_back(step, &d, w);
            let (dw, db) = adjoint::linear_params::<B>(dh_t.storage(), h_prev.storage(), bias);
            let (dw, db) = (Tensor::<B, 2>::from_storage(dw), db.map(Tensor::<B, 1>::from_storage));
            d_whh = Some(match d_whh {
                Some(a) => a.add(&dw),
                None => dw,
            });
            d_bhh = match (d_bhh, db) {
                (Some(a), Some(b)) => Some(a.add(&b)),
                (None, b) => b,
                (a, None) => a,
            };
            d_xw[i] = Some(dx_t.reshape([n, 1, C::GATES * H]));
            d_state = Some(prev);
        }
        let d_xw: Vec<Tensor<B, 3>> = d_xw.into_iter().flatten().collect();
        let rows: Tensor<B, 2> = Tensor::cat(&d_xw, 1).reshape([-1, (C::GATES * H) as i64]);
        let dx = Tensor::from_storage(adjoint::linear_input::<B>(rows.storage(), w.weight_ih.storage()));
        let (d_wih, d_bih) = adjoint::linear_params::<B>(rows.storage(), cache.input.storage(), bias);
        let grads = RnnWeights {
            weight_ih: Tensor::from_storage(d_wih),
            weight_hh: d_whh.unwrap_or_else(|| w.weight_hh.zeros_like()),
            bias_ih: d_bih.map(Tensor::from_storage),
            bias_hh: d_bhh.or_else(|| w.bias_hh.as_ref().map(Tensor::zeros_like)),
        };
        (dx, grads)
    }

    fn check(x: &Tensor<B, 3>) {
        assert!(x.shape()[2] == I, "{}<{I}, {H}>: expects sequences [n, T, {I}], got {:?}", C::LAYER.name(), x.shape());
    }

    /// The stack over `x`; with a context in training mode, dropout between
    /// layers.
    fn run(&self, x: &Tensor<B, 3>, ctx: Option<&mut Ctx>) -> (Tensor<B, 3>, RecurrentCache<B, C::Step>) {
        Self::run_with(&self.weights, &self.config, x, ctx)
    }

    /// [`Recurrent::run`] over any projections (per layer, per
    /// direction): the float layer's, or its int8 form's.
    pub(crate) fn run_with<P: GateProjections<B>>(
        weights: &[P],
        config: &RnnConfig,
        x: &Tensor<B, 3>,
        ctx: Option<&mut Ctx>,
    ) -> (Tensor<B, 3>, RecurrentCache<B, C::Step>) {
        Self::check(x);
        let n = x.shape()[0];
        let dirs = config.directions();
        let mut dropout = ctx.filter(|c| c.train && config.dropout > 0.0);
        let mut input = x.clone();
        let mut layers = Vec::with_capacity(config.num_layers);
        let mut masks = Vec::with_capacity(config.num_layers);
        let count = weights.len() / dirs;
        for (l, layer) in weights.chunks(dirs).enumerate() {
            let width = input.shape()[2] as i64;
            let rows: Tensor<B, 2> = input.reshape([-1, width]);
            let (outs, cache): (Vec<Tensor<B, 3>>, Vec<_>) =
                layer.iter().enumerate().map(|(d, w)| Self::direction(w, &rows, n, d == 1)).unzip();
            input = if outs.len() == 1 { outs[0].clone() } else { Tensor::cat(&outs, 2) };
            let mask = match dropout.as_deref_mut() {
                Some(ctx) if l + 1 < count => {
                    let mut drop = super::Dropout::new(super::DropoutConfig { p: config.dropout });
                    let (kept, mask) = Layer::<B, 3, 3>::forward_train(&mut drop, &input, ctx);
                    input = kept;
                    mask
                }
                _ => None,
            };
            layers.push(cache);
            masks.push(mask);
        }
        (input, RecurrentCache { layers, masks })
    }
}

/// Gradients of a recurrent stack: per layer, per direction, with the
/// spec's names of the tensors.
#[derive(Clone, Debug)]
pub struct RecurrentGrads<B: Backend> {
    /// Shaped like [`Recurrent::weights`].
    pub weights: Vec<RnnWeights<B>>,
    names: Arc<[&'static str]>,
}

/// The tensors of `weights` in the spec's order (per direction of each
/// layer: `weight_ih`, `weight_hh`, then the biases), each with the spec's
/// name (`names`, as many) under `prefix`.
enum Slot<'a, B: Backend> {
    Matrix(&'a Tensor<B, 2>),
    Bias(&'a Tensor<B, 1>),
}

fn slots<'a, B: Backend>(weights: &'a [RnnWeights<B>]) -> Vec<Slot<'a, B>> {
    let mut out = Vec::new();
    for w in weights {
        out.extend(w.tensors().into_iter().map(Slot::Matrix));
        out.extend(w.biases().into_iter().map(Slot::Bias));
    }
    out
}

fn visit_named<B: Backend, V: super::ParamVisitor<B>>(
    prefix: &str,
    names: &[&'static str],
    weights: &[RnnWeights<B>],
    v: &mut V,
) {
    for (name, slot) in names.iter().zip(slots(weights)) {
        let name = super::join(prefix, name);
        match slot {
            Slot::Matrix(t) => v.visit(&name, t),
            Slot::Bias(b) => v.visit(&name, b),
        }
    }
}

/// Each tensor of `weights` replaced by `m`, under its name.
fn map_named<B: Backend, M: super::ParamMapper<B>>(
    prefix: &str,
    names: &[&'static str],
    weights: &mut [RnnWeights<B>],
    m: &mut M,
) {
    let mut names = names.iter().map(|n| super::join(prefix, n));
    for w in weights {
        if let Some(n) = names.next() {
            w.weight_ih = m.map(&n, w.weight_ih.clone());
        }
        if let Some(n) = names.next() {
            w.weight_hh = m.map(&n, w.weight_hh.clone());
        }
        for b in [&mut w.bias_ih, &mut w.bias_hh] {
            if let Some(t) = b.take()
                && let Some(n) = names.next()
            {
                *b = Some(m.map(&n, t));
            }
        }
    }
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> Module<B> for Recurrent<B, C, I, H> {
    type Grads = RecurrentGrads<B>;

    fn visit_params<V: super::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        visit_named(prefix, &self.names, &self.weights, v);
    }

    fn map_tensors<M: super::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        map_named(prefix, &self.names, &mut self.weights, m);
    }

    fn visit_grads<V: super::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
        let mut names = self.names.iter().map(|n| super::join(prefix, n));
        for (w, g) in self.weights.iter_mut().zip(&g.weights) {
            if let Some(n) = names.next() {
                v.visit(&n, &mut w.weight_ih, &g.weight_ih);
            }
            if let Some(n) = names.next() {
                v.visit(&n, &mut w.weight_hh, &g.weight_hh);
            }
            for (b, gb) in [(&mut w.bias_ih, &g.bias_ih), (&mut w.bias_hh, &g.bias_hh)] {
                if let (Some(b), Some(gb)) = (b, gb)
                    && let Some(n) = names.next()
                {
                    v.visit(&n, b, gb);
                }
            }
        }
    }

    fn visit_grad_tensors<V: super::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
        visit_named(prefix, &g.names, &g.weights, v);
    }

    fn map_grad_tensors<M: super::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
        map_named(prefix, &g.names, &mut g.weights, m);
    }

    fn make_grads<F: super::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
        struct Source<'f, F>(&'f mut F);
        impl<B: Backend, F: super::GradSource<B>> super::ParamMapper<B> for Source<'_, F> {
            fn map<const D: usize>(&mut self, name: &str, t: Tensor<B, D>) -> Tensor<B, D> {
                self.0.grad(name, &t)
            }
        }
        let mut weights = self.weights.clone();
        map_named(prefix, &self.names, &mut weights, &mut Source(f));
        RecurrentGrads { weights, names: self.names.clone() }
    }
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> Layer<B, 3, 3> for Recurrent<B, C, I, H> {
    /// Per layer, per direction: its input rows and every step's cache;
    /// the dropout masks between layers.
    type Cache = RecurrentCache<B, C::Step>;

    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        self.run(x, None).0
    }

    fn forward_train(&mut self, x: &Tensor<B, 3>, ctx: &mut Ctx) -> (Tensor<B, 3>, Self::Cache) {
        self.run(x, Some(ctx))
    }

    fn backward(&self, cache: &Self::Cache, g: &Tensor<B, 3>) -> (Tensor<B, 3>, RecurrentGrads<B>) {
        let dirs = self.config.directions();
        let [n, t, _] = g.shape();
        let mut grads: Vec<Option<RnnWeights<B>>> = vec![None; self.weights.len()];
        let mut d = g.clone();
        for (l, layer_cache) in cache.layers.iter().enumerate().rev() {
            if let Some(seed) = cache.masks[l] {
                d = super::Dropout::new(super::DropoutConfig { p: self.config.dropout }).apply(&d, seed);
            }
            let mut dx: Option<Tensor<B, 2>> = None;
            for (dir, dc) in layer_cache.iter().enumerate() {
                let k = l * dirs + dir;
                let d_out = if dirs == 1 { d.clone() } else { d.narrow(2, dir * H, H) };
                let (dx_dir, gw) = self.direction_back(&self.weights[k], dc, &d_out, dir == 1);
                dx = Some(match dx {
                    Some(a) => a.add(&dx_dir),
                    None => dx_dir,
                });
                grads[k] = Some(gw);
            }
            let dx = dx.unwrap_or_else(|| panic!("{}: a layer without directions", C::LAYER.name()));
            let width = dx.shape()[1];
            d = dx.reshape([n, t, width]);
        }
        (d, RecurrentGrads { weights: grads.into_iter().flatten().collect(), names: self.names.clone() })
    }
}

impl<B: Backend, C: Cell<B>, const I: usize, const H: usize> super::FromSpec<B> for Recurrent<B, C, I, H> {
    const LAYER: Spec = C::LAYER;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Recurrent::new(o.into(), rng, device)
    }
}

/// The zero state `[n, h]` in the dtype and on the device of `like`.
fn zeros<B: Backend>(like: &Tensor<B, 2>, n: usize, h: usize) -> Tensor<B, 2> {
    Tensor::full_dtype([n, h], 0.0, like.dtype(), &like.device())
}

/// Gate `k` of `h` units out of stacked gates `[n, G h]`.
fn gate<B: Backend>(stacked: &Tensor<B, 2>, k: usize, h: usize) -> Tensor<B, 2> {
    stacked.narrow(1, k * h, h)
}

/// The two products of one direction of one layer, float
/// ([`RnnWeights`]) or int8 (`blaze::quant`): what a forward reads.
pub(crate) trait GateProjections<B: Backend> {
    /// `x W_ihᵀ + b_ih`: the input's share of the gates.
    fn input_gates(&self, x: &Tensor<B, 2>) -> Tensor<B, 2>;
    /// `h W_hhᵀ + b_hh`: the hidden state's share of the gates.
    fn hidden_gates(&self, h: &Tensor<B, 2>) -> Tensor<B, 2>;
}

impl<B: Backend> GateProjections<B> for RnnWeights<B> {
    fn input_gates(&self, x: &Tensor<B, 2>) -> Tensor<B, 2> {
        x.matmul(&self.weight_ih.t()).bias_act(self.bias_ih.as_ref(), 1, None)
    }

    fn hidden_gates(&self, h: &Tensor<B, 2>) -> Tensor<B, 2> {
        h.matmul(&self.weight_hh.t()).bias_act(self.bias_hh.as_ref(), 1, None)
    }
}

/// `g W_hh`: a gradient of the hidden gates back to the hidden state.
fn through_hidden<B: Backend>(g: &Tensor<B, 2>, w: &RnnWeights<B>) -> Tensor<B, 2> {
    Tensor::from_storage(adjoint::linear_input::<B>(g.storage(), w.weight_hh.storage()))
}

fn sigmoid_back<B: Backend>(g: &Tensor<B, 2>, y: &Tensor<B, 2>) -> Tensor<B, 2> {
    Tensor::from_storage(adjoint::unary::<B>(UnaryOp::Sigmoid, y.storage(), y.storage(), g.storage()))
}

fn tanh_back<B: Backend>(g: &Tensor<B, 2>, y: &Tensor<B, 2>) -> Tensor<B, 2> {
    Tensor::from_storage(adjoint::unary::<B>(UnaryOp::Tanh, y.storage(), y.storage(), g.storage()))
}

/// The LSTM cell, PyTorch's: gates input, forget, cell and output in that
/// order; `c' = f c + i g`, `h' = o tanh(c')`.
#[derive(Clone, Copy, Debug)]
pub struct LstmCell;

/// What an LSTM step keeps: its gates (`i`, `f`, `g`, `o`), the previous
/// cell state and `tanh` of the new one.
#[derive(Clone, Debug)]
pub struct LstmStep<B: Backend> {
    gates: [Tensor<B, 2>; 4],
    c_prev: Tensor<B, 2>,
    tanh_c: Tensor<B, 2>,
}

/// Long short-term memory over sequences `[n, T, I]`, as
/// `torch.nn.LSTM(I, H, batch_first=True)`: the output is every step's
/// hidden state `[n, T, H]` (`[n, T, 2 H]` both ways); `num_layers`,
/// `bidirectional` and `bias` as PyTorch's.
pub type Lstm<B, const I: usize, const H: usize> = Recurrent<B, LstmCell, I, H>;

impl<B: Backend> Cell<B> for LstmCell {
    const GATES: usize = 4;
    const LAYER: Spec = Spec::Lstm;
    type Step = LstmStep<B>;

    fn step(xw: &Tensor<B, 2>, hw: &Tensor<B, 2>, prev: &CellState<B>) -> (CellState<B>, LstmStep<B>) {
        let pre = xw.add(hw);
        let h = pre.shape()[1] / 4;
        let [i, f, g, o] = [
            gate(&pre, 0, h).sigmoid(),
            gate(&pre, 1, h).sigmoid(),
            gate(&pre, 2, h).tanh(),
            gate(&pre, 3, h).sigmoid(),
        ];
        let c_prev = prev.c.clone().unwrap_or_else(|| prev.h.zeros_like());
        let c = f.mul(&c_prev).add(&i.mul(&g));
        let tanh_c = c.tanh();
        let state = CellState { h: o.mul(&tanh_c), c: Some(c) };
        (state, LstmStep { gates: [i, f, g, o], c_prev, tanh_c })
    }

    fn step_back(
        step: &LstmStep<B>,
        d: &CellState<B>,
        w: &RnnWeights<B>,
    ) -> (Tensor<B, 2>, Tensor<B, 2>, CellState<B>) {
        let [i, f, g, o] = &step.gates;
        let d_o = d.h.mul(&step.tanh_c);
        let through_h = tanh_back(&d.h.mul(o), &step.tanh_c);
        let dc = match &d.c {
            Some(c) => c.add(&through_h),
            None => through_h,
        };
        let d_pre = Tensor::cat(
            &[
                sigmoid_back(&dc.mul(g), i),
                sigmoid_back(&dc.mul(&step.c_prev), f),
                tanh_back(&dc.mul(i), g),
                sigmoid_back(&d_o, o),
            ],
            1,
        );
        let prev = CellState { h: through_hidden(&d_pre, w), c: Some(dc.mul(f)) };
        (d_pre.clone(), d_pre, prev)
    }

    fn zero(like: &Tensor<B, 2>, n: usize, h: usize) -> CellState<B> {
        let z = zeros(like, n, h);
        CellState { h: z.clone(), c: Some(z) }
    }
}

/// The GRU cell, PyTorch's: gates reset, update and new in that order;
/// `n = tanh(x W_in + b_in + r (h W_hn + b_hn))`, `h' = (1 - z) n + z h`.
#[derive(Clone, Copy, Debug)]
pub struct GruCell;

/// What a GRU step keeps: its gates (`r`, `z`, `n`), the hidden state's
/// share of the new gate (`h W_hn + b_hn`) and the previous state.
#[derive(Clone, Debug)]
pub struct GruStep<B: Backend> {
    gates: [Tensor<B, 2>; 3],
    hidden_new: Tensor<B, 2>,
    h_prev: Tensor<B, 2>,
}

/// A gated recurrent unit over sequences `[n, T, I]`, as
/// `torch.nn.GRU(I, H, batch_first=True)`: the output is every step's
/// hidden state `[n, T, H]` (`[n, T, 2 H]` both ways); `num_layers`,
/// `bidirectional` and `bias` as PyTorch's.
pub type Gru<B, const I: usize, const H: usize> = Recurrent<B, GruCell, I, H>;

impl<B: Backend> Cell<B> for GruCell {
    const GATES: usize = 3;
    const LAYER: Spec = Spec::Gru;
    type Step = GruStep<B>;

    fn step(xw: &Tensor<B, 2>, hw: &Tensor<B, 2>, prev: &CellState<B>) -> (CellState<B>, GruStep<B>) {
        let h = hw.shape()[1] / 3;
        let r = gate(xw, 0, h).add(&gate(hw, 0, h)).sigmoid();
        let z = gate(xw, 1, h).add(&gate(hw, 1, h)).sigmoid();
        let hidden_new = gate(hw, 2, h);
        let n = gate(xw, 2, h).add(&r.mul(&hidden_new)).tanh();
        // h' = n + z (h - n)
        let next = n.add(&z.mul(&prev.h.sub(&n)));
        (CellState { h: next, c: None }, GruStep { gates: [r, z, n], hidden_new, h_prev: prev.h.clone() })
    }

    fn step_back(step: &GruStep<B>, d: &CellState<B>, w: &RnnWeights<B>) -> (Tensor<B, 2>, Tensor<B, 2>, CellState<B>) {
        let [r, z, n] = &step.gates;
        let d_new = tanh_back(&d.h.mul(&z.rsub_scalar(1.0)), n);
        let d_z = sigmoid_back(&d.h.mul(&step.h_prev.sub(n)), z);
        let d_r = sigmoid_back(&d_new.mul(&step.hidden_new), r);
        let d_xw = Tensor::cat(&[d_r.clone(), d_z.clone(), d_new.clone()], 1);
        let d_hw = Tensor::cat(&[d_r, d_z, d_new.mul(r)], 1);
        let prev = CellState { h: d.h.mul(z).add(&through_hidden(&d_hw, w)), c: None };
        (d_xw, d_hw, prev)
    }

    fn zero(like: &Tensor<B, 2>, n: usize, h: usize) -> CellState<B> {
        CellState { h: zeros(like, n, h), c: None }
    }
}
