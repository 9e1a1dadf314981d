//! Convolution and pooling: the forward convolution as im2col and the
//! tuned matmul, the rest as window kernels with one unit per output
//! element (each gradient sums what reaches its element, so no two units
//! write one place).

use blaze_runtime::shape::window_output_size;
use blaze_runtime::{BinaryOp, Conv2dOptions, DType, Pool2dOptions, Primitives};
use cubecl::prelude::*;

use super::kernels::is_nan;
use super::{CubeNative, CubeStorage, grid, indices, matmul};

/// A window's geometry, as the kernels read it.
#[derive(CubeType, CubeLaunch, Clone, Copy)]
pub struct Window {
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    dh: usize,
    dw: usize,
}

/// The input position of kernel tap `k` for output position `o` along
/// one axis, when it falls inside `0..size`.
#[cube]
fn tap(o: usize, k: usize, stride: usize, pad: usize, dil: usize, size: usize) -> (usize, bool) {
    let at = o * stride + k * dil;
    let inside = at >= pad && at - pad < size;
    (select(inside, at - pad, 0usize), inside)
}

/// The columns of im2col: `cols[n, g, (c, ky, kx), (oy, ox)]`, the input
/// value each tap of each output position reads (0 in the padding).
#[cube(launch)]
fn im2col_kernel(x: &Tensor<f32>, cols: &mut Tensor<f32>, win: Window, groups: usize, oh: usize, ow: usize) {
    if ABSOLUTE_POS >= cols.len() {
        terminate!();
    }
    let (c, h, w) = (x.shape(1), x.shape(2), x.shape(3));
    let cg = c / groups;
    let positions = oh * ow;
    let taps = cg * win.kh * win.kw;
    let p = ABSOLUTE_POS % positions;
    let t = (ABSOLUTE_POS / positions) % taps;
    let g = (ABSOLUTE_POS / (positions * taps)) % groups;
    let n = ABSOLUTE_POS / (positions * taps * groups);
    let (oy, ox) = (p / ow, p % ow);
    let kx = t % win.kw;
    let ky = (t / win.kw) % win.kh;
    let ci = g * cg + t / (win.kw * win.kh);
    let (iy, in_y) = tap(oy, ky, win.sh, win.ph, win.dh, h);
    let (ix, in_x) = tap(ox, kx, win.sw, win.pw, win.dw, w);
    let v = x[((n * c + ci) * h + iy) * w + ix];
    cols[ABSOLUTE_POS] = select(in_y && in_x, v, 0.0);
}

/// The gradient of the input: each element sums, over the output
/// channels of its group and the taps that read it, gradient times weight.
// `#[cube]` translates `%`; it has no `is_multiple_of`.
#[allow(clippy::manual_is_multiple_of)]
#[cube(launch)]
fn conv_input_grad_kernel(g: &Tensor<f32>, weight: &Tensor<f32>, dx: &mut Tensor<f32>, win: Window, groups: usize) {
    if ABSOLUTE_POS >= dx.len() {
        terminate!();
    }
    let (c, h, w) = (dx.shape(1), dx.shape(2), dx.shape(3));
    let (oc, oh, ow) = (g.shape(1), g.shape(2), g.shape(3));
    let cg = c / groups;
    let ocg = oc / groups;
    let ix = ABSOLUTE_POS % w;
    let iy = (ABSOLUTE_POS / w) % h;
    let ci = (ABSOLUTE_POS / (w * h)) % c;
    let n = ABSOLUTE_POS / (w * h * c);
    let group = ci / cg;
    let cc = ci % cg;
    let mut acc = 0.0f32;
    for ky in 0..win.kh {
        let ty = iy + win.ph;
        let reach_y = ty >= ky * win.dh;
        let sy = select(reach_y, ty - ky * win.dh, 0usize);
        let oy = sy / win.sh;
        if reach_y && sy % win.sh == 0 && oy < oh {
            for kx in 0..win.kw {
                let tx = ix + win.pw;
                let reach_x = tx >= kx * win.dw;
                let sx = select(reach_x, tx - kx * win.dw, 0usize);
                let ox = sx / win.sw;
                if reach_x && sx % win.sw == 0 && ox < ow {
                    for j in 0..ocg {
                        let o = group * ocg + j;
                        let gv = g[((n * oc + o) * oh + oy) * ow + ox];
                        let wv = weight[((o * cg + cc) * win.kh + ky) * win.kw + kx];
                        acc += gv * wv;
                    }
                }
            }
        }
    }
    dx[ABSOLUTE_POS] = acc;
}

/// Max pooling: the largest value of each window (NaN wins) and its
/// index in the input's plane.
#[cube(launch)]
fn max_pool_kernel(x: &Tensor<f32>, out: &mut Tensor<f32>, idx: &mut Tensor<u32>, win: Window) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let (h, w) = (x.shape(2), x.shape(3));
    let (oh, ow) = (out.shape(2), out.shape(3));
    let ox = ABSOLUTE_POS % ow;
    let oy = (ABSOLUTE_POS / ow) % oh;
    let plane = ABSOLUTE_POS / (ow * oh);
    let mut best = f32::reinterpret(0xff80_0000u32);
    let mut at = 0xffff_ffffu32;
    for ky in 0..win.kh {
        let (iy, in_y) = tap(oy, ky, win.sh, win.ph, 1usize, h);
        for kx in 0..win.kw {
            let (ix, in_x) = tap(ox, kx, win.sw, win.pw, 1usize, w);
            if in_y && in_x {
                let q = iy * w + ix;
                let v = x[plane * h * w + q];
                if at == 0xffff_ffffu32 || (!is_nan(best) && (v > best || is_nan(v))) {
                    best = v;
                    at = q as u32;
                }
            }
        }
    }
    out[ABSOLUTE_POS] = best;
    idx[ABSOLUTE_POS] = at;
}

/// Average pooling, the padding counted in the average.
#[cube(launch)]
fn avg_pool_kernel(x: &Tensor<f32>, out: &mut Tensor<f32>, win: Window) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let (h, w) = (x.shape(2), x.shape(3));
    let (oh, ow) = (out.shape(2), out.shape(3));
    let ox = ABSOLUTE_POS % ow;
    let oy = (ABSOLUTE_POS / ow) % oh;
    let plane = ABSOLUTE_POS / (ow * oh);
    let mut acc = 0.0f32;
    for ky in 0..win.kh {
        let (iy, in_y) = tap(oy, ky, win.sh, win.ph, 1usize, h);
        for kx in 0..win.kw {
            let (ix, in_x) = tap(ox, kx, win.sw, win.pw, 1usize, w);
            if in_y && in_x {
                acc += x[plane * h * w + iy * w + ix];
            }
        }
    }
    out[ABSOLUTE_POS] = acc / f32::cast_from(win.kh * win.kw);
}

/// The gradient of average pooling: each input element sums the
/// gradients of the windows that cover it, over the window's size.
// `#[cube]` translates `%`; it has no `is_multiple_of`.
#[allow(clippy::manual_is_multiple_of)]
#[cube(launch)]
fn avg_pool_grad_kernel(g: &Tensor<f32>, dx: &mut Tensor<f32>, win: Window) {
    if ABSOLUTE_POS >= dx.len() {
        terminate!();
    }
    let (h, w) = (dx.shape(2), dx.shape(3));
    let (oh, ow) = (g.shape(2), g.shape(3));
    let ix = ABSOLUTE_POS % w;
    let iy = (ABSOLUTE_POS / w) % h;
    let plane = ABSOLUTE_POS / (w * h);
    let mut acc = 0.0f32;
    for ky in 0..win.kh {
        let ty = iy + win.ph;
        let reach_y = ty >= ky;
        let sy = select(reach_y, ty - ky, 0usize);
        let oy = sy / win.sh;
        if reach_y && sy % win.sh == 0 && oy < oh {
            for kx in 0..win.kw {
                let tx = ix + win.pw;
                let reach_x = tx >= kx;
                let sx = select(reach_x, tx - kx, 0usize);
                let ox = sx / win.sw;
                if reach_x && sx % win.sw == 0 && ox < ow {
                    acc += g[(plane * oh + oy) * ow + ox];
                }
            }
        }
    }
    dx[ABSOLUTE_POS] = acc / f32::cast_from(win.kh * win.kw);
}

fn conv_window(kh: usize, kw: usize, o: &Conv2dOptions) -> WindowLaunch {
    WindowLaunch::new(kh, kw, o.stride[0], o.stride[1], o.padding[0], o.padding[1], o.dilation[0], o.dilation[1])
}

fn pool_window(o: &Pool2dOptions) -> WindowLaunch {
    WindowLaunch::new(o.kernel[0], o.kernel[1], o.stride[0], o.stride[1], o.padding[0], o.padding[1], 1, 1)
}

fn window(size: usize, k: usize, stride: usize, pad: usize, dil: usize) -> usize {
    window_output_size(size, k, stride, pad, dil).expect("the runtime checked the window")
}

fn pool_plane(h: usize, w: usize, o: &Pool2dOptions) -> [usize; 2] {
    [window(h, o.kernel[0], o.stride[0], o.padding[0], 1), window(w, o.kernel[1], o.stride[1], o.padding[1], 1)]
}

/// The columns `[n, g, c/g * kh * kw, oh * ow]` of `x` for a `kh x kw` window.
fn im2col(x: &CubeStorage, [kh, kw]: [usize; 2], [oh, ow]: [usize; 2], o: &Conv2dOptions) -> CubeStorage {
    let [n, c] = [x.shape[0], x.shape[1]];
    let g = o.groups;
    let cols = CubeStorage::empty(&x.device, &[n, g, c / g * kh * kw, oh * ow], DType::F32);
    let (count, cube) = grid(cols.numel());
    im2col_kernel::launch(x.client(), count, cube, x.arg(), cols.arg(), conv_window(kh, kw, o), g, oh, ow);
    cols
}

pub(super) fn conv2d(
    x: &CubeStorage,
    weight: &CubeStorage,
    bias: Option<&CubeStorage>,
    o: &Conv2dOptions,
) -> CubeStorage {
    let [n, _, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oc, cg, kh, kw] = [weight.shape[0], weight.shape[1], weight.shape[2], weight.shape[3]];
    let g = o.groups;
    let oh = window(h, kh, o.stride[0], o.padding[0], o.dilation[0]);
    let ow = window(w, kw, o.stride[1], o.padding[1], o.dilation[1]);
    let cols = im2col(x, [kh, kw], [oh, ow], o);
    let wm = CubeNative::reshaped(weight, &[1, g, oc / g, cg * kh * kw]);
    // [n, g, oc/g, oh*ow] is [n, oc, oh, ow].
    let y = matmul::matmul(&wm, &cols);
    let y = CubeNative::reshaped(&y, &[n, oc, oh, ow]);
    match bias {
        Some(b) => CubeNative::binary(BinaryOp::Add, &y, &CubeNative::reshape(b, &[1, oc, 1, 1])),
        None => y,
    }
}

pub(super) fn conv2d_input_grad(
    g: &CubeStorage,
    weight: &CubeStorage,
    input_shape: [usize; 4],
    o: &Conv2dOptions,
) -> CubeStorage {
    let dx = CubeStorage::empty(&g.device, &input_shape, DType::F32);
    let n = dx.numel();
    if n > 0 {
        let (kh, kw) = (weight.shape[2], weight.shape[3]);
        let (count, cube) = grid(n);
        let win = conv_window(kh, kw, o);
        conv_input_grad_kernel::launch(g.client(), count, cube, g.arg(), weight.arg(), dx.arg(), win, o.groups);
    }
    dx
}

/// `dW[g] = dY[n, g] · cols[n, g]ᵀ` summed over the batch: one matmul of
/// the gradient `[g, oc/g, n * oh * ow]` with the columns laid out to match.
pub(super) fn conv2d_weight_grad(
    x: &CubeStorage,
    g: &CubeStorage,
    weight_shape: [usize; 4],
    o: &Conv2dOptions,
) -> CubeStorage {
    let [oc, cg, kh, kw] = weight_shape;
    let groups = o.groups;
    let [n, _, oh, ow] = [g.shape[0], g.shape[1], g.shape[2], g.shape[3]];
    let cols = im2col(x, [kh, kw], [oh, ow], o); // [n, g, taps, p]
    let taps = cg * kh * kw;
    let p = oh * ow;
    // [g, oc/g, n, p] and [g, n, p, taps], as [g, oc/g, n*p] · [g, n*p, taps].
    let gy = CubeNative::permute(&CubeNative::reshaped(g, &[n, groups, oc / groups, p]), &[1, 2, 0, 3]);
    let gy = CubeNative::reshaped(&gy, &[groups, oc / groups, n * p]);
    let ct = CubeNative::permute(&cols, &[1, 0, 3, 2]);
    let ct = CubeNative::reshaped(&ct, &[groups, n * p, taps]);
    let dw = matmul::matmul(&gy, &ct);
    CubeNative::reshaped(&dw, &weight_shape)
}

pub(super) fn max_pool2d(x: &CubeStorage, o: &Pool2dOptions, with_indices: bool) -> (CubeStorage, Option<CubeStorage>) {
    let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let shape = [n, c, oh, ow];
    let out = CubeStorage::empty(&x.device, &shape, DType::F32);
    let idx = CubeStorage::empty(&x.device, &shape, DType::Bool);
    if out.numel() > 0 {
        let (count, cube) = grid(out.numel());
        max_pool_kernel::launch(x.client(), count, cube, x.arg(), out.arg(), idx.arg(), pool_window(o));
    }
    (out, with_indices.then(|| indices(idx)))
}

pub(super) fn avg_pool2d(x: &CubeStorage, o: &Pool2dOptions) -> CubeStorage {
    let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let out = CubeStorage::empty(&x.device, &[n, c, oh, ow], DType::F32);
    if out.numel() > 0 {
        let (count, cube) = grid(out.numel());
        avg_pool_kernel::launch(x.client(), count, cube, x.arg(), out.arg(), pool_window(o));
    }
    out
}

pub(super) fn avg_pool2d_input_grad(g: &CubeStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> CubeStorage {
    let dx = CubeStorage::empty(&g.device, &input_shape, DType::F32);
    if dx.numel() > 0 {
        let (count, cube) = grid(dx.numel());
        avg_pool_grad_kernel::launch(g.client(), count, cube, g.arg(), dx.arg(), pool_window(o));
    }
    dx
}
