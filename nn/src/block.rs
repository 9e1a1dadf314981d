//! `Block`: what `#[model]` generates for a model, and what a user layer
//! implements to be a field of one. Also the const shape rules the macro
//! falls back on after a block whose shapes it cannot see, and the summary
//! table.

use std::fmt;

use super::{Ctx, Module, ParamVisitor};
use blaze_runtime::Backend;
use blaze_runtime::rng::Rng;

/// A per-sample shape usable in const evaluation (the spec's).
pub use blaze_spec::StaticShape;

/// A model of one input whose backward `#[model]` generates: what
/// training needs from it. Every [`Block`] is one; so are graph models
/// whose dims are symbolic (`input = [T]`), which are no `Block` because
/// their shapes are not fixed. `fit` trains any of them.
pub trait Differentiable<B: Backend>: Module<B> {
    /// The input batch.
    type Input: Clone;
    /// The output batch.
    type Output: Clone;
    /// What the training forward keeps for the backward pass.
    type Cache;

    /// Inference.
    fn forward(&self, x: &Self::Input) -> Self::Output;
    /// The training forward.
    fn forward_train(&mut self, x: &Self::Input, ctx: &mut Ctx) -> (Self::Output, Self::Cache);
    /// Input and parameter gradients from the output gradient.
    fn backward(&self, cache: &Self::Cache, grad: &Self::Output) -> (Self::Input, Self::Grads);
    /// The parameter gradients alone: what training needs from a whole
    /// model, whose input gradient nobody reads. `#[model]` skips the work
    /// done only for the input gradient (that of its first layers).
    fn backward_params(&self, cache: &Self::Cache, grad: &Self::Output) -> Self::Grads {
        self.backward(cache, grad).1
    }
    /// A table of the layers, their output shapes and parameter counts
    /// (what `#[model]`'s `summary()` prints); empty for a model that has
    /// none.
    fn summary(&self) -> String {
        String::new()
    }
    /// [`Differentiable::backward_params`] that hands each layer's
    /// gradients to `ready` as soon as the backward has made them, last
    /// layer first, under the names [`Module::visit_grad_tensors`] gives
    /// them: a data-parallel step starts reducing the last layers'
    /// gradients while the backward still works on the first ones.
    /// `#[model]` generates it layer by layer for sequential models; this
    /// default hands over every gradient at the end.
    fn backward_params_each<V: ParamVisitor<B>>(
        &self,
        cache: &Self::Cache,
        grad: &Self::Output,
        ready: &mut V,
    ) -> Self::Grads {
        let grads = self.backward_params(cache, grad);
        Self::visit_grad_tensors(&grads, "", ready);
        grads
    }
}

/// A statically shaped model or layer: its per-sample shapes are consts,
/// its passes ([`Differentiable`]'s) are straight-line code. `#[model]` implements both traits for every model
/// of one input with fixed dims; implement them for a hand-written layer
/// to use it as a field of a `#[model]` (the macro then checks its shapes
/// with const assertions).
pub trait Block<B: Backend>: Differentiable<B> + Clone + fmt::Debug + Sized {
    /// Per-sample input shape (the batch dim excluded); the input batch is
    /// `Tensor<B, INPUT.rank + 1>`.
    const INPUT: StaticShape;
    /// Per-sample output shape; the output batch is
    /// `Tensor<B, OUTPUT.rank + 1>`.
    const OUTPUT: StaticShape;
    /// Number of trainable scalars.
    const NUM_PARAMS: usize;

    /// A freshly initialised block drawing from `rng`.
    fn init(rng: &mut Rng, device: &B::Device) -> Self;
}

pub use blaze_runtime::backend::BackendDevice;

/// The rules for built-in layers after a block whose output the macro
/// cannot see, evaluated by the compiler: the spec's own rules, each
/// failing compilation with `what`.
pub mod shape_rules {
    use super::StaticShape;
    use blaze_spec::{Layer, Options, output};

    /// Checks that a block gets the input it expects.
    pub const fn expect(expected: StaticShape, actual: StaticShape, what: &str) {
        if !expected.same(&actual) {
            panic!("{}", what);
        }
    }

    /// The output of built-in `layer` (its sizes `generics`, options `o`)
    /// for input `s`.
    pub const fn layer(layer: Layer, generics: &[usize], o: &Options, s: StaticShape, what: &str) -> StaticShape {
        match output(layer, generics, o, s) {
            Ok(out) => out,
            Err(_) => panic!("{}", what),
        }
    }
}

/// One row of a model summary.
#[derive(Clone, Debug)]
pub struct SummaryRow {
    /// Field name.
    pub name: String,
    /// Layer type as written.
    pub kind: String,
    /// Per-sample output shape.
    pub output: String,
    /// Trainable scalars.
    pub params: usize,
}

/// A Keras-style table: layer, type, output shape, parameters, and the total.
pub fn summary_table(model: &str, input: &str, rows: &[SummaryRow]) -> String {
    let header = ["Layer", "Type", "Output shape", "Params"];
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [r.name.clone(), r.kind.clone(), format!("[batch, {}]", r.output.trim_matches(['[', ']'])), group(r.params)]
        })
        .collect();
    let lines = columns(header, &cells, 3);
    let rule = "-".repeat(lines[0].chars().count() - 1) + "\n";
    let mut out = format!("{model} (input [batch, {}])\n", input.trim_matches(['[', ']']));
    out += &rule;
    out += &lines[0];
    out += &rule;
    for line in &lines[1..] {
        out += line;
    }
    out += &rule;
    let total: usize = rows.iter().map(|r| r.params).sum();
    out += &format!("Total params: {}\n", group(total));
    out
}

/// The `header` line and one line per row of `rows` (each ending in a
/// newline), four columns two spaces apart, each as wide as its widest
/// cell, those from `right` on aligned right: the tables of `summary()`
/// (here and in `blaze::quant`).
pub(crate) fn columns(header: [&str; 4], rows: &[[String; 4]], right: usize) -> Vec<String> {
    let mut width = header.map(|h| h.chars().count());
    for c in rows {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: [&str; 4]| {
        let cells: Vec<String> =
            (0..4)
                .map(|i| {
                    if i < right {
                        format!("{:<w$}", c[i], w = width[i])
                    } else {
                        format!("{:>w$}", c[i], w = width[i])
                    }
                })
                .collect();
        cells.join("  ") + "\n"
    };
    std::iter::once(line(header)).chain(rows.iter().map(|r| line([&r[0], &r[1], &r[2], &r[3]]))).collect()
}

/// `1234567` as `1,234,567`.
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
