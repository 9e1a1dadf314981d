//! Dims that may be known only by name, as shape arithmetic sees them: a
//! dim is a monomial, an integer times a product of names. `#[model]`
//! checks a forward body's per-sample shapes with them (`T`, a flattened
//! `[T, 64]` as `64*T`), naming its symbols by index; the ONNX importer
//! names them by string (`batch`, a reshape to `[-1, T, 8]` after `[batch,
//! 4, T, 8]`). Both hand them to the op table's rules as an [`Extent`].
//! In const evaluation, where a `Vec` cannot live, a dim known only by
//! name is [`crate::symbol`]`(k)` in a [`crate::StaticShape`].

use std::borrow::Borrow;
use std::fmt;

use crate::rules::Extent;

/// `coef * syms[0] * syms[1] * ..`, the names sorted: `64` is `{64, []}`,
/// `T` is `{1, [T]}`, a flattened `[T, 64]` is `{64, [T]}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dim<S> {
    /// The integer factor (in an importer's shape tensor, any integer,
    /// such as reshape's `-1`).
    pub coef: i64,
    /// The named factors, sorted.
    pub syms: Vec<S>,
}

impl<S: Clone + Ord> Dim<S> {
    /// A known size.
    pub fn known(n: i64) -> Dim<S> {
        Dim { coef: n, syms: Vec::new() }
    }

    /// A dim known only by `name`.
    pub fn named(name: impl Into<S>) -> Dim<S> {
        Dim { coef: 1, syms: vec![name.into()] }
    }

    /// The value, if it is a plain integer.
    pub fn value(&self) -> Option<i64> {
        self.syms.is_empty().then_some(self.coef)
    }

    /// The name, if the dim is exactly one named dim.
    pub fn name(&self) -> Option<&S> {
        match self.syms.as_slice() {
            [name] if self.coef == 1 => Some(name),
            _ => None,
        }
    }

    /// Whether `name` is a factor.
    pub fn mentions<Q: PartialEq + ?Sized>(&self, name: &Q) -> bool
    where
        S: Borrow<Q>,
    {
        self.syms.iter().any(|s| s.borrow() == name)
    }

    /// The product of two dims.
    pub fn mul(&self, other: &Dim<S>) -> Dim<S> {
        let mut syms: Vec<S> = self.syms.iter().chain(&other.syms).cloned().collect();
        syms.sort();
        // Saturating, as `usize`'s `Extent`: a product past any size is
        // refused by the rules that read it, not an overflow.
        Dim { coef: self.coef.saturating_mul(other.coef), syms }
    }

    /// `self / other`, if it divides exactly.
    pub fn div(&self, other: &Dim<S>) -> Option<Dim<S>> {
        if other.coef == 0 || self.coef % other.coef != 0 {
            return None;
        }
        let mut syms = self.syms.clone();
        for s in &other.syms {
            let at = syms.iter().position(|x| x == s)?;
            syms.remove(at);
        }
        Some(Dim { coef: self.coef / other.coef, syms })
    }

    /// `self + other`, when the sum is a monomial: both are numbers, or
    /// one of them is zero.
    pub fn add(&self, other: &Dim<S>) -> Option<Dim<S>> {
        match (self.value(), other.value()) {
            (Some(a), Some(b)) => Some(Dim::known(a + b)),
            (Some(0), None) => Some(other.clone()),
            (None, Some(0)) => Some(self.clone()),
            _ => None,
        }
    }

    /// The product of `dims` (1 when empty).
    pub fn product<'a>(dims: impl IntoIterator<Item = &'a Dim<S>>) -> Dim<S>
    where
        S: 'a,
    {
        dims.into_iter().fold(Dim::known(1), |acc, d| acc.mul(d))
    }

    /// The dim written out, each name as `name` spells it: `64*T`.
    pub fn show(&self, name: impl Fn(&S) -> String) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.coef != 1 || self.syms.is_empty() {
            parts.push(self.coef.to_string());
        }
        parts.extend(self.syms.iter().map(name));
        parts.join("*")
    }
}

/// The op table's shape rules see a symbolic dim as the runtime sees a
/// size.
impl<S: Clone + Ord> Extent for Dim<S> {
    fn one() -> Dim<S> {
        Dim::known(1)
    }

    fn fixed(&self) -> Option<usize> {
        self.value().and_then(|v| usize::try_from(v).ok())
    }

    fn times(&self, other: &Dim<S>) -> Dim<S> {
        self.mul(other)
    }

    fn over(&self, other: &Dim<S>) -> Option<Dim<S>> {
        self.div(other)
    }
}

impl<S: Clone + Ord + fmt::Display> fmt::Display for Dim<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.show(|s| s.to_string()))
    }
}

/// `[a, b, c]`.
pub fn show<S: Clone + Ord>(dims: &[Dim<S>], name: impl Fn(&S) -> String) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.show(&name)).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monomials_multiply_divide_and_print() {
        let b = Dim::<String>::named("batch");
        let t = Dim::<String>::named("T");
        let bh = b.mul(&Dim::known(4));
        assert_eq!(bh.to_string(), "4*batch");
        let all = Dim::product([&b, &Dim::known(4), &t, &Dim::known(8)]);
        assert_eq!(all.to_string(), "32*T*batch");
        assert_eq!(all.div(&t.mul(&Dim::known(8))), Some(bh.clone()));
        assert_eq!(all.div(&Dim::known(3)), None);
        assert_eq!(Dim::<String>::known(0).add(&t), Some(t.clone()));
        assert_eq!(Dim::<String>::known(2).add(&Dim::known(3)), Some(Dim::known(5)));
        assert_eq!(t.add(&b), None);
        // A product past every size saturates instead of overflowing.
        assert_eq!(Dim::<String>::known(i64::MAX).mul(&Dim::known(2)), Dim::known(i64::MAX));
        assert_eq!(t.div(&b), None);
        assert_eq!(t.name().map(String::as_str), Some("T"));
        assert_eq!(bh.name(), None);
        assert!(bh.mentions("batch"));
        assert_eq!(Dim::<String>::known(-1).value(), Some(-1));
        assert_eq!(Dim::<String>::known(-1).fixed(), None);
        assert_eq!(show(&[t, Dim::known(3)], |s| s.clone()), "[T, 3]");
        // Symbols by index, named by a table.
        let symbols = ["T", "S"];
        let d = Dim::<usize>::named(1usize).mul(&Dim::known(64)).mul(&Dim::named(0usize));
        assert_eq!(d.show(|&k| symbols[k].to_owned()), "64*T*S");
        assert_eq!(d.over(&Dim::named(1usize)), Some(Dim::named(0usize).mul(&Dim::known(64))));
    }
}
