//! The built-in layers, one entry each: everything Blaze knows about a
//! layer is in its entry, and `layers!` turns the table into [`Layer`] and
//! every per-layer answer (`name`, `generics`, `keys`, `params`, the shape
//! rule [`output`], ...). A new layer is one entry here and its runtime
//! type; no match elsewhere names layers one by one. Activations that are
//! ops of one tensor (`Sigmoid`, `Gelu`) are not listed here: they are
//! entries of the op table ([`crate::ops`]) with `layer: true`, and
//! [`Layer::Unary`] answers for all of them.
//!
//! The file is long by design: it is the table, about twenty lines per
//! layer, and grows by one entry per layer; splitting it would put layers'
//! definitions in several places, which is what it exists to prevent.
//!
//! An entry's fields, all required but `defaults`, `attends` and `products`:
//! - `generics`: the names of its const-generic sizes, in order;
//! - `keys`: the `#[layer(..)]` keys it takes; optionally `defaults`, its
//!   options where they differ from [`Options::DEFAULT`], `attends`,
//!   whether a forward body may call it on a query, keys and values, and
//!   `products`, the matrix products its sizes fix the depth of (what a
//!   16-bit precision policy rounds, `crate::precision`);
//! - `holds_tensors`: whether its type takes the backend (it has
//!   parameters or buffers); `elementwise`: whether it maps each element on
//!   its own; `takes_ids`: whether it reads integer ids;
//! - `fuses_activation`: whether an activation after it can join its bias
//!   pass;
//! - `default_stride`: its stride when none is given, from the window;
//! - `expects`: what it needs of its input, in words, from its sizes;
//! - `params`: the tensors it holds, from its sizes and options;
//! - `output`: the shape rule (a `const` body) from sizes, options and the
//!   per-sample input; `rank`: its output's rank from the input's, whether
//!   or not `output` accepts the input.

use crate::ops::{Grad, UNARY, Unary};
use crate::options::{Interpolation, Key};
use crate::precision::product;
use crate::shape::{MAX_SIZE, ShapeError, StaticShape, image, pool_window, size, window};
use crate::{Init, Options, Param};

macro_rules! layers {
    (@defaults) => { Options::DEFAULT };
    (@defaults $defaults:expr) => { $defaults };
    (@attends) => { false };
    (@attends $attends:literal) => { $attends };
    (@products) => { Vec::new() };
    (@products $products:expr) => { $products };
    ($(
        $(#[doc = $doc:literal])*
        $name:ident {
            generics: [$($generic:literal),*],
            keys: [$($key:ident),*],
            $(defaults: $defaults:expr,)?
            $(attends: $attends:literal,)?
            $(products: |$gs:pat_param, $gopts:pat_param| $products:expr,)?
            holds_tensors: $holds:literal,
            elementwise: $elementwise:literal,
            takes_ids: $ids:literal,
            fuses_activation: $fuses:literal,
            default_stride: |$k:pat_param| $stride:expr,
            expects: |$es:pat_param| $expects:expr,
            params: |$ps:pat_param, $po:pat_param| $params:expr,
            output: |$os:pat_param, $oo:pat_param, $oi:pat_param| $output:block,
            rank: |$rank_in:pat_param| $rank:expr,
        }
    )*) => {
        /// The built-in layers.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Layer {
            $($(#[doc = $doc])* $name,)*
            /// An op of the op table that is also a layer ([`Unary::layer`]):
            /// it maps each element on its own, holds nothing and takes no
            /// options, and is named after the op's variant (`Sigmoid`).
            Unary(&'static Unary),
        }

        impl Layer {
            /// The layers of the table above, in order.
            const LISTED: [Layer; [$(stringify!($name)),*].len()] = [$(Layer::$name),*];

            /// Every built-in layer: the listed ones, then the op table's.
            pub const ALL: [Layer; Layer::LISTED.len() + unary_layers()] = {
                let mut all = [Layer::LISTED[0]; Layer::LISTED.len() + unary_layers()];
                let mut i = 0;
                while i < Layer::LISTED.len() {
                    all[i] = Layer::LISTED[i];
                    i += 1;
                }
                let mut k = 0;
                while k < UNARY.len() {
                    if UNARY[k].layer {
                        all[i] = Layer::Unary(&UNARY[k]);
                        i += 1;
                    }
                    k += 1;
                }
                all
            };

            /// The type's name (`Linear`), as users write it and the runtime names it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Layer::$name => stringify!($name),)*
                    Layer::Unary(op) => op.variant,
                }
            }

            /// The names of its const-generic sizes, in order (`Map` takes a
            /// kernel type instead, and has none).
            pub const fn generics(self) -> &'static [&'static str] {
                match self {
                    $(Layer::$name => &[$($generic),*],)*
                    Layer::Unary(_) => &[],
                }
            }

            /// The `#[layer(..)]` keys it accepts.
            pub const fn keys(self) -> &'static [Key] {
                match self {
                    $(Layer::$name => &[$(Key::$key),*],)*
                    Layer::Unary(_) => &[],
                }
            }

            /// Its options when no `#[layer(..)]` key is given: PyTorch's
            /// defaults for the layer.
            pub const fn defaults(self) -> Options {
                match self {
                    $(Layer::$name => layers!(@defaults $($defaults)?),)*
                    Layer::Unary(_) => Options::DEFAULT,
                }
            }

            /// The products whose depth its sizes and options fix, forward
            /// and backward (none for a layer that multiplies no matrices).
            pub fn products(self, generics: &[usize], options: &Options) -> Vec<crate::precision::Product> {
                match self {
                    $(Layer::$name => {
                        $(let ($gs, $gopts) = (generics, options);)?
                        layers!(@products $($products)?)
                    })*
                    Layer::Unary(_) => Vec::new(),
                }
            }

            /// Whether a forward body may also call it on a query, keys and
            /// values (`self.attn(q, k, v)`), besides one input.
            pub const fn attends(self) -> bool {
                match self {
                    $(Layer::$name => layers!(@attends $($attends)?),)*
                    Layer::Unary(_) => false,
                }
            }

            /// Whether its type takes the backend (it holds tensors), as
            /// `Linear<B, I, O>` does and `Relu` does not.
            pub const fn holds_tensors(self) -> bool {
                match self {
                    $(Layer::$name => $holds,)*
                    Layer::Unary(_) => false,
                }
            }

            /// Whether it maps each element on its own: its output has its
            /// input's shape, whatever that is (symbolic dims included).
            pub const fn is_elementwise(self) -> bool {
                match self {
                    $(Layer::$name => $elementwise,)*
                    Layer::Unary(_) => true,
                }
            }

            /// Whether it takes integer ids rather than floats (and so must
            /// come first in a sequential model).
            pub const fn takes_ids(self) -> bool {
                match self {
                    $(Layer::$name => $ids,)*
                    Layer::Unary(_) => false,
                }
            }

            /// Whether a following activation can be fused into its bias pass.
            pub const fn fuses_activation(self) -> bool {
                match self {
                    $(Layer::$name => $fuses,)*
                    Layer::Unary(_) => false,
                }
            }

            /// Its stride when `#[layer(stride = ..)]` is not given, for a
            /// window (kernel) of `k`.
            pub const fn default_stride(self, k: usize) -> usize {
                match self {
                    $(Layer::$name => {
                        let $k = k;
                        $stride
                    })*
                    Layer::Unary(_) => 1,
                }
            }

            /// What the layer needs of its input, in words (`expects 64
            /// input features`), for messages that cannot quote the input's
            /// shape.
            pub fn expects(self, sizes: &[usize]) -> String {
                match self {
                    $(Layer::$name => {
                        let $es = sizes;
                        $expects
                    })*
                    Layer::Unary(_) => "takes any shape".to_owned(),
                }
            }

            /// The tensors the layer holds, in the order the runtime visits
            /// them, for its `generics` and `options`. Generics must be as
            /// many as [`Layer::generics`] names (panics otherwise: a bug in
            /// the caller).
            pub fn params(self, generics: &[usize], options: &Options) -> Vec<Param> {
                match self {
                    $(Layer::$name => {
                        let ($ps, $po) = (generics, options);
                        $params
                    })*
                    Layer::Unary(_) => Vec::new(),
                }
            }
        }

        /// The per-sample output shape of `layer` (sizes `generics`, options
        /// `o`) for per-sample input `s`, or why it refuses `s`.
        pub const fn output(
            layer: Layer,
            generics: &[usize],
            o: &Options,
            s: StaticShape,
        ) -> Result<StaticShape, ShapeError> {
            match layer {
                $(Layer::$name => {
                    let ($os, $oo, $oi) = (generics, o, s);
                    $output
                })*
                Layer::Unary(_) => Ok(s),
            }
        }

        /// The rank of `layer`'s output for an input of rank `input_rank`,
        /// whether or not [`output`] accepts the input: what code generated
        /// after a refusal needs to keep its types (the unit tests check it
        /// against every shape [`output`] accepts).
        pub const fn output_rank(layer: Layer, input_rank: usize) -> usize {
            match layer {
                $(Layer::$name => {
                    let $rank_in = input_rank;
                    $rank
                })*
                Layer::Unary(_) => input_rank,
            }
        }
    };
}

/// A trainable parameter.
fn param(name: &'static str, shape: Vec<usize>, init: Init) -> Param {
    Param { name, shape, init, trainable: true }
}

/// A buffer: state the optimizer does not update (running statistics).
fn buffer(name: &'static str, shape: Vec<usize>, init: Init) -> Param {
    Param { name, shape, init, trainable: false }
}

/// A weight and, with `bias`, a bias of `out`, both drawn as PyTorch draws
/// a layer's (uniform in `±1/sqrt(fan_in)`).
fn weight_and_bias(weight: Vec<usize>, out: usize, fan_in: usize, bias: bool) -> Vec<Param> {
    let init = Init::FanInUniform { fan_in };
    let mut v = vec![param("weight", weight, init)];
    if bias {
        v.push(param("bias", vec![out], init));
    }
    v
}

/// The output size of a transposed convolution along one dim: `(size - 1)
/// stride - 2 pad + dil (k - 1) + output_padding + 1`; `Some(0)` when the
/// padding takes everything, `None` past what a tensor holds.
const fn transposed(
    size: usize,
    k: usize,
    stride: usize,
    pad: usize,
    dil: usize,
    output_padding: usize,
) -> Option<usize> {
    let Some(placed) = (size - 1).checked_mul(stride) else { return None };
    let Some(span) = dil.checked_mul(k - 1) else { return None };
    let Some(total) = placed.checked_add(span + output_padding + 1) else { return None };
    if total > MAX_SIZE {
        return None;
    }
    match total.checked_sub(2 * pad) {
        Some(n) => Some(n),
        None => Some(0),
    }
}

/// How many ops of the op table are layers.
const fn unary_layers() -> usize {
    let (mut n, mut k) = (0, 0);
    while k < UNARY.len() {
        if UNARY[k].layer {
            n += 1;
        }
        k += 1;
    }
    n
}

/// The most layers an `Lstm` or `Gru` stacks.
pub const MAX_RNN_LAYERS: usize = 8;

macro_rules! rnn_names {
    ($($l:literal),*) => {
        [$(
            [concat!("weight_ih_l", $l), concat!("weight_hh_l", $l), concat!("bias_ih_l", $l), concat!("bias_hh_l", $l)],
            [
                concat!("weight_ih_l", $l, "_reverse"),
                concat!("weight_hh_l", $l, "_reverse"),
                concat!("bias_ih_l", $l, "_reverse"),
                concat!("bias_hh_l", $l, "_reverse"),
            ],
        )*]
    };
}

/// PyTorch's names of a recurrent layer's tensors, per layer and direction
/// (the reverse one second): `weight_ih_l0`, ..., `bias_hh_l7_reverse`.
const RNN_NAMES: [[&str; 4]; 2 * MAX_RNN_LAYERS] = rnn_names!(0, 1, 2, 3, 4, 5, 6, 7);

/// The tensors of a stack of recurrent layers with `gates` gates of `h`
/// units over `input` features, in PyTorch's order and layout: per layer,
/// per direction, `weight_ih` `[gates h, in]`, `weight_hh` `[gates h, h]`
/// and the biases, all uniform in `±1/sqrt(h)`.
fn recurrent_params(gates: usize, input: usize, h: usize, o: &Options) -> Vec<Param> {
    let dirs = if o.bidirectional { 2 } else { 1 };
    let init = Init::FanInUniform { fan_in: h };
    let mut v = Vec::new();
    for layer in 0..o.num_layers.min(MAX_RNN_LAYERS) {
        let width = if layer == 0 { input } else { h * dirs };
        for dir in 0..dirs {
            let [w_ih, w_hh, b_ih, b_hh] = RNN_NAMES[2 * layer + dir];
            v.push(param(w_ih, vec![gates * h, width], init));
            v.push(param(w_hh, vec![gates * h, h], init));
            if o.bias {
                v.push(param(b_ih, vec![gates * h], init));
                v.push(param(b_hh, vec![gates * h], init));
            }
        }
    }
    v
}

/// The rule of a recurrent layer of `h` units over `[T, input]`: `[T, h]`,
/// or `[T, 2 h]` both ways.
const fn recurrent(input: usize, h: usize, o: &Options, s: StaticShape) -> Result<StaticShape, ShapeError> {
    if s.rank != 2 {
        return Err(ShapeError::Rank { expected: "[T, I]" });
    }
    if s.dims[1] != input {
        return Err(ShapeError::StepFeatures { expected: input });
    }
    if o.num_layers > MAX_RNN_LAYERS {
        return Err(ShapeError::Layers { layers: o.num_layers, max: MAX_RNN_LAYERS });
    }
    let dirs = if o.bidirectional { 2 } else { 1 };
    Ok(StaticShape::new(&[s.dims[0], h * dirs]))
}

/// The rule of a pooling window of `k` over `[C, H, W]`.
/// A softmax's rule: `dim` counts as PyTorch counts it, the batch at 0
/// (so 1 to the per-sample rank, or from the last with a negative).
const fn along_dim(o: &Options, s: StaticShape) -> Result<StaticShape, ShapeError> {
    let rank = s.rank as i64;
    if (o.dim >= 1 && o.dim <= rank) || (o.dim < 0 && o.dim >= -rank) {
        Ok(s)
    } else {
        Err(ShapeError::Dim { dim: o.dim })
    }
}

const fn pool(layer: Layer, k: usize, o: &Options, s: StaticShape) -> Result<StaticShape, ShapeError> {
    let [c, h, w] = match image(&s) {
        Ok(d) => d,
        Err(e) => return Err(e),
    };
    if o.padding > k / 2 {
        return Err(ShapeError::Padding { padding: o.padding, k });
    }
    let stride = o.stride_of(layer, k);
    let ceil = o.ceil_mode;
    match (pool_window(h, k, stride, o.padding, ceil), pool_window(w, k, stride, o.padding, ceil)) {
        (Some(oh), Some(ow)) => Ok(StaticShape::new(&[c, oh, ow])),
        _ => Err(ShapeError::Window { k, h, w }),
    }
}

layers! {
    /// `Linear<I, O>`: `x W^T + b` over the last dim.
    Linear {
        generics: ["I", "O"],
        keys: [Bias],
        products: |g, _| vec![product("x W^T", g[0]), product("g W", g[1])],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: true,
        default_stride: |_| 1,
        expects: |g| format!("expects {} input features", size(g, 0)),
        params: |g, o| weight_and_bias(vec![g[1], g[0]], g[1], g[0], o.bias),
        output: |g, _, s| {
            let Some(last) = s.last() else { return Err(ShapeError::NoFeatureDim) };
            let (i, out) = (size(g, 0), size(g, 1));
            if last != i {
                return Err(ShapeError::Features { expected: i, got: last });
            }
            let mut r = s;
            r.dims[s.rank - 1] = out;
            Ok(r)
        },
        rank: |r| r,
    }

    /// `Conv2d<CIN, COUT, K>`: a 2-D convolution of `[C, H, W]` images.
    Conv2d {
        generics: ["CIN", "COUT", "K"],
        keys: [Stride, Padding, Dilation, Groups, Bias],
        products: |g, o| {
            let (groups, window) = (o.groups.max(1), g[2] * g[2]);
            vec![product("convolution", g[0] / groups * window), product("input gradient", g[1] / groups)]
        },
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: true,
        default_stride: |_| 1,
        expects: |g| {
            let k = size(g, 2);
            format!("expects an image of {} channels that its {k}x{k} kernel fits", size(g, 0))
        },
        params: |g, o| {
            let (cin, cout, k) = (g[0], g[1], g[2]);
            let per_group = cin / o.groups.max(1);
            weight_and_bias(vec![cout, per_group, k, k], cout, per_group * k * k, o.bias)
        },
        output: |g, o, s| {
            let [c, h, w] = match image(&s) {
                Ok(d) => d,
                Err(e) => return Err(e),
            };
            let (cin, cout, k) = (size(g, 0), size(g, 1), size(g, 2));
            if c != cin {
                return Err(ShapeError::InputChannels { expected: cin, got: c });
            }
            let groups = o.groups;
            if groups == 0 || !cin.is_multiple_of(groups) || !cout.is_multiple_of(groups) {
                return Err(ShapeError::Groups { groups, cin, cout });
            }
            let stride = o.stride_of(Layer::Conv2d, k);
            match (window(h, k, stride, o.padding, o.dilation), window(w, k, stride, o.padding, o.dilation)) {
                (Some(oh), Some(ow)) => Ok(StaticShape::new(&[cout, oh, ow])),
                _ => Err(ShapeError::Kernel { k, dilation: o.dilation, padding: o.padding, h, w }),
            }
        },
        rank: |_| 3,
    }

    /// `ConvTranspose2d<CIN, COUT, K>`: the adjoint of a convolution, an
    /// upsampling by its stride.
    ConvTranspose2d {
        generics: ["CIN", "COUT", "K"],
        keys: [Stride, Padding, OutputPadding, Dilation, Groups, Bias],
        products: |g, o| {
            let (groups, window) = (o.groups.max(1), g[2] * g[2]);
            vec![product("convolution", g[0] / groups), product("input gradient", g[1] / groups * window)]
        },
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects an image of {} channels", size(g, 0)),
        params: |g, o| {
            let (cin, cout, k) = (g[0], g[1], g[2]);
            let per_group = cout / o.groups.max(1);
            weight_and_bias(vec![cin, per_group, k, k], cout, per_group * k * k, o.bias)
        },
        output: |g, o, s| {
            let [c, h, w] = match image(&s) {
                Ok(d) => d,
                Err(e) => return Err(e),
            };
            let (cin, cout, k) = (size(g, 0), size(g, 1), size(g, 2));
            if c != cin {
                return Err(ShapeError::InputChannels { expected: cin, got: c });
            }
            let groups = o.groups;
            if groups == 0 || !cin.is_multiple_of(groups) || !cout.is_multiple_of(groups) {
                return Err(ShapeError::Groups { groups, cin, cout });
            }
            let stride = o.stride_of(Layer::ConvTranspose2d, k);
            let (output_padding, dilation) = (o.output_padding, o.dilation);
            let wider = if stride > dilation { stride } else { dilation };
            if output_padding >= wider {
                return Err(ShapeError::OutputPadding { output_padding, stride, dilation });
            }
            match (transposed(h, k, stride, o.padding, dilation, output_padding), transposed(w, k, stride, o.padding, dilation, output_padding)) {
                (Some(oh), Some(ow)) if oh == 0 || ow == 0 => Err(ShapeError::EmptyOutput { h: oh, w: ow }),
                (Some(oh), Some(ow)) => Ok(StaticShape::new(&[cout, oh, ow])),
                _ => Err(ShapeError::TooLarge),
            }
        },
        rank: |_| 3,
    }

    /// `Conv1d<CIN, COUT, K>`: a 1-D convolution of `[C, L]` sequences.
    Conv1d {
        generics: ["CIN", "COUT", "K"],
        keys: [Stride, Padding, Dilation, Groups, Bias],
        products: |g, o| {
            let groups = o.groups.max(1);
            vec![product("convolution", g[0] / groups * g[2]), product("input gradient", g[1] / groups)]
        },
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects [{}, L] inputs that its kernel of {} fits", size(g, 0), size(g, 2)),
        params: |g, o| {
            let (cin, cout, k) = (g[0], g[1], g[2]);
            let per_group = cin / o.groups.max(1);
            weight_and_bias(vec![cout, per_group, k], cout, per_group * k, o.bias)
        },
        output: |g, o, s| {
            if s.rank != 2 {
                return Err(ShapeError::Rank { expected: "[C, L]" });
            }
            if !s.is_fixed() {
                return Err(ShapeError::NotFixed);
            }
            let (c, len) = (s.dims[0], s.dims[1]);
            let (cin, cout, k) = (size(g, 0), size(g, 1), size(g, 2));
            if c != cin {
                return Err(ShapeError::InputChannels { expected: cin, got: c });
            }
            let groups = o.groups;
            if groups == 0 || !cin.is_multiple_of(groups) || !cout.is_multiple_of(groups) {
                return Err(ShapeError::Groups { groups, cin, cout });
            }
            match window(len, k, o.stride_of(Layer::Conv1d, k), o.padding, o.dilation) {
                Some(out) => Ok(StaticShape::new(&[cout, out])),
                None => Err(ShapeError::KernelLength { k, dilation: o.dilation, padding: o.padding, len }),
            }
        },
        rank: |_| 2,
    }

    /// `MaxPool2d<K>`.
    MaxPool2d {
        generics: ["K"],
        keys: [Stride, Padding, CeilMode],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |k| k,
        expects: |g| format!("expects an image that its {k}x{k} window fits", k = size(g, 0)),
        params: |_, _| Vec::new(),
        output: |g, o, s| { pool(Layer::MaxPool2d, size(g, 0), o, s) },
        rank: |_| 3,
    }

    /// `AvgPool2d<K>`.
    AvgPool2d {
        generics: ["K"],
        keys: [Stride, Padding, CeilMode],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |k| k,
        expects: |g| format!("expects an image that its {k}x{k} window fits", k = size(g, 0)),
        params: |_, _| Vec::new(),
        output: |g, o, s| { pool(Layer::AvgPool2d, size(g, 0), o, s) },
        rank: |_| 3,
    }

    /// `AdaptiveAvgPool2d<H, W>`: `[C, h, w]` to `[C, H, W]`, any `h`, `w`.
    AdaptiveAvgPool2d {
        generics: ["H", "W"],
        keys: [],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "expects an image [C, H, W]".to_owned(),
        params: |_, _| Vec::new(),
        output: |g, _, s| {
            let [c, _, _] = match image(&s) {
                Ok(d) => d,
                Err(e) => return Err(e),
            };
            Ok(StaticShape::new(&[c, size(g, 0), size(g, 1)]))
        },
        rank: |_| 3,
    }

    /// `Upsample`: `[C, H, W]` to `[C, floor(H s), floor(W s)]`.
    Upsample {
        generics: [],
        keys: [ScaleFactor, Mode, AlignCorners],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "expects an image [C, H, W]".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, o, s| {
            let [c, h, w] = match image(&s) {
                Ok(d) => d,
                Err(e) => return Err(e),
            };
            if o.align_corners && !matches!(o.mode, Interpolation::Bilinear) {
                return Err(ShapeError::AlignCorners);
            }
            let (oh, ow) = (h as f64 * o.scale_factor, w as f64 * o.scale_factor);
            if oh >= MAX_SIZE as f64 || ow >= MAX_SIZE as f64 {
                return Err(ShapeError::TooLarge);
            }
            let (oh, ow) = (oh as usize, ow as usize);
            if oh == 0 || ow == 0 {
                return Err(ShapeError::EmptyOutput { h: oh, w: ow });
            }
            Ok(StaticShape::new(&[c, oh, ow]))
        },
        rank: |_| 3,
    }

    /// `GlobalAvgPool`: `[C, H, W]` to `[C]`.
    GlobalAvgPool {
        generics: [],
        keys: [],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "expects an image [C, H, W]".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| {
            match image(&s) {
                Ok([c, _, _]) => Ok(StaticShape::new(&[c])),
                Err(e) => Err(e),
            }
        },
        rank: |_| 1,
    }

    /// `Flatten`: every per-sample dim into one.
    Flatten {
        generics: [],
        keys: [],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "flattens at most 2147483647 elements".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| {
            if !s.is_fixed() {
                return Err(ShapeError::NotFixed);
            }
            match s.checked_numel() {
                Some(n) if n <= MAX_SIZE => Ok(StaticShape::new(&[n])),
                _ => Err(ShapeError::TooLarge),
            }
        },
        rank: |_| 1,
    }

    /// `LeakyRelu`.
    LeakyRelu {
        generics: [],
        keys: [NegativeSlope],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Silu`: `x * sigmoid(x)`.
    Silu {
        generics: [],
        keys: [],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Identity`: its input, unchanged.
    Identity {
        generics: [],
        keys: [],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Softplus`: `log(1 + exp(beta x)) / beta`, the identity above
    /// `threshold`.
    Softplus {
        generics: [],
        keys: [Beta, Threshold],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Elu`: `x` above zero, `alpha (exp(x) - 1)` below.
    Elu {
        generics: [],
        keys: [Alpha],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Softmax`: along `dim`, counted as PyTorch counts (the batch at 0).
    Softmax {
        generics: [],
        keys: [Dim],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes a dim of its input".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, o, s| { along_dim(o, s) },
        rank: |r| r,
    }

    /// `LogSoftmax`: the log of `Softmax`, along `dim` counted the same way.
    LogSoftmax {
        generics: [],
        keys: [Dim],
        holds_tensors: false,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes a dim of its input".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, o, s| { along_dim(o, s) },
        rank: |r| r,
    }

    /// `Dropout`.
    Dropout {
        generics: [],
        keys: [P],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `Map<K>`: a `kernel!` kernel applied elementwise.
    Map {
        generics: [],
        keys: [],
        holds_tensors: false,
        elementwise: true,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes any shape".to_owned(),
        params: |_, _| Vec::new(),
        output: |_, _, s| { Ok(s) },
        rank: |r| r,
    }

    /// `BatchNorm2d<C>`.
    BatchNorm2d {
        generics: ["C"],
        keys: [Eps, Momentum],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects an image of {} channels", size(g, 0)),
        params: |g, _| vec![
            param("weight", vec![g[0]], Init::Ones),
            param("bias", vec![g[0]], Init::Zeros),
            buffer("running_mean", vec![g[0]], Init::Zeros),
            buffer("running_var", vec![g[0]], Init::Ones),
        ],
        output: |g, _, s| {
            match image(&s) {
                Ok([c, _, _]) if c != size(g, 0) => Err(ShapeError::Channels { expected: size(g, 0), got: c }),
                Ok(_) => Ok(s),
                Err(e) => Err(e),
            }
        },
        rank: |_| 3,
    }

    /// `BatchNorm1d<C>`: `[C]` or `[C, L]`.
    BatchNorm1d {
        generics: ["C"],
        keys: [Eps, Momentum],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects [{c}] or [{c}, L] inputs", c = size(g, 0)),
        params: |g, _| vec![
            param("weight", vec![g[0]], Init::Ones),
            param("bias", vec![g[0]], Init::Zeros),
            buffer("running_mean", vec![g[0]], Init::Zeros),
            buffer("running_var", vec![g[0]], Init::Ones),
        ],
        output: |g, _, s| {
            match s.rank {
                1 | 2 if s.dims[0] == size(g, 0) => Ok(s),
                1 | 2 => Err(ShapeError::Channels { expected: size(g, 0), got: s.dims[0] }),
                _ => Err(ShapeError::Rank { expected: "[C] or [C, L]" }),
            }
        },
        rank: |r| r,
    }

    /// `GroupNorm<G, C>`: `[C, ..]` normalised over each of `G` groups of
    /// channels (and the dims after them).
    GroupNorm {
        generics: ["G", "C"],
        keys: [Eps],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects [{}, ..] inputs, in {} groups", size(g, 1), size(g, 0)),
        params: |g, _| vec![param("weight", vec![g[1]], Init::Ones), param("bias", vec![g[1]], Init::Zeros)],
        output: |g, _, s| {
            let (groups, c) = (size(g, 0), size(g, 1));
            if groups == 0 || !c.is_multiple_of(groups) {
                return Err(ShapeError::Groups { groups, cin: c, cout: c });
            }
            match s.rank {
                0 => Err(ShapeError::Channels { expected: c, got: 0 }),
                _ if s.dims[0] != c => Err(ShapeError::Channels { expected: c, got: s.dims[0] }),
                _ => Ok(s),
            }
        },
        rank: |r| r,
    }

    /// `LayerNorm<N>` over the last dim.
    LayerNorm {
        generics: ["N"],
        keys: [Eps],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects a last dim of {}", size(g, 0)),
        params: |g, _| vec![param("weight", vec![g[0]], Init::Ones), param("bias", vec![g[0]], Init::Zeros)],
        output: |g, _, s| {
            match s.last() {
                Some(last) if last == size(g, 0) => Ok(s),
                _ => Err(ShapeError::LastDim { expected: size(g, 0) }),
            }
        },
        rank: |r| r,
    }

    /// `RMSNorm<N>`: `x / sqrt(mean(x²) + eps)` over the last dim, times
    /// a weight.
    RMSNorm {
        generics: ["N"],
        keys: [Eps, ElementwiseAffine],
        defaults: Options { eps: f32::EPSILON as f64, ..Options::DEFAULT },
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects a last dim of {}", size(g, 0)),
        params: |g, o| {
            if o.elementwise_affine { vec![param("weight", vec![g[0]], Init::Ones)] } else { Vec::new() }
        },
        output: |g, _, s| {
            match s.last() {
                Some(last) if last == size(g, 0) => Ok(s),
                _ => Err(ShapeError::LastDim { expected: size(g, 0) }),
            }
        },
        rank: |r| r,
    }

    /// `MultiHeadAttention<D, H>`: attention over `[T, D]` in `H` heads.
    MultiHeadAttention {
        generics: ["D", "H"],
        keys: [Dropout, Bias, Causal],
        defaults: Options { p: 0.0, ..Options::DEFAULT },
        attends: true,
        products: |g, _| vec![product("projections", g[0]), product("per-head scores", g[0] / g[1].max(1))],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects a sequence [T, {}]", size(g, 0)),
        params: |g, o| {
            let d = g[0];
            let mut v = vec![param("in_proj_weight", vec![3 * d, d], Init::XavierUniform { fan_in: d, fan_out: 3 * d })];
            if o.bias {
                v.push(param("in_proj_bias", vec![3 * d], Init::Zeros));
            }
            v.push(param("out_proj.weight", vec![d, d], Init::FanInUniform { fan_in: d }));
            if o.bias {
                v.push(param("out_proj.bias", vec![d], Init::Zeros));
            }
            v
        },
        output: |g, _, s| {
            let (d, heads) = (size(g, 0), size(g, 1));
            if s.rank != 2 {
                return Err(ShapeError::Rank { expected: "[T, D]" });
            }
            match s.last() {
                Some(last) if last == d => {}
                _ => return Err(ShapeError::Embedding { expected: d }),
            }
            if heads == 0 || !d.is_multiple_of(heads) {
                return Err(ShapeError::Heads { d, heads });
            }
            Ok(s)
        },
        rank: |r| r,
    }

    /// `Lstm<I, H>`: a long short-term memory over `[T, I]` sequences.
    Lstm {
        generics: ["I", "H"],
        keys: [NumLayers, Bidirectional, Bias, Dropout],
        defaults: Options { p: 0.0, ..Options::DEFAULT },
        products: |g, _| vec![product("input W^T", g[0]), product("hidden W^T", g[1])],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects sequences [T, {}]", size(g, 0)),
        params: |g, o| recurrent_params(4, g[0], g[1], o),
        output: |g, o, s| { recurrent(size(g, 0), size(g, 1), o, s) },
        rank: |r| r,
    }

    /// `Gru<I, H>`: a gated recurrent unit over `[T, I]` sequences.
    Gru {
        generics: ["I", "H"],
        keys: [NumLayers, Bidirectional, Bias, Dropout],
        defaults: Options { p: 0.0, ..Options::DEFAULT },
        products: |g, _| vec![product("input W^T", g[0]), product("hidden W^T", g[1])],
        holds_tensors: true,
        elementwise: false,
        takes_ids: false,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |g| format!("expects sequences [T, {}]", size(g, 0)),
        params: |g, o| recurrent_params(3, g[0], g[1], o),
        output: |g, o, s| { recurrent(size(g, 0), size(g, 1), o, s) },
        rank: |r| r,
    }

    /// `Embedding<V, D>`: ids to vectors.
    Embedding {
        generics: ["V", "D"],
        keys: [],
        holds_tensors: true,
        elementwise: false,
        takes_ids: true,
        fuses_activation: false,
        default_stride: |_| 1,
        expects: |_| "takes ids of per-sample shape [] or [T]".to_owned(),
        params: |g, _| vec![param("weight", vec![g[0], g[1]], Init::Normal)],
        output: |g, _, s| {
            if s.rank > 1 {
                return Err(ShapeError::Ids);
            }
            let mut r = s;
            r.dims[s.rank] = size(g, 1);
            r.rank += 1;
            Ok(r)
        },
        rank: |r| r + 1,
    }
}

impl Layer {
    /// Whether the backward can rebuild the layer's output from its cache
    /// in one cheap pass (the runtime's `nn::Recompute`): an activation
    /// from its input, a normalisation from its input.
    pub const fn recomputes_output(self) -> bool {
        match self {
            Layer::LayerNorm | Layer::RMSNorm => true,
            // An op whose derivative reads its input keeps that input.
            Layer::Unary(op) => !matches!(op.grad, Grad::OfOutput(_)),
            _ => false,
        }
    }

    /// For a normalisation of each row over its last dim, whether it
    /// centres the row (LayerNorm) or not (RMSNorm): a fused group of a
    /// forward body may end with one, computed in the group's pass.
    pub const fn row_norm(self) -> Option<bool> {
        match self {
            Layer::LayerNorm => Some(true),
            Layer::RMSNorm => Some(false),
            _ => None,
        }
    }

    /// Whether a residual add of its output (`x + layer(h)`) can join its
    /// bias pass (the runtime's `Tensor::bias_act_add`).
    pub const fn fuses_residual(self) -> bool {
        matches!(self, Layer::Linear | Layer::Conv2d)
    }

    /// Whether the layer's cache is its input alone, so the backward can
    /// build it from a recomputed input (the runtime's `nn::CachesInput`).
    pub const fn caches_input(self) -> bool {
        matches!(self, Layer::Linear)
    }
}
