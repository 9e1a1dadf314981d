//! Dims that may be known only by name: the batch dim and a sequence
//! length are symbolic in an exported model, and shape arithmetic (a
//! reshape to `[-1, T, 8]` after `[batch, 4, T, 8]`) multiplies and divides
//! them. A dim is a monomial: an integer times a product of names.

use std::fmt;

/// `coef * syms[0] * syms[1] * ..`, the names sorted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    coef: i64,
    syms: Vec<String>,
}

impl Dim {
    /// A known size (or, in a shape tensor, any integer such as -1).
    pub fn known(n: i64) -> Dim {
        Dim { coef: n, syms: Vec::new() }
    }

    /// A dim known only by `name`.
    pub fn named(name: &str) -> Dim {
        Dim { coef: 1, syms: vec![name.to_owned()] }
    }

    /// The value, if it is a plain integer.
    pub fn value(&self) -> Option<i64> {
        self.syms.is_empty().then_some(self.coef)
    }

    /// The name, if the dim is exactly one named dim.
    pub fn name(&self) -> Option<&str> {
        (self.coef == 1 && self.syms.len() == 1).then(|| self.syms[0].as_str())
    }

    /// Whether `name` is a factor.
    pub fn mentions(&self, name: &str) -> bool {
        self.syms.iter().any(|s| s == name)
    }

    pub fn mul(&self, other: &Dim) -> Dim {
        let mut syms: Vec<String> = self.syms.iter().chain(&other.syms).cloned().collect();
        syms.sort();
        Dim { coef: self.coef * other.coef, syms }
    }

    /// `self / other`, if it divides exactly.
    pub fn div(&self, other: &Dim) -> Option<Dim> {
        if other.coef == 0 || self.coef % other.coef != 0 {
            return None;
        }
        let mut syms = self.syms.clone();
        for s in &other.syms {
            let i = syms.iter().position(|x| x == s)?;
            syms.remove(i);
        }
        Some(Dim { coef: self.coef / other.coef, syms })
    }

    /// The product of `dims` (1 when empty).
    pub fn product<'a>(dims: impl IntoIterator<Item = &'a Dim>) -> Dim {
        dims.into_iter().fold(Dim::known(1), |acc, d| acc.mul(d))
    }
}

/// The shared shape rules (`blaze_spec::rules`) see an ONNX dim as the
/// runtime sees a size and `#[model]` a symbolic dim.
impl blaze_spec::rules::Extent for Dim {
    fn one() -> Dim {
        Dim::known(1)
    }

    fn fixed(&self) -> Option<usize> {
        self.value().and_then(|v| usize::try_from(v).ok())
    }

    fn times(&self, other: &Dim) -> Dim {
        self.mul(other)
    }

    fn over(&self, other: &Dim) -> Option<Dim> {
        self.div(other)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.coef != 1 || self.syms.is_empty() {
            parts.push(self.coef.to_string());
        }
        parts.extend(self.syms.iter().cloned());
        f.write_str(&parts.join("*"))
    }
}

/// `[a, b, c]`.
pub fn show(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims.iter().map(Dim::to_string).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monomials_multiply_divide_and_print() {
        let b = Dim::named("batch");
        let t = Dim::named("T");
        let bh = b.mul(&Dim::known(4));
        assert_eq!(bh.to_string(), "4*batch");
        let all = Dim::product([&b, &Dim::known(4), &t, &Dim::known(8)]);
        assert_eq!(all.div(&t.mul(&Dim::known(8))), Some(bh.clone()));
        assert_eq!(all.div(&Dim::known(3)), None);
        assert_eq!(t.div(&b), None);
        assert_eq!(t.name(), Some("T"));
        assert_eq!(bh.name(), None);
        assert!(bh.mentions("batch"));
        assert_eq!(Dim::known(-1).value(), Some(-1));
        assert_eq!(show(&[t, Dim::known(3)]), "[T, 3]");
    }
}
