//! What each layer's options mean: a layer's default stride and
//! `Options::set`, which checks a key against the layer's table entry.

use crate::Layer;
use crate::options::{Interpolation, Key, KeyKind, OptionError, Options, Value, check_number};
use crate::shape::MAX_SIZE;

impl Options {
    /// The stride `layer` uses: as given, or its default.
    pub const fn stride_of(&self, layer: Layer, k: usize) -> usize {
        match self.stride {
            Some(s) => s,
            None => layer.default_stride(k),
        }
    }

    /// Sets the key called `name` of `layer` to `value`, checking both.
    pub fn set(&mut self, layer: Layer, name: &str, value: Value<'_>) -> Result<(), OptionError> {
        let Some(&key) = layer.keys().iter().find(|k| k.name() == name) else {
            return Err(OptionError(format!("`{}` has no option `{name}`", layer.name())));
        };
        let fail = |msg: String| Err(OptionError(msg));
        let mut mode = self.mode;
        if key.kind() == KeyKind::Interpolation {
            let chosen = match value {
                Value::Str(s) => Interpolation::ALL.into_iter().find(|m| m.name() == s),
                _ => None,
            };
            let Some(chosen) = chosen else {
                let names: Vec<String> = Interpolation::ALL.iter().map(|m| format!("\"{}\"", m.name())).collect();
                let got = match value {
                    Value::Str(s) => format!(", got \"{s}\""),
                    _ => String::new(),
                };
                return fail(format!("`{name}` is one of {}{got}", names.join(", ")));
            };
            mode = chosen;
        } else if let Value::Str(_) = value {
            return fail(format!("`{name}` takes a number or bool, not a string"));
        }
        let (count, flag, number) = match (key.kind(), value) {
            (KeyKind::Interpolation, _) => (0, false, 0.0),
            (KeyKind::Dim, Value::Int(v)) => {
                if v.unsigned_abs() > MAX_SIZE as u128 {
                    return fail(format!("`{name}` is {v}, beyond any shape's rank"));
                }
                (0, false, v as f64)
            }
            (KeyKind::Dim, _) => return fail(format!("`{name}` takes an integer (negative counts from the last)")),
            (KeyKind::Count { min }, Value::Int(v)) => {
                if v > MAX_SIZE as i128 {
                    return fail(format!("`{name}` is {v}, more than any layer takes (at most {MAX_SIZE})"));
                }
                if v < min as i128 {
                    let what = if min == 0 { "a non-negative" } else { "a positive" };
                    return fail(format!("`{name}` must be {what} integer, got {v}"));
                }
                (v as usize, false, 0.0)
            }
            (KeyKind::Count { .. }, _) => return fail(format!("`{name}` takes an integer")),
            (KeyKind::Bool, Value::Bool(b)) => (0, b, 0.0),
            (KeyKind::Bool, _) => return fail(format!("`{name}` takes `true` or `false`")),
            (_, Value::Bool(_) | Value::Str(_)) => return fail(format!("`{name}` takes a number")),
            (kind, Value::Int(v)) => (0, false, check_number(name, kind, v as f64)?),
            (kind, Value::Float(v)) => (0, false, check_number(name, kind, v)?),
        };
        match key {
            Key::Stride => self.stride = Some(count),
            Key::Padding => self.padding = count,
            Key::Dilation => self.dilation = count,
            Key::Groups => self.groups = count,
            Key::Bias => self.bias = flag,
            Key::P | Key::Dropout => self.p = number,
            Key::NegativeSlope => self.negative_slope = number,
            Key::Eps => self.eps = number,
            Key::Momentum => self.momentum = number,
            Key::Alpha => self.alpha = number,
            Key::Beta => self.beta = number,
            Key::Threshold => self.threshold = number,
            Key::Dim => self.dim = number as i64,
            Key::ElementwiseAffine => self.elementwise_affine = flag,
            Key::ScaleFactor => self.scale_factor = number,
            Key::Mode => self.mode = mode,
            Key::OutputPadding => self.output_padding = count,
            Key::Causal => self.causal = flag,
            Key::NumLayers => self.num_layers = count,
            Key::Bidirectional => self.bidirectional = flag,
            Key::AlignCorners => self.align_corners = flag,
            Key::CeilMode => self.ceil_mode = flag,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_check_their_values_and_fill_the_options() {
        let mut o = Options::default();
        o.set(Layer::Conv2d, "padding", Value::Int(2)).expect("valid");
        o.set(Layer::Conv2d, "bias", Value::Bool(false)).expect("valid");
        o.set(Layer::Dropout, "p", Value::Float(0.1)).expect("valid");
        assert_eq!((o.padding, o.bias, o.p), (2, false, 0.1));
        assert_eq!(o.stride_of(Layer::MaxPool2d, 3), 3);
        assert_eq!(o.stride_of(Layer::Conv2d, 3), 1);
        let err = |l, k, v| Options::default().set(l, k, v).expect_err("invalid").0;
        assert_eq!(err(Layer::Conv2d, "padding", Value::Int(-1)), "`padding` must be a non-negative integer, got -1");
        assert_eq!(err(Layer::Conv2d, "stride", Value::Int(0)), "`stride` must be a positive integer, got 0");
        assert_eq!(err(Layer::Dropout, "p", Value::Float(1.5)), "dropout probability `p` must lie in [0, 1), got 1.5");
        assert_eq!(err(Layer::LayerNorm, "eps", Value::Int(0)), "`eps` must be positive, got 0");
        assert_eq!(err(Layer::Linear, "bias", Value::Int(1)), "`bias` takes `true` or `false`");
        assert_eq!(err(Layer::Flatten, "p", Value::Int(1)), "`Flatten` has no option `p`");
        assert!(err(Layer::Conv2d, "padding", Value::Int(1 << 40)).contains("at most 2147483647"));
        // A string names an interpolation; other keys refuse strings.
        let mut o = Options::default();
        o.set(Layer::Conv2d, "padding", Value::Int(1)).expect("valid");
        assert_eq!(err(Layer::Conv2d, "padding", Value::Str("1")), "`padding` takes a number or bool, not a string");
        // Every key a layer lists is one `set` knows.
        for l in Layer::ALL {
            for k in l.keys() {
                let v = match k.kind() {
                    KeyKind::Count { .. } | KeyKind::Dim => Value::Int(1),
                    KeyKind::Bool => Value::Bool(true),
                    KeyKind::Interpolation => Value::Str("bilinear"),
                    _ => Value::Float(0.5),
                };
                Options::default().set(l, k.name(), v).unwrap_or_else(|e| panic!("{l:?}.{}: {e}", k.name()));
            }
        }
    }
}
