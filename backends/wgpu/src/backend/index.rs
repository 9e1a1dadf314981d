//! Gather, scatter-add, index-select and index-add: each index tensor is
//! uploaded as `u32` and read by one per-output (or per-source) shader.

use super::*;

pub(super) fn gather(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
    let WgpuStorage::Device(t) = x else {
        return place(Cpu::gather(&x.host(), dim, &index.host()), x.device());
    };
    let shape = Wgpu::shape(index);
    let idx = index_buffer(index);
    let out = DeviceTensor::new(&t.device, shape, t.dtype);
    let rank = shape.len();
    let xs = strides(&t.shape);
    let mut body = shaders::coords(rank, 1);
    body += "    var at = 0u;\n";
    for d in 0..rank {
        let c = if d == dim { "ix[i]".to_owned() } else { format!("c{d}") };
        body += &format!("    at = at + {c} * pu({}u);\n", 1 + rank + d);
    }
    body += "    out[i] = x[at];";
    let mut params = vec![u(out.numel())];
    params.extend(shape.iter().map(|&d| u(d)));
    params.extend(xs.iter().map(|&s| u(s)));
    let ty = wgsl_ty(t.dtype);
    per_output(
        &t.device,
        &format!("gather:{ty}:{rank}:{dim}"),
        &[("x", ty, false), ("ix", "u32", false), ("out", ty, true)],
        &body,
        &[t.buffer(), idx.get(), out.buffer()],
        &params,
        out.numel(),
    );
    Wgpu::dev(out)
}

pub(super) fn scatter_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
    let (WgpuStorage::Device(t), WgpuStorage::Device(s)) = (x, src) else {
        return place(Cpu::scatter_add(&x.host(), dim, &index.host(), &src.host()), x.device());
    };
    // Each output element sums the sources whose index points at it.
    let ishape = Wgpu::shape(index);
    let idx = index_buffer(index);
    let out = DeviceTensor::new(&t.device, &t.shape, t.dtype);
    let rank = t.shape.len();
    let is = strides(ishape);
    let mut body = shaders::coords(rank, 1);
    body += "    var acc = x[i];\n    var inside = true;\n";
    for d in 0..rank {
        if d != dim {
            body += &format!("    inside = inside && c{d} < pu({}u);\n", 1 + rank + d);
        }
    }
    body += "    if (inside) {\n        var base = 0u;\n";
    for d in 0..rank {
        if d != dim {
            body += &format!("        base = base + c{d} * pu({}u);\n", 1 + 2 * rank + d);
        }
    }
    body += &format!(
        "        for (var t = 0u; t < pu({}u); t = t + 1u) {{\n            let at = base + t * pu({}u);\n            if (ix[at] == c{dim}) {{ acc = acc + src[at]; }}\n        }}\n    }}\n    out[i] = acc;",
        1 + rank + dim,
        1 + 2 * rank + dim
    );
    let mut params = vec![u(out.numel())];
    params.extend(t.shape.iter().map(|&d| u(d)));
    params.extend(ishape.iter().map(|&d| u(d)));
    params.extend(is.iter().map(|&d| u(d)));
    per_output(
        &t.device,
        &format!("scatter_add:{rank}:{dim}"),
        &[("x", "f32", false), ("ix", "u32", false), ("src", "f32", false), ("out", "f32", true)],
        &body,
        &[t.buffer(), idx.get(), s.buffer(), out.buffer()],
        &params,
        out.numel(),
    );
    Wgpu::dev(out)
}

pub(super) fn index_select(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
    let WgpuStorage::Device(t) = x else {
        return place(Cpu::index_select(&x.host(), dim, &index.host()), x.device());
    };
    let (outer, n, inner) = split3(&t.shape, dim);
    let k = Wgpu::shape(index)[0];
    let idx = index_buffer(index);
    let mut shape = t.shape.clone();
    shape[dim] = k;
    let out = DeviceTensor::new(&t.device, &shape, t.dtype);
    let body = "    let inner = pu(2u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % k; let o = i / (inner * k);\n    out[i] = x[(o * pu(3u) + ix[j]) * inner + r];";
    let ty = wgsl_ty(t.dtype);
    let _ = outer;
    per_output(
        &t.device,
        &format!("index_select:{ty}"),
        &[("x", ty, false), ("ix", "u32", false), ("out", ty, true)],
        body,
        &[t.buffer(), idx.get(), out.buffer()],
        &[u(out.numel()), u(k), u(inner), u(n)],
        out.numel(),
    );
    Wgpu::dev(out)
}

pub(super) fn index_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
    let (WgpuStorage::Device(t), WgpuStorage::Device(s)) = (x, src) else {
        return place(Cpu::index_add(&x.host(), dim, &index.host(), &src.host()), x.device());
    };
    let (_, n, inner) = split3(&t.shape, dim);
    let k = Wgpu::shape(index)[0];
    let idx = index_buffer(index);
    let out = DeviceTensor::new(&t.device, &t.shape, t.dtype);
    let body = "    let inner = pu(2u); let n = pu(3u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % n; let o = i / (inner * n);\n    var acc = x[i];\n    for (var t = 0u; t < k; t = t + 1u) {\n        if (ix[t] == j) { acc = acc + src[(o * k + t) * inner + r]; }\n    }\n    out[i] = acc;";
    per_output(
        &t.device,
        "index_add",
        &[("x", "f32", false), ("ix", "u32", false), ("src", "f32", false), ("out", "f32", true)],
        body,
        &[t.buffer(), idx.get(), s.buffer(), out.buffer()],
        &[u(out.numel()), u(k), u(inner), u(n)],
        out.numel(),
    );
    Wgpu::dev(out)
}

/// An i64 index tensor as `u32` values on the device.
pub(super) fn index_buffer(index: &WgpuStorage) -> Arc<PoolBuffer> {
    let values = match Cpu::to_data(&index.host()).values {
        DataVec::I64(v) => v,
        other => panic!("wgpu: indices must be i64, got {}", other.dtype()),
    };
    let bytes: Vec<u8> = values.iter().flat_map(|&v| u(v as usize).to_le_bytes()).collect();
    index.device().upload(&bytes)
}
