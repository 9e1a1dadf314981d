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
//! The shape rules of tensor ops (`rules`) are shared the same way: the
//! macro checks a forward body with them, the runtime its tensors.
//!
//! Each layer is one entry of the table in `layers.rs`, which holds all
//! of the above for it; every per-layer answer is generated from the
//! table, so a new layer does not compile until its entry says what each
//! rule does.
#![deny(missing_docs)]

pub mod dim;
mod layer_options;
mod layers;
pub mod ops;
mod options;
pub mod precision;
pub mod rows;
#[cfg(test)]
mod rule_tests;
pub mod rules;
mod shape;

pub use layers::{Layer, MAX_RNN_LAYERS, output, output_rank};
pub use options::{Interpolation, Key, KeyKind, OptionError, Options, Value};
pub use shape::{MAX_SIZE, ShapeError, StaticShape, is_symbolic, pool_window, symbol, symbol_index};

/// How a layer's parameter starts, as PyTorch initialises it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    /// Uniform in `±1/sqrt(fan_in)` (PyTorch's Kaiming-uniform with
    /// `a = √5` for weights, and its bias rule).
    FanInUniform {
        /// The fan-in.
        fan_in: usize,
    },
    /// Uniform in `±sqrt(6 / (fan_in + fan_out))` (Xavier/Glorot, as
    /// PyTorch draws attention's input projection).
    XavierUniform {
        /// The fan-in.
        fan_in: usize,
        /// The fan-out.
        fan_out: usize,
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
    /// The layer called `name`, if it is a built-in.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name)
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
        assert_eq!(Layer::from_name("Relu").map(|l| l.display(&[], "")).as_deref(), Some("Relu"));
    }
}
