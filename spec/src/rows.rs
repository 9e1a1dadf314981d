//! The row ops the GPU backends run, each written once as a `kernel!`
//! general kernel: one workgroup per row (striding over rows past the
//! device's grid), the row's reductions as trees in shared memory
//! (`workgroup_sum`, `workgroup_max`).
//!
//! `blaze-macros` prints every entry for the runtime (`blaze_runtime::rows`:
//! the kernel's WGSL, which the wgpu backend runs, and the CPU code that
//! runs its workgroups) and for the CubeCL backend (its `#[cube]` code),
//! so both GPU backends compute a row op from this one text. The CPU
//! backend has its own vectorised loops for the same ops; the conformance
//! suite holds every backend to the same values.
//!
//! Rows are the middle dim of `[outer, n, inner]`: row `j` starts at
//! `(j / inner) * n * inner + j % inner` and steps by `inner`. With a
//! causal mask (then `inner` is 1) row `j` sees its first
//! `j % queries + 1` entries. The norms' rows are the last dim.

/// One row op: its kernel's name (the source's function) and source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKernel {
    /// The function's name in `source`.
    pub name: &'static str,
    /// A `kernel!` general kernel, with its doc comment and
    /// `#[workgroup(N)]`.
    pub source: &'static str,
}

/// The lines that start a softmax row: where row `j` starts (`base`), and
/// how many of its leading entries a causal mask leaves it (`seen`).
macro_rules! softmax_row {
    () => {
        r#"
        let base = (j / inner) * n * inner + j % inner;
        let mut seen = n;
        if causal == 1 {
            seen = j % queries + 1;
            if seen > n {
                seen = n;
            }
        }
"#
    };
}

/// Softmax (log-softmax with `take_log` 1) of `scale * x` along each row, its
/// masked entries `masked` (0, or -inf for the log); a row whose entries
/// are all masked or -inf weighs nothing and is `masked` throughout. A
/// NaN anywhere in a row makes the row NaN, as on the CPU.
pub const SOFTMAX: RowKernel = RowKernel {
    name: "softmax",
    source: concat!(
        r#"
/// Softmax along rows; see `blaze_spec::rows::SOFTMAX`.
#[workgroup(64)]
fn softmax(x: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, causal: u32, scale: f32, take_log: u32, masked: f32) {
    let lane = local_id();
    let mut j = workgroup_id();
    while j < rows {
"#,
        softmax_row!(),
        r#"
        // The max: NaN-keeping, from the row's first entry.
        let mut m = x[base] * scale;
        let mut k = lane;
        while k < seen {
            m = max(m, x[base + k * inner] * scale);
            k += 64;
        }
        let top = workgroup_max(m);
        let mut acc = 0.0;
        k = lane;
        while k < seen {
            acc += exp(x[base + k * inner] * scale - top);
            k += 64;
        }
        let total = workgroup_sum(acc);
        // A row of -inf only: the max is -inf (below every finite f32).
        let empty = top < -3.4028235e38;
        k = lane;
        while k < n {
            let at = base + k * inner;
            let v = x[at] * scale - top;
            let mut y = masked;
            if k < seen && !empty {
                if take_log == 1 {
                    y = v - log(total);
                } else {
                    y = exp(v) / total;
                }
            }
            out[at] = y;
            k += 64;
        }
        j += num_workgroups();
    }
}
"#
    ),
};

/// The adjoint of [`SOFTMAX`] with the same row parameters, from its
/// output `y` and the output's gradient `g`: `scale y (g - sum(g y))`, or
/// for the log form `scale (g - exp(y) sum(g))`, the sums over the entries
/// a row sees; masked entries get 0.
pub const SOFTMAX_BACKWARD: RowKernel = RowKernel {
    name: "softmax_backward",
    source: concat!(
        r#"
/// The adjoint of softmax along rows; see `blaze_spec::rows::SOFTMAX_BACKWARD`.
#[workgroup(64)]
fn softmax_backward(g: &[f32], y: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, causal: u32, scale: f32, take_log: u32) {
    let lane = local_id();
    let mut j = workgroup_id();
    while j < rows {
"#,
        softmax_row!(),
        r#"
        let mut acc = 0.0;
        let mut k = lane;
        while k < seen {
            let at = base + k * inner;
            if take_log == 1 {
                acc += g[at];
            } else {
                acc += g[at] * y[at];
            }
            k += 64;
        }
        let total = workgroup_sum(acc);
        k = lane;
        while k < n {
            let at = base + k * inner;
            let mut d = 0.0;
            if k < seen {
                if take_log == 1 {
                    d = scale * (g[at] - exp(y[at]) * total);
                } else {
                    d = scale * y[at] * (g[at] - total);
                }
            }
            out[at] = d;
            k += 64;
        }
        j += num_workgroups();
    }
}
"#
    ),
};

/// LayerNorm (`centre` 1) or RMSNorm over rows of `n` (the last dim):
/// the mean (0 for RMSNorm) and the mean square of the deviations as tree
/// sums, then `(x - mean) rstd w + b` with `rstd = 1 / sqrt(var + eps)`,
/// `w` and `b` read only where `has_w` and `has_b` say they exist; the
/// row's statistics `(mean, rstd)` go to `stats`, which the backward reads.
pub const NORM: RowKernel = RowKernel {
    name: "norm",
    source: r#"
/// LayerNorm or RMSNorm along rows; see `blaze_spec::rows::NORM`.
#[workgroup(64)]
fn norm(x: &[f32], w: &[f32], b: &[f32], out: &mut [f32], stats: &mut [f32], rows: u32, n: u32, centre: u32, eps: f32, has_w: u32, has_b: u32) {
    let lane = local_id();
    let mut row = workgroup_id();
    while row < rows {
        let base = row * n;
        let mut acc = 0.0;
        let mut k = lane;
        while k < n {
            acc += x[base + k];
            k += 64;
        }
        let sum = workgroup_sum(acc);
        let mut mean = 0.0;
        if centre == 1 {
            mean = sum / (n as f32);
        }
        acc = 0.0;
        k = lane;
        while k < n {
            let d = x[base + k] - mean;
            acc += d * d;
            k += 64;
        }
        let squares = workgroup_sum(acc);
        let rstd = 1.0 / sqrt(squares / (n as f32) + eps);
        k = lane;
        while k < n {
            let mut y = (x[base + k] - mean) * rstd;
            if has_w == 1 {
                y = y * w[k];
            }
            if has_b == 1 {
                y = y + b[k];
            }
            out[base + k] = y;
            k += 64;
        }
        if lane == 0 {
            stats[2 * row] = mean;
            stats[2 * row + 1] = rstd;
        }
        row += num_workgroups();
    }
}
"#,
};

/// The input's gradient of [`NORM`] from the output's gradient `g`, the
/// input and its statistics: with `gx = g w` and `x̂ = (x - mean) rstd`,
/// `rstd (gx - mean(gx) - x̂ mean(gx x̂))` (no `mean(gx)` term without
/// `centre`), both means as tree sums.
pub const NORM_BACKWARD: RowKernel = RowKernel {
    name: "norm_backward",
    source: r#"
/// The input's gradient of a norm along rows; see `blaze_spec::rows::NORM_BACKWARD`.
#[workgroup(64)]
fn norm_backward(g: &[f32], x: &[f32], stats: &[f32], w: &[f32], dx: &mut [f32], rows: u32, n: u32, centre: u32, has_w: u32) {
    let lane = local_id();
    let mut row = workgroup_id();
    while row < rows {
        let base = row * n;
        let mean = stats[2 * row];
        let rstd = stats[2 * row + 1];
        let mut s1 = 0.0;
        let mut s2 = 0.0;
        let mut k = lane;
        while k < n {
            let mut gx = g[base + k];
            if has_w == 1 {
                gx = gx * w[k];
            }
            s1 += gx;
            s2 += gx * (x[base + k] - mean) * rstd;
            k += 64;
        }
        let t1 = workgroup_sum(s1);
        let t2 = workgroup_sum(s2);
        let mut a = 0.0;
        if centre == 1 {
            a = t1 / (n as f32);
        }
        let c = t2 / (n as f32);
        k = lane;
        while k < n {
            let at = base + k;
            let mut gx = g[at];
            if has_w == 1 {
                gx = gx * w[k];
            }
            dx[at] = rstd * (gx - a - (x[at] - mean) * rstd * c);
            k += 64;
        }
        row += num_workgroups();
    }
}
"#,
};

/// The weight's and bias's gradients of [`NORM`]: per column of the `n`
/// (a workgroup each), `sum(g x̂)` and `sum(g)` over the rows as tree sums.
pub const NORM_PARAMS: RowKernel = RowKernel {
    name: "norm_params",
    source: r#"
/// The weight's and bias's gradients of a norm; see `blaze_spec::rows::NORM_PARAMS`.
#[workgroup(64)]
fn norm_params(g: &[f32], x: &[f32], stats: &[f32], dw: &mut [f32], db: &mut [f32], rows: u32, n: u32) {
    let lane = local_id();
    let mut col = workgroup_id();
    while col < n {
        let mut sw = 0.0;
        let mut sb = 0.0;
        let mut r = lane;
        while r < rows {
            let at = r * n + col;
            sw += g[at] * (x[at] - stats[2 * r]) * stats[2 * r + 1];
            sb += g[at];
            r += 64;
        }
        let tw = workgroup_sum(sw);
        let tb = workgroup_sum(sb);
        if lane == 0 {
            dw[col] = tw;
            db[col] = tb;
        }
        col += num_workgroups();
    }
}
"#,
};

/// Cross-entropy with its gradient, a row of `c` logits `z` per target
/// class `tg` (as f32: the devices hold no i64): with the target
/// distribution `q = keep onehot + spread`, the loss `logsumexp(z) - Σ q z`
/// and the gradient `(softmax(z) - q) scale`, both 0 in a row whose
/// target is `ignore`, and `nan` (NaN) in a row with a NaN logit.
pub const CROSS_ENTROPY: RowKernel = RowKernel {
    name: "cross_entropy",
    source: r#"
/// Cross-entropy and its gradient along rows; see `blaze_spec::rows::CROSS_ENTROPY`.
#[workgroup(64)]
fn cross_entropy(z: &[f32], tg: &[f32], loss: &mut [f32], grad: &mut [f32], rows: u32, c: u32, keep: f32, spread: f32, scale: f32, ignore: i32, nan: f32) {
    let lane = local_id();
    let mut j = workgroup_id();
    while j < rows {
        let base = j * c;
        let t = tg[j] as i32;
        let left_out = t == ignore;
        let mut ti = 0u32;
        if t > 0 {
            ti = t as u32;
        }
        if ti > c - 1 {
            ti = c - 1;
        }
        let mut m = z[base];
        let mut bad = 0.0;
        let mut k = lane;
        while k < c {
            let v = z[base + k];
            m = max(m, v);
            if v != v {
                bad = 1.0;
            }
            k += 64;
        }
        let top = workgroup_max(m);
        let mut e = 0.0;
        let mut zs = 0.0;
        k = lane;
        while k < c {
            let v = z[base + k];
            e += exp(v - top);
            zs += v;
            k += 64;
        }
        let total = workgroup_sum(e);
        let sum_z = workgroup_sum(zs);
        let nans = workgroup_sum(bad);
        k = lane;
        while k < c {
            let mut g = exp(z[base + k] - top) / total * scale - spread * scale;
            if k == ti {
                g = g - keep * scale;
            }
            if left_out {
                g = 0.0;
            } else if nans > 0.0 {
                g = nan;
            }
            grad[base + k] = g;
            k += 64;
        }
        if lane == 0 {
            let mut l = top + log(total) - keep * z[base + ti] - spread * sum_z;
            if left_out {
                l = 0.0;
            } else if nans > 0.0 {
                l = nan;
            }
            loss[j] = l;
        }
        j += num_workgroups();
    }
}
"#,
};

/// Every row op, in the order `blaze_runtime::rows` lists them.
pub const ROWS: &[RowKernel] = &[SOFTMAX, SOFTMAX_BACKWARD, NORM, NORM_BACKWARD, NORM_PARAMS, CROSS_ENTROPY];
