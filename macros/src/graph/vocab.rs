//! The tensor operations a forward body may call, in one table.
//!
//! Lowering looks a method or function up here (and matches the resulting
//! [`Word`] exhaustively), the "what is supported" text and the did-you-mean
//! hints are built from it, and a unit test lowers every entry's example, so
//! an op listed here but not lowered (or lowered but not listed) cannot slip
//! through. The elementwise ops come from the op table: every float op of
//! one tensor without parameters (`blaze_spec::ops::UNARY`) is a method
//! and a function here, every float op of two (`BINARY`) a method and a
//! function of two tensors (`x.maximum(y)`, `pow(x, y)`) and a method
//! with a number (`x.powf(2.0)`, `x.clamp_min(0.0)`).

use std::sync::LazyLock;

use blaze_spec::ops::{BINARY, Binary, Domain, UNARY, Unary};

/// What a name in a forward body means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Word {
    /// An op of the op table.
    Unary(&'static Unary),
    /// An op of two tensors of the op table.
    Binary(&'static Binary),
    /// An op of two tensors of the op table with a number as its second.
    WithNumber(&'static Binary),
    /// `clamp(lo, hi)`: `clamp_min`, then `clamp_max`.
    Clamp,
    /// `-x`, which the adjoint negates without a kernel.
    Neg,
    Matmul,
    Transpose,
    Permute,
    Reshape,
    Flatten,
    Narrow,
    Split,
    Chunk,
    Softmax,
    LogSoftmax,
    SumDim,
    MeanDim,
    MaskedFill,
    Cat,
    Positions,
    CausalMask,
}

/// One name a forward body may use, and how it is written.
#[derive(Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    pub word: Word,
    /// Arguments after the receiver when written `x.name(..)`; `None`: not a method.
    pub method: Option<usize>,
    /// Arguments when written `name(..)`; `None`: not a free function.
    pub function: Option<usize>,
    /// Forward bodies using the entry, each form once, on an input `x` of
    /// per-sample shape `[4, 4]`, that the unit tests lower.
    #[cfg_attr(not(test), allow(dead_code))]
    pub examples: &'static [&'static str],
}

const fn method(name: &'static str, word: Word, args: usize, examples: &'static [&'static str]) -> Entry {
    Entry { name, word, method: Some(args), function: None, examples }
}

const fn function(name: &'static str, word: Word, args: usize, examples: &'static [&'static str]) -> Entry {
    Entry { name, word, method: None, function: Some(args), examples }
}

/// Both `x.name(..)` and `name(x, ..)`.
const fn both(name: &'static str, word: Word, args: usize, examples: &'static [&'static str]) -> Entry {
    Entry { name, word, method: Some(args), function: Some(args + 1), examples }
}

/// The words that are not ops of the op table.
const OTHER_WORDS: &[Entry] = &[
    method("neg", Word::Neg, 0, &["x.neg()"]),
    both("matmul", Word::Matmul, 1, &["x.matmul(x)", "matmul(x, x)"]),
    method("transpose", Word::Transpose, 2, &["x.transpose(0, -1)"]),
    method("permute", Word::Permute, 1, &["x.permute([1, 0])"]),
    method("reshape", Word::Reshape, 1, &["x.reshape([2, 8]).reshape([4, 4])"]),
    method("flatten", Word::Flatten, 0, &["x.flatten().reshape([4, 4])"]),
    method("narrow", Word::Narrow, 3, &["cat([x.narrow(1, 0, 2), x.narrow(1, 2, 2)], 1)", "x.narrow(0, -1, 1)"]),
    method("split", Word::Split, 2, &["let [a, b] = x.split(2, 0); cat([a, b], 0)"]),
    method("chunk", Word::Chunk, 2, &["let [a, b] = x.chunk(2, -1); cat([a, b], -1)"]),
    both("softmax", Word::Softmax, 1, &["x.softmax(-1)", "softmax(x, 0)"]),
    both("log_softmax", Word::LogSoftmax, 1, &["x.log_softmax(-1)", "log_softmax(x, 1)"]),
    method("clamp", Word::Clamp, 2, &["x.clamp(-1.0, 1.0)"]),
    method("sum_dim", Word::SumDim, 1, &["x - x.sum_dim(-1)"]),
    method("mean_dim", Word::MeanDim, 1, &["x - x.mean_dim(0)"]),
    method("masked_fill", Word::MaskedFill, 2, &["x.masked_fill(causal_mask(4), -1e9)"]),
    function("cat", Word::Cat, 2, &["cat([x, x], 0).narrow(0, 2, 4)"]),
    function("positions", Word::Positions, 1, &["x + self.pos(positions(4))"]),
    function("causal_mask", Word::CausalMask, 1, &[]),
];

/// Every word: the op table's float ops of one tensor without parameters
/// (`neg` aside), its float ops of two with and without a number, then
/// the others.
pub static WORDS: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let leak = |examples: Vec<String>| -> &'static [&'static str] {
        examples.into_iter().map(|e| &*e.leak()).collect::<Vec<_>>().leak()
    };
    let table = UNARY.iter().filter(|op| op.domain != Domain::Bool && op.params.is_empty() && op.name != "neg");
    let unary = table
        .map(|op| both(op.name, Word::Unary(op), 0, leak(vec![format!("x.{}()", op.name), format!("{}(x)", op.name)])));
    let floats = || BINARY.iter().filter(|op| op.domain != Domain::Bool);
    let binary = floats().map(|op| {
        both(op.name, Word::Binary(op), 1, leak(vec![format!("x.{}(x)", op.name), format!("{}(x, x)", op.name)]))
    });
    let numbers = floats()
        .map(|op| method(op.with_number, Word::WithNumber(op), 1, leak(vec![format!("x.{}(2.0)", op.with_number)])));
    unary.chain(binary).chain(numbers).chain(OTHER_WORDS.iter().copied()).collect()
});

/// The entry for `x.name(..)`.
pub fn method_word(name: &str) -> Option<&'static Entry> {
    WORDS.iter().find(|e| e.name == name && e.method.is_some())
}

/// The entry for `name(..)`.
pub fn function_word(name: &str) -> Option<&'static Entry> {
    WORDS.iter().find(|e| e.name == name && e.function.is_some())
}

/// Every tensor method, in table order.
pub fn method_names() -> impl Iterator<Item = &'static str> + Clone {
    WORDS.iter().filter(|e| e.method.is_some()).map(|e| e.name)
}

/// Every free function, in table order.
pub fn function_names() -> impl Iterator<Item = &'static str> + Clone {
    WORDS.iter().filter(|e| e.function.is_some()).map(|e| e.name)
}

/// What a forward body may contain, for error messages.
pub fn supported() -> String {
    format!(
        "a #[model] forward body is straight-line tensor code: `let` bindings, calls of layer fields, `+ - * /`, \
         tensor methods ({}), the functions {}, kernel! functions, and `for` over an array of layers",
        method_names().collect::<Vec<_>>().join(", "),
        function_names().collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_every_form_has_an_example() {
        let mut seen = HashSet::new();
        for e in WORDS.iter() {
            assert!(seen.insert(e.name), "`{}` is listed twice", e.name);
            assert!(e.method.is_some() || e.function.is_some(), "`{}` is neither method nor function", e.name);
            if e.word == Word::CausalMask {
                continue; // only an argument of masked_fill, whose example uses it
            }
            if e.method.is_some() {
                let call = format!(".{}(", e.name);
                assert!(e.examples.iter().any(|x| x.contains(&call)), "no example of `x.{}(..)`", e.name);
            }
            if e.function.is_some() {
                let starts = |x: &&str| {
                    x.match_indices(&format!("{}(", e.name)).any(|(i, _)| {
                        i == 0
                            || !x.as_bytes()[i - 1].is_ascii_alphanumeric()
                                && x.as_bytes()[i - 1] != b'.'
                                && x.as_bytes()[i - 1] != b'_'
                    })
                };
                assert!(e.examples.iter().any(starts), "no example of `{}(..)`", e.name);
            }
        }
    }

    #[test]
    fn supported_text_names_every_entry() {
        let text = supported();
        for e in WORDS.iter() {
            assert!(text.contains(e.name), "{text} misses {}", e.name);
        }
    }
}
