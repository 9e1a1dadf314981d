//! Pooling, resampling and reshaping layers: `MaxPool2d<K>`,
//! `AvgPool2d<K>`, `AdaptiveAvgPool2d<H, W>`, `Upsample`, `GlobalAvgPool`
//! and `Flatten`. None has parameters. Adaptive pooling and upsampling are
//! separable linear maps of an image, `Rows x Colsᵀ`, with the weights
//! PyTorch's kernels use: two matrix products forward and two backward, on
//! every backend.

use super::{Ctx, Layer, stateless_module};
use blaze_runtime::adjoint;
use blaze_runtime::{Backend, DType, Pool2dOptions, Tensor};
use blaze_spec::Interpolation;

/// Options of the pooling layers.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolConfig {
    /// Step between windows; `None` means the kernel size (PyTorch's default).
    pub stride: Option<usize>,
    /// Implicit padding on every side.
    pub padding: usize,
    /// Round the output size up (PyTorch's `ceil_mode`); an average over a
    /// window the rounding adds divides by its part inside the padded input.
    pub ceil_mode: bool,
}

/// Max pooling over `K x K` windows.
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d<const K: usize> {
    /// Window, stride and padding.
    pub options: Pool2dOptions,
}

/// Average pooling over `K x K` windows (padding counts as zeros).
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2d<const K: usize> {
    /// Window, stride and padding.
    pub options: Pool2dOptions,
}

fn pool_options(k: usize, config: PoolConfig) -> Pool2dOptions {
    Pool2dOptions::new(k).stride(config.stride.unwrap_or(k)).padding(config.padding).ceil_mode(config.ceil_mode)
}

impl<const K: usize> MaxPool2d<K> {
    /// Max pooling with the given options.
    pub fn new(config: PoolConfig) -> Self {
        MaxPool2d { options: pool_options(K, config) }
    }
}

impl<const K: usize> AvgPool2d<K> {
    /// Average pooling with the given options.
    pub fn new(config: PoolConfig) -> Self {
        AvgPool2d { options: pool_options(K, config) }
    }
}

impl<const K: usize> Default for MaxPool2d<K> {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

impl<const K: usize> Default for AvgPool2d<K> {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

/// Average pooling to a `H x W` output whatever the input's size, as
/// `torch.nn.AdaptiveAvgPool2d((H, W))`: output row `i` of `H` averages
/// input rows `floor(i h / H)` up to `ceil((i + 1) h / H)`, and columns
/// likewise.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdaptiveAvgPool2d<const H: usize, const W: usize>;

/// Upsampling of images by `scale_factor`, as `torch.nn.Upsample(
/// scale_factor=.., mode=.., align_corners=..)`: the output is
/// `floor(h s) x floor(w s)`; `mode` is nearest (the default) or bilinear,
/// which with `align_corners` maps the corner pixels' centres onto each
/// other (`nn.UpsamplingBilinear2d`) instead of the images' edges.
#[derive(Clone, Copy, Debug)]
pub struct Upsample {
    /// The factor on each spatial dim.
    pub scale_factor: f64,
    /// How new pixels are computed.
    pub mode: Interpolation,
    /// Corner-aligned bilinear sampling.
    pub align_corners: bool,
}

/// Options of [`Upsample`].
#[derive(Clone, Copy, Debug)]
pub struct UpsampleConfig {
    /// The factor on each spatial dim (default 2).
    pub scale_factor: f64,
    /// Nearest (default) or bilinear.
    pub mode: Interpolation,
    /// Corner-aligned bilinear sampling (default false; bilinear only).
    pub align_corners: bool,
}

impl Default for UpsampleConfig {
    fn default() -> Self {
        (&blaze_spec::Layer::Upsample.defaults()).into()
    }
}

impl From<&blaze_spec::Options> for UpsampleConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        UpsampleConfig { scale_factor: o.scale_factor, mode: o.mode, align_corners: o.align_corners }
    }
}

impl Upsample {
    /// An upsampling with the given options.
    pub fn new(config: UpsampleConfig) -> Self {
        assert!(
            config.scale_factor > 0.0 && config.scale_factor.is_finite(),
            "Upsample: scale_factor must be positive, got {}",
            config.scale_factor
        );
        assert!(
            !config.align_corners || config.mode == Interpolation::Bilinear,
            "Upsample: align_corners only applies to bilinear upsampling"
        );
        Upsample { scale_factor: config.scale_factor, mode: config.mode, align_corners: config.align_corners }
    }

    /// The `[output, input]` weights along a dim.
    fn weights(&self, input: usize, output: usize) -> Vec<f64> {
        upsample_weights(input, output, self.scale_factor, self.mode, self.align_corners)
    }

    /// The output size along a dim of `input`.
    fn size(&self, input: usize) -> usize {
        (input as f64 * self.scale_factor).floor() as usize
    }
}

impl Default for Upsample {
    fn default() -> Self {
        Upsample::new(UpsampleConfig::default())
    }
}

/// The `[output, input]` weights of adaptive average pooling along a dim.
fn adaptive_weights(input: usize, output: usize) -> Vec<f64> {
    let mut m = vec![0.0; output * input];
    for (i, row) in m.chunks_mut(input).enumerate() {
        let (start, end) = (i * input / output, ((i + 1) * input).div_ceil(output));
        row[start..end].fill(1.0 / (end - start) as f64);
    }
    m
}

/// The `[output, input]` weights of upsampling along a dim, with PyTorch's
/// source coordinates for a given scale factor: computed in f32 from
/// `1 / scale_factor` (or, corner-aligned, from `(input - 1) / (output -
/// 1)`), as its CPU kernels compute them, so the same input pixels are
/// chosen.
fn upsample_weights(
    input: usize,
    output: usize,
    scale_factor: f64,
    mode: Interpolation,
    align_corners: bool,
) -> Vec<f64> {
    let ratio = if align_corners {
        if output > 1 { (input - 1) as f32 / (output - 1) as f32 } else { 0.0 }
    } else {
        (1.0 / scale_factor) as f32
    };
    let mut m = vec![0.0; output * input];
    for (o, row) in m.chunks_mut(input).enumerate() {
        match mode {
            Interpolation::Nearest => {
                let src = if output == input { o } else { ((o as f32 * ratio).floor() as usize).min(input - 1) };
                row[src] = 1.0;
            }
            Interpolation::Bilinear => {
                let src = if align_corners { ratio * o as f32 } else { (ratio * (o as f32 + 0.5) - 0.5).max(0.0) };
                let lo = (src as usize).min(input - 1);
                let hi = if lo < input - 1 { lo + 1 } else { lo };
                let frac = src - lo as f32;
                row[lo] += f64::from(1.0 - frac);
                row[hi] += f64::from(frac);
            }
        }
    }
    m
}

/// `weights` (`[rows, cols]`) as a matrix broadcast over an image batch, in
/// the dtype and on the device of `like`.
fn matrix<B: Backend>(rows: usize, cols: usize, weights: Vec<f64>, like: &Tensor<B, 4>) -> Tensor<B, 4> {
    let shape = [1, 1, rows, cols];
    match like.dtype() {
        DType::F64 => Tensor::from_vec(weights, shape, &like.device()),
        _ => Tensor::from_vec(weights.into_iter().map(|w| w as f32).collect::<Vec<f32>>(), shape, &like.device()),
    }
}

/// `rows x image x colsᵀ` for weights of `[out_h, h]` and `[out_w, w]`.
fn resample<B: Backend>(x: &Tensor<B, 4>, rows: (usize, Vec<f64>), cols: (usize, Vec<f64>)) -> Tensor<B, 4> {
    let [_, _, h, w] = x.shape();
    let cols_t = matrix(cols.0, w, cols.1, x).transpose(2, 3);
    matrix(rows.0, h, rows.1, x).matmul(&x.matmul(&cols_t))
}

/// The adjoint of [`resample`]: `rowsᵀ x g x cols`, back to `h x w`.
fn resample_adjoint<B: Backend>(
    g: &Tensor<B, 4>,
    (h, rows): (usize, Vec<f64>),
    (w, cols): (usize, Vec<f64>),
) -> Tensor<B, 4> {
    let [_, _, out_h, out_w] = g.shape();
    let rows_t = matrix(out_h, h, rows, g).transpose(2, 3);
    rows_t.matmul(&g.matmul(&matrix(out_w, w, cols, g)))
}

/// Mean over the spatial dims: `[n, c, h, w] -> [n, c]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GlobalAvgPool;

/// Flattens every dim after the batch dim: `[n, ...] -> [n, prod(...)]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flatten;

stateless_module!(GlobalAvgPool, Flatten, Upsample);
stateless_module!(generics [const K: usize] MaxPool2d<K>, AvgPool2d<K>);
stateless_module!(generics [const H: usize, const W: usize] AdaptiveAvgPool2d<H, W>);

impl<B: Backend, const H: usize, const W: usize> Layer<B, 4, 4> for AdaptiveAvgPool2d<H, W> {
    /// The input's height and width.
    type Cache = (usize, usize);

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        let [_, _, h, w] = x.shape();
        resample(x, (H, adaptive_weights(h, H)), (W, adaptive_weights(w, W)))
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Self::Cache) {
        let [_, _, h, w] = x.shape();
        (Layer::<B, 4, 4>::forward(self, x), (h, w))
    }

    fn backward(&self, &(h, w): &Self::Cache, g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        (resample_adjoint(g, (h, adaptive_weights(h, H)), (w, adaptive_weights(w, W))), ())
    }
}

impl<B: Backend> Layer<B, 4, 4> for Upsample {
    /// The input's height and width.
    type Cache = (usize, usize);

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        let [_, _, h, w] = x.shape();
        let (oh, ow) = (self.size(h), self.size(w));
        assert!(oh > 0 && ow > 0, "Upsample: scale_factor {} leaves no pixels of [{h}, {w}]", self.scale_factor);
        resample(x, (oh, self.weights(h, oh)), (ow, self.weights(w, ow)))
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Self::Cache) {
        let [_, _, h, w] = x.shape();
        (Layer::<B, 4, 4>::forward(self, x), (h, w))
    }

    fn backward(&self, &(h, w): &Self::Cache, g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        let (oh, ow) = (self.size(h), self.size(w));
        (resample_adjoint(g, (h, self.weights(h, oh)), (w, self.weights(w, ow))), ())
    }
}

impl<B: Backend, const K: usize> Layer<B, 4, 4> for MaxPool2d<K> {
    /// Where each maximum came from, and the input shape.
    type Cache = (Tensor<B, 4>, [usize; 4]);

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        x.max_pool2d(self.options)
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Self::Cache) {
        let (y, idx) = x.max_pool2d_with_indices(self.options);
        (y, (idx, x.shape()))
    }

    fn backward(&self, (idx, shape): &Self::Cache, g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        (Tensor::from_storage(adjoint::max_pool2d::<B>(g.storage(), shape, idx.storage())), ())
    }
}

impl<B: Backend, const K: usize> Layer<B, 4, 4> for AvgPool2d<K> {
    type Cache = [usize; 4];

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        x.avg_pool2d(self.options)
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, [usize; 4]) {
        (x.avg_pool2d(self.options), x.shape())
    }

    fn backward(&self, shape: &[usize; 4], g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        (Tensor::from_storage(adjoint::avg_pool2d::<B>(g.storage(), shape, &self.options)), ())
    }
}

impl<B: Backend> Layer<B, 4, 2> for GlobalAvgPool {
    type Cache = [usize; 4];

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 2> {
        let [n, c, _, _] = x.shape();
        x.mean_dim(2).mean_dim(3).reshape([n, c])
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 2>, [usize; 4]) {
        (Layer::<B, 4, 2>::forward(self, x), x.shape())
    }

    fn backward(&self, shape: &[usize; 4], g: &Tensor<B, 2>) -> (Tensor<B, 4>, ()) {
        // A mean over the h x w positions of each plane.
        let [n, c, h, w] = *shape;
        let g4: Tensor<B, 4> = g.reshape([n, c, 1, 1]);
        (Tensor::from_storage(adjoint::mean::<B>(g4.storage(), shape, h * w)), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, 2> for Flatten {
    type Cache = [usize; D];

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, 2> {
        let s = x.shape();
        x.reshape([s[0], s[1..].iter().product()])
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, 2>, [usize; D]) {
        (Layer::<B, D, 2>::forward(self, x), x.shape())
    }

    fn backward(&self, shape: &[usize; D], g: &Tensor<B, 2>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::reshape::<B>(g.storage(), shape)), ())
    }
}

impl From<&blaze_spec::Options> for PoolConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        PoolConfig { stride: o.stride, padding: o.padding, ceil_mode: o.ceil_mode }
    }
}

impl<B: Backend, const K: usize> super::FromSpec<B> for MaxPool2d<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::MaxPool2d;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        MaxPool2d::new(o.into())
    }
}

impl<B: Backend, const K: usize> super::FromSpec<B> for AvgPool2d<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::AvgPool2d;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        AvgPool2d::new(o.into())
    }
}

impl<B: Backend, const H: usize, const W: usize> super::FromSpec<B> for AdaptiveAvgPool2d<H, W> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::AdaptiveAvgPool2d;
    fn from_spec(_: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        AdaptiveAvgPool2d
    }
}

impl<B: Backend> super::FromSpec<B> for Upsample {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::Upsample;
    fn from_spec(o: &blaze_spec::Options, _: &mut blaze_runtime::rng::Rng, _: &B::Device) -> Self {
        Upsample::new(o.into())
    }
}

super::spec::plain_from_spec!(GlobalAvgPool, Flatten);
