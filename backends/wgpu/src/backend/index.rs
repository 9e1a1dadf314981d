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
    let mut params = vec![u(out.numel())];
    params.extend(shape.iter().map(|&d| u(d)));
    params.extend(xs.iter().map(|&s| u(s)));
    let ty = wgsl_ty(t.dtype);
    per_output(
        &t.device,
        &format!("gather:{ty}:{rank}:{dim}"),
        || shaders::GATHER.shader(&[("ty", ty), ("rank", &rank.to_string()), ("dim", &dim.to_string())]),
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
    let mut params = vec![u(out.numel())];
    params.extend(t.shape.iter().map(|&d| u(d)));
    params.extend(ishape.iter().map(|&d| u(d)));
    params.extend(is.iter().map(|&d| u(d)));
    per_output(
        &t.device,
        &format!("scatter_add:{rank}:{dim}"),
        || shaders::SCATTER_ADD.shader(&[("rank", &rank.to_string()), ("dim", &dim.to_string())]),
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
    let ty = wgsl_ty(t.dtype);
    let _ = outer;
    per_output(
        &t.device,
        &format!("index_select:{ty}"),
        || shaders::INDEX_SELECT.shader(&[("ty", ty)]),
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
    per_output(
        &t.device,
        "index_add",
        || shaders::INDEX_ADD.shader(&[]),
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
