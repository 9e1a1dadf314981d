//! General `kernel!` kernels (`#[workgroup(N)]`) on the CPU: a tree
//! reduction in workgroup memory and a fused bias + softmax over rows,
//! against plain Rust; and the WGSL they compile to.

use crate::kernels;

use blaze::prelude::*;
use blaze::runtime::kernel::LaunchBuffer::{Input, Output};
use blaze::runtime::kernel::launch;
use blaze::{Rng, kernel};
use expect_test::expect;
use kernels::{SEMANTICS_OUT, row_sum, semantics, semantics_inputs, signed, signed_reference};

kernel! {
    /// `softmax(x + bias)` over each row of `x`, in place: one workgroup per
    /// row; the row's max and then its sum of exponentials are reduced in
    /// shared memory.
    #[workgroup(32)]
    pub fn bias_softmax(x: &mut [f32], bias: &[f32], cols: u32) {
        let base = workgroup_id() * cols;
        let lane = local_id();
        #[shared]
        let red: [f32; 32];
        let mut m = -3.0e38;
        for c in 0..cols {
            if c % 32 == lane {
                m = max(m, x[base + c] + bias[c]);
            }
        }
        red[lane] = m;
        barrier();
        let mut stride = 16;
        while stride > 0 {
            if lane < stride {
                red[lane] = max(red[lane], red[lane + stride]);
            }
            barrier();
            stride = stride / 2;
        }
        let row_max = red[0];
        barrier();
        let mut total = 0.0;
        for c in 0..cols {
            if c % 32 == lane {
                let e = exp(x[base + c] + bias[c] - row_max);
                x[base + c] = e;
                total += e;
            }
        }
        red[lane] = total;
        barrier();
        stride = 16;
        while stride > 0 {
            if lane < stride {
                red[lane] += red[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        let inv = 1.0 / red[0];
        for c in 0..cols {
            if c % 32 == lane {
                x[base + c] *= inv;
            }
        }
    }
}

fn matrix(rows: usize, cols: usize, seed: u64) -> Tensor<Cpu, 2> {
    Tensor::normal_with([rows, cols], 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice)
}

#[test]
fn row_sum_reduces_in_shared_memory() {
    for (rows, cols) in [(1, 1), (3, 63), (5, 64), (7, 200), (16, 1000)] {
        let x = matrix(rows, cols, 1);
        let mut out = Tensor::<Cpu, 1>::zeros([rows], &CpuDevice);
        row_sum::launch(rows as u32, &x, &mut out, cols as u32);
        let want = x.sum_dim(1).to_vec::<f32>();
        for (g, w) in out.to_vec::<f32>().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{rows}x{cols}: got {g}, want {w}");
        }
    }
}

#[test]
fn fused_bias_softmax_matches_the_composed_ops() {
    for (rows, cols) in [(1, 5), (4, 32), (6, 77)] {
        let x = matrix(rows, cols, 2);
        let bias = matrix(1, cols, 3);
        let want = (x.clone() + &bias).softmax(1).to_vec::<f32>();
        let mut y = x.clone();
        let b: Tensor<Cpu, 1> = bias.squeeze(0);
        bias_softmax::launch(rows as u32, &mut y, &b, cols as u32);
        for (g, w) in y.to_vec::<f32>().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{rows}x{cols}: got {g}, want {w}");
        }
        // The input tensor `x` shared its buffer with `y`: it is unchanged.
        assert_eq!(x.to_vec::<f32>(), matrix(rows, cols, 2).to_vec::<f32>());
    }
}

#[test]
#[should_panic(expected = "row_sum: `input`: index 8 out of bounds (length 8)")]
fn out_of_bounds_reads_name_the_kernel_and_buffer() {
    let x = matrix(2, 4, 4);
    let mut out = Tensor::<Cpu, 1>::zeros([3], &CpuDevice);
    row_sum::launch(3, &x, &mut out, 4);
}

kernel! {
    /// Names that are keywords, written raw.
    #[workgroup(4)]
    pub fn raw_names(r#in: &[f32], out: &mut [f32], r#type: f32) {
        let r#let = global_id();
        out[r#let] = r#in[r#let] * r#type;
    }
}

#[test]
fn raw_names_work_in_general_kernels() {
    let x = Tensor::<Cpu, 1>::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [4], &CpuDevice);
    let mut out = Tensor::<Cpu, 1>::zeros([4], &CpuDevice);
    raw_names::launch(1, &x, &mut out, 2.0);
    assert_eq!(out.to_vec::<f32>(), [2.0, 4.0, 6.0, 8.0]);
    assert!(raw_names::WGSL.contains("in_0") && !raw_names::WGSL.contains("r#"), "{}", raw_names::WGSL);
}

#[test]
#[should_panic(expected = "row_sum: buffer 1 is f64; kernels take f32 tensors")]
fn a_launch_on_another_dtype_names_the_kernel_and_buffer() {
    let x = matrix(2, 4, 4);
    let mut out = Tensor::<Cpu, 1>::zeros([2], &CpuDevice).to_dtype(DType::F64);
    row_sum::launch(2, &x, &mut out, 4);
}

/// The compute shader `row_sum` compiles to (naga validated it while the
/// test compiled). `UPDATE_EXPECT=1 cargo test` rewrites it.
#[test]
fn wgsl_of_a_general_kernel() {
    expect![[r#"
        @group(0) @binding(0) var<storage, read> input_0: array<f32>;
        @group(0) @binding(1) var<storage, read_write> out_1: array<f32>;
        struct Params {
            s0: u32,
        }
        @group(0) @binding(2) var<uniform> params: Params;
        var<workgroup> partial_5: array<f32, 64>;

        @compute @workgroup_size(64)
        fn row_sum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
            let row_3: u32 = wid.x;
            let lane_4: u32 = lid.x;
            var acc_6: f32 = 0.0;
            var c_7: u32 = lane_4;
            while ((c_7 < params.s0)) {
                acc_6 += input_0[((row_3 * params.s0) + c_7)];
                c_7 += 64u;
            }
            partial_5[lane_4] = acc_6;
            workgroupBarrier();
            var stride_8: u32 = 32u;
            while ((stride_8 > 0u)) {
                if ((lane_4 < stride_8)) {
                    partial_5[lane_4] += partial_5[(lane_4 + stride_8)];
                }
                workgroupBarrier();
                stride_8 = (stride_8 / 2u);
            }
            if ((lane_4 == 0u)) {
                out_1[row_3] = partial_5[0u];
            }
        }
    "#]].assert_eq(row_sum::WGSL);
}

/// Under the tape, a launch runs on the values; what it writes leaves the
/// graph (a general kernel has no derivative).
#[test]
fn a_launch_on_tape_tensors_runs_on_their_values() {
    use blaze::autodiff::Autodiff;
    type Ad = Autodiff<Cpu>;
    let x = Tensor::<Ad, 2>::from_inner(matrix(3, 10, 5)).require_grad();
    let mut out = Tensor::<Ad, 1>::zeros([3], &CpuDevice);
    row_sum::launch(3, &x, &mut out, 10);
    let want = x.sum_dim(1).to_vec::<f32>();
    for (g, w) in out.to_vec::<f32>().iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()));
    }
    assert!(out.sum().backward().get(&x).is_none(), "the launch's output is not connected to x");
}

#[test]
fn signed_integers_follow_wgsl() {
    let mut out = Tensor::<Cpu, 1>::zeros([32], &CpuDevice);
    signed::launch(2, &mut out, 5);
    let want: Vec<f32> = (0..32).map(|i| signed_reference(i, 5)).collect();
    assert_eq!(out.to_vec::<f32>(), want);
}

/// What WGSL defines `semantics` to compute for one case, from std's
/// operations: casts saturate (NaN to 0), division rounds toward zero with
/// `x / 0 = x` and wrapping overflow, `x % 0 = 0`, shifts use the low five
/// bits of the amount, float remainder is `x - y * trunc(x / y)`, and
/// max/min/clamp return NaN when an operand is NaN.
fn semantics_reference(fa: f32, fb: f32) -> [f32; SEMANTICS_OUT] {
    let (a, b, ua, ub) = (fa as i32, fb as i32, fa as u32, fb as u32);
    let div = |a: i32, b: i32| if b == 0 { a } else { a.wrapping_div(b) };
    let rem = |a: i32, b: i32| if b == 0 { 0 } else { a.wrapping_rem(b) };
    let nan_or = |f: fn(f32, f32) -> f32, x: f32, y: f32| if x.is_nan() || y.is_nan() { f32::NAN } else { f(x, y) };
    let ints: [i32; 11] = [
        a,
        ua as i32,
        div(a, b),
        rem(a, b),
        ua.checked_div(ub).unwrap_or(ua) as i32,
        ua.checked_rem(ub).unwrap_or(0) as i32,
        a << (b as u32 % 32),
        a >> (ub % 32),
        (ua >> (b as u32 % 32)) as i32,
        ((a ^ b) | (a & 255)) << 3,
        div(rem(a, b), 2),
    ];
    let mut out = [0.0; SEMANTICS_OUT];
    for (k, v) in ints.iter().enumerate() {
        // u32 values split as their bits: `>> 16` of a u32 is logical.
        let logical = matches!(k, 1 | 4 | 5 | 8);
        out[2 * k] = if logical { (*v as u32 >> 16) as f32 } else { (v >> 16) as f32 };
        out[2 * k + 1] = (v & 0xffff) as f32;
    }
    out[22] = nan_or(f32::max, fa, fb);
    out[23] = nan_or(f32::min, fa, fb);
    out[24] = if fa.is_nan() { f32::NAN } else { fa.clamp(-1.0, 1.0) };
    out[25] = fa - fb * (fa / fb).trunc();
    out[26] = if fa > fb { 1.0 } else { 0.0 };
    out[27] = (a.wrapping_neg() >> 16) as f32;
    out[28] = (a.wrapping_neg() & 0xffff) as f32;
    out[29] = ((ua ^ u32::MAX) >> 16) as f32;
    out[30] = (a as u32 >> 28) as f32;
    out[31] = if fa.is_nan() { 1.0 } else { 0.0 };
    out
}

/// NaN equals NaN here; everything else must agree to the bit.
pub fn same_bits_or_both_nan(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan(), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn integer_casts_shifts_and_nan_follow_wgsl() {
    let (x, y) = semantics_inputs();
    let n = x.len();
    let (xt, yt) =
        (Tensor::<Cpu, 1>::from_vec(x.clone(), [n], &CpuDevice), Tensor::from_vec(y.clone(), [n], &CpuDevice));
    let mut out = Tensor::<Cpu, 1>::zeros([n * SEMANTICS_OUT], &CpuDevice);
    semantics::launch(n.div_ceil(64) as u32, &xt, &yt, &mut out, n as u32);
    let got = out.to_vec::<f32>();
    for (c, (&fa, &fb)) in x.iter().zip(&y).enumerate() {
        let case = &got[c * SEMANTICS_OUT..(c + 1) * SEMANTICS_OUT];
        same_bits_or_both_nan(&format!("semantics({fa}, {fb})"), case, &semantics_reference(fa, fb));
    }
}

kernel! {
    /// Every invocation of every workgroup writes element 0 and reads it
    /// back: a race, which on a GPU lands one of the writes, and on the
    /// CPU (workgroups on several threads) is relaxed atomic stores, not
    /// undefined behaviour.
    #[workgroup(64)]
    pub fn race(out: &mut [f32]) {
        out[0] = global_id() as f32;
        out[1 + global_id() % 2] = out[0];
    }
}

#[test]
fn workgroups_racing_on_one_element_land_one_of_their_writes() {
    let groups = 256;
    for _ in 0..20 {
        let mut out = Tensor::<Cpu, 1>::zeros([3], &CpuDevice);
        race::launch(groups, &mut out);
        for v in out.to_vec::<f32>() {
            assert!(v >= 0.0 && v < (groups * 64) as f32 && v.fract() == 0.0, "{v} was never written");
        }
    }
}

/// The row kernels both GPU backends run (`blaze::runtime::rows`, one
/// `kernel!` source each), run on the CPU's workgroup emulation, compute
/// the CPU backend's softmax, log-softmax and their adjoints: the
/// definition is checked without a GPU.
#[test]
fn the_gpu_row_kernels_compute_the_cpus_softmax() {
    use blaze::runtime::backend::{Composites, SoftmaxOptions};
    use blaze::runtime::rows;
    let x = matrix(6, 70, 3).mul_scalar(4.0).reshape([2, 3, 70]);
    let g = matrix(6, 70, 4).reshape([2, 3, 70]);
    for (dim, causal) in [(2, false), (1, false), (2, true)] {
        for log in [false, true] {
            let mut o = SoftmaxOptions::default().scale(0.5);
            o.log = log;
            o.causal = causal;
            // Causal rows are queries of a [3, 3] matrix; a copy, so the
            // kernel reads it flat.
            let flat = |t: &Tensor<Cpu, 3>| {
                let t = if causal { t.narrow(2, 0, 3) } else { t.clone() };
                Tensor::<Cpu, 3>::from_vec(t.to_vec::<f32>(), t.shape(), &CpuDevice)
            };
            let (x, g) = (flat(&x), flat(&g));
            let (rows, s) = rows::softmax_args(&x.shape(), dim, o);
            let mut y = Tensor::<Cpu, 3>::zeros(x.shape(), &CpuDevice);
            let groups = rows as u32;
            launch::<rows::softmax::Kernel, Cpu>(groups, &mut [Input(x.storage()), Output(y.storage_mut())], &s);
            let want = Tensor::<Cpu, 3>::from_storage(Cpu::softmax(x.storage(), dim, o));
            let what = format!("softmax over dim {dim} (log {log}, causal {causal})");
            assert_close(&what, &y.to_vec::<f32>(), &want.to_vec::<f32>());
            let mut d = Tensor::<Cpu, 3>::zeros(x.shape(), &CpuDevice);
            let (_, s) = rows::softmax_backward_args(&x.shape(), dim, o);
            let buffers = &mut [Input(g.storage()), Input(y.storage()), Output(d.storage_mut())];
            launch::<rows::softmax_backward::Kernel, Cpu>(groups, buffers, &s);
            let want = Tensor::<Cpu, 3>::from_storage(Cpu::softmax_backward(g.storage(), want.storage(), dim, o));
            assert_close(&format!("{what} backward"), &d.to_vec::<f32>(), &want.to_vec::<f32>());
        }
    }
}

/// The norm row kernels, on the CPU's workgroup emulation, compute the
/// CPU backend's LayerNorm, RMSNorm and their gradients.
#[test]
fn the_gpu_norm_kernels_compute_the_cpus_norms() {
    use blaze::runtime::backend::Composites;
    use blaze::runtime::rows;
    let (x, g) = (matrix(5, 90, 5).mul_scalar(3.0).add_scalar(1.0), matrix(5, 90, 6));
    let (w, b) = (matrix(1, 90, 7).reshape::<1>([90]), matrix(1, 90, 8).reshape::<1>([90]));
    for centre in [true, false] {
        for with_params in [true, false] {
            let (rows_, n, s) = rows::norm_args(&x.shape(), 1e-5, centre, with_params, with_params);
            let mut y = Tensor::<Cpu, 2>::zeros([5, 90], &CpuDevice);
            let mut stats = Tensor::<Cpu, 2>::zeros([5, 2], &CpuDevice);
            let groups = rows_ as u32;
            // Without parameters the flags say not to read them.
            let buffers = &mut [
                Input(x.storage()),
                Input(w.storage()),
                Input(b.storage()),
                Output(y.storage_mut()),
                Output(stats.storage_mut()),
            ];
            launch::<rows::norm::Kernel, Cpu>(groups, buffers, &s);
            let (ws, bs) = (with_params.then(|| w.storage()), with_params.then(|| b.storage()));
            let [want, want_stats] = Cpu::norm(x.storage(), ws, bs, 1e-5, centre);
            let what = format!("norm (centre {centre}, weight and bias {with_params})");
            let cpu =
                |s: <Cpu as blaze::runtime::Primitives>::Storage| Tensor::<Cpu, 2>::from_storage(s).to_vec::<f32>();
            assert_close(&what, &y.to_vec::<f32>(), &cpu(want));
            assert_close(&format!("{what} statistics"), &stats.to_vec::<f32>(), &cpu(want_stats));
            let mut dx = Tensor::<Cpu, 2>::zeros([5, 90], &CpuDevice);
            let (_, _, input_grad, param_grads) = rows::norm_backward_args(&x.shape(), centre, with_params);
            let buffers = &mut [
                Input(g.storage()),
                Input(x.storage()),
                Input(stats.storage()),
                Input(w.storage()),
                Output(dx.storage_mut()),
            ];
            launch::<rows::norm_backward::Kernel, Cpu>(groups, buffers, &input_grad);
            let (mut dw, mut db) = (Tensor::<Cpu, 1>::zeros([n], &CpuDevice), Tensor::<Cpu, 1>::zeros([n], &CpuDevice));
            let buffers = &mut [
                Input(g.storage()),
                Input(x.storage()),
                Input(stats.storage()),
                Output(dw.storage_mut()),
                Output(db.storage_mut()),
            ];
            launch::<rows::norm_params::Kernel, Cpu>(n as u32, buffers, &param_grads);
            let [wdx, wdw, wdb] = Cpu::norm_backward(g.storage(), x.storage(), stats.storage(), ws, centre);
            let flat =
                |s: <Cpu as blaze::runtime::Primitives>::Storage| Tensor::<Cpu, 1>::from_storage(s).to_vec::<f32>();
            assert_close(&format!("{what} input gradient"), &dx.to_vec::<f32>(), &cpu(wdx));
            assert_close(&format!("{what} weight gradient"), &dw.to_vec::<f32>(), &flat(wdw));
            assert_close(&format!("{what} bias gradient"), &db.to_vec::<f32>(), &flat(wdb));
        }
    }
}

/// The cross-entropy row kernel, on the CPU's workgroup emulation,
/// computes the CPU backend's fused loss and gradient, ignored rows,
/// smoothing and a NaN logit included.
#[test]
fn the_gpu_cross_entropy_kernel_computes_the_cpus() {
    use blaze::runtime::backend::Composites;
    use blaze::runtime::rows;
    let (n, c) = (6, 90);
    let mut z = matrix(n, c, 9).mul_scalar(3.0).to_vec::<f32>();
    z[4 * c + 7] = f32::NAN;
    let z = Tensor::<Cpu, 2>::from_vec(z, [n, c], &CpuDevice);
    let classes = [3i64, -100, 89, 0, 5, -100];
    let targets = Tensor::<Cpu, 1>::from_vec(classes.to_vec(), [n], &CpuDevice);
    let as_f32 = Tensor::<Cpu, 1>::from_vec(classes.map(|t| t as f32).to_vec(), [n], &CpuDevice);
    for smoothing in [0.0, 0.1] {
        let s = rows::cross_entropy_args(n, c, smoothing, -100, 0.5).expect("-100 is an i32");
        let (mut loss, mut grad) =
            (Tensor::<Cpu, 1>::zeros([n], &CpuDevice), Tensor::<Cpu, 2>::zeros([n, c], &CpuDevice));
        let buffers =
            &mut [Input(z.storage()), Input(as_f32.storage()), Output(loss.storage_mut()), Output(grad.storage_mut())];
        launch::<rows::cross_entropy::Kernel, Cpu>(n as u32, buffers, &s);
        let (wl, wg) =
            Cpu::cross_entropy(z.storage(), targets.storage(), smoothing, -100, 0.5).expect("the CPU fuses it");
        let what = format!("cross_entropy (smoothing {smoothing})");
        let want_loss = Tensor::<Cpu, 1>::from_storage(wl).to_vec::<f32>();
        let want_grad = Tensor::<Cpu, 2>::from_storage(wg).to_vec::<f32>();
        let (got_loss, got_grad) = (loss.to_vec::<f32>(), grad.to_vec::<f32>());
        assert!(got_loss[4].is_nan() && want_loss[4].is_nan(), "{what}: the row with a NaN logit");
        assert!(got_grad[4 * c..5 * c].iter().all(|g| g.is_nan()), "{what}: its gradient");
        let clean = |v: &[f32], per: usize| -> Vec<f32> {
            v.iter().enumerate().filter(|(i, _)| i / per != 4).map(|(_, x)| *x).collect()
        };
        assert_close(&what, &clean(&got_loss, 1), &clean(&want_loss, 1));
        assert_close(&format!("{what} gradient"), &clean(&got_grad, c), &clean(&want_grad, c));
    }
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let same = (a.is_infinite() && a == b) || (a - b).abs() <= 1e-5 * b.abs().max(1.0);
        assert!(same, "{what}: entry {i} is {a}, the CPU's {b}");
    }
}
