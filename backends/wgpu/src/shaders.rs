//! The WGSL of the tensor primitives: one template per shader in
//! `src/wgsl/`, each a whole shader with `{{name}}` holes that the backend
//! fills per op, dtype, rank and layout (an element type, a rank, an
//! expression the op table prints). [`Template::render`] refuses a hole
//! without a fill and a fill without a hole, and `tests/wgsl.rs` has naga
//! validate every shader the backend builds.
//!
//! These are written by hand rather than with `kernel!`: they index
//! buffers of several element types (f32 values, u32 booleans and
//! indices) through shapes and strides passed at run time, which the
//! `kernel!` DSL (f32 buffers, fixed arity) does not express. The
//! elementwise math they run comes from the op table, as the `functions`
//! and `expr` of [`elementwise`] and [`kernel`].
//!
//! Every shader binds its buffers in order, then a uniform block of 64
//! `u32` parameters, read with `pu(k)` (`pf(k)` for an f32's bits):
//! `wgsl/common.wgsl`, which [`Template::shader`] puts first.

use blaze_runtime::{DType, ReduceOp};

/// Invocations per workgroup of one-element-per-invocation kernels.
pub const WG: u32 = 256;

/// A shader's text with `{{name}}` holes.
#[derive(Clone, Copy, Debug)]
pub struct Template {
    /// What a refusal names: the file's stem.
    name: &'static str,
    text: &'static str,
}

/// A template constant per file of `src/wgsl/`.
macro_rules! templates {
    ($($(#[$doc:meta])* $konst:ident = $file:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $konst: Template = Template { name: $file, text: include_str!(concat!("wgsl/", $file, ".wgsl")) };
        )*
        /// Every template of `src/wgsl/`.
        #[cfg(test)]
        const ALL: &[Template] = &[$($konst),*];
    };
}

templates! {
    /// A broadcasting elementwise op; see [`elementwise`].
    ELEMENTWISE = "elementwise";
    /// A `kernel!` elementwise function; see [`kernel`].
    KERNEL = "kernel";
    /// One dim padded with a value: holes `ty` and `value`.
    PAD = "pad";
    /// One part of a concatenation: hole `ty`.
    CAT = "cat";
    /// A reduction, a workgroup per output: holes `out_ty`, `combine`
    /// ([`COMBINE_FOLD`] or [`COMBINE_SELECT`]), `identity`, `result`.
    REDUCE = "reduce";
    /// A reduction, an invocation per output: [`REDUCE`]'s holes.
    REDUCE_SHORT = "reduce_short";
    /// A fold's `comb`: hole `op` (the table's operator).
    COMBINE_FOLD = "combine_fold";
    /// A selection's `comb`: hole `beats` (`>` or `<`).
    COMBINE_SELECT = "combine_select";
    /// Inference attention with an online softmax: hole `width`.
    ATTENTION = "attention";
    /// One Adam or AdamW step.
    ADAM = "adam";
    /// The batched matmul: holes `round` and `tile`; see [`matmul`].
    MATMUL = "matmul";
    /// Rounding f32 values to bf16 or f16, kept in f32.
    ROUND16 = "round16";
    /// Gather along a dim: holes `ty`, `rank`, `dim`.
    GATHER = "gather";
    /// Scatter-add along a dim: holes `rank`, `dim`.
    SCATTER_ADD = "scatter_add";
    /// Index-select of a middle dim: hole `ty`.
    INDEX_SELECT = "index_select";
    /// Index-add into a middle dim.
    INDEX_ADD = "index_add";
    /// Pooling's window walk; see [`max_pool2d`] and [`avg_pool2d`].
    POOL2D = "pool2d";
    /// Average pooling's input gradient.
    AVG_POOL2D_INPUT_GRAD = "avg_pool2d_input_grad";
    /// A convolution's columns summed back onto its input.
    COL2IM = "col2im";
    /// A convolution's input as columns.
    IM2COL = "im2col";
}

/// The parameter block and helpers every shader starts with.
const COMMON: &str = include_str!("wgsl/common.wgsl");

/// A storage buffer's declaration.
const STORAGE: Template = Template {
    name: "storage binding",
    text: "@group(0) @binding({{slot}}) var<storage, {{access}}> {{name}}: array<{{ty}}>;\n",
};

/// The parameter block's declaration, after the buffers.
const UNIFORM: Template =
    Template { name: "uniform binding", text: "@group(0) @binding({{slot}}) var<uniform> params: Params;\n" };

/// One input of [`elementwise`] read into its variable.
const LOAD: Template = Template { name: "elementwise load", text: "    let {{var}} = {{buffer}}[{{at}}];\n" };

impl Template {
    /// The text with every hole filled from `fills`, `(name, text)` pairs.
    /// Panics, naming the template and the hole, on a hole without a fill
    /// or a fill without a hole.
    pub fn render(self, fills: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(self.text.len() + fills.iter().map(|(_, t)| t.len()).sum::<usize>());
        let mut used = vec![false; fills.len()];
        let mut rest = self.text;
        while let Some((before, hole, after)) = self.next_hole(rest) {
            out += before;
            let k = fills
                .iter()
                .position(|&(name, _)| name == hole)
                .unwrap_or_else(|| panic!("wgsl template `{}`: nothing fills its hole `{hole}`", self.name));
            used[k] = true;
            out += fills[k].1;
            rest = after;
        }
        out += rest;
        if let Some(k) = used.iter().position(|&u| !u) {
            panic!("wgsl template `{}` has no hole `{}` to fill", self.name, fills[k].0);
        }
        out
    }

    /// A whole shader: the parameter block and helpers, then this template
    /// rendered.
    pub fn shader(self, fills: &[(&str, &str)]) -> String {
        let mut s = COMMON.to_owned();
        s += "\n";
        s += &self.render(fills);
        s
    }

    /// The text before `rest`'s first hole, the hole's name and the text
    /// after it; `None` without a hole.
    fn next_hole(self, rest: &'static str) -> Option<(&'static str, &'static str, &'static str)> {
        let start = rest.find("{{")?;
        let inside = &rest[start + 2..];
        let end =
            inside.find("}}").unwrap_or_else(|| panic!("wgsl template `{}`: a `{{{{` is never closed", self.name));
        Some((&rest[..start], &inside[..end], &inside[end + 2..]))
    }

    /// The names of the holes, as often as they appear.
    #[cfg(test)]
    fn holes(self) -> Vec<&'static str> {
        let mut holes = Vec::new();
        let mut rest = self.text;
        while let Some((_, hole, after)) = self.next_hole(rest) {
            holes.push(hole);
            rest = after;
        }
        holes
    }
}

/// The declarations of storage buffers `(name, element type, written)`,
/// bound in order, and of the parameter block after them.
pub fn bindings(buffers: &[(&str, &str, bool)]) -> String {
    let mut s = String::new();
    for (slot, &(name, ty, write)) in buffers.iter().enumerate() {
        let access = if write { "read_write" } else { "read" };
        s += &STORAGE.render(&[("slot", &slot.to_string()), ("access", access), ("name", name), ("ty", ty)]);
    }
    s + &UNIFORM.render(&[("slot", &buffers.len().to_string())])
}

/// One input of an elementwise kernel: its WGSL element type and whether
/// it is read at the output's index (`direct`) or through strides.
#[derive(Clone, Copy, Debug)]
pub struct EwInput {
    pub ty: &'static str,
    pub direct: bool,
}

/// `out[i] = expr` over `inputs` (`a`, `b`, `c` in `expr`) with `rank`
/// dims and `extras` parameters after the element count; `expr` may call
/// the functions `funcs` defines. Parameters: `[numel, extras.., shape[rank],
/// then per strided input offset, strides[rank]]`.
pub fn elementwise(inputs: &[EwInput], out_ty: &str, rank: usize, extras: usize, funcs: &str, expr: &str) -> String {
    let names = ["in0", "in1", "in2"];
    let mut bufs: Vec<(&str, &str, bool)> = inputs.iter().enumerate().map(|(k, x)| (names[k], x.ty, false)).collect();
    bufs.push(("out", out_ty, true));
    let mut loads = String::new();
    let mut slot = 0;
    for (k, x) in inputs.iter().enumerate() {
        let at = if x.direct {
            "i".to_owned()
        } else {
            slot += 1;
            format!("strided(i, {}u)", slot - 1)
        };
        loads += &LOAD.render(&[("var", ["a", "b", "c"][k]), ("buffer", names[k]), ("at", &at)]);
    }
    ELEMENTWISE.shader(&[
        ("bindings", &bindings(&bufs)),
        ("functions", funcs),
        ("rank", &rank.to_string()),
        ("extras", &extras.to_string()),
        ("loads", loads.trim_end()),
        ("expr", expr),
    ])
}

/// A `kernel!` function over f32 `inputs` (bound as named): `out[i] =
/// call`, `call` a call of a function `funcs` defines.
pub fn kernel(inputs: &[&str], funcs: &str, call: &str) -> String {
    let mut bufs: Vec<(&str, &str, bool)> = inputs.iter().map(|&n| (n, "f32", false)).collect();
    bufs.push(("out", "f32", true));
    KERNEL.shader(&[("bindings", &bindings(&bufs)), ("functions", funcs), ("call", call)])
}

/// The reduction `op` of the table, its step printed from the entry: over
/// `short` rows [`REDUCE_SHORT`], else [`REDUCE`].
pub fn reduce(op: ReduceOp, short: bool) -> String {
    let arg = op.position();
    let (combine, identity) = if !op.selects() {
        (COMBINE_FOLD.render(&[("op", op.symbol())]), "0.0")
    } else {
        // The value every number beats or ties: -inf for `>`, +inf for `<`.
        let worst = if op.symbol() == ">" { "bitcast<f32>(0xff800000u)" } else { "bitcast<f32>(0x7f800000u)" };
        (COMBINE_SELECT.render(&[("beats", op.symbol())]), worst)
    };
    let (template, result) = match (short, arg) {
        (true, true) => (REDUCE_SHORT, "ix"),
        (true, false) => (REDUCE_SHORT, "v"),
        (false, true) => (REDUCE, "si[0]"),
        (false, false) => (REDUCE, "sv[0]"),
    };
    template.shader(&[
        ("out_ty", if arg { "u32" } else { "f32" }),
        ("combine", &combine),
        ("identity", identity),
        ("result", result),
    ])
}

/// Max pooling: the window's largest value (NaN wins; the first of
/// equals) into `out` and its place in the plane into `idx`.
pub fn max_pool2d() -> String {
    POOL2D.shader(&[
        ("bindings", &bindings(&[("x", "f32", false), ("out", "f32", true), ("idx", "u32", true)])),
        ("start", "    var best = bitcast<f32>(0xff800000u); var at = 0xffffffffu;"),
        (
            "fold",
            "                if (at == 0xffffffffu || (!isnan_(best) && (v > best || isnan_(v)))) { best = v; at = q; }",
        ),
        ("finish", "    out[i] = best; idx[i] = at;"),
    ])
}

/// Average pooling; padding counts as zeros.
pub fn avg_pool2d() -> String {
    POOL2D.shader(&[
        ("bindings", &bindings(&[("x", "f32", false), ("out", "f32", true)])),
        ("start", "    var acc = 0.0;"),
        ("fold", "                acc = acc + v;"),
        ("finish", "    out[i] = acc / f32(pu(5u) * pu(6u));"),
    ])
}

/// The widest query, key and value rows [`ATTENTION`] takes; wider ones
/// compose.
pub const ATTENTION_MAX_WIDTH: usize = 128;

/// [`ATTENTION`] with rows up to [`ATTENTION_MAX_WIDTH`] wide.
pub fn attention() -> String {
    ATTENTION.shader(&[("width", &ATTENTION_MAX_WIDTH.to_string())])
}

/// [`MATMUL`] with each operand's values rounded to `round` (bf16 or
/// f16) as they are staged, and staged as f16 where `f16_tiles` (the
/// adapter has `SHADER_F16` and the values are f16's): half the
/// workgroup memory and its traffic, the same sums.
pub fn matmul(round: Option<DType>, f16_tiles: bool) -> String {
    let func = match round {
        None => "",
        Some(DType::BF16) => "round_bf16",
        Some(DType::F16) => "round_f16",
        Some(other) => panic!("wgpu matmul: operands round to bf16 or f16, not {other}"),
    };
    assert!(!f16_tiles || round == Some(DType::F16), "wgpu matmul: f16 tiles hold f16 values, not {round:?}");
    let enable = if f16_tiles { "enable f16;\n" } else { "" };
    let tile = if f16_tiles { "f16" } else { "f32" };
    let funcs = if round.is_some() { ROUND16.render(&[]) } else { String::new() };
    format!("{enable}{}\n{funcs}", MATMUL.shader(&[("round", func), ("tile", tile)]))
}

/// [`ROUND16`]'s functions, for an elementwise rounding.
pub fn round16() -> String {
    ROUND16.render(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_names_its_holes_and_renders_them() {
        for t in ALL {
            let holes = t.holes();
            assert!(
                holes.iter().all(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_lowercase() || c == '_')),
                "{}: {holes:?}",
                t.name
            );
            let mut names = holes.clone();
            names.sort_unstable();
            names.dedup();
            let fills: Vec<(&str, &str)> = names.iter().map(|&h| (h, "X")).collect();
            let text = t.render(&fills);
            assert!(!text.contains("{{") && !text.contains("}}"), "{}", t.name);
            assert_eq!(text.matches('X').count() - t.text.matches('X').count(), holes.len(), "{}", t.name);
        }
    }

    #[test]
    #[should_panic(expected = "wgsl template `pad`: nothing fills its hole `value`")]
    fn a_hole_without_a_fill_is_refused() {
        PAD.render(&[("ty", "f32")]);
    }

    #[test]
    #[should_panic(expected = "wgsl template `adam` has no hole `ty` to fill")]
    fn a_fill_without_a_hole_is_refused() {
        ADAM.render(&[("ty", "f32")]);
    }
}
