//! What Blaze knows about each built-in layer, written once: its name and
//! const-generic parameters, its `#[layer(..)]` keys with their defaults
//! and ranges, its per-sample shape rule, its parameters and their
//! initialisation, and whether it is elementwise.
//!
//! Two readers share this crate. `#[model]` evaluates these rules while it
//! expands, so a mismatch is a compile error at the offending field that
//! names the layer and the numbers; the runtime evaluates the same rules
//! as `const fn`s after a block the macro cannot see, and builds its
//! layers from the same options and parameter list. The crate is pure
//! (no dependency, no I/O), so both can depend on it and its rules are
//! tested with plain values.
//!
//! Every match over [`Layer`] here names every layer: a new layer does
//! not compile until each rule says what it does.
#![deny(missing_docs)]

mod options;
mod shape;

pub use options::{Key, KeyKind, OptionError, Options, Value};
pub use shape::{MAX_SIZE, ShapeError, StaticShape, is_symbolic, output, output_rank};

/// The built-in layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// `Linear<I, O>`: `x W^T + b` over the last dim.
    Linear,
    /// `Conv2d<CIN, COUT, K>`: a 2-D convolution of `[C, H, W]` images.
    Conv2d,
    /// `MaxPool2d<K>`.
    MaxPool2d,
    /// `AvgPool2d<K>`.
    AvgPool2d,
    /// `GlobalAvgPool`: `[C, H, W]` to `[C]`.
    GlobalAvgPool,
    /// `Flatten`: every per-sample dim into one.
    Flatten,
    /// `Relu`.
    Relu,
    /// `LeakyRelu`.
    LeakyRelu,
    /// `Gelu` (exact, with erf).
    Gelu,
    /// `Sigmoid`.
    Sigmoid,
    /// `Tanh`.
    Tanh,
    /// `Dropout`.
    Dropout,
    /// `Map<K>`: a `kernel!` kernel applied elementwise.
    Map,
    /// `BatchNorm2d<C>`.
    BatchNorm2d,
    /// `LayerNorm<N>` over the last dim.
    LayerNorm,
    /// `Embedding<V, D>`: ids to vectors.
    Embedding,
}

/// How a layer's parameter starts, as PyTorch initialises it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    /// Uniform in `±1/sqrt(fan_in)` (PyTorch's Kaiming-uniform with
    /// `a = √5` for weights, and its bias rule).
    FanInUniform {
        /// The fan-in.
        fan_in: usize,
    },
    /// Standard normal.
    Normal,
    /// All ones.
    Ones,
    /// All zeros.
    Zeros,
}

/// One tensor a layer holds: a trainable parameter or a buffer (running
/// statistics), under PyTorch's name and layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Its name within the layer (`weight`, `running_mean`).
    pub name: &'static str,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its initial values.
    pub init: Init,
    /// False for buffers, which the optimizer does not update.
    pub trainable: bool,
}

impl Layer {
    /// Every built-in layer.
    pub const ALL: [Layer; 16] = [
        Layer::Linear,
        Layer::Conv2d,
        Layer::MaxPool2d,
        Layer::AvgPool2d,
        Layer::GlobalAvgPool,
        Layer::Flatten,
        Layer::Relu,
        Layer::LeakyRelu,
        Layer::Gelu,
        Layer::Sigmoid,
        Layer::Tanh,
        Layer::Dropout,
        Layer::Map,
        Layer::BatchNorm2d,
        Layer::LayerNorm,
        Layer::Embedding,
    ];

    /// The type's name (`Linear`), as users write it and the runtime names it.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Linear => "Linear",
            Layer::Conv2d => "Conv2d",
            Layer::MaxPool2d => "MaxPool2d",
            Layer::AvgPool2d => "AvgPool2d",
            Layer::GlobalAvgPool => "GlobalAvgPool",
            Layer::Flatten => "Flatten",
            Layer::Relu => "Relu",
            Layer::LeakyRelu => "LeakyRelu",
            Layer::Gelu => "Gelu",
            Layer::Sigmoid => "Sigmoid",
            Layer::Tanh => "Tanh",
            Layer::Dropout => "Dropout",
            Layer::Map => "Map",
            Layer::BatchNorm2d => "BatchNorm2d",
            Layer::LayerNorm => "LayerNorm",
            Layer::Embedding => "Embedding",
        }
    }

    /// The layer called `name`, if it is a built-in.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The names of its const-generic sizes, in order (`Map` takes a
    /// kernel type instead, and has none).
    pub const fn generics(self) -> &'static [&'static str] {
        match self {
            Layer::Linear => &["I", "O"],
            Layer::Conv2d => &["CIN", "COUT", "K"],
            Layer::MaxPool2d | Layer::AvgPool2d => &["K"],
            Layer::BatchNorm2d => &["C"],
            Layer::LayerNorm => &["N"],
            Layer::Embedding => &["V", "D"],
            Layer::GlobalAvgPool
            | Layer::Flatten
            | Layer::Relu
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Sigmoid
            | Layer::Tanh
            | Layer::Dropout
            | Layer::Map => &[],
        }
    }

    /// Whether its type takes the backend (it holds tensors), as
    /// `Linear<B, I, O>` does and `Relu` does not.
    pub const fn holds_tensors(self) -> bool {
        match self {
            Layer::Linear | Layer::Conv2d | Layer::BatchNorm2d | Layer::LayerNorm | Layer::Embedding => true,
            Layer::MaxPool2d
            | Layer::AvgPool2d
            | Layer::GlobalAvgPool
            | Layer::Flatten
            | Layer::Relu
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Sigmoid
            | Layer::Tanh
            | Layer::Dropout
            | Layer::Map => false,
        }
    }

    /// Whether it maps each element on its own: its output has its input's
    /// shape, whatever that is (symbolic dims included).
    pub const fn is_elementwise(self) -> bool {
        match self {
            Layer::Relu
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Sigmoid
            | Layer::Tanh
            | Layer::Dropout
            | Layer::Map => true,
            Layer::Linear
            | Layer::Conv2d
            | Layer::MaxPool2d
            | Layer::AvgPool2d
            | Layer::GlobalAvgPool
            | Layer::Flatten
            | Layer::BatchNorm2d
            | Layer::LayerNorm
            | Layer::Embedding => false,
        }
    }

    /// Whether it takes integer ids rather than floats (and so must come
    /// first in a sequential model).
    pub const fn takes_ids(self) -> bool {
        matches!(self, Layer::Embedding)
    }

    /// The activation a `Linear` or `Conv2d` before it can apply in its
    /// bias pass (`bias_act`), by the runtime's `UnaryOp` name.
    pub const fn fusable_activation(self) -> Option<&'static str> {
        match self {
            Layer::Relu => Some("Relu"),
            Layer::Sigmoid => Some("Sigmoid"),
            Layer::Tanh => Some("Tanh"),
            Layer::Linear
            | Layer::Conv2d
            | Layer::MaxPool2d
            | Layer::AvgPool2d
            | Layer::GlobalAvgPool
            | Layer::Flatten
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Dropout
            | Layer::Map
            | Layer::BatchNorm2d
            | Layer::LayerNorm
            | Layer::Embedding => None,
        }
    }

    /// Whether a following activation can be fused into its bias pass.
    pub const fn fuses_activation(self) -> bool {
        matches!(self, Layer::Linear | Layer::Conv2d)
    }

    /// The layer as written, `Conv2d<1, 6, 5>` (a `Map`'s kernel is `kernel`).
    pub fn display(self, generics: &[usize], kernel: &str) -> String {
        match (self, generics) {
            (Layer::Map, _) => format!("Map<{kernel}>"),
            (_, []) => self.name().to_owned(),
            (_, g) => {
                let g: Vec<String> = g.iter().map(usize::to_string).collect();
                format!("{}<{}>", self.name(), g.join(", "))
            }
        }
    }

    /// What the layer needs of its input, in words (`expects 64 input
    /// features`), for messages that cannot quote the input's shape.
    pub fn expects(self, sizes: &[usize]) -> String {
        let g = |i: usize| sizes.get(i).copied().unwrap_or(0);
        match self {
            Layer::Linear => format!("expects {} input features", g(0)),
            Layer::Conv2d => format!("expects an image of {} channels that its {}x{} kernel fits", g(0), g(2), g(2)),
            Layer::MaxPool2d | Layer::AvgPool2d => format!("expects an image that its {}x{} window fits", g(0), g(0)),
            Layer::GlobalAvgPool => "expects an image [C, H, W]".to_owned(),
            Layer::BatchNorm2d => format!("expects an image of {} channels", g(0)),
            Layer::LayerNorm => format!("expects a last dim of {}", g(0)),
            Layer::Embedding => "takes ids of per-sample shape [] or [T]".to_owned(),
            Layer::Flatten => "flattens at most 2147483647 elements".to_owned(),
            Layer::Relu
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Sigmoid
            | Layer::Tanh
            | Layer::Dropout
            | Layer::Map => "takes any shape".to_owned(),
        }
    }

    /// The tensors the layer holds, in the order the runtime visits them,
    /// for its `generics` and `options`. Generics must be as many as
    /// [`Layer::generics`] names (panics otherwise: a bug in the caller).
    pub fn params(self, generics: &[usize], o: &Options) -> Vec<Param> {
        let g = |i: usize| generics[i];
        let p = |name, shape: Vec<usize>, init| Param { name, shape, init, trainable: true };
        let buffer = |name, shape: Vec<usize>, init| Param { name, shape, init, trainable: false };
        match self {
            Layer::Linear => {
                let (i, out) = (g(0), g(1));
                let init = Init::FanInUniform { fan_in: i };
                let mut v = vec![p("weight", vec![out, i], init)];
                if o.bias {
                    v.push(p("bias", vec![out], init));
                }
                v
            }
            Layer::Conv2d => {
                let (cin, cout, k) = (g(0), g(1), g(2));
                let per_group = cin / o.groups.max(1);
                let init = Init::FanInUniform { fan_in: per_group * k * k };
                let mut v = vec![p("weight", vec![cout, per_group, k, k], init)];
                if o.bias {
                    v.push(p("bias", vec![cout], init));
                }
                v
            }
            Layer::BatchNorm2d => vec![
                p("weight", vec![g(0)], Init::Ones),
                p("bias", vec![g(0)], Init::Zeros),
                buffer("running_mean", vec![g(0)], Init::Zeros),
                buffer("running_var", vec![g(0)], Init::Ones),
            ],
            Layer::LayerNorm => vec![p("weight", vec![g(0)], Init::Ones), p("bias", vec![g(0)], Init::Zeros)],
            Layer::Embedding => vec![p("weight", vec![g(0), g(1)], Init::Normal)],
            Layer::MaxPool2d
            | Layer::AvgPool2d
            | Layer::GlobalAvgPool
            | Layer::Flatten
            | Layer::Relu
            | Layer::LeakyRelu
            | Layer::Gelu
            | Layer::Sigmoid
            | Layer::Tanh
            | Layer::Dropout
            | Layer::Map => Vec::new(),
        }
    }

    /// Trainable scalars (saturating: absurd sizes fail elsewhere).
    pub fn num_params(self, generics: &[usize], o: &Options) -> usize {
        self.params(generics, o)
            .iter()
            .filter(|p| p.trainable)
            .map(|p| p.shape.iter().fold(1usize, |n, &d| n.saturating_mul(d)))
            .fold(0usize, usize::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_layer_says_what_it_is() {
        for l in Layer::ALL {
            assert_eq!(Layer::from_name(l.name()), Some(l));
            // An elementwise layer holds nothing and takes no sizes.
            if l.is_elementwise() {
                assert!(!l.holds_tensors() && l.generics().is_empty(), "{l:?}");
            }
            // A layer with trainable parameters says it holds tensors.
            let g: Vec<usize> = l.generics().iter().map(|_| 4).collect();
            assert_eq!(!l.params(&g, &Options::default()).is_empty(), l.holds_tensors(), "{l:?}");
        }
        assert_eq!(Layer::from_name("Linear2"), None);
    }

    #[test]
    fn parameters_follow_pytorch() {
        let o = Options::default();
        assert_eq!(Layer::Linear.num_params(&[400, 120], &o), 48_120);
        assert_eq!(Layer::Conv2d.num_params(&[1, 6, 5], &o), 156);
        let grouped = Options { groups: 2, bias: false, ..Options::default() };
        assert_eq!(Layer::Conv2d.params(&[4, 6, 3], &grouped)[0].shape, [6, 2, 3, 3]);
        assert_eq!(Layer::Conv2d.params(&[4, 6, 3], &grouped)[0].init, Init::FanInUniform { fan_in: 18 });
        // Running statistics are buffers, not parameters.
        assert_eq!(Layer::BatchNorm2d.num_params(&[8], &o), 16);
        assert_eq!(Layer::BatchNorm2d.params(&[8], &o).len(), 4);
        assert_eq!(Layer::Linear.display(&[400, 120], ""), "Linear<400, 120>");
        assert_eq!(Layer::Map.display(&[], "swish::Kernel"), "Map<swish::Kernel>");
        assert_eq!(Layer::Relu.display(&[], ""), "Relu");
    }
}
