//! The runtime's hand-written elementwise kernels ([`Builtin`]: dropout's
//! mask) as `#[cube]` code, each with its partials and computing what
//! its WGSL computes. The runtime writes them against `Elementwise`
//! without `kernel!`, so they carry no launcher of their own; without
//! these they would run on the host, a round trip of their operands each
//! call (dropout on every training step of a transformer).
//!
//! Each kernel follows `kernel!`'s elementwise layout: one tensor per
//! argument, read through its strides, and `which` 0 for the value,
//! `i + 1` for the partial by argument `i`.

// `#[cube]` writes an undocumented module and struct beside each function.
#![allow(missing_docs)]

use blaze_runtime::kernel::{Builtin, KernelArg};
use cubecl::prelude::*;

use super::ew::{CubeElementwise, draw};
use super::kernels::offset_in;
use super::{CubeStorage, grid};

/// The launcher of builtin kernel `b`.
pub(super) fn table(b: Builtin) -> &'static CubeElementwise {
    match b {
        Builtin::Dropout => &CubeElementwise { launch: launch_dropout },
    }
}

/// The argument views of builtin kernel `name`, which takes `N` (the
/// runtime checks the arity against `ARGS` before any backend sees it).
fn unpack<const N: usize>(name: &str, args: Vec<TensorArg>) -> [TensorArg; N] {
    let got = args.len();
    args.try_into().unwrap_or_else(|_| panic!("cubecl {name}: {got} arguments, the kernel takes {N}"))
}

/// `dropout(x, p, scale, u) = u < p ? 0 : x * scale`, or partial `which - 1`.
#[cube]
fn dropout_at(x: f32, p: f32, scale: f32, u: f32, #[comptime] which: u32) -> f32 {
    let dropped = u < p;
    let mut y = 0.0f32;
    if comptime!(which == 0) {
        y = select(dropped, 0.0, x * scale);
    }
    if comptime!(which == 1) {
        y = select(dropped, 0.0, scale);
    }
    if comptime!(which == 3) {
        y = select(dropped, 0.0, x);
    }
    y
}

/// Dropout with every argument a tensor.
#[cube(launch)]
fn dropout(
    xt: &Tensor<f32>,
    pt: &Tensor<f32>,
    st: &Tensor<f32>,
    ut: &Tensor<f32>,
    out: &mut Tensor<f32>,
    #[comptime] which: u32,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = xt[offset_in(ABSOLUTE_POS, xt)];
    let p = pt[offset_in(ABSOLUTE_POS, pt)];
    let scale = st[offset_in(ABSOLUTE_POS, st)];
    let u = ut[offset_in(ABSOLUTE_POS, ut)];
    out[ABSOLUTE_POS] = dropout_at(x, p, scale, u, which);
}

fn launch_dropout(client: &Client, count: CubeCount, dim: CubeDim, args: Vec<TensorArg>, out: TensorArg, which: u32) {
    let [x, p, scale, u] = unpack("dropout", args);
    dropout::launch(client, count, dim, x, p, scale, u, out, which);
}

/// Dropout as `Dropout::apply` calls it: the numbers as scalars and the
/// draws made in the kernel from the seed's words, never stored.
#[cube(launch)]
fn dropout_drawn(
    xt: &Tensor<f32>,
    out: &mut Tensor<f32>,
    p: f32,
    scale: f32,
    k0: u32,
    k1: u32,
    #[comptime] which: u32,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = xt[offset_in(ABSOLUTE_POS, xt)];
    let u = draw(ABSOLUTE_POS as u32, k0, k1);
    out[ABSOLUTE_POS] = dropout_at(x, p, scale, u, which);
}

/// Launches [`dropout_drawn`] when the arguments are a tensor (`view`
/// reads it over the output), two numbers and the draws, as
/// `Dropout::apply` passes them; whether it did.
pub(super) fn try_dropout_drawn(
    inputs: &[KernelArg<CubeStorage>],
    out: &CubeStorage,
    which: u32,
    view: impl FnOnce(&CubeStorage) -> TensorArg,
) -> bool {
    let [KernelArg::Tensor(x), KernelArg::Number(p), KernelArg::Number(scale), KernelArg::Uniform(seed)] = inputs
    else {
        return false;
    };
    let (count, dim) = grid(out.numel());
    let (k0, k1) = (*seed as u32, (*seed >> 32) as u32);
    dropout_drawn::launch(out.device.client(), count, dim, view(x), out.arg(), *p as f32, *scale as f32, k0, k1, which);
    true
}

#[cfg(test)]
mod tests {
    //! Every builtin kernel's value and partials on the device against
    //! the CPU, at points that reach each branch: dropout's draws on both
    //! sides of `p`.

    use blaze_cpu::Cpu;
    use blaze_fallback::HostFallback;
    use blaze_runtime::kernel::{Arg, Builtin, KernelFn};
    use blaze_runtime::{Backend, Tensor};

    use crate::CubeNative;
    use crate::backend::testing::{data, device};

    /// The argument lists `b` is checked at: `x`, with `t` (in `[0.5, 2)`)
    /// as the further tensor argument and numbers for the rest. Dropout
    /// twice: as `Dropout::apply` calls it (draws made in the kernel), and
    /// with every argument a tensor.
    fn arg_lists<'a, B: Backend>(b: Builtin, x: &'a Tensor<B, 1>, t: &'a Tensor<B, 1>) -> Vec<Vec<Arg<'a, B, 1>>> {
        match b {
            Builtin::Dropout => vec![
                vec![Arg::Tensor(x), Arg::Number(0.3), Arg::Number(1.0 / 0.7), Arg::Uniform(7)],
                vec![Arg::Tensor(x), Arg::Tensor(t), Arg::Tensor(t), Arg::Tensor(x)],
            ],
        }
    }

    #[test]
    fn every_builtin_kernel_and_partial_agrees_with_the_cpu() {
        let Some(dev) = device() else { return };
        let cpu = Default::default();
        let mut xs: Vec<f32> = data(&[96], 5).values.to_f64_vec().into_iter().map(|v| v as f32 * 8.0).collect();
        xs.extend([0.0, -0.0, 1e-7, -1e-7, 3e-9, -100.0, 100.0, 30.0, 39.0, -30.0, f32::NAN]);
        let ts: Vec<f32> =
            data(&[xs.len()], 6).values.to_f64_vec().into_iter().map(|v| 1.25 + 0.75 * v as f32).collect();
        let n = xs.len();
        let (xc, tc) =
            (Tensor::<Cpu, 1>::from_vec(xs.clone(), [n], &cpu), Tensor::<Cpu, 1>::from_vec(ts.clone(), [n], &cpu));
        type Cube = HostFallback<CubeNative, Cpu>;
        let (xg, tg) = (Tensor::<Cube, 1>::from_vec(xs, [n], &dev), Tensor::<Cube, 1>::from_vec(ts, [n], &dev));
        let host_runs = || crate::backend::ew::HOST_RUNS.load(std::sync::atomic::Ordering::Relaxed);
        let before = host_runs();
        for &b in Builtin::ALL {
            let fs = std::iter::once(KernelFn::Value).chain((0..b.args().len()).map(KernelFn::Partial));
            for f in fs {
                for (list, (cpu_args, cube_args)) in
                    arg_lists(b, &xc, &tc).iter().zip(arg_lists(b, &xg, &tg)).enumerate()
                {
                    let want = b.eval(f, cpu_args).to_vec::<f32>();
                    let got = b.eval(f, &cube_args).to_vec::<f32>();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g.is_nan() && w.is_nan()) || (g - w).abs() <= 2e-5 * (1.0 + w.abs()),
                            "{b:?} {f:?} (arguments {list}) at x = {}: {g} on the device, {w} on the CPU",
                            xc.to_vec::<f32>()[i]
                        );
                    }
                }
            }
        }
        assert_eq!(host_runs(), before, "a builtin kernel ran on the host");
    }
}
