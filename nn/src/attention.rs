//! Attention: the [`Attend`] trait of layers a forward body calls on a
//! query, keys and values (`self.attn(q, k, v)`, optionally with a
//! key-padding mask), and `MultiHeadAttention<D, H>`, PyTorch's
//! `nn.MultiheadAttention(D, H, batch_first=True)` with its parameter
//! names, initialisation, causal mask and dropout on the attention
//! weights. Its backward is written out with the adjoint library; one
//! input (`self.attn(x)`, or a field of a sequential model) is
//! self-attention.

use std::fmt::Debug;

use super::spec::init_param;
use super::{Ctx, Dropout, DropoutConfig, Layer, Linear, LinearConfig, LinearGrads, Module};
use blaze_runtime::adjoint;
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, SoftmaxOptions, Tensor};
use blaze_spec::{Layer as Spec, Options};

/// A layer a forward body may call on a query `[n, T, D]`, keys and values
/// `[n, S, D]`, and optionally a key-padding mask `[n, S]` (nonzero where a
/// key is padding and no query may attend to it).
pub trait Attend<B: Backend>: Module<B> {
    /// What its training forward keeps for its backward pass.
    type AttendCache: Clone + Debug;

    /// The output `[n, T, D]`.
    fn attend(
        &self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3>;

    /// The output and what the backward needs, in the mode `ctx` says.
    fn attend_train(
        &mut self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
        ctx: &mut Ctx,
    ) -> (Tensor<B, 3>, Self::AttendCache);

    /// The gradients of the query, keys and values, and of the parameters,
    /// for the output's gradient `g`.
    fn attend_backward(&self, cache: &Self::AttendCache, g: &Tensor<B, 3>) -> (AttendInputs<B>, Self::Grads);
}

/// The gradients of a query, keys and values.
pub type AttendInputs<B> = (Tensor<B, 3>, Tensor<B, 3>, Tensor<B, 3>);

/// Multi-head attention over an embedding of `D` in `H` heads, as
/// `torch.nn.MultiheadAttention(D, H, batch_first=True)`: the query, keys
/// and values are projected by the rows of `in_proj_weight`, each head
/// attends with `softmax(q kᵀ / sqrt(D / H))`, and `out_proj` joins the
/// heads.
#[derive(Clone, Debug)]
pub struct MultiHeadAttention<B: Backend, const D: usize, const H: usize> {
    /// `[3 D, D]`: the query's, keys' and values' projections, stacked.
    pub in_proj_weight: Tensor<B, 2>,
    /// `[3 D]`, initially zeros; `None` without `bias`.
    pub in_proj_bias: Option<Tensor<B, 1>>,
    /// The output projection (its bias initially zeros).
    pub out_proj: Linear<B, D, D>,
    /// Options.
    pub config: MultiHeadAttentionConfig,
}

/// Options of [`MultiHeadAttention`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct MultiHeadAttentionConfig {
    /// Dropout on the attention weights in training (default 0).
    pub dropout: f64,
    /// Whether the projections add biases (default true).
    pub bias: bool,
    /// Whether a query attends only to keys at its position or before
    /// (default false).
    pub causal: bool,
}

impl Default for MultiHeadAttentionConfig {
    fn default() -> Self {
        (&Spec::MultiHeadAttention.defaults()).into()
    }
}

impl From<&Options> for MultiHeadAttentionConfig {
    fn from(o: &Options) -> Self {
        MultiHeadAttentionConfig { dropout: o.p, bias: o.bias, causal: o.causal }
    }
}

/// Gradients of a [`MultiHeadAttention`].
#[derive(Clone, Debug)]
pub struct MultiHeadAttentionGrads<B: Backend> {
    /// Of `in_proj_weight`.
    pub in_proj_weight: Tensor<B, 2>,
    /// Of `in_proj_bias`, when there is one.
    pub in_proj_bias: Option<Tensor<B, 1>>,
    /// Of `out_proj`.
    pub out_proj: LinearGrads<B>,
}

/// What [`MultiHeadAttention`]'s backward needs.
#[derive(Clone, Debug)]
pub struct MultiHeadAttentionCache<B: Backend> {
    /// The query, keys and values as rows `[n T, D]`, `[n S, D]`.
    inputs: [Tensor<B, 2>; 3],
    /// The projected, split query, keys and values `[n, H, len, D / H]`.
    heads: [Tensor<B, 4>; 3],
    /// The attention weights `[n, H, T, S]` before dropout.
    weights: Tensor<B, 4>,
    /// The seed of the dropout mask on them, when training dropped anything.
    dropped: Option<u64>,
    /// `out_proj`'s cache: its input as rows, and that input's shape.
    joined: (Tensor<B, 2>, [usize; 3]),
}

impl<B: Backend, const D: usize, const H: usize> MultiHeadAttention<B, D, H> {
    /// Initialised as PyTorch does (the spec's parameter list):
    /// `in_proj_weight` Xavier-uniform, `out_proj.weight` uniform in
    /// `±1/sqrt(D)`, both biases zero.
    pub fn new(config: MultiHeadAttentionConfig, rng: &mut Rng, device: &B::Device) -> Self {
        const { assert!(H > 0 && D.is_multiple_of(H), "MultiHeadAttention<D, H>: H must divide D") };
        assert!(
            (0.0..1.0).contains(&config.dropout),
            "MultiHeadAttention: dropout {} is outside [0, 1)",
            config.dropout
        );
        let options = Options { bias: config.bias, ..Options::DEFAULT };
        let params = Spec::MultiHeadAttention.params(&[D, H], &options);
        let find = |name: &str| params.iter().find(|p| p.name == name);
        let in_proj_weight = init_param(find("in_proj_weight").expect("the spec lists in_proj_weight"), rng, device);
        let in_proj_bias = find("in_proj_bias").map(|p| init_param(p, rng, device));
        let mut out_proj = Linear::new(LinearConfig { bias: config.bias }, rng, device);
        out_proj.weight = init_param(find("out_proj.weight").expect("the spec lists out_proj.weight"), rng, device);
        out_proj.bias = find("out_proj.bias").map(|p| init_param(p, rng, device));
        MultiHeadAttention { in_proj_weight, in_proj_bias, out_proj, config }
    }

    /// `[n len, D]` rows as heads `[n, H, len, D / H]`.
    fn split(rows: &Tensor<B, 2>, n: usize) -> Tensor<B, 4> {
        rows.reshape([n as i64, -1, H as i64, (D / H) as i64]).permute([0, 2, 1, 3])
    }

    /// Heads `[n, H, len, D / H]` back as `[n, len, D]`.
    fn join(heads: &Tensor<B, 4>) -> Tensor<B, 3> {
        let [n, _, len, _] = heads.shape();
        heads.permute([0, 2, 1, 3]).reshape([n, len, D])
    }

    /// The checked query, keys and values as rows `[n len, D]`, and
    /// projected and split into heads.
    fn heads<P: Projections<B>>(
        p: &P,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        mask: Option<&Tensor<B, 2>>,
    ) -> ([Tensor<B, 2>; 3], [Tensor<B, 4>; 3]) {
        Self::check(q, k, v, mask);
        let n = q.shape()[0];
        let rows = [q, k, v].map(|x| x.reshape([-1, D as i64]));
        let heads = std::array::from_fn(|i| Self::split(&p.project(&rows[i], i), n));
        (rows, heads)
    }

    fn check(q: &Tensor<B, 3>, k: &Tensor<B, 3>, v: &Tensor<B, 3>, mask: Option<&Tensor<B, 2>>) {
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        let fits = qs[2] == D && ks[2] == D && vs[2] == D && ks == vs && qs[0] == ks[0];
        assert!(
            fits,
            "MultiHeadAttention<{D}, {H}>: expects a query [n, T, {D}] and keys and values [n, S, {D}], got {qs:?}, \
             {ks:?} and {vs:?}"
        );
        if let Some(m) = mask {
            assert!(
                m.shape() == [ks[0], ks[1]],
                "MultiHeadAttention<{D}, {H}>: the key-padding mask is [n, S] = {:?}, got {:?}",
                [ks[0], ks[1]],
                m.shape()
            );
        }
    }

    /// How the scores become weights: scaled by `1 / sqrt(D / H)` and, when
    /// causal, query `i` seeing keys `0..=i` (PyTorch's is_causal: the
    /// top-left triangle), in the softmax's one pass.
    fn softmax_options(config: &MultiHeadAttentionConfig) -> SoftmaxOptions {
        let o = SoftmaxOptions::default().scale(1.0 / ((D / H) as f64).sqrt());
        if config.causal { o.causal() } else { o }
    }

    /// The attention weights `[n, H, T, S]` of projected heads, masked.
    fn weights(
        config: &MultiHeadAttentionConfig,
        q: &Tensor<B, 4>,
        k: &Tensor<B, 4>,
        mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 4> {
        let mut scores = q.matmul(&k.transpose(2, 3));
        if let Some(m) = mask {
            let [n, _, _, s] = scores.shape();
            let padding: Tensor<B, 4> = m.ne_scalar(0.0).reshape([n, 1, 1, s]);
            scores = scores.masked_fill(&padding, f64::NEG_INFINITY);
        }
        scores.softmax_with(3, Self::softmax_options(config))
    }

    /// The inference attention of any projections `p` (this layer's, or
    /// its int8 form's): what [`Attend::attend`] computes.
    pub(crate) fn infer<P: Projections<B>>(
        p: &P,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3> {
        let (_, [qh, kh, vh]) = Self::heads(p, q, k, v, key_padding_mask);
        // Without padding, attention runs tiled where the backend can: the
        // [n, H, T, S] weights are never held (the training forward keeps
        // them for the backward).
        let heads = match key_padding_mask {
            None => {
                let o = Self::softmax_options(p.config());
                qh.scaled_dot_product_attention(&kh, &vh, o.causal, Some(o.scale))
            }
            Some(_) => Self::weights(p.config(), &qh, &kh, key_padding_mask).matmul(&vh),
        };
        p.project_out(&Self::join(&heads))
    }
}

/// The projections of a multi-head attention, float
/// ([`MultiHeadAttention`]) or int8 (`blaze::quant`): what its inference
/// passes read, which both forms share.
pub(crate) trait Projections<B: Backend> {
    /// Causal or not.
    fn config(&self) -> &MultiHeadAttentionConfig;
    /// Rows `[n len, D]` projected by projection `i` (0 query, 1 keys, 2
    /// values).
    fn project(&self, rows: &Tensor<B, 2>, i: usize) -> Tensor<B, 2>;
    /// The joined heads `[n, len, D]` through the output projection.
    fn project_out(&self, joined: &Tensor<B, 3>) -> Tensor<B, 3>;
}

impl<B: Backend, const D: usize, const H: usize> Projections<B> for MultiHeadAttention<B, D, H> {
    fn config(&self) -> &MultiHeadAttentionConfig {
        &self.config
    }

    fn project(&self, rows: &Tensor<B, 2>, i: usize) -> Tensor<B, 2> {
        let w = self.in_proj_weight.narrow(0, i * D, D);
        let b = self.in_proj_bias.as_ref().map(|b| b.narrow(0, i * D, D));
        rows.matmul(&w.t()).bias_act(b.as_ref(), 1, None)
    }

    fn project_out(&self, joined: &Tensor<B, 3>) -> Tensor<B, 3> {
        self.out_proj.forward(joined)
    }
}

impl<B: Backend, const D: usize, const H: usize> Module<B> for MultiHeadAttention<B, D, H> {
    type Grads = MultiHeadAttentionGrads<B>;

    fn visit_params<V: super::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        v.visit(&super::join(prefix, "in_proj_weight"), &self.in_proj_weight);
        if let Some(b) = &self.in_proj_bias {
            v.visit(&super::join(prefix, "in_proj_bias"), b);
        }
        self.out_proj.visit_params(&super::join(prefix, "out_proj"), v);
    }

    fn map_tensors<M: super::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        self.in_proj_weight = m.map(&super::join(prefix, "in_proj_weight"), self.in_proj_weight.clone());
        if let Some(b) = self.in_proj_bias.take() {
            self.in_proj_bias = Some(m.map(&super::join(prefix, "in_proj_bias"), b));
        }
        self.out_proj.map_tensors(&super::join(prefix, "out_proj"), m);
    }

    fn visit_grads<V: super::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
        v.visit(&super::join(prefix, "in_proj_weight"), &mut self.in_proj_weight, &g.in_proj_weight);
        if let (Some(b), Some(gb)) = (&mut self.in_proj_bias, &g.in_proj_bias) {
            v.visit(&super::join(prefix, "in_proj_bias"), b, gb);
        }
        self.out_proj.visit_grads(&g.out_proj, &super::join(prefix, "out_proj"), v);
    }

    fn visit_grad_tensors<V: super::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
        v.visit(&super::join(prefix, "in_proj_weight"), &g.in_proj_weight);
        if let Some(gb) = &g.in_proj_bias {
            v.visit(&super::join(prefix, "in_proj_bias"), gb);
        }
        Linear::<B, D, D>::visit_grad_tensors(&g.out_proj, &super::join(prefix, "out_proj"), v);
    }

    fn map_grad_tensors<M: super::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
        g.in_proj_weight = m.map(&super::join(prefix, "in_proj_weight"), g.in_proj_weight.clone());
        if let Some(gb) = g.in_proj_bias.take() {
            g.in_proj_bias = Some(m.map(&super::join(prefix, "in_proj_bias"), gb));
        }
        Linear::<B, D, D>::map_grad_tensors(&mut g.out_proj, &super::join(prefix, "out_proj"), m);
    }

    fn make_grads<F: super::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
        MultiHeadAttentionGrads {
            in_proj_weight: f.grad(&super::join(prefix, "in_proj_weight"), &self.in_proj_weight),
            in_proj_bias: self.in_proj_bias.as_ref().map(|b| f.grad(&super::join(prefix, "in_proj_bias"), b)),
            out_proj: self.out_proj.make_grads(&super::join(prefix, "out_proj"), f),
        }
    }
}

/// The keys and values one attention layer has seen while decoding, as
/// heads `[n, H, t, D / H]`: what [`MultiHeadAttention::attend_step`]
/// attends over and appends to.
#[derive(Clone, Debug, Default)]
pub struct KvCache<B: Backend> {
    keys: Option<Tensor<B, 4>>,
    values: Option<Tensor<B, 4>>,
}

impl<B: Backend> KvCache<B> {
    /// An empty cache.
    pub fn new() -> Self {
        KvCache { keys: None, values: None }
    }

    /// How many positions it holds.
    pub fn len(&self) -> usize {
        self.keys.as_ref().map_or(0, |k| k.shape()[2])
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_none()
    }

    /// Appends the heads of new positions, and returns all keys and values.
    fn push(&mut self, k: Tensor<B, 4>, v: Tensor<B, 4>) -> (Tensor<B, 4>, Tensor<B, 4>) {
        let grow = |old: &mut Option<Tensor<B, 4>>, new: Tensor<B, 4>| {
            let all = match old.take() {
                Some(old) => Tensor::cat(&[old, new], 2),
                None => new,
            };
            *old = Some(all.clone());
            all
        };
        (grow(&mut self.keys, k), grow(&mut self.values, v))
    }
}

impl<B: Backend, const D: usize, const H: usize> MultiHeadAttention<B, D, H> {
    /// Causal self-attention of new positions `x` (`[n, s, D]`, usually
    /// one) after the positions `cache` holds: their keys and values join
    /// the cache, and each new position attends over every cached one and
    /// the new ones up to itself. Stepping a sequence through gives what
    /// [`Attend::attend`] gives the whole sequence, one position at a time.
    pub fn attend_step(&self, x: &Tensor<B, 3>, cache: &mut KvCache<B>) -> Tensor<B, 3> {
        Self::step(self, x, cache)
    }

    /// [`MultiHeadAttention::attend_step`] of any projections `p`.
    pub(crate) fn step<P: Projections<B>>(p: &P, x: &Tensor<B, 3>, cache: &mut KvCache<B>) -> Tensor<B, 3> {
        let [n, s, d] = x.shape();
        assert!(d == D, "MultiHeadAttention<{D}, {H}>::attend_step: expects [n, s, {D}], got {:?}", x.shape());
        assert!(
            p.config().causal,
            "MultiHeadAttention<{D}, {H}>::attend_step: decoding needs causal attention (`#[layer(causal = true)]`)"
        );
        let rows: Tensor<B, 2> = x.reshape([-1, D as i64]);
        let [q, k, v] = std::array::from_fn(|i| Self::split(&p.project(&rows, i), n));
        let past = cache.len();
        let (keys, values) = cache.push(k, v);
        let o = Self::softmax_options(p.config());
        let mut scores = q.matmul(&keys.transpose(2, 3)).mul_scalar(o.scale);
        if s > 1 {
            // New position i (at past + i) sees keys up to past + i.
            let t = past + s;
            let ids = Tensor::<B, 1>::arange(0..t as i64, &x.device());
            let queries: Tensor<B, 2> = ids.narrow(0, past, s).reshape([s, 1]);
            let later: Tensor<B, 4> = queries.lt(&ids.reshape([1, t])).reshape([1, 1, s, t]);
            scores = scores.masked_fill(&later, f64::NEG_INFINITY);
        }
        let heads = scores.softmax(3).matmul(&values);
        p.project_out(&Self::join(&heads))
    }
}

impl<B: Backend, const D: usize, const H: usize> Attend<B> for MultiHeadAttention<B, D, H> {
    type AttendCache = MultiHeadAttentionCache<B>;

    fn attend(
        &self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3> {
        Self::infer(self, q, k, v, key_padding_mask)
    }

    fn attend_train(
        &mut self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
        ctx: &mut Ctx,
    ) -> (Tensor<B, 3>, Self::AttendCache) {
        let (inputs, heads) = Self::heads(self, q, k, v, key_padding_mask);
        let weights = Self::weights(&self.config, &heads[0], &heads[1], key_padding_mask);
        let mut dropout = Dropout::new(DropoutConfig { p: self.config.dropout });
        let (kept, dropped) = Layer::<B, 4, 4>::forward_train(&mut dropout, &weights, ctx);
        let joined_in = Self::join(&kept.matmul(&heads[2]));
        let (y, joined) = Layer::<B, 3, 3>::forward_train(&mut self.out_proj, &joined_in, ctx);
        (y, MultiHeadAttentionCache { inputs, heads, weights, dropped, joined })
    }

    fn attend_backward(&self, cache: &Self::AttendCache, g: &Tensor<B, 3>) -> (AttendInputs<B>, Self::Grads) {
        let MultiHeadAttentionCache { inputs, heads: [qh, kh, vh], weights, dropped, joined } = cache;
        let (d_joined, out_proj) = Layer::<B, 3, 3>::backward(&self.out_proj, joined, g);
        let n = g.shape()[0];
        let d_ctx = Self::split(&d_joined.reshape([-1, D as i64]), n);
        let dropout = Dropout::new(DropoutConfig { p: self.config.dropout });
        let kept = match dropped {
            Some(seed) => dropout.apply(weights, *seed),
            None => weights.clone(),
        };
        let matmul_grads = |g: &Tensor<B, 4>, a: &Tensor<B, 4>, b: &Tensor<B, 4>| {
            let da = adjoint::matmul_lhs::<B>(g.storage(), b.storage(), &a.shape());
            let db = adjoint::matmul_rhs::<B>(g.storage(), a.storage(), &b.shape());
            (Tensor::<B, 4>::from_storage(da), Tensor::<B, 4>::from_storage(db))
        };
        let (d_kept, d_vh) = matmul_grads(&d_ctx, &kept, vh);
        let d_weights = match dropped {
            Some(seed) => dropout.apply(&d_kept, *seed),
            None => d_kept,
        };
        // The scale and the mask are the softmax's: its adjoint applies both.
        let d_scores = Tensor::<B, 4>::from_storage(adjoint::softmax::<B>(
            d_weights.storage(),
            weights.storage(),
            3,
            Self::softmax_options(&self.config),
        ));
        let (d_qh, d_kt) = matmul_grads(&d_scores, qh, &kh.transpose(2, 3));
        let d_heads = [d_qh, d_kt.transpose(2, 3), d_vh];
        // Each projection: rows `[n len, D]` through its slice of the weight.
        let mut d_inputs = Vec::with_capacity(3);
        let (mut d_w, mut d_b) = (Vec::with_capacity(3), Vec::with_capacity(3));
        for (i, dh) in d_heads.iter().enumerate() {
            let rows = Self::join(dh).reshape([-1, D as i64]);
            let w = self.in_proj_weight.narrow(0, i * D, D);
            let dx: Tensor<B, 2> = Tensor::from_storage(adjoint::linear_input::<B>(rows.storage(), w.storage()));
            let (dw, db) =
                adjoint::linear_params::<B>(rows.storage(), inputs[i].storage(), self.in_proj_bias.is_some());
            d_inputs.push(dx);
            d_w.push(Tensor::<B, 2>::from_storage(dw));
            d_b.extend(db.map(Tensor::<B, 1>::from_storage));
        }
        let shape = |x: &Tensor<B, 2>, like: &Tensor<B, 4>| {
            let [_, _, len, _] = like.shape();
            x.reshape([n, len, D])
        };
        let dq = shape(&d_inputs[0], qh);
        let dk = shape(&d_inputs[1], kh);
        let dv = shape(&d_inputs[2], vh);
        let grads = MultiHeadAttentionGrads {
            in_proj_weight: Tensor::cat(&d_w, 0),
            in_proj_bias: (!d_b.is_empty()).then(|| Tensor::cat(&d_b, 0)),
            out_proj,
        };
        ((dq, dk, dv), grads)
    }
}

impl<B: Backend, const D: usize, const H: usize> Layer<B, 3, 3> for MultiHeadAttention<B, D, H> {
    /// Self-attention: the query, keys and values are the input.
    type Cache = MultiHeadAttentionCache<B>;

    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        self.attend(x, x, x, None)
    }

    fn forward_train(&mut self, x: &Tensor<B, 3>, ctx: &mut Ctx) -> (Tensor<B, 3>, Self::Cache) {
        self.attend_train(x, x, x, None, ctx)
    }

    fn backward(&self, cache: &Self::Cache, g: &Tensor<B, 3>) -> (Tensor<B, 3>, Self::Grads) {
        let ((dq, dk, dv), grads) = self.attend_backward(cache, g);
        (dq.add(&dk).add(&dv), grads)
    }
}

impl<B: Backend, const D: usize, const H: usize> super::FromSpec<B> for MultiHeadAttention<B, D, H> {
    const LAYER: Spec = Spec::MultiHeadAttention;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        MultiHeadAttention::new(o.into(), rng, device)
    }
}
