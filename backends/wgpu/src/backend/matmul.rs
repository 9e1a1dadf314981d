//! The tiled batched matmul that `matmul`, `conv2d` and its gradients
//! share, over contiguous tensors with broadcast batch dims.

use super::*;

pub(super) fn contiguous(a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
    rounded(a, b, None)
}

/// [`contiguous`] with the operands' values rounded to `round` (bf16 or
/// f16) as the kernel stages them: a product under a 16-bit precision,
/// f32 products and sums.
pub(super) fn rounded(a: &WgpuStorage, b: &WgpuStorage, round: Option<DType>) -> WgpuStorage {
    let (ra, rb) = (a.shape.len(), b.shape.len());
    let (m, k, n) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
    let batch_a = &a.shape[..ra - 2];
    let batch_b = &b.shape[..rb - 2];
    let batch = broadcast_all(&[batch_a, batch_b]);
    assert!(batch.len() <= 6, "wgpu matmul: at most 6 batch dims, got {}", batch.len());
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let device = a.device.clone();
    let out = WgpuStorage::new(&device, &shape, DType::F32);
    let count = numel(&batch);
    if out.numel() == 0 {
        return out;
    }
    if k == 0 {
        return ew_on(&device, "", "fill", "pf(1u)", &[], &shape, DType::F32, &[0f32.to_bits()]);
    }
    let bstrides = |dims: &[usize]| -> Vec<u32> {
        let st = strides(dims);
        dims.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { u(s) }).collect()
    };
    let mut params = vec![u(m), u(n), u(k), u(batch.len())];
    let pad6 = |mut v: Vec<u32>| {
        v.resize(6, 0);
        v
    };
    params.extend(pad6(batch.iter().map(|&d| u(d)).collect()));
    params.extend(pad6(bstrides(batch_a)));
    params.extend(pad6(bstrides(batch_b)));
    let f16_tiles = round == Some(DType::F16) && device.has_f16();
    let key = format!("matmul:{round:?}:{f16_tiles}");
    let pipeline = device.compile("matmul", &key, || shaders::matmul(round, f16_tiles), "main");
    assert!(count as u32 <= device.max_groups(), "wgpu matmul: {count} matrices in one batch");
    device.dispatch(
        &pipeline,
        &[a.buffer(), b.buffer(), out.buffer()],
        &params,
        (u(n).div_ceil(64), u(m).div_ceil(64), u(count)),
    );
    out
}
