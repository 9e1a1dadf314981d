//! The row ops (softmax and log-softmax, their adjoint, LayerNorm and
//! RMSNorm with their gradients, cross-entropy with its gradient), each
//! written once, as a function generic over [`Rows`]: what a backend does
//! with a row (reduce it, write it, branch on a flag), not how.
//!
//! Two backends of [`Rows`] run these definitions:
//! - the CPU backend's, over slices: every reduction one of its
//!   vectorised folds, every write a loop over the row in cache;
//! - [`Printer`], which prints each op as a `kernel!` general kernel
//!   ([`ROWS`]): one workgroup per row (striding over rows past the
//!   device's grid), the row's reductions as trees in shared memory.
//!   `blaze-macros` compiles those for the runtime (`blaze_runtime::rows`:
//!   the WGSL the wgpu backend runs, and the CPU code that runs its
//!   workgroups) and for the CubeCL backend (its `#[cube]` code).
//!
//! So every backend computes a row op from one definition; the
//! conformance suite holds them to the same values.
//!
//! The closures of a definition's branches are `#[inline(always)]`: the
//! CPU compiles an op once per ISA, and only code inlined into it gets
//! the wider vectors.
//!
//! A definition's reductions sit outside any branch on a row's data (a
//! GPU's barriers must be reached by the whole workgroup): such branches
//! only choose what to write. Branches on a flag may hold reductions.
//!
//! In the kernels, a softmax's rows are the middle dim of `[outer, n,
//! inner]`: row `j` starts at `(j / inner) * n * inner + j % inner` and
//! steps by `inner`. With a causal mask (then `inner` is 1) row `j` sees
//! its first `j % queries + 1` entries. The norms' rows are the last dim.

mod print;

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use print::{Frame, column_kernel, row_kernel};
pub use print::{Place, Printer, Sym};

/// What a row op does with a row: a backend for the definitions of this
/// module. A row has `seen` entries (a causal mask hides the rest); its
/// inputs (`In`) are rows of that length or parameters read by position,
/// its outputs (`Out`) rows, a row's own values, or sums over rows.
pub trait Rows: Sized {
    /// A number: a row's value, or an entry's inside an entry's function.
    type V: Copy
        + Debug
        + Add<Output = Self::V>
        + Sub<Output = Self::V>
        + Mul<Output = Self::V>
        + Div<Output = Self::V>
        + Neg<Output = Self::V>;
    /// A condition.
    type B: Copy + Debug;
    /// An input.
    type In: Copy + Debug;
    /// An output.
    type Out: Copy + Debug;
    /// A position in a row.
    type Idx: Copy + Debug;

    /// The number `v`.
    fn lit(v: f64) -> Self::V;
    /// `e^v`.
    fn exp(v: Self::V) -> Self::V;
    /// The natural log of `v`.
    fn ln(v: Self::V) -> Self::V;
    /// The square root of `v`.
    fn sqrt(v: Self::V) -> Self::V;

    /// How many entries the row sees, as a number.
    fn count(&self) -> Self::V;
    /// Whether `v` is -inf.
    fn is_neg_inf(&mut self, v: Self::V) -> Self::B;
    /// Whether row `x`, whose [`max`](Rows::max) is `top`, holds a NaN.
    fn has_nan(&mut self, x: Self::In, top: Self::V) -> Self::B;
    /// Output row `out` as an input, once written.
    fn written(&self, out: Self::Out) -> Self::In;

    /// `Σ f(entries)` over the entries the row sees.
    fn sum<const N: usize>(&mut self, ins: [Self::In; N], f: impl Fn([Self::V; N]) -> Self::V) -> Self::V;
    /// Two sums, `Σ f(entries)[0]` and `Σ f(entries)[1]`, in one pass.
    fn sum2<const N: usize>(&mut self, ins: [Self::In; N], f: impl Fn([Self::V; N]) -> [Self::V; 2]) -> [Self::V; 2];
    /// The largest entry of `x` the row sees; a NaN wins.
    fn max(&mut self, x: Self::In) -> Self::V;
    /// `out = f(entries)` over the entries the row sees.
    fn write<const N: usize>(&mut self, out: Self::Out, ins: [Self::In; N], f: impl Fn([Self::V; N]) -> Self::V);
    /// [`write`](Rows::write), and the sum of what was written.
    fn write_sum<const N: usize>(
        &mut self,
        out: Self::Out,
        ins: [Self::In; N],
        f: impl Fn([Self::V; N]) -> Self::V,
    ) -> Self::V;
    /// `out = f(out, entries)` over the entries of a written row.
    fn update<const N: usize>(
        &mut self,
        out: Self::Out,
        ins: [Self::In; N],
        f: impl Fn(Self::V, [Self::V; N]) -> Self::V,
    );
    /// `v` into the entries of `out` the row does not see.
    fn fill_hidden(&mut self, out: Self::Out, v: Self::V);
    /// Entry `at` of `x`.
    fn read_at(&mut self, x: Self::In, at: Self::Idx) -> Self::V;
    /// `out[at] = f(out[at])` in a written row.
    fn poke(&mut self, out: Self::Out, at: Self::Idx, f: impl Fn(Self::V) -> Self::V);
    /// `v` into slot `slot` of the row's own values `out`.
    fn put(&mut self, out: Self::Out, slot: usize, v: Self::V);
    /// [`update`](Rows::update) with sums over all rows: `out = f(out,
    /// entries).0` and `sums[i] += f(out, entries).1[i]`, entry by entry
    /// (the last pass of a backward: the input's gradient and the
    /// parameters'). The sums' terms do not read `out`.
    fn update_summing<const M: usize, const N: usize>(
        &mut self,
        out: Self::Out,
        sums: [Self::Out; M],
        ins: [Self::In; N],
        f: impl Fn(Self::V, [Self::V; N]) -> (Self::V, [Self::V; M]),
    );

    /// `then` where `c` holds, else `otherwise`.
    fn branch(&mut self, c: Self::B, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self));
    /// `then`'s value where `c` holds, else `otherwise`.
    fn choose(&mut self, c: Self::B, then: impl FnOnce(&mut Self) -> Self::V, otherwise: Self::V) -> Self::V;
}

/// A softmax's operands: `out = softmax(scale x)` (with `log`, the
/// log-softmax) over the entries a row sees, for a positive `scale`;
/// `masked` (0, or -inf for the log) in the others, and throughout a row
/// whose entries are all -inf.
#[derive(Debug)]
pub struct Softmax<R: Rows> {
    /// The input row.
    pub x: R::In,
    /// The output row.
    pub out: R::Out,
    /// The positive scale of `x`.
    pub scale: R::V,
    /// The log-softmax.
    pub log: R::B,
    /// What masked entries hold.
    pub masked: R::V,
}

/// The softmax of [`Softmax`]: the max, the exponentials and their sum,
/// then the scale (or the log). Subtracting the max first keeps the
/// small differences exact when the logits are large; a NaN in a row
/// makes the row NaN.
#[inline(always)]
pub fn softmax<R: Rows>(r: &mut R, p: Softmax<R>) {
    let Softmax { x, out, scale, log, masked } = p;
    let top = r.max(x);
    let empty = r.is_neg_inf(top);
    r.branch(
        log,
        #[inline(always)]
        |r| {
            let ln_sum = R::ln(r.sum([x], |[v]| R::exp((v - top) * scale)));
            r.branch(
                empty,
                #[inline(always)]
                |r| r.write(out, [], |_| masked),
                #[inline(always)]
                |r| r.write(out, [x], |[v]| (v - top) * scale - ln_sum),
            );
        },
        #[inline(always)]
        |r| {
            let total = r.write_sum(out, [x], |[v]| R::exp((v - top) * scale));
            let inv = R::lit(1.0) / total;
            r.branch(
                empty,
                #[inline(always)]
                |r| r.write(out, [], |_| masked),
                #[inline(always)]
                |r| r.update(out, [], |e, []| e * inv),
            );
        },
    );
    r.fill_hidden(out, masked);
}

/// The adjoint of [`softmax`]'s operands: the output's gradient `g`, the
/// output `y`, the input's gradient `out`, and the forward's `scale` and
/// `log`.
#[derive(Debug)]
pub struct SoftmaxBackward<R: Rows> {
    /// The output's gradient.
    pub g: R::In,
    /// The forward's output.
    pub y: R::In,
    /// The input's gradient.
    pub out: R::Out,
    /// The forward's scale.
    pub scale: R::V,
    /// The forward was a log-softmax.
    pub log: R::B,
}

/// The adjoint of [`softmax`]: `scale y (g - Σ g y)`, or for the log form
/// `scale (g - e^y Σ g)`, the sums over the entries the row sees; masked
/// entries get 0.
#[inline(always)]
pub fn softmax_backward<R: Rows>(r: &mut R, p: SoftmaxBackward<R>) {
    let SoftmaxBackward { g, y, out, scale, log } = p;
    r.branch(
        log,
        #[inline(always)]
        |r| {
            let total = r.sum([g], |[g]| g);
            r.write(out, [g, y], |[g, y]| scale * (g - R::exp(y) * total));
        },
        #[inline(always)]
        |r| {
            let dot = r.sum([g, y], |[g, y]| g * y);
            r.write(out, [g, y], |[g, y]| scale * y * (g - dot));
        },
    );
    r.fill_hidden(out, R::lit(0.0));
}

/// A norm's operands: LayerNorm (`centre`) or RMSNorm of row `x` with
/// weight `w` and bias `b` where `has_w` and `has_b` say they exist.
#[derive(Debug)]
pub struct Norm<R: Rows> {
    /// The input row.
    pub x: R::In,
    /// The weight (read where `has_w`).
    pub w: R::In,
    /// The bias (read where `has_b`).
    pub b: R::In,
    /// The output row.
    pub out: R::Out,
    /// The row's statistics: mean, then `1 / sqrt(var + eps)`.
    pub stats: R::Out,
    /// Added to the variance.
    pub eps: R::V,
    /// Subtract the mean (LayerNorm), or not (RMSNorm).
    pub centre: R::B,
    /// The weight exists.
    pub has_w: R::B,
    /// The bias exists.
    pub has_b: R::B,
}

/// LayerNorm or RMSNorm ([`Norm`]): the mean (0 for RMSNorm) and the mean
/// square of the deviations, then `(x - mean) rstd w + b` with `rstd = 1 /
/// sqrt(var + eps)`; the statistics go to `stats` for the backward.
#[inline(always)]
pub fn norm<R: Rows>(r: &mut R, p: Norm<R>) {
    let Norm { x, w, b, out, stats, eps, centre, has_w, has_b } = p;
    let count = r.count();
    let mean = r.choose(
        centre,
        #[inline(always)]
        |r| r.sum([x], |[v]| v) / count,
        R::lit(0.0),
    );
    let rstd = R::lit(1.0) / R::sqrt(r.sum([x], |[v]| (v - mean) * (v - mean)) / count + eps);
    r.put(stats, 0, mean);
    r.put(stats, 1, rstd);
    r.branch(
        has_w,
        #[inline(always)]
        |r| {
            r.branch(
                has_b,
                #[inline(always)]
                |r| r.write(out, [x, w, b], |[v, w, b]| (v - mean) * rstd * w + b),
                #[inline(always)]
                |r| r.write(out, [x, w], |[v, w]| (v - mean) * rstd * w),
            )
        },
        #[inline(always)]
        |r| {
            r.branch(
                has_b,
                #[inline(always)]
                |r| r.write(out, [x, b], |[v, b]| (v - mean) * rstd + b),
                #[inline(always)]
                |r| r.write(out, [x], |[v]| (v - mean) * rstd),
            )
        },
    );
}

/// The gradients of a [`norm`] from its output's gradient `g`.
#[derive(Debug)]
pub struct NormBackward<R: Rows> {
    /// The output's gradient.
    pub g: R::In,
    /// The forward's input.
    pub x: R::In,
    /// The weight (read where `has_w`).
    pub w: R::In,
    /// The input's gradient.
    pub dx: R::Out,
    /// The weight's gradient, summed over rows.
    pub dw: R::Out,
    /// The bias's gradient, summed over rows.
    pub db: R::Out,
    /// The row's mean.
    pub mean: R::V,
    /// The row's `1 / sqrt(var + eps)`.
    pub rstd: R::V,
    /// The forward subtracted the mean.
    pub centre: R::B,
    /// The weight exists.
    pub has_w: R::B,
}

/// The gradients of [`norm`]: with `gx = g w` and `x̂ = (x - mean) rstd`,
/// the input's `rstd (gx - mean(gx)) - x̂ rstd mean(gx x̂)` (no
/// `mean(gx)` term without centring), and summed over rows the weight's
/// `g x̂` and the bias's `g`.
#[inline(always)]
pub fn norm_backward<R: Rows>(r: &mut R, p: NormBackward<R>) {
    let NormBackward { g, x, w, dx, dw, db, mean, rstd, centre, has_w } = p;
    let count = r.count();
    r.branch(
        has_w,
        #[inline(always)]
        |r| r.write(dx, [g, w], |[g, w]| g * w),
        #[inline(always)]
        |r| r.write(dx, [g], |[g]| g),
    );
    let gx = r.written(dx);
    let [sum_gx, dot] = r.sum2([gx, x], |[gx, x]| [gx, gx * (x - mean)]);
    let a = r.choose(
        centre,
        #[inline(always)]
        |_| sum_gx / count,
        R::lit(0.0),
    );
    let c = dot * rstd / count;
    r.update_summing(dx, [dw, db], [x, g], |gx, [x, g]| {
        let x_hat = (x - mean) * rstd;
        (rstd * (gx - a) - x_hat * rstd * c, [g * x_hat, g])
    });
}

/// Cross-entropy's operands: a row of logits `z` and its target class,
/// with the target distribution `keep onehot + spread`.
#[derive(Debug)]
pub struct CrossEntropy<R: Rows> {
    /// The logits.
    pub z: R::In,
    /// The target class (any class where `ignored`).
    pub target: R::Idx,
    /// The row is left out (its target is the ignored index).
    pub ignored: R::B,
    /// The row's loss (one value).
    pub loss: R::Out,
    /// The logits' gradient.
    pub grad: R::Out,
    /// `1 - smoothing`.
    pub keep: R::V,
    /// `smoothing / classes`.
    pub spread: R::V,
    /// Smoothing is on (`spread` is not 0).
    pub smoothing: R::B,
    /// The gradient's scale.
    pub scale: R::V,
    /// NaN.
    pub nan: R::V,
}

/// Cross-entropy ([`CrossEntropy`]) with its gradient: the loss
/// `logsumexp(z) - Σ q z` and the gradient `(softmax(z) - q) scale` for
/// the target distribution `q`; both 0 in a row left out, and NaN in a
/// row with a NaN logit.
#[inline(always)]
pub fn cross_entropy<R: Rows>(r: &mut R, p: CrossEntropy<R>) {
    let CrossEntropy { z, target, ignored, loss, grad, keep, spread, smoothing, scale, nan } = p;
    let top = r.max(z);
    let bad = r.has_nan(z, top);
    let total = r.write_sum(grad, [z], |[v]| R::exp(v - top));
    let spread_z = r.choose(
        smoothing,
        #[inline(always)]
        |r| spread * r.sum([z], |[v]| v),
        R::lit(0.0),
    );
    let z_target = r.read_at(z, target);
    let (inv, off) = (scale / total, spread * scale);
    // A row left out, or one with a NaN logit: `v` for its loss and gradient.
    #[inline(always)]
    fn fill<R: Rows>(r: &mut R, [grad, loss]: [R::Out; 2], v: R::V) {
        r.write(grad, [], |_| v);
        r.put(loss, 0, v);
    }
    r.branch(
        ignored,
        #[inline(always)]
        |r| fill(r, [grad, loss], R::lit(0.0)),
        #[inline(always)]
        |r| {
            r.branch(
                bad,
                #[inline(always)]
                |r| fill(r, [grad, loss], nan),
                #[inline(always)]
                |r| {
                    r.update(grad, [], |e, []| e * inv - off);
                    r.poke(grad, target, |e| e - keep * scale);
                    r.put(loss, 0, top + R::ln(total) - keep * z_target - spread_z);
                },
            )
        },
    );
}

/// One row op as the GPU backends run it: its kernel's name and its
/// `kernel!` general kernel, printed from the op's definition.
#[derive(Clone, Copy, Debug)]
pub struct RowKernel {
    /// The kernel function's name.
    pub name: &'static str,
    /// The kernel's source, with its doc comment and `#[workgroup(N)]`.
    pub source: fn() -> String,
}

/// Where a softmax row starts (`base`) and how many of its leading
/// entries a causal mask leaves it (`seen`).
const SOFTMAX_ROW: &str = "        let base = (j / inner) * n * inner + j % inner;
        let mut seen = n;
        if causal == 1 {
            seen = j % queries + 1;
            if seen > n {
                seen = n;
            }
        }
";

/// A norm's row, with its statistics from the forward.
const NORM_ROW: &str = "        let base = j * n;
        let seen = n;
        let mean = stats[2 * j];
        let rstd = stats[2 * j + 1];
";

fn flag(name: &str) -> Sym {
    Sym::new(format!("({name} == 1)"))
}

/// [`softmax`] along rows.
pub const SOFTMAX: RowKernel = RowKernel {
    name: "softmax",
    source: || {
        let frame = Frame {
            doc: "Softmax along rows; see `blaze_spec::rows::softmax`.",
            name: "softmax",
            params: "x: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, causal: u32, \
                     scale: f32, take_log: u32, masked: f32",
            prologue: SOFTMAX_ROW,
        };
        row_kernel(&frame, |p| {
            let (x, out) = (Place("x[base + @ * inner]"), Place("out[base + @ * inner]"));
            let (scale, masked) = (Sym::new("scale"), Sym::new("masked"));
            softmax(p, Softmax { x, out, scale, log: flag("take_log"), masked });
        })
    },
};

/// [`softmax_backward`] along rows.
pub const SOFTMAX_BACKWARD: RowKernel = RowKernel {
    name: "softmax_backward",
    source: || {
        let frame = Frame {
            doc: "The adjoint of softmax along rows; see `blaze_spec::rows::softmax_backward`.",
            name: "softmax_backward",
            params: "g: &[f32], y: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, \
                     causal: u32, scale: f32, take_log: u32",
            prologue: SOFTMAX_ROW,
        };
        row_kernel(&frame, |p| {
            let (g, y, out) =
                (Place("g[base + @ * inner]"), Place("y[base + @ * inner]"), Place("out[base + @ * inner]"));
            softmax_backward(p, SoftmaxBackward { g, y, out, scale: Sym::new("scale"), log: flag("take_log") });
        })
    },
};

/// [`norm`] along rows.
pub const NORM: RowKernel = RowKernel {
    name: "norm",
    source: || {
        let frame = Frame {
            doc: "LayerNorm or RMSNorm along rows; see `blaze_spec::rows::norm`.",
            name: "norm",
            params: "x: &[f32], w: &[f32], b: &[f32], out: &mut [f32], stats: &mut [f32], rows: u32, n: u32, \
                     centre: u32, eps: f32, has_w: u32, has_b: u32",
            prologue: "        let base = j * n;\n        let seen = n;\n",
        };
        row_kernel(&frame, |p| {
            let (x, w, b) = (Place("x[base + @]"), Place("w[@]"), Place("b[@]"));
            let (out, stats) = (Place("out[base + @]"), Place("stats[2 * j + @]"));
            let (eps, centre, has_w, has_b) = (Sym::new("eps"), flag("centre"), flag("has_w"), flag("has_b"));
            norm(p, Norm { x, w, b, out, stats, eps, centre, has_w, has_b });
        })
    },
};

/// [`norm_backward`]'s operands as its two kernels read them.
fn norm_backward_in(p: &mut Printer) {
    let (g, x, w) = (Place("g[base + @]"), Place("x[base + @]"), Place("w[@]"));
    let (dx, dw, db) = (Place("dx[base + @]"), Place("dw[@]"), Place("db[@]"));
    let (mean, rstd, centre, has_w) = (Sym::new("mean"), Sym::new("rstd"), flag("centre"), flag("has_w"));
    norm_backward(p, NormBackward { g, x, w, dx, dw, db, mean, rstd, centre, has_w });
}

/// [`norm_backward`]'s input gradient along rows.
pub const NORM_BACKWARD: RowKernel = RowKernel {
    name: "norm_backward",
    source: || {
        let frame = Frame {
            doc: "The input's gradient of a norm along rows; see `blaze_spec::rows::norm_backward`.",
            name: "norm_backward",
            params: "g: &[f32], x: &[f32], stats: &[f32], w: &[f32], dx: &mut [f32], rows: u32, n: u32, centre: u32, \
                     has_w: u32",
            prologue: NORM_ROW,
        };
        row_kernel(&frame, norm_backward_in)
    },
};

/// [`norm_backward`]'s weight and bias gradients: a workgroup per column,
/// summing over the rows.
pub const NORM_PARAMS: RowKernel = RowKernel {
    name: "norm_params",
    source: || {
        let frame = Frame {
            doc: "The weight's and bias's gradients of a norm; see `blaze_spec::rows::norm_backward`.",
            name: "norm_params",
            params: "g: &[f32], x: &[f32], stats: &[f32], dw: &mut [f32], db: &mut [f32], rows: u32, n: u32",
            prologue: "            let base = j * n;\n            let mean = stats[2 * j];\n            let rstd = stats[2 * j + 1];\n",
        };
        column_kernel(&frame, |p| {
            // The input-gradient kernel binds `w`; this one never reads it.
            norm_backward_in(p)
        })
    },
};

/// [`cross_entropy`] along rows of `c` logits, a target class per row
/// (as f32: the devices hold no i64).
pub const CROSS_ENTROPY: RowKernel = RowKernel {
    name: "cross_entropy",
    source: || {
        let frame = Frame {
            doc: "Cross-entropy and its gradient along rows; see `blaze_spec::rows::cross_entropy`.",
            name: "cross_entropy",
            params: "z: &[f32], tg: &[f32], loss: &mut [f32], grad: &mut [f32], rows: u32, c: u32, keep: f32, \
                     spread: f32, scale: f32, ignore: i32, nan: f32",
            prologue: "        let base = j * c;
        let seen = c;
        let t = tg[j] as i32;
        let left_out = t == ignore;
        let mut ti = 0u32;
        if t > 0 {
            ti = t as u32;
        }
        if ti > c - 1 {
            ti = c - 1;
        }
",
        };
        row_kernel(&frame, |p| {
            let (z, loss, grad) = (Place("z[base + @]"), Place("loss[j]"), Place("grad[base + @]"));
            let (keep, spread, scale, nan) = (Sym::new("keep"), Sym::new("spread"), Sym::new("scale"), Sym::new("nan"));
            let ce = CrossEntropy {
                z,
                target: Sym::new("ti"),
                ignored: Sym::new("left_out"),
                loss,
                grad,
                keep,
                spread,
                smoothing: Sym::new("(spread > 0.0)"),
                scale,
                nan,
            };
            cross_entropy(p, ce);
        })
    },
};

/// Every row op, in the order `blaze_runtime::rows` lists them.
pub const ROWS: &[RowKernel] = &[SOFTMAX, SOFTMAX_BACKWARD, NORM, NORM_BACKWARD, NORM_PARAMS, CROSS_ENTROPY];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_prints_its_function_and_its_reductions() {
        for row in ROWS {
            let s = (row.source)();
            assert!(s.contains(&format!("fn {}(", row.name)), "{s}");
            assert!(s.contains("workgroup_sum("), "{}: {s}", row.name);
            assert_eq!(s.matches('{').count(), s.matches('}').count(), "{s}");
        }
    }

    #[test]
    fn the_parameter_sums_are_a_kernel_of_their_own() {
        let rows = (NORM_BACKWARD.source)();
        let columns = (NORM_PARAMS.source)();
        assert!(!rows.contains("dw[") && !rows.contains("db["), "{rows}");
        assert!(columns.contains("dw[k] = s0;") && columns.contains("db[k] = s1;"), "{columns}");
        assert!(!columns.contains("dx["), "{columns}");
    }
}
