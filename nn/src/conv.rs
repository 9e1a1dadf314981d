//! `Conv2d<B, CIN, COUT, K>`: a square-kernel 2-D convolution, as
//! `torch.nn.Conv2d`; `Conv1d<B, CIN, COUT, K>`, as `torch.nn.Conv1d`, which
//! runs as a 2-D convolution of height one; `ConvTranspose2d<B, CIN, COUT,
//! K>`, as `torch.nn.ConvTranspose2d`, which runs as a convolution's input
//! gradient.

use super::params::weight_bias_module;
use super::spec::init_weight_bias;
use super::{Ctx, Layer, WeightGrads};
use blaze_runtime::adjoint;
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Conv2dOptions, Tensor, UnaryOp};
use blaze_spec::{Layer as Spec, Options};

/// Options of [`Conv2d`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct Conv2dConfig {
    /// Step between windows.
    pub stride: usize,
    /// Zeros added on every side.
    pub padding: usize,
    /// Spacing between kernel taps.
    pub dilation: usize,
    /// Channel groups.
    pub groups: usize,
    /// Whether the layer adds a bias.
    pub bias: bool,
}

impl Default for Conv2dConfig {
    fn default() -> Self {
        (&Options::DEFAULT).into()
    }
}

impl Conv2dConfig {
    /// The options of the functional op.
    pub fn options(&self) -> Conv2dOptions {
        Conv2dOptions::default().stride(self.stride).padding(self.padding).dilation(self.dilation).groups(self.groups)
    }
}

/// A 2-D convolution from `CIN` to `COUT` channels with a `K x K` kernel.
#[derive(Clone, Debug)]
pub struct Conv2d<B: Backend, const CIN: usize, const COUT: usize, const K: usize> {
    /// `[COUT, CIN / groups, K, K]`.
    pub weight: Tensor<B, 4>,
    /// `[COUT]`.
    pub bias: Option<Tensor<B, 1>>,
    /// Stride, padding, dilation and groups.
    pub options: Conv2dOptions,
}

/// Gradients of a [`Conv2d`].
pub type Conv2dGrads<B> = WeightGrads<B, 4>;

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Conv2d<B, CIN, COUT, K> {
    /// The convolution of a batch `[n, CIN, h, w]`.
    pub fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        Layer::<B, 4, 4>::forward(self, x)
    }

    /// Initialised as PyTorch does (the spec's parameter list): uniform in
    /// `±1/sqrt(CIN / groups * K * K)`.
    pub fn new(config: Conv2dConfig, rng: &mut Rng, device: &B::Device) -> Self {
        let g = config.groups;
        assert!(
            g > 0 && CIN.is_multiple_of(g) && COUT.is_multiple_of(g),
            "Conv2d<{CIN}, {COUT}, {K}>: {g} groups must divide both channel counts"
        );
        let options = Options { groups: g, bias: config.bias, ..Options::DEFAULT };
        let (weight, bias) = init_weight_bias(Spec::Conv2d, &[CIN, COUT, K], &options, rng, device);
        Conv2d { weight, bias, options: config.options() }
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Conv2d<B, CIN, COUT, K> {
    /// `act(conv(x) + b)`, the activation after the layer applied in place
    /// on the convolution's output. `#[model]` calls it for a `Conv2d`
    /// followed by an activation whose derivative reads its output (ReLU,
    /// sigmoid, tanh: the bias pass keeps no input for it).
    pub fn forward_act(&self, x: &Tensor<B, 4>, act: Option<UnaryOp>) -> Tensor<B, 4> {
        self.forward_fused(x, act, None)
    }

    /// `act(conv(x) + b) + residual`, the activation and the residual
    /// connection in one pass over the convolution's output where the
    /// backend fuses them. `#[model]` calls it for a block's `x + conv(h)`.
    pub fn forward_fused(
        &self,
        x: &Tensor<B, 4>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, 4>>,
    ) -> Tensor<B, 4> {
        let y = x.conv2d(&self.weight, self.bias.as_ref(), self.options);
        conv_epilogue(y, None, act, residual, &|| format!("Conv2d<{CIN}, {COUT}, {K}>"))
    }

    /// The training [`Conv2d::forward_act`]: its output and the layer's cache.
    pub fn forward_train_act(&self, x: &Tensor<B, 4>, act: Option<UnaryOp>) -> (Tensor<B, 4>, Tensor<B, 4>) {
        self.forward_train_fused(x, act, None)
    }

    /// The training [`Conv2d::forward_fused`]: its output and the layer's cache.
    pub fn forward_train_fused(
        &self,
        x: &Tensor<B, 4>,
        act: Option<UnaryOp>,
        residual: Option<&Tensor<B, 4>>,
    ) -> (Tensor<B, 4>, Tensor<B, 4>) {
        (self.forward_fused(x, act, residual), x.clone())
    }
}

weight_bias_module!([const CIN: usize, const COUT: usize, const K: usize] Conv2d<B, CIN, COUT, K>, 4);

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Layer<B, 4, 4> for Conv2d<B, CIN, COUT, K> {
    type Cache = Tensor<B, 4>;

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        self.forward_act(x, None)
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Tensor<B, 4>) {
        self.forward_train_act(x, None)
    }

    fn backward(&self, x: &Tensor<B, 4>, g: &Tensor<B, 4>) -> (Tensor<B, 4>, Conv2dGrads<B>) {
        let dx = adjoint::conv2d_input::<B>(g.storage(), self.weight.storage(), x.shape(), &self.options);
        (Tensor::from_storage(dx), self.backward_params(x, g))
    }

    fn backward_params(&self, x: &Tensor<B, 4>, g: &Tensor<B, 4>) -> Conv2dGrads<B> {
        let dw = adjoint::conv2d_weight::<B>(g.storage(), x.storage(), self.weight.shape(), &self.options);
        // The bias is added at every position of every sample.
        let bias = self.bias.as_ref().map(|_| Tensor::from_storage(adjoint::bias::<B>(g.storage(), 1)));
        Conv2dGrads { weight: Tensor::from_storage(dw), bias }
    }
}

/// Options of [`Conv1d`]: those of [`Conv2d`], along the length.
pub type Conv1dConfig = Conv2dConfig;

/// `act(y + bias) (+ residual)` over a convolution's output `y` (channels
/// in dim 1), in one pass where the backend fuses it: what follows the
/// product, float or int8 (`blaze::quant`); `layer` names the layer in a
/// shape panic.
pub(crate) fn conv_epilogue<B: Backend>(
    y: Tensor<B, 4>,
    bias: Option<&Tensor<B, 1>>,
    act: Option<UnaryOp>,
    residual: Option<&Tensor<B, 4>>,
    layer: &dyn Fn() -> String,
) -> Tensor<B, 4> {
    match residual {
        Some(r) => {
            assert!(r.shape() == y.shape(), "{}: residual {:?} for output {:?}", layer(), r.shape(), y.shape());
            y.bias_act_add(bias, 1, act, r)
        }
        None if act.is_some() || bias.is_some() => y.bias_act(bias, 1, act),
        None => y,
    }
}

/// A 1-D convolution of `[n, CIN, L]` from `CIN` to `COUT` channels with a
/// kernel of `K`, as `torch.nn.Conv1d`.
#[derive(Clone, Debug)]
pub struct Conv1d<B: Backend, const CIN: usize, const COUT: usize, const K: usize> {
    /// `[COUT, CIN / groups, K]`.
    pub weight: Tensor<B, 3>,
    /// `[COUT]`.
    pub bias: Option<Tensor<B, 1>>,
    /// Stride, padding and dilation along the width of a height-one image,
    /// and groups.
    pub options: Conv2dOptions,
}

/// Gradients of a [`Conv1d`].
pub type Conv1dGrads<B> = WeightGrads<B, 3>;

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Conv1d<B, CIN, COUT, K> {
    /// Initialised as PyTorch does (the spec's parameter list): uniform in
    /// `±1/sqrt(CIN / groups * K)`.
    pub fn new(config: Conv1dConfig, rng: &mut Rng, device: &B::Device) -> Self {
        let g = config.groups;
        assert!(
            g > 0 && CIN.is_multiple_of(g) && COUT.is_multiple_of(g),
            "Conv1d<{CIN}, {COUT}, {K}>: {g} groups must divide both channel counts"
        );
        let options = Options { groups: g, bias: config.bias, ..Options::DEFAULT };
        let (weight, bias) = init_weight_bias(Spec::Conv1d, &[CIN, COUT, K], &options, rng, device);
        let options = Conv2dOptions {
            stride: [1, config.stride],
            padding: [0, config.padding],
            dilation: [1, config.dilation],
            groups: g,
        };
        Conv1d { weight, bias, options }
    }

    /// `[n, C, L]` as the image `[n, C, 1, L]`.
    fn image(x: &Tensor<B, 3>) -> Tensor<B, 4> {
        let [n, c, l] = x.shape();
        x.reshape([n, c, 1, l])
    }

    /// The weight as a `1 x K` kernel.
    fn kernel(&self) -> Tensor<B, 4> {
        let [o, c, k] = self.weight.shape();
        self.weight.reshape([o, c, 1, k])
    }

    /// The image `[n, C, 1, L]` back as `[n, C, L]`.
    fn sequence(y: &Tensor<B, 4>) -> Tensor<B, 3> {
        let [n, c, _, l] = y.shape();
        y.reshape([n, c, l])
    }
}

weight_bias_module!([const CIN: usize, const COUT: usize, const K: usize] Conv1d<B, CIN, COUT, K>, 3);

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Layer<B, 3, 3> for Conv1d<B, CIN, COUT, K> {
    type Cache = Tensor<B, 3>;

    fn forward(&self, x: &Tensor<B, 3>) -> Tensor<B, 3> {
        let [_, c, _] = x.shape();
        assert!(c == CIN, "Conv1d<{CIN}, {COUT}, {K}>: expects [n, {CIN}, L], got {:?}", x.shape());
        Self::sequence(&Self::image(x).conv2d(&self.kernel(), self.bias.as_ref(), self.options))
    }

    fn forward_train(&mut self, x: &Tensor<B, 3>, _: &mut Ctx) -> (Tensor<B, 3>, Tensor<B, 3>) {
        (Layer::<B, 3, 3>::forward(self, x), x.clone())
    }

    fn backward(&self, x: &Tensor<B, 3>, g: &Tensor<B, 3>) -> (Tensor<B, 3>, Conv1dGrads<B>) {
        let x4 = Self::image(x);
        let dx =
            adjoint::conv2d_input::<B>(Self::image(g).storage(), self.kernel().storage(), x4.shape(), &self.options);
        (Self::sequence(&Tensor::from_storage(dx)), self.backward_params(x, g))
    }

    fn backward_params(&self, x: &Tensor<B, 3>, g: &Tensor<B, 3>) -> Conv1dGrads<B> {
        let [o, c, k] = self.weight.shape();
        let dw = adjoint::conv2d_weight::<B>(
            Self::image(g).storage(),
            Self::image(x).storage(),
            [o, c, 1, k],
            &self.options,
        );
        // The bias is added at every position of every sample.
        let bias = self.bias.as_ref().map(|_| Tensor::from_storage(adjoint::bias::<B>(g.storage(), 1)));
        Conv1dGrads { weight: Tensor::<B, 4>::from_storage(dw).reshape([o, c, k]), bias }
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> super::FromSpec<B> for Conv1d<B, CIN, COUT, K> {
    const LAYER: Spec = Spec::Conv1d;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Conv1d::new(o.into(), rng, device)
    }
}

impl From<&Options> for Conv2dConfig {
    fn from(o: &Options) -> Self {
        let stride = o.stride_of(Spec::Conv2d, 0);
        Conv2dConfig { stride, padding: o.padding, dilation: o.dilation, groups: o.groups, bias: o.bias }
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> super::FromSpec<B> for Conv2d<B, CIN, COUT, K> {
    const LAYER: Spec = Spec::Conv2d;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        Conv2d::new(o.into(), rng, device)
    }
}

/// Options of [`ConvTranspose2d`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct ConvTranspose2dConfig {
    /// Step between the input pixels' placements in the output.
    pub stride: usize,
    /// Rows and columns removed from each side of the output.
    pub padding: usize,
    /// Rows and columns added to one side of the output (smaller than the
    /// stride or the dilation).
    pub output_padding: usize,
    /// Spacing between kernel taps.
    pub dilation: usize,
    /// Channel groups.
    pub groups: usize,
    /// Whether the layer adds a bias.
    pub bias: bool,
}

impl Default for ConvTranspose2dConfig {
    fn default() -> Self {
        (&Spec::ConvTranspose2d.defaults()).into()
    }
}

impl From<&Options> for ConvTranspose2dConfig {
    fn from(o: &Options) -> Self {
        ConvTranspose2dConfig {
            stride: o.stride_of(Spec::ConvTranspose2d, 0),
            padding: o.padding,
            output_padding: o.output_padding,
            dilation: o.dilation,
            groups: o.groups,
            bias: o.bias,
        }
    }
}

/// A 2-D transposed convolution from `CIN` to `COUT` channels with a
/// `K x K` kernel, as `torch.nn.ConvTranspose2d`: the adjoint of a
/// convolution from `COUT` to `CIN` channels with the same options, so it
/// upsamples by its stride, to `(h - 1) stride - 2 padding + dilation (K -
/// 1) + output_padding + 1` rows.
#[derive(Clone, Debug)]
pub struct ConvTranspose2d<B: Backend, const CIN: usize, const COUT: usize, const K: usize> {
    /// `[CIN, COUT / groups, K, K]`, PyTorch's layout.
    pub weight: Tensor<B, 4>,
    /// `[COUT]`.
    pub bias: Option<Tensor<B, 1>>,
    /// Stride, padding, dilation and groups of the convolution it is the
    /// adjoint of.
    pub options: Conv2dOptions,
    /// Rows and columns added to one side of the output.
    pub output_padding: usize,
}

/// Gradients of a [`ConvTranspose2d`].
pub type ConvTranspose2dGrads<B> = WeightGrads<B, 4>;

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> ConvTranspose2d<B, CIN, COUT, K> {
    /// Initialised as PyTorch does (the spec's parameter list): uniform in
    /// `±1/sqrt(COUT / groups * K * K)`.
    pub fn new(config: ConvTranspose2dConfig, rng: &mut Rng, device: &B::Device) -> Self {
        let g = config.groups;
        assert!(
            g > 0 && CIN.is_multiple_of(g) && COUT.is_multiple_of(g),
            "ConvTranspose2d<{CIN}, {COUT}, {K}>: {g} groups must divide both channel counts"
        );
        assert!(
            config.output_padding < config.stride.max(config.dilation),
            "ConvTranspose2d<{CIN}, {COUT}, {K}>: output_padding {} must be smaller than the stride {} or the \
             dilation {}",
            config.output_padding,
            config.stride,
            config.dilation
        );
        let options = Options { groups: g, bias: config.bias, ..Options::DEFAULT };
        let (weight, bias) = init_weight_bias(Spec::ConvTranspose2d, &[CIN, COUT, K], &options, rng, device);
        let options = Conv2dOptions::default()
            .stride(config.stride)
            .padding(config.padding)
            .dilation(config.dilation)
            .groups(config.groups);
        ConvTranspose2d { weight, bias, options, output_padding: config.output_padding }
    }

    /// The transposed convolution of a batch `[n, CIN, h, w]`.
    pub fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        Layer::<B, 4, 4>::forward(self, x)
    }

    /// `x` with the zero rows and columns its convolution's adjoint needs
    /// below and right of it: an `output_padding` of at least the stride
    /// (PyTorch allows it below the dilation) adds output positions past
    /// the last window of the convolution this layer is the adjoint of.
    /// That convolution, run on the longer output, has `output_padding /
    /// stride` more windows per axis, which the input fills with zeros.
    fn widened(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        let [eh, ew] = self.extra();
        x.pad([(0, 0), (0, 0), (0, eh), (0, ew)], 0.0)
    }

    /// The zero rows and columns [`ConvTranspose2d::widened`] adds.
    fn extra(&self) -> [usize; 2] {
        self.options.stride.map(|s| self.output_padding / s)
    }

    /// The output's size along a dim of `input` (height or width).
    fn out_size(&self, input: usize, axis: usize) -> usize {
        let o = &self.options;
        let span = o.dilation[axis] * (K - 1) + self.output_padding + 1;
        ((input - 1) * o.stride[axis] + span).checked_sub(2 * o.padding[axis]).filter(|&n| n > 0).unwrap_or_else(|| {
            panic!(
                "ConvTranspose2d<{CIN}, {COUT}, {K}>: an input of {input} leaves no output with padding {:?}",
                o.padding
            )
        })
    }
}

weight_bias_module!([const CIN: usize, const COUT: usize, const K: usize] ConvTranspose2d<B, CIN, COUT, K>, 4);

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Layer<B, 4, 4>
    for ConvTranspose2d<B, CIN, COUT, K>
{
    type Cache = Tensor<B, 4>;

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        let [n, c, h, w] = x.shape();
        assert!(c == CIN, "ConvTranspose2d<{CIN}, {COUT}, {K}>: expects [n, {CIN}, h, w], got {:?}", x.shape());
        let shape = [n, COUT, self.out_size(h, 0), self.out_size(w, 1)];
        self.widened(x).conv2d_input_grad(&self.weight, shape, self.options).bias_act(self.bias.as_ref(), 1, None)
    }

    /// The cache is the input as the adjoint reads it: widened.
    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Tensor<B, 4>) {
        (Layer::<B, 4, 4>::forward(self, x), self.widened(x))
    }

    fn backward(&self, x: &Tensor<B, 4>, g: &Tensor<B, 4>) -> (Tensor<B, 4>, ConvTranspose2dGrads<B>) {
        let dx = Tensor::from_storage(adjoint::conv_transpose2d_input::<B>(
            g.storage(),
            self.weight.storage(),
            &self.options,
        ));
        // The widened rows and columns were zeros, not input.
        let [_, _, h, w] = x.shape();
        let [eh, ew] = self.extra();
        let dx = if eh + ew > 0 { dx.narrow(2, 0, h - eh).narrow(3, 0, w - ew) } else { dx };
        (dx, self.backward_params(x, g))
    }

    fn backward_params(&self, x: &Tensor<B, 4>, g: &Tensor<B, 4>) -> ConvTranspose2dGrads<B> {
        let dw = adjoint::conv_transpose2d_weight::<B>(g.storage(), x.storage(), self.weight.shape(), &self.options);
        // The bias is added at every position of every sample.
        let bias = self.bias.as_ref().map(|_| Tensor::from_storage(adjoint::bias::<B>(g.storage(), 1)));
        ConvTranspose2dGrads { weight: Tensor::from_storage(dw), bias }
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> super::FromSpec<B>
    for ConvTranspose2d<B, CIN, COUT, K>
{
    const LAYER: Spec = Spec::ConvTranspose2d;
    fn from_spec(o: &Options, rng: &mut Rng, device: &B::Device) -> Self {
        ConvTranspose2d::new(o.into(), rng, device)
    }
}
