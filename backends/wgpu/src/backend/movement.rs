//! Copies that move data: padding and concatenation.

use super::*;

pub(super) fn pad(x: &WgpuStorage, pads: &[(usize, usize)], value: f64) -> WgpuStorage {
    let t = native("pad", x);
    // One dim at a time, each a copy into a larger buffer.
    let mut cur = t.clone();
    for (dim, &(before, after)) in pads.iter().enumerate() {
        if before == 0 && after == 0 {
            continue;
        }
        let (_, in_n, inner) = split3(&cur.shape, dim);
        let mut shape = cur.shape.clone();
        shape[dim] += before + after;
        let out = WgpuStorage::new(&cur.device, &shape, cur.dtype);
        let ty = wgsl_ty(cur.dtype);
        let device = cur.device.clone();
        let pipeline = device.compile(
            "pad",
            &format!("pad:{ty}"),
            || shaders::PAD.shader(&[("ty", ty), ("value", if ty == "f32" { "pf(5u)" } else { "pu(5u)" })]),
            "main",
        );
        let params = [u(out.numel()), u(in_n), u(shape[dim]), u(inner), u(before), scalar_bits(value, cur.dtype)];
        device.dispatch(&pipeline, &[cur.buffer(), out.buffer()], &params, grid(&device, out.numel(), WG));
        cur = out;
    }
    cur
}

pub(super) fn cat(xs: &[WgpuStorage], dim: usize) -> WgpuStorage {
    let parts: Vec<&WgpuStorage> = xs.iter().map(|x| native("cat", x)).collect();
    let mut shape = parts[0].shape.clone();
    shape[dim] = parts.iter().map(|p| p.shape[dim]).sum();
    let out = WgpuStorage::new(&parts[0].device, &shape, parts[0].dtype);
    let (_, total, inner) = split3(&shape, dim);
    let ty = wgsl_ty(out.dtype);
    let mut at = 0;
    for part in &parts {
        let n = part.shape[dim];
        per_output(
            &out.device,
            &format!("cat:{ty}"),
            || shaders::CAT.shader(&[("ty", ty)]),
            &[part.buffer(), out.buffer()],
            &[u(part.numel()), u(n), u(inner), u(total), u(at)],
            part.numel(),
        );
        at += n;
    }
    out
}
