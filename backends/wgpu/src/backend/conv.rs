//! Convolution and pooling on the device: im2col plus the batched matmul,
//! window shaders for pooling, and their input and weight gradients.

use super::*;

pub(super) fn conv2d(
    x: &WgpuStorage,
    weight: &WgpuStorage,
    bias: Option<&WgpuStorage>,
    o: &Conv2dOptions,
) -> WgpuStorage {
    let (xt, wt) = (native("conv2d", x), native("conv2d", weight));
    let [n, _, h, w] = [xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3]];
    let [oc, cg, kh, kw] = [wt.shape[0], wt.shape[1], wt.shape[2], wt.shape[3]];
    let g = o.groups;
    let oh = window(h, kh, o.stride[0], o.padding[0], o.dilation[0]);
    let ow = window(w, kw, o.stride[1], o.padding[1], o.dilation[1]);
    let cols = im2col(xt, kh, kw, oh, ow, o);
    let wm = WgpuNative::reshaped(wt, &[1, g, oc / g, cg * kh * kw]);
    let y = matmul::contiguous(&wm, &cols); // [n, g, oc/g, oh*ow]
    let y = WgpuNative::reshaped(&y, &[n, oc, oh, ow]);
    let out = y;
    match bias {
        Some(b) => WgpuNative::binary(BinaryOp::Add, &out, &WgpuNative::reshape(b, &[1, oc, 1, 1])),
        None => out,
    }
}

pub(super) fn max_pool2d(x: &WgpuStorage, o: &Pool2dOptions, with_indices: bool) -> (WgpuStorage, Option<WgpuStorage>) {
    let t = native("max_pool2d", x);
    let [n, c, h, w] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let shape = [n, c, oh, ow];
    let out = WgpuStorage::new(&t.device, &shape, DType::F32);
    let idx = WgpuStorage::new(&t.device, &shape, DType::Bool);
    per_output(
        &t.device,
        "max_pool2d",
        shaders::max_pool2d,
        &[t.buffer(), out.buffer(), idx.buffer()],
        &pool_params(out.numel(), [oh, ow], [h, w], o),
        out.numel(),
    );
    (out, with_indices.then(|| indices(idx)))
}

pub(super) fn avg_pool2d(x: &WgpuStorage, o: &Pool2dOptions) -> WgpuStorage {
    let t = native("avg_pool2d", x);
    let [n, c, h, w] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let out = WgpuStorage::new(&t.device, &[n, c, oh, ow], DType::F32);
    per_output(
        &t.device,
        "avg_pool2d",
        shaders::avg_pool2d,
        &[t.buffer(), out.buffer()],
        &pool_params(out.numel(), [oh, ow], [h, w], o),
        out.numel(),
    );
    out
}

pub(super) fn conv2d_input_grad(
    grad_out: &WgpuStorage,
    weight: &WgpuStorage,
    input_shape: [usize; 4],
    o: &Conv2dOptions,
) -> WgpuStorage {
    let (gt, wt) = (native("conv2d_input_grad", grad_out), native("conv2d_input_grad", weight));
    let [n, c, h, w] = input_shape;
    let [oc, cg, kh, kw] = [wt.shape[0], wt.shape[1], wt.shape[2], wt.shape[3]];
    let [oh, ow] = [gt.shape[2], gt.shape[3]];
    let g = o.groups;
    // Columns of the input gradient: W^T g, then summed back onto pixels.
    let wm = WgpuNative::reshaped(wt, &[1, g, oc / g, cg * kh * kw]);
    let wtm = WgpuNative::permute(&wm, &[0, 1, 3, 2]);
    let gm = WgpuNative::reshaped(gt, &[n, g, oc / g, oh * ow]);
    let cols = matmul::contiguous(&wtm, &gm); // [n, g, cg*kh*kw, oh*ow]
    let out = WgpuStorage::new(&gt.device, &input_shape, DType::F32);
    per_output(
        &gt.device,
        "col2im",
        || shaders::COL2IM.shader(&[]),
        &[cols.buffer(), out.buffer()],
        &[
            u(out.numel()),
            u(w),
            u(h),
            u(cg),
            u(kh),
            u(kw),
            u(oh),
            u(ow),
            u(o.stride[0]),
            u(o.stride[1]),
            u(o.dilation[0]),
            u(o.dilation[1]),
            u(o.padding[0]),
            u(o.padding[1]),
            u(c),
        ],
        out.numel(),
    );
    out
}

pub(super) fn conv2d_weight_grad(
    x: &WgpuStorage,
    grad_out: &WgpuStorage,
    weight_shape: [usize; 4],
    o: &Conv2dOptions,
) -> WgpuStorage {
    let (xt, gt) = (native("conv2d_weight_grad", x), native("conv2d_weight_grad", grad_out));
    let [oc, _, kh, kw] = weight_shape;
    let n = xt.shape[0];
    let [oh, ow] = [gt.shape[2], gt.shape[3]];
    let g = o.groups;
    let cols = im2col(xt, kh, kw, oh, ow, o); // [n, g, cg*kh*kw, oh*ow]
    let cols_t = WgpuNative::permute(&cols, &[0, 1, 3, 2]);
    let gm = WgpuNative::reshaped(gt, &[n, g, oc / g, oh * ow]);
    let per_sample = matmul::contiguous(&gm, &cols_t); // [n, g, oc/g, cg*kh*kw]
    let summed = WgpuNative::reduce(ReduceOp::Sum, &per_sample, 0);
    WgpuNative::reshape(&summed, &weight_shape)
}

pub(super) fn avg_pool2d_input_grad(grad_out: &WgpuStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> WgpuStorage {
    let gt = native("avg_pool2d_input_grad", grad_out);
    let [_, _, h, w] = input_shape;
    let [oh, ow] = [gt.shape[2], gt.shape[3]];
    let out = WgpuStorage::new(&gt.device, &input_shape, DType::F32);
    per_output(
        &gt.device,
        "avg_pool2d_input_grad",
        || shaders::AVG_POOL2D_INPUT_GRAD.shader(&[]),
        &[gt.buffer(), out.buffer()],
        &pool_params(out.numel(), [oh, ow], [h, w], o),
        out.numel(),
    );
    out
}

/// `x` as columns for a convolution: `[n, groups, cin/groups * kh * kw, oh * ow]`.
pub(super) fn im2col(x: &WgpuStorage, kh: usize, kw: usize, oh: usize, ow: usize, o: &Conv2dOptions) -> WgpuStorage {
    let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let g = o.groups;
    let cg = c / g;
    let shape = [n, g, cg * kh * kw, oh * ow];
    let out = WgpuStorage::new(&x.device, &shape, DType::F32);
    let params = [
        u(out.numel()),
        u(oh * ow),
        u(cg * kh * kw),
        u(g),
        u(ow),
        u(kh),
        u(kw),
        u(cg),
        u(h),
        u(w),
        u(o.stride[0]),
        u(o.stride[1]),
        u(o.dilation[0]),
        u(o.dilation[1]),
        u(o.padding[0]),
        u(o.padding[1]),
    ];
    let _ = (n, c);
    per_output(&x.device, "im2col", || shaders::IM2COL.shader(&[]), &[x.buffer(), out.buffer()], &params, out.numel());
    out
}

/// The output plane `[oh, ow]` of pooling an `[h, w]` plane.
pub(super) fn pool_plane(h: usize, w: usize, o: &Pool2dOptions) -> [usize; 2] {
    o.output_plane(h, w).expect("the runtime checked the window")
}

/// The parameters the pooling shaders read: `[invocations, ow, oh, h, w,
/// kh, kw, sh, sw, ph, pw]`.
pub(super) fn pool_params(
    invocations: usize,
    [oh, ow]: [usize; 2],
    [h, w]: [usize; 2],
    o: &Pool2dOptions,
) -> [u32; 11] {
    [
        u(invocations),
        u(ow),
        u(oh),
        u(h),
        u(w),
        u(o.kernel[0]),
        u(o.kernel[1]),
        u(o.stride[0]),
        u(o.stride[1]),
        u(o.padding[0]),
        u(o.padding[1]),
    ]
}

/// Output size of a window along one dim, which the runtime has checked.
pub(super) fn window(size: usize, k: usize, stride: usize, pad: usize, dil: usize) -> usize {
    window_output_size(size, k, stride, pad, dil).expect("the runtime checked the window")
}
