//! Normalisation layers: `BatchNorm2d<C>` and `BatchNorm1d<C>` (per
//! channel, over the batch and the spatial or length dims), `LayerNorm<N>`
//! and `RMSNorm<N>` (per sample, over the last dim) and `GroupNorm<G, C>`
//! (per sample, over groups of channels).

use super::params::weight_bias_module;
use super::spec::init_param;
use super::{Ctx, Layer, WeightGrads};
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor};
use blaze_spec::{Layer as Spec, Options};

/// Options of the normalisation layers, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct NormConfig {
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Weight of the newest batch in the running statistics (BatchNorm).
    pub momentum: f64,
}

impl Default for NormConfig {
    fn default() -> Self {
        (&Options::DEFAULT).into()
    }
}

/// Gradients of a normalisation layer's scale (`weight`) and shift (`bias`,
/// always present).
pub type NormGrads<B> = WeightGrads<B, 1>;

/// Batch normalisation of `[n, C, h, w]`, as `torch.nn.BatchNorm2d`.
#[derive(Clone, Debug)]
pub struct BatchNorm2d<B: Backend, const C: usize> {
    /// Scale, `[C]`, initially ones.
    pub weight: Tensor<B, 1>,
    /// Shift, `[C]`, initially zeros.
    pub bias: Tensor<B, 1>,
    /// Running mean, `[C]` (a buffer).
    pub running_mean: Tensor<B, 1>,
    /// Running unbiased variance, `[C]` (a buffer).
    pub running_var: Tensor<B, 1>,
    /// Options.
    pub config: NormConfig,
}

/// What a batch norm's backward needs ([`BatchNorm2d`], [`BatchNorm1d`]).
#[derive(Clone, Debug)]
pub struct BatchNormCache<B: Backend> {
    x_hat: Tensor<B, 4>,
    inv_std: Tensor<B, 4>,
    /// Whether batch statistics were used (training) or running ones.
    batch_stats: bool,
}

impl<B: Backend, const C: usize> BatchNorm2d<B, C> {
    /// A fresh layer: identity affine map, zero mean and unit variance.
    pub fn new(config: NormConfig, device: &B::Device) -> Self {
        let [weight, bias, running_mean, running_var] = batch_norm_params::<B>(Spec::BatchNorm2d, C, device);
        BatchNorm2d { weight, bias, running_mean, running_var, config }
    }

    fn check(x: &Tensor<B, 4>) {
        assert!(x.shape()[1] == C, "BatchNorm2d<{C}>: expects [n, {C}, h, w], got {:?}", x.shape());
    }
}

weight_bias_module!([const C: usize] BatchNorm2d<B, C>, 1, buffers: [running_mean, running_var]);

impl<B: Backend, const C: usize> Layer<B, 4, 4> for BatchNorm2d<B, C> {
    type Cache = BatchNormCache<B>;

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        Self::check(x);
        batch_norm_eval(&self.weight, &self.bias, &self.running_mean, &self.running_var, self.config, x).0
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, ctx: &mut Ctx) -> (Tensor<B, 4>, BatchNormCache<B>) {
        Self::check(x);
        let BatchNorm2d { weight, bias, running_mean, running_var, config } = self;
        batch_norm_train(weight, bias, running_mean, running_var, *config, x, ctx.train)
    }

    fn backward(&self, c: &BatchNormCache<B>, g: &Tensor<B, 4>) -> (Tensor<B, 4>, NormGrads<B>) {
        batch_norm_backward(&self.weight, c, g)
    }
}

/// Batch normalisation of `[n, C]` or `[n, C, L]`, as `torch.nn.BatchNorm1d`.
#[derive(Clone, Debug)]
pub struct BatchNorm1d<B: Backend, const C: usize> {
    /// Scale, `[C]`, initially ones.
    pub weight: Tensor<B, 1>,
    /// Shift, `[C]`, initially zeros.
    pub bias: Tensor<B, 1>,
    /// Running mean, `[C]` (a buffer).
    pub running_mean: Tensor<B, 1>,
    /// Running unbiased variance, `[C]` (a buffer).
    pub running_var: Tensor<B, 1>,
    /// Options.
    pub config: NormConfig,
}

impl<B: Backend, const C: usize> BatchNorm1d<B, C> {
    /// A fresh layer: identity affine map, zero mean and unit variance.
    pub fn new(config: NormConfig, device: &B::Device) -> Self {
        let [weight, bias, running_mean, running_var] = batch_norm_params::<B>(Spec::BatchNorm1d, C, device);
        BatchNorm1d { weight, bias, running_mean, running_var, config }
    }

    /// `x` (`[n, C]` or `[n, C, L]`) as `[n, C, L, 1]`, the image layout the
    /// batch-norm math takes.
    fn as_image<const D: usize>(x: &Tensor<B, D>) -> Tensor<B, 4> {
        let s = x.shape();
        assert!((D == 2 || D == 3) && s[1] == C, "BatchNorm1d<{C}>: expects [n, {C}] or [n, {C}, L], got {s:?}");
        let len = if D == 3 { s[2] } else { 1 };
        x.reshape([s[0], C, len, 1])
    }
}

weight_bias_module!([const C: usize] BatchNorm1d<B, C>, 1, buffers: [running_mean, running_var]);

impl<B: Backend, const C: usize, const D: usize> Layer<B, D, D> for BatchNorm1d<B, C> {
    type Cache = BatchNormCache<B>;

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        let x4 = Self::as_image(x);
        batch_norm_eval(&self.weight, &self.bias, &self.running_mean, &self.running_var, self.config, &x4)
            .0
            .reshape(x.shape())
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, ctx: &mut Ctx) -> (Tensor<B, D>, BatchNormCache<B>) {
        let x4 = Self::as_image(x);
        let BatchNorm1d { weight, bias, running_mean, running_var, config } = self;
        let (y, cache) = batch_norm_train(weight, bias, running_mean, running_var, *config, &x4, ctx.train);
        (y.reshape(x.shape()), cache)
    }

    fn backward(&self, c: &BatchNormCache<B>, g: &Tensor<B, D>) -> (Tensor<B, D>, NormGrads<B>) {
        let (dx, grads) = batch_norm_backward(&self.weight, c, &Self::as_image(g));
        (dx.reshape(g.shape()), grads)
    }
}

/// A batch norm's weight, bias, running mean and running variance for `c`
/// channels, as the spec lists them.
fn batch_norm_params<B: Backend>(layer: Spec, c: usize, device: &B::Device) -> [Tensor<B, 1>; 4] {
    let p = layer.params(&[c], &Options::DEFAULT);
    // Ones and zeros draw nothing from the generator.
    let rng = &mut Rng::seed_from_u64(0);
    std::array::from_fn(|i| init_param(&p[i], rng, device))
}

/// `t` (`[C]`) as `[1, C, 1, 1]`.
fn per_channel<B: Backend>(t: &Tensor<B, 1>) -> Tensor<B, 4> {
    let c = t.shape()[0];
    t.reshape([1, c, 1, 1])
}

/// Batch norm of `[n, C, h, w]` with the running statistics: the output,
/// `x̂` and `σ⁻¹`.
fn batch_norm_eval<B: Backend>(
    weight: &Tensor<B, 1>,
    bias: &Tensor<B, 1>,
    running_mean: &Tensor<B, 1>,
    running_var: &Tensor<B, 1>,
    config: NormConfig,
    x: &Tensor<B, 4>,
) -> (Tensor<B, 4>, Tensor<B, 4>, Tensor<B, 4>) {
    let inv_std = per_channel(&running_var.add_scalar(config.eps).sqrt().recip());
    let x_hat = x.sub(&per_channel(running_mean)).mul(&inv_std);
    let y = x_hat.mul(&per_channel(weight)).add(&per_channel(bias));
    (y, x_hat, inv_std)
}

/// Batch norm of `[n, C, h, w]` in a training forward: batch statistics
/// (which update the running ones) when `train`, else the running ones.
fn batch_norm_train<B: Backend>(
    weight: &Tensor<B, 1>,
    bias: &Tensor<B, 1>,
    running_mean: &mut Tensor<B, 1>,
    running_var: &mut Tensor<B, 1>,
    config: NormConfig,
    x: &Tensor<B, 4>,
    train: bool,
) -> (Tensor<B, 4>, BatchNormCache<B>) {
    if !train {
        let (y, x_hat, inv_std) = batch_norm_eval(weight, bias, running_mean, running_var, config, x);
        return (y, BatchNormCache { x_hat, inv_std, batch_stats: false });
    }
    let [n, c, h, w] = x.shape();
    let m = (n * h * w) as f64;
    let mean = x.mean_dim(0).mean_dim(2).mean_dim(3);
    let centred = x.sub(&mean);
    let var = centred.square().mean_dim(0).mean_dim(2).mean_dim(3);
    let inv_std = var.add_scalar(config.eps).sqrt().recip();
    let x_hat = centred.mul(&inv_std);
    let y = x_hat.mul(&per_channel(weight)).add(&per_channel(bias));
    // The running variance is the unbiased estimate, as in PyTorch.
    let k = config.momentum;
    let unbiased = var.mul_scalar(m / (m - 1.0).max(1.0)).reshape([c]);
    // Running statistics are buffers, not part of the step's graph:
    // detached, a tape-trained model does not chain every step's graph
    // into the next.
    let mean = mean.detach();
    let unbiased = unbiased.detach();
    *running_mean = running_mean.mul_scalar(1.0 - k).add(&mean.reshape([c]).mul_scalar(k));
    *running_var = running_var.mul_scalar(1.0 - k).add(&unbiased.mul_scalar(k));
    (y, BatchNormCache { x_hat, inv_std, batch_stats: true })
}

/// The backward of [`batch_norm_train`] (or of the eval forward).
fn batch_norm_backward<B: Backend>(
    weight: &Tensor<B, 1>,
    cache: &BatchNormCache<B>,
    g: &Tensor<B, 4>,
) -> (Tensor<B, 4>, NormGrads<B>) {
    let c = weight.shape()[0];
    let sum = |t: &Tensor<B, 4>| t.sum_dim(0).sum_dim(2).sum_dim(3);
    let dbeta = sum(g);
    let dgamma = sum(&g.mul(&cache.x_hat));
    let scale = per_channel(weight).mul(&cache.inv_std);
    let dx = if cache.batch_stats {
        // With batch statistics the mean and variance depend on x:
        // dx = γ σ⁻¹ (g - mean(g) - x̂ mean(g x̂)), means over n, h, w.
        let [n, _, h, w] = g.shape();
        let m = (n * h * w) as f64;
        g.sub(&dbeta.div_scalar(m)).sub(&cache.x_hat.mul(&dgamma.div_scalar(m))).mul(&scale)
    } else {
        g.mul(&scale)
    };
    (dx, NormGrads { weight: dgamma.reshape([c]), bias: Some(dbeta.reshape([c])) })
}

/// Layer normalisation over the last dim of size `N`, as `torch.nn.LayerNorm(N)`.
#[derive(Clone, Debug)]
pub struct LayerNorm<B: Backend, const N: usize> {
    /// Scale, `[N]`, initially ones.
    pub weight: Tensor<B, 1>,
    /// Shift, `[N]`, initially zeros.
    pub bias: Tensor<B, 1>,
    /// Options (`momentum` is unused).
    pub config: NormConfig,
}

impl<B: Backend, const N: usize> LayerNorm<B, N> {
    /// A fresh layer with the identity affine map.
    pub fn new(config: NormConfig, device: &B::Device) -> Self {
        let p = Spec::LayerNorm.params(&[N], &Options::DEFAULT);
        let rng = &mut Rng::seed_from_u64(0);
        LayerNorm { weight: init_param(&p[0], rng, device), bias: init_param(&p[1], rng, device), config }
    }

    /// Normalises the last dim of `x`, for any rank.
    pub fn forward<const D: usize>(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        Layer::<B, D, D>::forward(self, x)
    }

    /// The output and each row's statistics, in one pass on backends that
    /// fuse it.
    fn normalise<const D: usize>(&self, x: &Tensor<B, D>) -> (Tensor<B, D>, Tensor<B, D>) {
        assert!(x.shape()[D - 1] == N, "LayerNorm<{N}>: expects input [.., {N}], got {:?}", x.shape());
        x.norm_with_stats(Some(&self.weight), Some(&self.bias), self.config.eps, true)
    }
}

weight_bias_module!([const N: usize] LayerNorm<B, N>, 1);

impl<B: Backend, const N: usize, const D: usize> Layer<B, D, D> for LayerNorm<B, N> {
    /// The input and each row's mean and inverse standard deviation
    /// (`[.., 2]`): the backward recomputes the normalised input from them
    /// rather than keeping a copy.
    type Cache = (Tensor<B, D>, Tensor<B, D>);

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        self.normalise(x).0
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        let (y, stats) = self.normalise(x);
        (y, (x.clone(), stats))
    }

    fn backward(&self, (x, stats): &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, NormGrads<B>) {
        let (dx, weight, bias) = g.norm_backward(x, stats, Some(&self.weight), true);
        (dx, NormGrads { weight, bias: Some(bias) })
    }
}

/// A normalisation over the last dim whose statistics a fused group
/// before it computes in its own pass ([`call_norm`](blaze_runtime::kernel::call_norm)):
/// what `#[model]` calls for a LayerNorm or RMSNorm field that alone reads
/// a group's value. Its cache is then the layer's own (`(input, stats)`),
/// so the layer's backward runs unchanged.
pub trait RowNormLayer<B: Backend> {
    /// The layer's parameters as `call_norm` takes them.
    fn row_norm(&self) -> blaze_runtime::kernel::Norm<'_, B>;
}

impl<B: Backend, const N: usize> RowNormLayer<B> for LayerNorm<B, N> {
    fn row_norm(&self) -> blaze_runtime::kernel::Norm<'_, B> {
        blaze_runtime::kernel::Norm {
            weight: Some(&self.weight),
            bias: Some(&self.bias),
            eps: self.config.eps,
            centre: true,
        }
    }
}

impl<B: Backend, const N: usize> RowNormLayer<B> for RMSNorm<B, N> {
    fn row_norm(&self) -> blaze_runtime::kernel::Norm<'_, B> {
        blaze_runtime::kernel::Norm { weight: self.weight.as_ref(), bias: None, eps: self.config.eps, centre: false }
    }
}

/// Root-mean-square normalisation over the last dim of size `N`, as
/// `torch.nn.RMSNorm(N)`: `x / sqrt(mean(x²) + eps)`, times a learnable
/// per-feature `weight` unless `elementwise_affine` is off.
#[derive(Clone, Debug)]
pub struct RMSNorm<B: Backend, const N: usize> {
    /// Scale, `[N]`, initially ones; `None` without `elementwise_affine`.
    pub weight: Option<Tensor<B, 1>>,
    /// Options.
    pub config: RMSNormConfig,
}

/// Options of [`RMSNorm`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct RMSNormConfig {
    /// Added to the mean square; PyTorch's default is the float type's
    /// epsilon (`f32::EPSILON`).
    pub eps: f64,
    /// Whether the layer has a learnable `weight` (default true).
    pub elementwise_affine: bool,
}

impl Default for RMSNormConfig {
    fn default() -> Self {
        (&Spec::RMSNorm.defaults()).into()
    }
}

impl From<&Options> for RMSNormConfig {
    fn from(o: &Options) -> Self {
        RMSNormConfig { eps: o.eps, elementwise_affine: o.elementwise_affine }
    }
}

impl<B: Backend, const N: usize> RMSNorm<B, N> {
    /// A fresh layer: a weight of ones, if it has one.
    pub fn new(config: RMSNormConfig, device: &B::Device) -> Self {
        let options = Options { eps: config.eps, elementwise_affine: config.elementwise_affine, ..Options::DEFAULT };
        let p = Spec::RMSNorm.params(&[N], &options);
        let rng = &mut Rng::seed_from_u64(0);
        RMSNorm { weight: p.first().map(|w| init_param(w, rng, device)), config }
    }

    /// Normalises the last dim of `x`, for any rank.
    pub fn forward<const D: usize>(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        Layer::<B, D, D>::forward(self, x)
    }

    /// The output and each row's statistics, in one pass on backends that
    /// fuse it.
    fn normalise<const D: usize>(&self, x: &Tensor<B, D>) -> (Tensor<B, D>, Tensor<B, D>) {
        assert!(x.shape()[D - 1] == N, "RMSNorm<{N}>: expects input [.., {N}], got {:?}", x.shape());
        x.norm_with_stats(self.weight.as_ref(), None, self.config.eps, false)
    }
}

impl<B: Backend, const N: usize> super::Module<B> for RMSNorm<B, N> {
    type Grads = Option<Tensor<B, 1>>;

    fn visit_params<V: super::ParamVisitor<B>>(&self, prefix: &str, v: &mut V) {
        if let Some(w) = &self.weight {
            v.visit(&super::join(prefix, "weight"), w);
        }
    }

    fn map_tensors<M: super::ParamMapper<B>>(&mut self, prefix: &str, m: &mut M) {
        if let Some(w) = self.weight.take() {
            self.weight = Some(m.map(&super::join(prefix, "weight"), w));
        }
    }

    fn visit_grads<V: super::GradVisitor<B>>(&mut self, g: &Self::Grads, prefix: &str, v: &mut V) {
        if let (Some(w), Some(gw)) = (&mut self.weight, g) {
            v.visit(&super::join(prefix, "weight"), w, gw);
        }
    }

    fn visit_grad_tensors<V: super::ParamVisitor<B>>(g: &Self::Grads, prefix: &str, v: &mut V) {
        if let Some(gw) = g {
            v.visit(&super::join(prefix, "weight"), gw);
        }
    }

    fn map_grad_tensors<M: super::ParamMapper<B>>(g: &mut Self::Grads, prefix: &str, m: &mut M) {
        if let Some(gw) = g.take() {
            *g = Some(m.map(&super::join(prefix, "weight"), gw));
        }
    }

    fn make_grads<F: super::GradSource<B>>(&self, prefix: &str, f: &mut F) -> Self::Grads {
        self.weight.as_ref().map(|w| f.grad(&super::join(prefix, "weight"), w))
    }
}

impl<B: Backend, const N: usize, const D: usize> Layer<B, D, D> for RMSNorm<B, N> {
    /// The input and each row's statistics (`[.., 2]`, the second the
    /// inverse root mean square).
    type Cache = (Tensor<B, D>, Tensor<B, D>);

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        self.normalise(x).0
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        let (y, stats) = self.normalise(x);
        (y, (x.clone(), stats))
    }

    fn backward(&self, (x, stats): &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, Option<Tensor<B, 1>>) {
        let (dx, weight, _) = g.norm_backward(x, stats, self.weight.as_ref(), false);
        (dx, self.weight.as_ref().map(|_| weight))
    }
}

impl<B: Backend, const N: usize, const D: usize> super::Recompute<B, D> for RMSNorm<B, N> {
    /// The same pass as the forward's, so the same values.
    fn recompute(&self, (x, _): &Self::Cache) -> Tensor<B, D> {
        self.normalise(x).0
    }
}

impl<B: Backend, const N: usize> super::FromSpec<B> for RMSNorm<B, N> {
    const LAYER: Spec = Spec::RMSNorm;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        RMSNorm::new(o.into(), device)
    }
}

/// Group normalisation of `[n, C, ..]`, as `torch.nn.GroupNorm(G, C)`:
/// the channels fall into `G` groups, each normalised (with the dims after
/// it) per sample, then scaled and shifted per channel.
#[derive(Clone, Debug)]
pub struct GroupNorm<B: Backend, const G: usize, const C: usize> {
    /// Scale, `[C]`, initially ones.
    pub weight: Tensor<B, 1>,
    /// Shift, `[C]`, initially zeros.
    pub bias: Tensor<B, 1>,
    /// Options (`momentum` is unused).
    pub config: NormConfig,
}

impl<B: Backend, const G: usize, const C: usize> GroupNorm<B, G, C> {
    /// A fresh layer with the identity affine map.
    pub fn new(config: NormConfig, device: &B::Device) -> Self {
        const { assert!(G > 0 && C.is_multiple_of(G), "GroupNorm<G, C>: G must divide C") };
        let p = Spec::GroupNorm.params(&[G, C], &Options::DEFAULT);
        let rng = &mut Rng::seed_from_u64(0);
        GroupNorm { weight: init_param(&p[0], rng, device), bias: init_param(&p[1], rng, device), config }
    }

    /// `t` (`[C]`) shaped to broadcast along dim 1 of a rank-`D` tensor.
    fn per_channel<const D: usize>(t: &Tensor<B, 1>) -> Tensor<B, D> {
        let mut shape = [1; D];
        shape[1] = C;
        t.reshape(shape)
    }

    /// `x` as `[n, G, rest]`: each group's values in one row.
    fn grouped<const D: usize>(x: &Tensor<B, D>) -> Tensor<B, 3> {
        let n = x.shape()[0] as i64;
        x.reshape([n, G as i64, -1])
    }

    fn normalise<const D: usize>(&self, x: &Tensor<B, D>) -> (Tensor<B, D>, Tensor<B, 3>) {
        assert!(D >= 2 && x.shape()[1] == C, "GroupNorm<{G}, {C}>: expects input [n, {C}, ..], got {:?}", x.shape());
        let rows = Self::grouped(x);
        let centred = rows.sub(&rows.mean_dim(2));
        let inv_std = centred.square().mean_dim(2).add_scalar(self.config.eps).sqrt().recip();
        (centred.mul(&inv_std).reshape(x.shape()), inv_std)
    }

    /// `Σ t` over every dim but the channels: `[C]`.
    fn channel_sums<const D: usize>(t: &Tensor<B, D>) -> Tensor<B, 1> {
        let n = t.shape()[0] as i64;
        let per_channel: Tensor<B, 3> = t.reshape([n, C as i64, -1]);
        per_channel.sum_dim(2).sum_dim(0).reshape([C])
    }
}

weight_bias_module!([const G: usize, const C: usize] GroupNorm<B, G, C>, 1);

impl<B: Backend, const G: usize, const C: usize, const D: usize> Layer<B, D, D> for GroupNorm<B, G, C> {
    /// The normalised input and the inverse standard deviation per group.
    type Cache = (Tensor<B, D>, Tensor<B, 3>);

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        let (x_hat, _) = self.normalise(x);
        x_hat.mul(&Self::per_channel(&self.weight)).add(&Self::per_channel(&self.bias))
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Self::Cache) {
        let (x_hat, inv_std) = self.normalise(x);
        let y = x_hat.mul(&Self::per_channel(&self.weight)).add(&Self::per_channel(&self.bias));
        (y, (x_hat, inv_std))
    }

    fn backward(&self, (x_hat, inv_std): &Self::Cache, g: &Tensor<B, D>) -> (Tensor<B, D>, NormGrads<B>) {
        // LayerNorm's rule within each group: with gx = g γ,
        // dx = σ⁻¹ (gx - mean(gx) - x̂ mean(gx x̂)), means over the group.
        let gx = Self::grouped(&g.mul(&Self::per_channel(&self.weight)));
        let hat = Self::grouped(x_hat);
        let dx = gx.sub(&gx.mean_dim(2)).sub(&hat.mul(&gx.mul(&hat).mean_dim(2))).mul(inv_std);
        let grads = NormGrads { weight: Self::channel_sums(&g.mul(x_hat)), bias: Some(Self::channel_sums(g)) };
        (dx.reshape(g.shape()), grads)
    }
}

impl<B: Backend, const G: usize, const C: usize> super::FromSpec<B> for GroupNorm<B, G, C> {
    const LAYER: Spec = Spec::GroupNorm;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        GroupNorm::new(o.into(), device)
    }
}

impl From<&Options> for NormConfig {
    fn from(o: &Options) -> Self {
        NormConfig { eps: o.eps, momentum: o.momentum }
    }
}

impl<B: Backend, const C: usize> super::FromSpec<B> for BatchNorm2d<B, C> {
    const LAYER: Spec = Spec::BatchNorm2d;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        BatchNorm2d::new(o.into(), device)
    }
}

impl<B: Backend, const C: usize> super::FromSpec<B> for BatchNorm1d<B, C> {
    const LAYER: Spec = Spec::BatchNorm1d;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        BatchNorm1d::new(o.into(), device)
    }
}

impl<B: Backend, const N: usize, const D: usize> super::Recompute<B, D> for LayerNorm<B, N> {
    /// The same pass as the forward's, so the same values.
    fn recompute(&self, (x, _): &Self::Cache) -> Tensor<B, D> {
        self.normalise(x).0
    }
}

impl<B: Backend, const N: usize> super::FromSpec<B> for LayerNorm<B, N> {
    const LAYER: Spec = Spec::LayerNorm;
    fn from_spec(o: &Options, _: &mut Rng, device: &B::Device) -> Self {
        LayerNorm::new(o.into(), device)
    }
}
