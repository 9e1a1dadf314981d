//! The row ops the GPU backends run, each written once as a `kernel!`
//! general kernel: one workgroup per row (striding over rows past the
//! device's grid), the row's reductions as trees in shared memory.
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
//! `j % queries + 1` entries.

/// One row op: its kernel's name (the source's function) and source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKernel {
    /// The function's name in `source`.
    pub name: &'static str,
    /// A `kernel!` general kernel, with its doc comment and
    /// `#[workgroup(N)]`.
    pub source: &'static str,
}

/// Softmax (log-softmax with `take_log` 1) of `scale * x` along each row, its
/// masked entries `masked` (0, or -inf for the log); a row whose entries
/// are all masked or -inf weighs nothing and is `masked` throughout. A
/// NaN anywhere in a row makes the row NaN, as on the CPU.
pub const SOFTMAX: RowKernel = RowKernel {
    name: "softmax",
    source: r#"
/// Softmax along rows; see `blaze_spec::rows::SOFTMAX`.
#[workgroup(64)]
fn softmax(x: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, causal: u32, scale: f32, take_log: u32, masked: f32) {
    let lane = local_id();
    #[shared]
    let part: [f32; 64];
    let mut j = workgroup_id();
    while j < rows {
        let base = (j / inner) * n * inner + j % inner;
        let mut seen = n;
        if causal == 1 {
            seen = j % queries + 1;
            if seen > n {
                seen = n;
            }
        }
        // The max: NaN-keeping, from the row's first entry.
        let mut m = x[base] * scale;
        let mut k = lane;
        while k < seen {
            m = max(m, x[base + k * inner] * scale);
            k += 64;
        }
        part[lane] = m;
        barrier();
        let mut stride = 32;
        while stride > 0 {
            if lane < stride {
                part[lane] = max(part[lane], part[lane + stride]);
            }
            barrier();
            stride = stride / 2;
        }
        let top = part[0];
        barrier();
        let mut acc = 0.0;
        k = lane;
        while k < seen {
            acc += exp(x[base + k * inner] * scale - top);
            k += 64;
        }
        part[lane] = acc;
        barrier();
        stride = 32;
        while stride > 0 {
            if lane < stride {
                part[lane] += part[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        let total = part[0];
        barrier();
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
"#,
};

/// The adjoint of [`SOFTMAX`] with the same row parameters, from its
/// output `y` and the output's gradient `g`: `scale y (g - sum(g y))`, or
/// for the log form `scale (g - exp(y) sum(g))`, the sums over the entries
/// a row sees; masked entries get 0.
pub const SOFTMAX_BACKWARD: RowKernel = RowKernel {
    name: "softmax_backward",
    source: r#"
/// The adjoint of softmax along rows; see `blaze_spec::rows::SOFTMAX_BACKWARD`.
#[workgroup(64)]
fn softmax_backward(g: &[f32], y: &[f32], out: &mut [f32], rows: u32, n: u32, inner: u32, queries: u32, causal: u32, scale: f32, take_log: u32) {
    let lane = local_id();
    #[shared]
    let part: [f32; 64];
    let mut j = workgroup_id();
    while j < rows {
        let base = (j / inner) * n * inner + j % inner;
        let mut seen = n;
        if causal == 1 {
            seen = j % queries + 1;
            if seen > n {
                seen = n;
            }
        }
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
        part[lane] = acc;
        barrier();
        let mut stride = 32;
        while stride > 0 {
            if lane < stride {
                part[lane] += part[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        let total = part[0];
        barrier();
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
"#,
};

/// Every row op, in the order `blaze_runtime::rows` lists them.
pub const ROWS: &[RowKernel] = &[SOFTMAX, SOFTMAX_BACKWARD];
