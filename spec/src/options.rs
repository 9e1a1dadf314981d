//! The `#[layer(..)]` keys, their kinds and ranges, and the options they
//! resolve to with PyTorch's defaults (which keys a layer takes, and
//! what they mean for it: `layers.rs`, `layer_options.rs`).

/// A layer's options with every default filled in (PyTorch's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Convolution and pooling stride; `None`: 1 for a convolution, the
    /// window for pooling.
    pub stride: Option<usize>,
    /// Zero padding on each side.
    pub padding: usize,
    /// Convolution dilation.
    pub dilation: usize,
    /// Convolution groups.
    pub groups: usize,
    /// Whether `Linear` and `Conv2d` add a bias.
    pub bias: bool,
    /// Dropout probability.
    pub p: f64,
    /// `LeakyRelu`'s slope below zero.
    pub negative_slope: f64,
    /// Normalisation epsilon.
    pub eps: f64,
    /// `BatchNorm2d`'s running-statistics momentum.
    pub momentum: f64,
    /// `Elu`'s value for large negative inputs (`alpha (exp(x) - 1)`).
    pub alpha: f64,
    /// `Softplus`'s sharpness: `log(1 + exp(beta x)) / beta`.
    pub beta: f64,
    /// `Softplus` is the identity where `beta x` exceeds this.
    pub threshold: f64,
    /// `Softmax`'s and `LogSoftmax`'s dimension of the per-sample shape; negative counts from
    /// the last (-1).
    pub dim: i64,
    /// Whether `RMSNorm` has a learnable per-feature weight.
    pub elementwise_affine: bool,
    /// `Upsample`'s factor on each spatial dim.
    pub scale_factor: f64,
    /// `Upsample`'s interpolation.
    pub mode: Interpolation,
    /// Rows and columns a transposed convolution adds on one side of its
    /// output, to choose among the sizes a strided convolution maps back
    /// from.
    pub output_padding: usize,
    /// Whether attention hides later positions from earlier ones.
    pub causal: bool,
    /// Recurrent layers stacked in one `Lstm` or `Gru`.
    pub num_layers: usize,
    /// Whether a recurrent layer also runs from the last step to the first.
    pub bidirectional: bool,
    /// Whether bilinear upsampling maps the corner pixels' centres onto
    /// each other (PyTorch's `align_corners`), rather than the images'
    /// edges.
    pub align_corners: bool,
    /// Whether max pooling rounds its output size up, as PyTorch's
    /// `ceil_mode`: a last window that starts inside the input (or its
    /// left padding) but runs past it still counts.
    pub ceil_mode: bool,
}

/// How `Upsample` computes new pixels (PyTorch's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// Each output pixel copies the nearest input pixel (`"nearest"`).
    Nearest,
    /// Linear along each spatial dim, with half-pixel centres
    /// (`"bilinear"`, PyTorch's `align_corners=False`).
    Bilinear,
}

impl Interpolation {
    /// Every mode.
    pub const ALL: [Interpolation; 2] = [Interpolation::Nearest, Interpolation::Bilinear];

    /// Its name as written (`mode = "bilinear"`).
    pub const fn name(self) -> &'static str {
        match self {
            Interpolation::Nearest => "nearest",
            Interpolation::Bilinear => "bilinear",
        }
    }
}

impl Options {
    /// PyTorch's defaults, as a constant.
    pub const DEFAULT: Options = Options {
        stride: None,
        padding: 0,
        dilation: 1,
        groups: 1,
        bias: true,
        p: 0.5,
        negative_slope: 0.01,
        eps: 1e-5,
        momentum: 0.1,
        alpha: 1.0,
        beta: 1.0,
        threshold: 20.0,
        dim: -1,
        elementwise_affine: true,
        scale_factor: 2.0,
        mode: Interpolation::Nearest,
        output_padding: 0,
        causal: false,
        num_layers: 1,
        bidirectional: false,
        align_corners: false,
        ceil_mode: false,
    };
}

impl Default for Options {
    fn default() -> Self {
        Options::DEFAULT
    }
}

/// What values a key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// An integer from `min` to [`MAX_SIZE`](crate::MAX_SIZE).
    Count {
        /// The smallest value.
        min: usize,
    },
    /// `true` or `false`.
    Bool,
    /// Any number.
    Number,
    /// A number in `[0, 1)`.
    Probability,
    /// A number above zero.
    Positive,
    /// A number in `[0, 1]`.
    Fraction,
    /// A dimension: an integer, negative counting from the last.
    Dim,
    /// One of the names of [`Interpolation`], as a string.
    Interpolation,
}

/// A `#[layer(..)]` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `stride`.
    Stride,
    /// `padding`.
    Padding,
    /// `dilation`.
    Dilation,
    /// `groups`.
    Groups,
    /// `bias`.
    Bias,
    /// `p` (dropout).
    P,
    /// `negative_slope`.
    NegativeSlope,
    /// `eps`.
    Eps,
    /// `momentum`.
    Momentum,
    /// `alpha`.
    Alpha,
    /// `beta`.
    Beta,
    /// `threshold`.
    Threshold,
    /// `dim`.
    Dim,
    /// `elementwise_affine`.
    ElementwiseAffine,
    /// `scale_factor`.
    ScaleFactor,
    /// `mode`.
    Mode,
    /// `output_padding`.
    OutputPadding,
    /// `causal`.
    Causal,
    /// `dropout`: attention's dropout probability (PyTorch's name there
    /// for what `Dropout` calls `p`).
    Dropout,
    /// `num_layers`.
    NumLayers,
    /// `bidirectional`.
    Bidirectional,
    /// `align_corners`.
    AlignCorners,
    /// `ceil_mode`.
    CeilMode,
}

impl Key {
    /// Its name as written.
    pub const fn name(self) -> &'static str {
        match self {
            Key::Stride => "stride",
            Key::Padding => "padding",
            Key::Dilation => "dilation",
            Key::Groups => "groups",
            Key::Bias => "bias",
            Key::P => "p",
            Key::NegativeSlope => "negative_slope",
            Key::Eps => "eps",
            Key::Momentum => "momentum",
            Key::Alpha => "alpha",
            Key::Beta => "beta",
            Key::Threshold => "threshold",
            Key::Dim => "dim",
            Key::ElementwiseAffine => "elementwise_affine",
            Key::ScaleFactor => "scale_factor",
            Key::Mode => "mode",
            Key::OutputPadding => "output_padding",
            Key::Causal => "causal",
            Key::Dropout => "dropout",
            Key::NumLayers => "num_layers",
            Key::Bidirectional => "bidirectional",
            Key::AlignCorners => "align_corners",
            Key::CeilMode => "ceil_mode",
        }
    }

    /// What values it takes.
    pub const fn kind(self) -> KeyKind {
        match self {
            Key::Stride | Key::Dilation | Key::Groups | Key::NumLayers => KeyKind::Count { min: 1 },
            Key::Padding | Key::OutputPadding => KeyKind::Count { min: 0 },
            Key::Bias
            | Key::ElementwiseAffine
            | Key::Causal
            | Key::Bidirectional
            | Key::AlignCorners
            | Key::CeilMode => KeyKind::Bool,
            Key::P | Key::Dropout => KeyKind::Probability,
            Key::NegativeSlope | Key::Alpha | Key::Threshold => KeyKind::Number,
            Key::Eps | Key::Beta | Key::ScaleFactor => KeyKind::Positive,
            Key::Momentum => KeyKind::Fraction,
            Key::Dim => KeyKind::Dim,
            Key::Mode => KeyKind::Interpolation,
        }
    }
}

/// A literal option value as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string.
    Str(&'a str),
}

/// Why a key or value was refused; the message names the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError(pub String);

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `v` if it is in the range `kind` allows.
pub(crate) fn check_number(name: &str, kind: KeyKind, v: f64) -> Result<f64, OptionError> {
    let fail = |msg: String| Err(OptionError(msg));
    match kind {
        KeyKind::Probability if !(0.0..1.0).contains(&v) => {
            fail(format!("dropout probability `{name}` must lie in [0, 1), got {v}"))
        }
        KeyKind::Positive if v.is_nan() || v <= 0.0 => fail(format!("`{name}` must be positive, got {v}")),
        KeyKind::Fraction if !(0.0..=1.0).contains(&v) => fail(format!("`{name}` must lie in [0, 1], got {v}")),
        _ => Ok(v),
    }
}
