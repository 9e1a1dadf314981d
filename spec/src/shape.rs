//! Per-sample shapes and the helpers of the layers' shape rules (the rules
//! themselves are the `output` of each entry in `layers.rs`), as `const fn`s: the
//! macro calls them while it expands, the runtime in const evaluation.
//!
//! A dim is a `usize`. Sizes go up to [`MAX_SIZE`]; a value above it
//! stands for a dim known only by name (a sequence length `T`), which the
//! macro numbers and maps back. No size equals a symbolic dim, so a rule
//! that compares dims rejects them, and the rules that compute with dims
//! (windows, flattening) refuse them as [`ShapeError::NotFixed`].

/// The largest size a dim, a layer size or an option may have (i32's
/// range, so that products of a few stay far inside `usize`).
pub const MAX_SIZE: usize = i32::MAX as usize;

/// Whether `dim` stands for a dim known only by name.
pub const fn is_symbolic(dim: usize) -> bool {
    dim > MAX_SIZE
}

/// The number that stands for the `k`th dim known only by name when a
/// shape goes through a rule: above every size, so a rule passes it
/// through or refuses it.
pub const fn symbol(k: usize) -> usize {
    MAX_SIZE + 1 + k
}

/// Which named dim `dim` stands for ([`symbol`]'s `k`), if it is one.
pub const fn symbol_index(dim: usize) -> Option<usize> {
    dim.checked_sub(MAX_SIZE + 1)
}

/// A per-sample shape usable in const evaluation: up to 8 dims.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StaticShape {
    /// The dims; entries past `rank` are 0.
    pub dims: [usize; 8],
    /// Number of dims.
    pub rank: usize,
}

impl StaticShape {
    /// A shape from its dims; fails to compile (or panics) beyond 8 dims.
    pub const fn new(dims: &[usize]) -> Self {
        assert!(dims.len() <= 8, "StaticShape holds at most 8 dims");
        let mut out = [0; 8];
        let mut i = 0;
        while i < dims.len() {
            out[i] = dims[i];
            i += 1;
        }
        StaticShape { dims: out, rank: dims.len() }
    }

    /// The dims as a slice.
    pub const fn as_slice(&self) -> &[usize] {
        self.dims.split_at(self.rank).0
    }

    /// Product of the dims (saturating; see [`StaticShape::checked_numel`]).
    pub const fn numel(&self) -> usize {
        match self.checked_numel() {
            Some(n) => n,
            None => usize::MAX,
        }
    }

    /// Product of the dims, if it fits a `usize`.
    pub const fn checked_numel(&self) -> Option<usize> {
        let mut n: usize = 1;
        let mut i = 0;
        while i < self.rank {
            n = match n.checked_mul(self.dims[i]) {
                Some(n) => n,
                None => return None,
            };
            i += 1;
        }
        Some(n)
    }

    /// Equality usable in const evaluation.
    pub const fn same(&self, other: &StaticShape) -> bool {
        if self.rank != other.rank {
            return false;
        }
        let mut i = 0;
        while i < self.rank {
            if self.dims[i] != other.dims[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// Whether every dim is a size.
    pub const fn is_fixed(&self) -> bool {
        let mut i = 0;
        while i < self.rank {
            if is_symbolic(self.dims[i]) {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The last dim, if any.
    pub const fn last(&self) -> Option<usize> {
        if self.rank == 0 { None } else { Some(self.dims[self.rank - 1]) }
    }
}

impl std::fmt::Debug for StaticShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_slice())
    }
}

/// Why a layer refuses its input. Each variant carries the numbers its
/// message quotes; [`ShapeError::message`] writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// A `Linear` without a feature dim to act on.
    NoFeatureDim,
    /// A `Linear` whose input's last dim is not its input size.
    Features {
        /// The layer's input features.
        expected: usize,
        /// The input's last dim.
        got: usize,
    },
    /// Not an image `[C, H, W]`.
    NotImage,
    /// A per-sample rank the layer does not take.
    Rank {
        /// The per-sample shapes it takes, as written (`[C] or [C, L]`).
        expected: &'static str,
    },
    /// A convolution's input channels.
    InputChannels {
        /// The layer's.
        expected: usize,
        /// The input's.
        got: usize,
    },
    /// A normalisation's channels.
    Channels {
        /// The layer's.
        expected: usize,
        /// The input's.
        got: usize,
    },
    /// Groups that do not divide both channel counts.
    Groups {
        /// The groups.
        groups: usize,
        /// Input channels.
        cin: usize,
        /// Output channels.
        cout: usize,
    },
    /// A convolution kernel larger than its padded input.
    Kernel {
        /// The kernel size.
        k: usize,
        /// Its dilation.
        dilation: usize,
        /// The padding.
        padding: usize,
        /// Input height.
        h: usize,
        /// Input width.
        w: usize,
    },
    /// A 1-D kernel longer than its padded input.
    KernelLength {
        /// The kernel size.
        k: usize,
        /// Its dilation.
        dilation: usize,
        /// The padding.
        padding: usize,
        /// Input length.
        len: usize,
    },
    /// Pooling padding over half the window.
    Padding {
        /// The padding.
        padding: usize,
        /// The window.
        k: usize,
    },
    /// A pooling window larger than its padded input.
    Window {
        /// The window.
        k: usize,
        /// Input height.
        h: usize,
        /// Input width.
        w: usize,
    },
    /// A `LayerNorm` whose input's last dim is not its size.
    LastDim {
        /// The layer's.
        expected: usize,
    },
    /// A `dim` option that names no dimension of a sample (counted as
    /// PyTorch counts, with the batch at 0).
    Dim {
        /// The option.
        dim: i64,
    },
    /// A transposed convolution's `output_padding`, which must be smaller
    /// than its stride or its dilation.
    OutputPadding {
        /// The option.
        output_padding: usize,
        /// The stride.
        stride: usize,
        /// The dilation.
        dilation: usize,
    },
    /// Sequences whose steps are not the layer's input width.
    StepFeatures {
        /// The layer's.
        expected: usize,
    },
    /// More stacked recurrent layers than the spec names parameters for.
    Layers {
        /// The option.
        layers: usize,
        /// The most there may be.
        max: usize,
    },
    /// A sequence whose last dim is not the layer's embedding size.
    Embedding {
        /// The layer's.
        expected: usize,
    },
    /// Attention heads that do not divide the embedding.
    Heads {
        /// The embedding size.
        d: usize,
        /// The heads.
        heads: usize,
    },
    /// `align_corners` on an upsampling that does not interpolate.
    AlignCorners,
    /// A resampling whose output would have no pixels.
    EmptyOutput {
        /// Output height.
        h: usize,
        /// Output width.
        w: usize,
    },
    /// Ids of more than one per-sample dim.
    Ids,
    /// A dim known only by name where the rule needs a size.
    NotFixed,
    /// More elements than a tensor can hold.
    TooLarge,
}

/// What a rule reads of a layer's sizes, by position (0 past the end).
pub(crate) const fn size(generics: &[usize], i: usize) -> usize {
    if i < generics.len() { generics[i] } else { 0 }
}

/// Output size of a window along one dim, if the window fits.
pub(crate) const fn window(size: usize, k: usize, stride: usize, pad: usize, dil: usize) -> Option<usize> {
    let Some(km1) = k.checked_sub(1) else { return None };
    let Some(span) = dil.checked_mul(km1) else { return None };
    let span = span + 1;
    let Some(padded) = pad.checked_mul(2) else { return None };
    let Some(padded) = padded.checked_add(size) else { return None };
    if span > padded || stride == 0 {
        return None;
    }
    Some((padded - span) / stride + 1)
}

/// Output size of a pooling window along one dim, if the window fits:
/// `window`'s, or with `ceil` rounded up as PyTorch's `ceil_mode` does,
/// keeping only windows that start inside the input or its left padding.
/// The runtime's pooling shapes are this function's.
pub const fn pool_window(size: usize, k: usize, stride: usize, pad: usize, ceil: bool) -> Option<usize> {
    let Some(floor) = window(size, k, stride, pad, 1) else { return None };
    if !ceil {
        return Some(floor);
    }
    let reach = size + 2 * pad - k;
    let mut out = reach.div_ceil(stride) + 1;
    if (out - 1) * stride >= size + pad {
        out -= 1;
    }
    Some(out)
}

/// The `[C, H, W]` of an image input, with fixed dims.
pub(crate) const fn image(s: &StaticShape) -> Result<[usize; 3], ShapeError> {
    if s.rank != 3 {
        return Err(ShapeError::NotImage);
    }
    if !s.is_fixed() {
        return Err(ShapeError::NotFixed);
    }
    Ok([s.dims[0], s.dims[1], s.dims[2]])
}

impl ShapeError {
    /// The message for layer `me` (as `` `fc: Linear<4, 2>` ``) given
    /// `input`, shown as `got`. With `from`, the layer that produced the
    /// input (`` `flat` ``, "the model input"), it reads "but `flat`
    /// produces \[256\]"; without, "got \[T, 32\]". `field` names the layer's
    /// field for a hint.
    pub fn message(&self, me: &str, input: &StaticShape, got: &str, from: Option<&str>, field: &str) -> String {
        let but = match from {
            Some(src) => format!("but {src} produces {got}"),
            None => format!("got {got}"),
        };
        let input_from = from.map_or(String::new(), |src| format!(" from {src}"));
        match *self {
            ShapeError::NoFeatureDim => format!("{me} needs an input with a feature dim"),
            ShapeError::Features { expected, .. } => {
                let n = input.checked_numel();
                let hint = match (from, n) {
                    (Some(_), Some(n)) if input.rank > 1 && input.is_fixed() && n == expected => {
                        return format!(
                            "{me} expects {expected} input features, {but}; add a `Flatten` layer before `{field}` \
                             to get [{n}]"
                        );
                    }
                    (Some(_), Some(n)) if input.rank > 1 && input.is_fixed() => format!(" ({n} after Flatten)"),
                    _ => String::new(),
                };
                format!("{me} expects {expected} input features, {but}{hint}")
            }
            ShapeError::NotImage => format!("{me} expects an image [C, H, W], {but}"),
            ShapeError::Rank { expected } => format!("{me} expects a per-sample shape {expected}, {but}"),
            ShapeError::Dim { dim } => {
                let r = input.rank;
                format!(
                    "{me} has `dim = {dim}`, {but}: a batch of those takes dim 1 to {r} or -{r} to -1 (0 is the batch)"
                )
            }
            ShapeError::InputChannels { expected, got: c } => {
                format!("{me} expects {expected} input channels, {but} ({c} channels)")
            }
            ShapeError::Channels { expected, got: c } => {
                format!("{me} expects {expected} channels, {but} ({c} channels)")
            }
            ShapeError::Groups { groups, cin, cout } => {
                format!("{me}: {groups} groups must divide both {cin} input and {cout} output channels")
            }
            ShapeError::Kernel { k, dilation, padding, h, w } => format!(
                "{me}: the {k}x{k} kernel (dilation {dilation}) is larger than the {h}x{w} input{input_from} \
                 (padding {padding})"
            ),
            ShapeError::KernelLength { k, dilation, padding, len } => format!(
                "{me}: the kernel of {k} (dilation {dilation}) is longer than the input of {len}{input_from} \
                 (padding {padding})"
            ),
            ShapeError::Padding { padding, k } => {
                format!("{me}: padding {padding} must be at most half the window {k}")
            }
            ShapeError::Window { k, h, w } => {
                format!("{me}: the {k}x{k} window is larger than the {h}x{w} input{input_from}")
            }
            ShapeError::LastDim { expected } => format!("{me} normalises a last dim of {expected}, {but}"),
            ShapeError::OutputPadding { output_padding, stride, dilation } => format!(
                "{me} has `output_padding = {output_padding}`, which must be smaller than its stride ({stride}) or \
                 its dilation ({dilation})"
            ),
            ShapeError::StepFeatures { expected } => {
                format!("{me} expects sequences of {expected} features per step, {but}")
            }
            ShapeError::Layers { layers, max } => format!("{me} stacks {layers} layers; at most {max} are supported"),
            ShapeError::Embedding { expected } => format!("{me} expects an embedding of {expected}, {but}"),
            ShapeError::Heads { d, heads } => {
                format!("{me} splits an embedding of {d} into {heads} heads, which must divide it")
            }
            ShapeError::AlignCorners => {
                format!("{me} has `align_corners`, which only bilinear upsampling takes: add `mode = \"bilinear\"`")
            }
            ShapeError::EmptyOutput { h, w } => format!("{me} would produce an empty {h}x{w} image from {got}"),
            ShapeError::Ids => format!("{me} takes ids of per-sample shape [] or [T], {but}"),
            ShapeError::NotFixed => format!("{me} needs fixed per-sample dims, {but}"),
            ShapeError::TooLarge => format!("{me}: {} {got}, more elements than a tensor can hold", {
                from.map_or("its input is".to_owned(), |s| format!("{s} produces"))
            }),
        }
    }
}
