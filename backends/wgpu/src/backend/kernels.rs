//! `kernel!` kernels as tensor ops: elementwise kernels and their partials
//! wrapped in a per-output shader, general kernels dispatched over their
//! workgroups. The host-data `launch` and `map` run through these too.

use super::*;

pub(super) fn elementwise<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    dtype: DType,
) -> WgpuStorage {
    let device = device_of::<K>(inputs, dtype);
    elementwise_on::<K>(&device, f, inputs, shape)
}

/// The device kernel `K`'s f32 `inputs` live on.
fn device_of<K: Elementwise>(inputs: &[KernelArg<WgpuStorage>], dtype: DType) -> WgpuDevice {
    assert!(dtype == DType::F32, "wgpu {}: kernels run on f32 here; {dtype} tensors live on the host", K::NAME);
    inputs.iter().find_map(|a| Some(a.tensor()?.device.clone())).unwrap_or_default()
}

/// The buffers an elementwise kernel's shader binds (the tensor inputs in
/// order, then `outputs`), its numbers (and each noise seed, as two words)
/// appended to `params`.
fn bind<'a>(
    inputs: &'a [KernelArg<WgpuStorage>],
    params: &mut Vec<u32>,
    outputs: &[&'a WgpuStorage],
) -> Vec<&'a wgpu::Buffer> {
    let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
    for a in inputs {
        match a {
            KernelArg::Tensor(t) => buffers.push(t.buffer()),
            KernelArg::Number(v) => params.push((*v as f32).to_bits()),
            KernelArg::Uniform(seed) => params.extend([*seed as u32, (*seed >> 32) as u32]),
        }
    }
    buffers.extend(outputs.iter().map(|o| o.buffer()));
    buffers
}

pub(super) fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, WgpuStorage>], scalars: &[ScalarArg]) {
    check_launch::<K, _>(buffers, scalars);
    let Some(device) = buffers.first().map(|b| b.storage().device.clone()) else {
        return;
    };
    own_outputs(buffers, |t| {
        let d = native(K::NAME, t);
        let fresh = WgpuStorage::new(&d.device, &d.shape, d.dtype);
        device.copy(d.buffer(), fresh.buffer(), 4 * d.numel() as u64);
        fresh
    });
    let bound: Vec<&wgpu::Buffer> = buffers.iter().map(|b| b.storage().buffer()).collect();
    let max = device.max_groups();
    assert!(groups <= max, "{}: {groups} workgroups; this device dispatches at most {max} at once", K::NAME);
    dispatch::<K>(&device, groups, &bound, scalars);
}

/// General kernel `K` over `groups` workgroups (at most the device's
/// grid) on buffers `bound`, in the kernel's order.
pub(super) fn dispatch<K: Workgroups>(
    device: &WgpuDevice,
    groups: u32,
    bound: &[&wgpu::Buffer],
    scalars: &[ScalarArg],
) {
    let words: Vec<u32> = scalars
        .iter()
        .map(|s| match s {
            ScalarArg::F32(v) => v.to_bits(),
            ScalarArg::U32(v) => *v,
            ScalarArg::I32(v) => *v as u32,
        })
        .collect();
    let pipeline = device.compile(K::NAME, general_key::<K>(), || K::WGSL.to_owned(), K::NAME);
    device.dispatch_with(&pipeline, bound, (!words.is_empty()).then_some(&words), (groups, 1, 1));
}

/// What general kernel `K`'s pipeline is cached under: its type's path, so
/// that kernels of one name in different modules (a user's `softmax` and
/// the runtime's row kernel) stay apart.
pub(crate) fn general_key<K: Workgroups>() -> &'static str {
    std::any::type_name::<K>()
}

/// Row op `K` of the runtime (`blaze_runtime::rows`) over `rows` rows: a
/// workgroup per row, each striding on past the device's grid.
pub(super) fn rows<K: Workgroups>(device: &WgpuDevice, rows: usize, bound: &[&wgpu::Buffer], scalars: &[ScalarArg]) {
    let groups = u32::try_from(rows).unwrap_or(u32::MAX).min(device.max_groups());
    dispatch::<K>(device, groups, bound, scalars);
}

/// How an elementwise kernel's arguments are passed, one letter each: `t`
/// a tensor (bound in order), `n` a number, `u` noise (its seed, as
/// parameters): the shader differs.
pub(super) fn layout(inputs: &[KernelArg<WgpuStorage>]) -> String {
    inputs
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(_) => 't',
            KernelArg::Number(_) => 'n',
            KernelArg::Uniform(_) => 'u',
        })
        .collect()
}

/// Elementwise kernel `K`'s function `f` as a per-output shader over
/// arguments laid out as `layout` says ([`layout`]): the key its pipeline
/// is cached under, and its WGSL.
pub(crate) fn elementwise_program<K: Elementwise>(
    f: KernelFn,
    layout: &str,
) -> (String, impl FnOnce() -> String + use<K>) {
    program::<K>(f, layout, Rows::Each)
}

/// What a kernel's shader does with each row of its values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// Nothing: one invocation per element.
    Each,
    /// Sums it, scaled: one invocation per row.
    Sum,
    /// Its softmax (or log-softmax): one invocation per row.
    Softmax { log: bool },
    /// Its LayerNorm (`centre`) or RMSNorm, with the parameters it has:
    /// one invocation per row, writing the output, the statistics and,
    /// with `keep`, the values.
    Norm { centre: bool, weight: bool, bias: bool, keep: bool },
}

/// [`elementwise_program`], or one invocation per row that sums `f` along
/// it or takes its softmax (parameters: rows, the row's length, the scale,
/// then the numbers).
fn program<K: Elementwise>(f: KernelFn, layout: &str, rows: Rows) -> (String, impl FnOnce() -> String + use<K>) {
    let name = match f {
        KernelFn::Value => K::NAME.to_owned(),
        KernelFn::Partial(i) => format!("{}_d_{}", K::NAME, K::ARGS[i]),
    };
    let mode = match rows {
        Rows::Each => "",
        Rows::Sum => "_sum",
        Rows::Softmax { log: false } => "_softmax",
        Rows::Softmax { log: true } => "_log_softmax",
        Rows::Norm { .. } => "_norm",
    };
    let key = match rows {
        Rows::Norm { centre, weight, bias, keep } => {
            let flag = |on: bool, c: char| if on { c } else { '-' };
            let flags: String =
                [flag(centre, 'c'), flag(weight, 'w'), flag(bias, 'b'), flag(keep, 'k')].into_iter().collect();
            format!("kernel{mode}:{name}:{layout}:{flags}")
        }
        _ => format!("kernel{mode}:{name}:{layout}"),
    };
    // Parameter 0 is the element (or row) count; numbers follow in order.
    let each = rows == Rows::Each;
    let mut params = if each { 1 } else { 3 };
    let at = if each { "i" } else { "e" };
    let args: Vec<String> = layout
        .chars()
        .enumerate()
        .map(|(k, kind)| match kind {
            't' => format!("in{k}[{at}]"),
            'n' => {
                params += 1;
                format!("pf({}u)", params - 1)
            }
            _ => {
                params += 2;
                format!("blaze_uniform(pu({}u), pu({}u), {at})", params - 2, params - 1)
            }
        })
        .collect();
    let noise = if layout.contains('u') { blaze_runtime::rng::COUNTER_WGSL } else { "" };
    let inputs: Vec<String> =
        layout.chars().enumerate().filter(|&(_, t)| t == 't').map(|(k, _)| format!("in{k}")).collect();
    let wgsl = move || {
        let mut decl: Vec<(&str, &str, bool)> = inputs.iter().map(|n| (n.as_str(), "f32", false)).collect();
        match rows {
            Rows::Norm { weight, bias, keep, .. } => {
                decl.extend(weight.then_some(("wt", "f32", false)));
                decl.extend(bias.then_some(("bs", "f32", false)));
                decl.extend([("out", "f32", true), ("st", "f32", true)]);
                decl.extend(keep.then_some(("kx", "f32", true)));
            }
            _ => decl.push(("out", "f32", true)),
        }
        let call = format!("{name}({})", args.join(", "));
        // A loop over row `i`'s elements `e`.
        let over_row = |body: &str| {
            format!("    for (var j = 0u; j < n; j = j + 1u) {{\n        let e = i * n + j;\n{body}\n    }}\n")
        };
        let body = match rows {
            Rows::Each => format!("    out[i] = {call};"),
            Rows::Sum => format!(
                "    let n = pu(1u);\n    var acc = 0.0;\n{}    out[i] = acc * pf(2u);",
                over_row(&format!("        acc = acc + {call};"))
            ),
            // The max, then the sum of exponentials, then each value; a
            // NaN anywhere in the row makes the row NaN, as on the CPU. A
            // row of -inf only sums to 0 (the max starts finite) and
            // weighs nothing: 0, or -inf for the log.
            Rows::Softmax { log } => {
                let write = if log { "(v - m) - log(s)" } else { "exp(v - m) / s" };
                let empty = if log { "bitcast<f32>(0xff800000u)" } else { "0.0" };
                format!(
                    "    let n = pu(1u);\n    var m = -3.4028235e38;\n    var nan = false;\n{}    var s = 0.0;\n{}{}",
                    over_row(&format!("        let v = {call};\n        nan = nan || v != v;\n        m = max(m, v);")),
                    over_row(&format!("        s = s + exp({call} - m);")),
                    over_row(&format!(
                        "        let v = {call};\n        \
                         out[e] = select(select({write}, {empty}, s == 0.0), bitcast<f32>(0x7fc00000u), nan);"
                    )),
                )
            }
            // The mean (LayerNorm; 0 for RMSNorm), then the mean square of
            // the deviations, then each output, as the CPU computes them;
            // kept values are written in the first pass and read back,
            // else the kernel is evaluated again.
            Rows::Norm { centre, weight, bias, keep } => {
                let read = if keep { "kx[e]".to_owned() } else { call.clone() };
                let mut first = format!("        let v = {call};\n");
                if keep {
                    first += "        kx[e] = v;\n";
                }
                first += "        mean = mean + v;";
                let mut body = "    let n = pu(1u);\n    var mean = 0.0;\n".to_owned();
                if centre || keep {
                    body += &over_row(&first);
                }
                body += if centre { "    mean = mean / f32(n);\n" } else { "    mean = 0.0;\n" };
                body += "    var ss = 0.0;\n";
                body += &over_row(&format!("        let d = {read} - mean;\n        ss = ss + d * d;"));
                body += "    let rstd = 1.0 / sqrt(ss / f32(n) + pf(2u));\n    st[2u * i] = mean;\n    st[2u * i + 1u] = rstd;\n";
                let mut y = format!("({read} - mean) * rstd");
                if weight {
                    y = format!("{y} * wt[j]");
                }
                if bias {
                    y = format!("{y} + bs[j]");
                }
                body + &over_row(&format!("        out[e] = {y};"))
            }
        };
        format!("{}{noise}{}\n{}", K::DEPS.join("\n"), K::WGSL, shaders::per_output(&decl, &body))
    };
    (key, wgsl)
}

/// Kernel `K` (or a partial) summed over the last dim of `shape` and
/// scaled, one invocation per row, on the device of `inputs`.
pub(super) fn elementwise_sum<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    dtype: DType,
    scale: f64,
) -> WgpuStorage {
    let mut out_shape = shape.to_vec();
    *out_shape.last_mut().expect("a sum over the last dim needs a dim") = 1;
    per_row::<K>(f, inputs, shape, &out_shape, dtype, scale, Rows::Sum)
}

/// The softmax (or log-softmax) over the last dim of kernel `K` (or a
/// partial), one invocation per row, on the device of `inputs`.
pub(super) fn elementwise_softmax<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    dtype: DType,
    log: bool,
) -> WgpuStorage {
    per_row::<K>(f, inputs, shape, shape, dtype, 1.0, Rows::Softmax { log })
}

/// The LayerNorm or RMSNorm over the last dim of kernel `K` (or a
/// partial), one invocation per row, on the device of `inputs`: the
/// output, the statistics and, with `keep`, the kernel's values.
pub(super) fn elementwise_norm<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    dtype: DType,
    norm: RowNorm<'_, WgpuStorage>,
    keep: bool,
) -> (WgpuStorage, WgpuStorage, Option<WgpuStorage>) {
    let device = device_of::<K>(inputs, dtype);
    let n = *shape.last().expect("a norm over the last dim needs a dim");
    let mut stats_shape = shape.to_vec();
    *stats_shape.last_mut().expect("a dim") = 2;
    let out = WgpuStorage::new(&device, shape, DType::F32);
    let stats = WgpuStorage::new(&device, &stats_shape, DType::F32);
    let kept = keep.then(|| WgpuStorage::new(&device, shape, DType::F32));
    let count = shape[..shape.len() - 1].iter().product::<usize>();
    if out.numel() == 0 {
        return (out, stats, kept);
    }
    let [weight, bias] = [norm.weight, norm.bias].map(|p| p.map(|p| native(K::NAME, p)));
    let outputs: Vec<&WgpuStorage> =
        weight.into_iter().chain(bias).chain([&out, &stats]).chain(kept.as_ref()).collect();
    let mut params = vec![u(count), u(n), (norm.eps as f32).to_bits()];
    let buffers = bind(inputs, &mut params, &outputs);
    let rows = Rows::Norm { centre: norm.centre, weight: weight.is_some(), bias: bias.is_some(), keep };
    let (key, wgsl) = program::<K>(f, &layout(inputs), rows);
    let pipeline = device.compile(K::NAME, &key, wgsl, "main");
    device.dispatch(&pipeline, &buffers, &params, grid(&device, count, WG));
    (out, stats, kept)
}

/// Kernel `K` with `rows` run over each row of `shape`, one invocation per
/// row, into an output of `out_shape`.
fn per_row<K: Elementwise>(
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
    out_shape: &[usize],
    dtype: DType,
    scale: f64,
    rows: Rows,
) -> WgpuStorage {
    let device = device_of::<K>(inputs, dtype);
    let n = *shape.last().expect("a row needs a dim");
    let out = WgpuStorage::new(&device, out_shape, DType::F32);
    let count = shape[..shape.len() - 1].iter().product::<usize>();
    if out.numel() == 0 {
        return out;
    }
    let mut params = vec![u(count), u(n), (scale as f32).to_bits()];
    let buffers = bind(inputs, &mut params, &[&out]);
    let (key, wgsl) = program::<K>(f, &layout(inputs), rows);
    let pipeline = device.compile(K::NAME, &key, wgsl, "main");
    device.dispatch(&pipeline, &buffers, &params, grid(&device, count, WG));
    out
}

/// Elementwise kernel `K` (or a partial) over f32 `inputs` on `device`.
pub(crate) fn elementwise_on<K: Elementwise>(
    device: &WgpuDevice,
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
) -> WgpuStorage {
    let out = WgpuStorage::new(device, shape, DType::F32);
    let n = out.numel();
    if n == 0 {
        return out;
    }
    let mut params = vec![u(n)];
    let buffers = bind(inputs, &mut params, &[&out]);
    let (key, wgsl) = elementwise_program::<K>(f, &layout(inputs));
    let pipeline = device.compile(K::NAME, &key, wgsl, "main");
    device.dispatch(&pipeline, &buffers, &params, grid(device, n, WG));
    out
}

/// The values of an f32 tensor, or the fault that makes them invalid.
pub(crate) fn read_f32(t: &WgpuStorage, out: &mut [f32]) -> Result<(), blaze_runtime::DeviceError> {
    match t.device.try_read(t.buffer(), 4 * t.numel() as u64) {
        Some(bytes) => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            Ok(())
        }
        None => t.device.synchronize(),
    }
}
