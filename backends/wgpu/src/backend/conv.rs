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
    let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
        let ox = i % ow; let oy = (i / ow) % oh; let plane = i / (ow * oh);\n\
        var best = bitcast<f32>(0xff800000u); var at = 0xffffffffu;\n\
        for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
            for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                let y = i32(oy * pu(7u) + ky) - i32(pu(9u)); let xx = i32(ox * pu(8u) + kx) - i32(pu(10u));\n\
                if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) {\n\
                    let q = u32(y) * w + u32(xx); let v = x[plane * h * w + q];\n\
                    if (at == 0xffffffffu || (!isnan_(best) && (v > best || isnan_(v)))) { best = v; at = q; }\n\
                }\n\
            }\n\
        }\n\
        out[i] = best; idx[i] = at;";
    per_output(
        &t.device,
        "max_pool2d",
        &[("x", "f32", false), ("out", "f32", true), ("idx", "u32", true)],
        body,
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
    let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
        let ox = i % ow; let oy = (i / ow) % oh; let plane = i / (ow * oh);\n\
        var acc = 0.0;\n\
        for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
            for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                let y = i32(oy * pu(7u) + ky) - i32(pu(9u)); let xx = i32(ox * pu(8u) + kx) - i32(pu(10u));\n\
                if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) { acc = acc + x[plane * h * w + u32(y) * w + u32(xx)]; }\n\
            }\n\
        }\n\
        out[i] = acc / f32(pu(5u) * pu(6u));";
    per_output(
        &t.device,
        "avg_pool2d",
        &[("x", "f32", false), ("out", "f32", true)],
        body,
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
    let body = "    let w = pu(1u); let h = pu(2u); let cg = pu(3u); let kh = pu(4u); let kw = pu(5u); let oh = pu(6u); let ow = pu(7u);\n\
        let xx = i % w; let y = (i / w) % h; let ch = (i / (w * h)) % pu(14u); let b = i / (w * h * pu(14u));\n\
        let gi = ch / cg; let ci = ch % cg; let groups = pu(14u) / cg;\n\
        var acc = 0.0;\n\
        for (var ky = 0u; ky < kh; ky = ky + 1u) {\n\
            for (var kx = 0u; kx < kw; kx = kx + 1u) {\n\
                let ty = i32(y) + i32(pu(12u)) - i32(ky * pu(10u)); let tx = i32(xx) + i32(pu(13u)) - i32(kx * pu(11u));\n\
                if (ty >= 0 && tx >= 0 && u32(ty) % pu(8u) == 0u && u32(tx) % pu(9u) == 0u) {\n\
                    let oy = u32(ty) / pu(8u); let ox = u32(tx) / pu(9u);\n\
                    if (oy < oh && ox < ow) {\n\
                        let q = (ci * kh + ky) * kw + kx;\n\
                        acc = acc + cols[(((b * groups + gi) * cg * kh * kw) + q) * oh * ow + oy * ow + ox];\n\
                    }\n\
                }\n\
            }\n\
        }\n\
        out[i] = acc;";
    per_output(
        &gt.device,
        "col2im",
        &[("cols", "f32", false), ("out", "f32", true)],
        body,
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
    let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
        let xx = i % w; let y = (i / w) % h; let plane = i / (w * h);\n\
        var acc = 0.0;\n\
        for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
            for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                let ty = i32(y) + i32(pu(9u)) - i32(ky); let tx = i32(xx) + i32(pu(10u)) - i32(kx);\n\
                if (ty >= 0 && tx >= 0 && u32(ty) % pu(7u) == 0u && u32(tx) % pu(8u) == 0u) {\n\
                    let oy = u32(ty) / pu(7u); let ox = u32(tx) / pu(8u);\n\
                    if (oy < oh && ox < ow) { acc = acc + g[(plane * oh + oy) * ow + ox]; }\n\
                }\n\
            }\n\
        }\n\
        out[i] = acc / f32(pu(5u) * pu(6u));";
    per_output(
        &gt.device,
        "avg_pool2d_input_grad",
        &[("g", "f32", false), ("out", "f32", true)],
        body,
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
    let body = "    let l = i % pu(1u); let q = (i / pu(1u)) % pu(2u); let gi = (i / (pu(1u) * pu(2u))) % pu(3u); let b = i / (pu(1u) * pu(2u) * pu(3u));\n\
        let ow = pu(4u); let kh = pu(5u); let kw = pu(6u); let cg = pu(7u); let h = pu(8u); let w = pu(9u);\n\
        let oy = l / ow; let ox = l % ow;\n\
        let ci = q / (kh * kw); let ky = (q / kw) % kh; let kx = q % kw;\n\
        let y = i32(oy * pu(10u) + ky * pu(12u)) - i32(pu(14u));\n\
        let xx = i32(ox * pu(11u) + kx * pu(13u)) - i32(pu(15u));\n\
        var v = 0.0;\n\
        if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) { v = x[((b * pu(3u) * cg + gi * cg + ci) * h + u32(y)) * w + u32(xx)]; }\n\
        out[i] = v;";
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
    per_output(
        &x.device,
        "im2col",
        &[("x", "f32", false), ("out", "f32", true)],
        body,
        &[x.buffer(), out.buffer()],
        &params,
        out.numel(),
    );
    out
}

/// The output plane `[oh, ow]` of pooling an `[h, w]` plane.
pub(super) fn pool_plane(h: usize, w: usize, o: &Pool2dOptions) -> [usize; 2] {
    [window(h, o.kernel[0], o.stride[0], o.padding[0], 1), window(w, o.kernel[1], o.stride[1], o.padding[1], 1)]
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
