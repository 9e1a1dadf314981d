//! Gather, scatter-add, index-select and index-add: each index tensor is
//! uploaded as `u32` and read by one per-output (or per-source) shader.

use super::*;

pub(super) fn gather(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
    let t = native("gather", x);
    let shape = WgpuNative::shape(index);
    let idx = index_buffer(index);
    let out = WgpuStorage::new(&t.device, shape, t.dtype);
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
        &[t.buffer(), idx, out.buffer()],
        &params,
        out.numel(),
    );
    out
}

pub(super) fn scatter_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
    let (t, s) = (native("scatter_add", x), native("scatter_add", src));
    // Each output element sums the sources whose index points at it.
    let ishape = WgpuNative::shape(index);
    let idx = index_buffer(index);
    let out = WgpuStorage::new(&t.device, &t.shape, t.dtype);
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
        &[t.buffer(), idx, s.buffer(), out.buffer()],
        &params,
        out.numel(),
    );
    out
}

pub(super) fn index_select(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
    let t = native("index_select", x);
    let (outer, n, inner) = split3(&t.shape, dim);
    let k = WgpuNative::shape(index)[0];
    let idx = index_buffer(index);
    let mut shape = t.shape.clone();
    shape[dim] = k;
    let out = WgpuStorage::new(&t.device, &shape, t.dtype);
    let body = "    let inner = pu(2u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % k; let o = i / (inner * k);\n    out[i] = x[(o * pu(3u) + ix[j]) * inner + r];";
    let ty = wgsl_ty(t.dtype);
    let _ = outer;
    per_output(
        &t.device,
        &format!("index_select:{ty}"),
        &[("x", ty, false), ("ix", "u32", false), ("out", ty, true)],
        body,
        &[t.buffer(), idx, out.buffer()],
        &[u(out.numel()), u(k), u(inner), u(n)],
        out.numel(),
    );
    out
}

pub(super) fn index_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
    let (t, s) = (native("index_add", x), native("index_add", src));
    let (_, n, inner) = split3(&t.shape, dim);
    let k = WgpuNative::shape(index)[0];
    let idx = index_buffer(index);
    let out = WgpuStorage::new(&t.device, &t.shape, t.dtype);
    let body = "    let inner = pu(2u); let n = pu(3u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % n; let o = i / (inner * n);\n    var acc = x[i];\n    for (var t = 0u; t < k; t = t + 1u) {\n        if (ix[t] == j) { acc = acc + src[(o * k + t) * inner + r]; }\n    }\n    out[i] = acc;";
    per_output(
        &t.device,
        "index_add",
        &[("x", "f32", false), ("ix", "u32", false), ("src", "f32", false), ("out", "f32", true)],
        body,
        &[t.buffer(), idx, s.buffer(), out.buffer()],
        &[u(out.numel()), u(k), u(inner), u(n)],
        out.numel(),
    );
    out
}

/// The `u32` words of an index tensor (i64, uploaded by `from_data`).
fn index_buffer(index: &WgpuStorage) -> &wgpu::Buffer {
    assert!(index.dtype == DType::I64, "wgpu: indices must be i64, got {}", index.dtype);
    index.buffer()
}
