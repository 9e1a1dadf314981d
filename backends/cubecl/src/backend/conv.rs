//! Convolution and pooling, each op autotuned (`tune.rs`) among a
//! one-unit-per-output kernel of this crate (the reference every other
//! candidate must agree with) and the kernels that scale:
//!
//! - forward: im2col and the tuned matmul, or cubek's direct convolution
//!   (channels last, so the operands are permuted around it);
//! - input gradient: the columns' gradient by the tuned matmul, then
//!   summed back into the image (col2im), or the window kernel;
//! - weight gradient: the gradient times the columns by the tuned matmul;
//! - average pooling and its gradient: cubek's pooling (channels last).
//!
//! Max pooling stays on this crate's kernel: cubek's compares with `>`,
//! so a NaN in a window is lost where PyTorch (and Blaze) return it.
//! cubek's implicit-GEMM convolutions (`launch_ref`) and its backward
//! kernels build on tensor-core tiles (CMMA/MMA), which WGSL does not
//! have, so they are not candidates on this runtime.
//!
//! Each gradient kernel sums what reaches its element, so no two units
//! write one place.

use blaze_runtime::shape::window_output_size;
use blaze_runtime::{BinaryOp, Conv2dOptions, DType, Pool2dOptions, Primitives};
use cubecl::prelude::*;
use cubek_convolution::{ConvolutionArgs, DirectTensors, launch_direct};
use cubek_pool::definition::{AvgPoolOptions, PoolMode};

use super::kernels::is_nan;
use super::{CubeNative, CubeStorage, grid, indices, matmul, strides};
use super::tune::Candidate;
use crate::tune::class;

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

/// The output position whose kernel tap `k` reads input position `i`
/// along one axis, when there is one inside `0..size`.
// `#[cube]` translates `%`; it has no `is_multiple_of`.
#[allow(clippy::manual_is_multiple_of)]
#[cube]
fn reached(i: usize, k: usize, stride: usize, pad: usize, dil: usize, size: usize) -> (usize, bool) {
    let t = i + pad;
    let reach = t >= k * dil;
    let s = select(reach, t - k * dil, 0usize);
    let o = s / stride;
    (o, reach && s % stride == 0 && o < size)
}

/// The forward convolution, one unit per output element: the reference
/// the tuned candidates are checked against.
#[cube(launch)]
fn conv_direct_kernel(x: &Tensor<f32>, weight: &Tensor<f32>, out: &mut Tensor<f32>, win: Window, groups: usize) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let (c, h, w) = (x.shape(1), x.shape(2), x.shape(3));
    let (oc, oh, ow) = (out.shape(1), out.shape(2), out.shape(3));
    let cg = c / groups;
    let ox = ABSOLUTE_POS % ow;
    let oy = (ABSOLUTE_POS / ow) % oh;
    let o = (ABSOLUTE_POS / (ow * oh)) % oc;
    let n = ABSOLUTE_POS / (ow * oh * oc);
    let c0 = o / (oc / groups) * cg;
    let mut acc = 0.0f32;
    for cc in 0..cg {
        for ky in 0..win.kh {
            let (iy, in_y) = tap(oy, ky, win.sh, win.ph, win.dh, h);
            for kx in 0..win.kw {
                let (ix, in_x) = tap(ox, kx, win.sw, win.pw, win.dw, w);
                if in_y && in_x {
                    let xv = x[((n * c + c0 + cc) * h + iy) * w + ix];
                    acc += xv * weight[((o * cg + cc) * win.kh + ky) * win.kw + kx];
                }
            }
        }
    }
    out[ABSOLUTE_POS] = acc;
}

/// The weight gradient, one unit per weight: the sum over the batch and
/// the output positions of gradient times the input the tap read.
#[cube(launch)]
fn conv_weight_grad_kernel(x: &Tensor<f32>, g: &Tensor<f32>, dw: &mut Tensor<f32>, win: Window, groups: usize) {
    if ABSOLUTE_POS >= dw.len() {
        terminate!();
    }
    let (batch, c, h, w) = (x.shape(0), x.shape(1), x.shape(2), x.shape(3));
    let (oc, oh, ow) = (g.shape(1), g.shape(2), g.shape(3));
    let cg = c / groups;
    let kx = ABSOLUTE_POS % win.kw;
    let ky = (ABSOLUTE_POS / win.kw) % win.kh;
    let cc = (ABSOLUTE_POS / (win.kw * win.kh)) % cg;
    let o = ABSOLUTE_POS / (win.kw * win.kh * cg);
    let ci = o / (oc / groups) * cg + cc;
    let mut acc = 0.0f32;
    for n in 0..batch {
        for oy in 0..oh {
            let (iy, in_y) = tap(oy, ky, win.sh, win.ph, win.dh, h);
            if in_y {
                for ox in 0..ow {
                    let (ix, in_x) = tap(ox, kx, win.sw, win.pw, win.dw, w);
                    if in_x {
                        acc += g[((n * oc + o) * oh + oy) * ow + ox] * x[((n * c + ci) * h + iy) * w + ix];
                    }
                }
            }
        }
    }
    dw[ABSOLUTE_POS] = acc;
}

/// col2im: each input element sums the columns' gradient
/// `cols[n, g, (c, ky, kx), (oy, ox)]` of every tap that read it.
#[cube(launch)]
fn col2im_kernel(cols: &Tensor<f32>, dx: &mut Tensor<f32>, win: Window, oh: usize, ow: usize) {
    if ABSOLUTE_POS >= dx.len() {
        terminate!();
    }
    let (h, w) = (dx.shape(2), dx.shape(3));
    let ix = ABSOLUTE_POS % w;
    let iy = (ABSOLUTE_POS / w) % h;
    // `(n, g, c)` of the columns is the input's `(n, channel)`: its taps
    // start at the plane's index times the window's size.
    let plane = ABSOLUTE_POS / (w * h) * win.kh * win.kw;
    let mut acc = 0.0f32;
    for ky in 0..win.kh {
        let (oy, hit_y) = reached(iy, ky, win.sh, win.ph, win.dh, oh);
        if hit_y {
            for kx in 0..win.kw {
                let (ox, hit_x) = reached(ix, kx, win.sw, win.pw, win.dw, ow);
                if hit_x {
                    acc += cols[((plane + ky * win.kw + kx) * oh + oy) * ow + ox];
                }
            }
        }
    }
    dx[ABSOLUTE_POS] = acc;
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
        let (oy, hit_y) = reached(iy, ky, win.sh, win.ph, win.dh, oh);
        if hit_y {
            for kx in 0..win.kw {
                let (ox, hit_x) = reached(ix, kx, win.sw, win.pw, win.dw, ow);
                if hit_x {
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
        let (oy, hit_y) = reached(iy, ky, win.sh, win.ph, 1usize, oh);
        if hit_y {
            for kx in 0..win.kw {
                let (ox, hit_x) = reached(ix, kx, win.sw, win.pw, 1usize, ow);
                if hit_x {
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
    o.output_plane(h, w).expect("the runtime checked the window")
}

/// The tuning key of a convolution op: the sizes by shape class, the
/// window exactly (the kernels' work depends on every part of it).
fn conv_key(op: &str, x: &[usize], weight: [usize; 4], o: &Conv2dOptions) -> String {
    let [oc, _, kh, kw] = weight;
    let oc = class(oc);
    let [n, c, h, w] = [x[0], x[1], x[2], x[3]].map(class);
    let [(sh, sw), (ph, pw), (dh, dw)] = [o.stride, o.padding, o.dilation].map(|[a, b]| (a, b));
    format!("{op}:n{n}:c{c}:h{h}:w{w}:oc{oc}:k{kh}x{kw}:s{sh}x{sw}:p{ph}x{pw}:d{dh}x{dw}:g{}", o.groups)
}

fn pool_key(op: &str, x: &[usize], o: &Pool2dOptions) -> String {
    let [n, c, h, w] = [x[0], x[1], x[2], x[3]].map(class);
    let [(kh, kw), (sh, sw), (ph, pw)] = [o.kernel, o.stride, o.padding].map(|[a, b]| (a, b));
    format!("{op}:n{n}:c{c}:h{h}:w{w}:k{kh}x{kw}:s{sh}x{sw}:p{ph}x{pw}")
}

/// Runs `launch` over `n` units, when there are any.
fn launch_over(n: usize, launch: impl FnOnce(CubeCount, CubeDim)) {
    if n > 0 {
        let (count, cube) = grid(n);
        launch(count, cube);
    }
}

/// Whether cubek's convolution and pooling kernels compile on `device`:
/// they index with 64-bit integers, which some adapters lack (a launch
/// that fails to compile leaves its buffers failed, so it is not tried).
fn cubek_runs(device: &crate::CubeDevice) -> Result<(), String> {
    if device.inner.int64 {
        Ok(())
    } else {
        Err("cubek's kernels need SHADER_INT64, which this adapter lacks".to_owned())
    }
}

/// `x` `[n, c, h, w]` channels last, `[n, h, w, c]`: the layout cubek's
/// convolution and pooling take.
fn channels_last(x: &CubeStorage) -> CubeStorage {
    CubeNative::permute(x, &[0, 2, 3, 1])
}

/// Writes `y` `[n, h, w, c]` into `out` `[n, c, h, w]`.
fn channels_first_into(y: &CubeStorage, out: &CubeStorage) {
    let st = strides(&y.shape);
    CubeNative::copy_into(y.view(vec![st[0], st[3], st[1], st[2]], out.shape.clone()), 0, out, 0, &out.shape);
}

/// The columns `[n, g, c/g * kh * kw, oh * ow]` of `x` for a `kh x kw` window.
fn im2col(x: &CubeStorage, [kh, kw]: [usize; 2], [oh, ow]: [usize; 2], o: &Conv2dOptions) -> CubeStorage {
    let [n, c] = [x.shape[0], x.shape[1]];
    let g = o.groups;
    let cols = CubeStorage::empty(&x.device, &[n, g, c / g * kh * kw, oh * ow], DType::F32);
    launch_over(cols.numel(), |count, cube| {
        im2col_kernel::launch(x.client(), count, cube, x.arg(), cols.arg(), conv_window(kh, kw, o), g, oh, ow)
    });
    cols
}

/// How a convolution's products multiply: as the tensors' dtype, or (f32
/// tensors under an f16 precision) rounded to f16 with f32 sums, through
/// the im2col candidate alone.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Products {
    AsStored,
    F16,
}

impl Products {
    /// `out = a · b` (as [`matmul::matmul_into`]) in these products.
    fn multiply_into(self, a: &CubeStorage, b: &CubeStorage, out: &CubeStorage) {
        match self {
            Products::AsStored => matmul::matmul_into(a, b, out),
            Products::F16 => matmul::matmul_f16_into(a, b, out),
        }
    }

    /// `a · b` (as [`matmul::matmul`]) in these products.
    fn multiply(self, a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
        match self {
            Products::AsStored => matmul::matmul(a, b),
            Products::F16 => matmul::matmul_f16_to_f32(a, b),
        }
    }

    /// Runs the tuner over `candidates` for the tensors' dtype; rounded to
    /// f16, the product path `rounded` alone (which refuses only what has
    /// no products, then left to `fallback`).
    fn run(
        self,
        device: &crate::CubeDevice,
        op: &str,
        key: &str,
        out: &CubeStorage,
        candidates: &[Candidate<'_>],
        preferred: usize,
        [rounded, fallback]: [usize; 2],
    ) {
        match self {
            Products::AsStored => super::tune::run(device, op, key, out, candidates, preferred),
            Products::F16 => {
                if (candidates[rounded].1)(out).is_err() {
                    // Nothing to multiply: the other path writes the zeros.
                    (candidates[fallback].1)(out).expect("a convolution without products");
                }
            }
        }
    }
}

pub(super) fn conv2d(
    x: &CubeStorage,
    weight: &CubeStorage,
    bias: Option<&CubeStorage>,
    o: &Conv2dOptions,
    products: Products,
) -> CubeStorage {
    let [n, _, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oc, cg, kh, kw] = [weight.shape[0], weight.shape[1], weight.shape[2], weight.shape[3]];
    let g = o.groups;
    let oh = window(h, kh, o.stride[0], o.padding[0], o.dilation[0]);
    let ow = window(w, kw, o.stride[1], o.padding[1], o.dilation[1]);
    let y = CubeStorage::empty(&x.device, &[n, oc, oh, ow], DType::F32);
    let client = x.client();
    let direct = |out: &CubeStorage| {
        launch_over(out.numel(), |count, cube| {
            conv_direct_kernel::launch(client, count, cube, x.arg(), weight.arg(), out.arg(), conv_window(kh, kw, o), g)
        });
        Ok(())
    };
    let via_im2col = |out: &CubeStorage| {
        if cg * kh * kw == 0 {
            return Err("an empty window".to_owned());
        }
        let cols = im2col(x, [kh, kw], [oh, ow], o);
        let wm = CubeNative::reshaped(weight, &[1, g, oc / g, cg * kh * kw]);
        // [n, g, oc/g, oh*ow] is [n, oc, oh, ow].
        products.multiply_into(&wm, &cols, &CubeNative::reshaped(out, &[n, g, oc / g, oh * ow]));
        Ok(())
    };
    let cubek_direct = |out: &CubeStorage| {
        cubek_runs(&x.device)?;
        if out.numel() == 0 || cg * kh * kw == 0 {
            return Err("an empty convolution".to_owned());
        }
        let y = CubeStorage::empty(&x.device, &[n, oh, ow, oc], DType::F32);
        let tensors = DirectTensors {
            input: channels_last(x).binding(),
            weight: channels_last(weight).binding(),
            bias: None,
            out: y.binding(),
        };
        let args = ConvolutionArgs { stride: o.stride, padding: o.padding, dilation: o.dilation };
        launch_direct::<2>(client, tensors, args, g, f32::elem_type_native()).map_err(|e| format!("{e:?}"))?;
        channels_first_into(&y, out);
        Ok(())
    };
    let candidates: [Candidate<'_>; 3] =
        [("blaze_direct", &direct), ("im2col", &via_im2col), ("cubek_direct", &cubek_direct)];
    let key = conv_key("conv2d", &x.shape, [oc, cg, kh, kw], o);
    products.run(&x.device, "conv2d", &key, &y, &candidates, 1, [1, 0]);
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
    products: Products,
) -> CubeStorage {
    let dx = CubeStorage::empty(&g.device, &input_shape, DType::F32);
    let [oc, cg, kh, kw] = [weight.shape[0], weight.shape[1], weight.shape[2], weight.shape[3]];
    let [n, _, oh, ow] = [g.shape[0], g.shape[1], g.shape[2], g.shape[3]];
    let groups = o.groups;
    let win = || conv_window(kh, kw, o);
    let client = g.client();
    let window = |out: &CubeStorage| {
        launch_over(out.numel(), |count, cube| {
            conv_input_grad_kernel::launch(client, count, cube, g.arg(), weight.arg(), out.arg(), win(), groups)
        });
        Ok(())
    };
    // The columns' gradient `[n, g, taps, p] = Wᵀ[g, taps, oc/g] · dY[n, g, oc/g, p]`, summed into the image.
    let col2im = |out: &CubeStorage| {
        let taps = cg * kh * kw;
        if out.numel() == 0 || oc * oh * ow == 0 {
            return Err("an empty gradient".to_owned());
        }
        let wt = CubeNative::permute(&CubeNative::reshaped(weight, &[groups, oc / groups, taps]), &[0, 2, 1]);
        let wt = CubeNative::reshaped(&wt, &[1, groups, taps, oc / groups]);
        let gy = CubeNative::reshaped(g, &[n, groups, oc / groups, oh * ow]);
        let cols = products.multiply(&wt, &gy);
        launch_over(out.numel(), |count, cube| {
            col2im_kernel::launch(client, count, cube, cols.arg(), out.arg(), win(), oh, ow)
        });
        Ok(())
    };
    let candidates: [Candidate<'_>; 2] = [("blaze_window", &window), ("col2im", &col2im)];
    let key = conv_key("conv2d_input_grad", &input_shape, [oc, cg, kh, kw], o);
    products.run(&g.device, "conv2d_input_grad", &key, &dx, &candidates, 0, [1, 0]);
    dx
}

/// `dW[g] = dY[n, g] · cols[n, g]ᵀ` summed over the batch: one matmul of
/// the gradient `[g, oc/g, n * oh * ow]` with the columns laid out to match.
pub(super) fn conv2d_weight_grad(
    x: &CubeStorage,
    g: &CubeStorage,
    weight_shape: [usize; 4],
    o: &Conv2dOptions,
    products: Products,
) -> CubeStorage {
    let [oc, cg, kh, kw] = weight_shape;
    let groups = o.groups;
    let [n, _, oh, ow] = [g.shape[0], g.shape[1], g.shape[2], g.shape[3]];
    let dw = CubeStorage::empty(&g.device, &weight_shape, DType::F32);
    let client = g.client();
    let direct = |out: &CubeStorage| {
        launch_over(out.numel(), |count, cube| {
            let win = conv_window(kh, kw, o);
            conv_weight_grad_kernel::launch(client, count, cube, x.arg(), g.arg(), out.arg(), win, groups)
        });
        Ok(())
    };
    let via_im2col = |out: &CubeStorage| {
        let p = oh * ow;
        if out.numel() == 0 || n * p == 0 {
            return Err("an empty gradient".to_owned());
        }
        let cols = im2col(x, [kh, kw], [oh, ow], o); // [n, g, taps, p]
        let taps = cg * kh * kw;
        // [g, oc/g, n, p] and [g, n, p, taps], as [g, oc/g, n*p] · [g, n*p, taps].
        let gy = CubeNative::permute(&CubeNative::reshaped(g, &[n, groups, oc / groups, p]), &[1, 2, 0, 3]);
        let gy = CubeNative::reshaped(&gy, &[groups, oc / groups, n * p]);
        let ct = CubeNative::permute(&cols, &[1, 0, 3, 2]);
        let ct = CubeNative::reshaped(&ct, &[groups, n * p, taps]);
        products.multiply_into(&gy, &ct, &CubeNative::reshaped(out, &[groups, oc / groups, taps]));
        Ok(())
    };
    let candidates: [Candidate<'_>; 2] = [("blaze_direct", &direct), ("im2col", &via_im2col)];
    let key = conv_key("conv2d_weight_grad", &x.shape, weight_shape, o);
    products.run(&g.device, "conv2d_weight_grad", &key, &dw, &candidates, 1, [1, 0]);
    dw
}

pub(super) fn max_pool2d(x: &CubeStorage, o: &Pool2dOptions, with_indices: bool) -> (CubeStorage, Option<CubeStorage>) {
    let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let shape = [n, c, oh, ow];
    let out = CubeStorage::empty(&x.device, &shape, DType::F32);
    let idx = CubeStorage::empty(&x.device, &shape, DType::Bool);
    launch_over(out.numel(), |count, cube| {
        max_pool_kernel::launch(x.client(), count, cube, x.arg(), out.arg(), idx.arg(), pool_window(o))
    });
    (out, with_indices.then(|| indices(idx)))
}

/// cubek's average pooling over `[n, h, w, c]`, the padding counted as
/// this backend counts it.
fn cubek_avg(o: &Pool2dOptions) -> PoolMode<2> {
    PoolMode::Avg(AvgPoolOptions::new(o.kernel, o.stride, o.padding, false, true))
}

pub(super) fn avg_pool2d(x: &CubeStorage, o: &Pool2dOptions) -> CubeStorage {
    let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [oh, ow] = pool_plane(h, w, o);
    let y = CubeStorage::empty(&x.device, &[n, c, oh, ow], DType::F32);
    let client = x.client();
    let window = |out: &CubeStorage| {
        launch_over(out.numel(), |count, cube| {
            avg_pool_kernel::launch(client, count, cube, x.arg(), out.arg(), pool_window(o))
        });
        Ok(())
    };
    let cubek = |out: &CubeStorage| {
        cubek_runs(&x.device)?;
        if out.numel() == 0 {
            return Err("an empty pooling".to_owned());
        }
        let yl = CubeStorage::empty(&x.device, &[n, oh, ow, c], DType::F32);
        let dtype = f32::elem_type_native();
        cubek_pool::pool2d(client, channels_last(x).binding(), yl.binding(), cubek_avg(o), dtype)
            .map_err(|e| e.to_string())?;
        channels_first_into(&yl, out);
        Ok(())
    };
    let candidates: [Candidate<'_>; 2] = [("blaze_window", &window), ("cubek_pool", &cubek)];
    let key = pool_key("avg_pool2d", &x.shape, o);
    super::tune::run(&x.device, "avg_pool2d", &key, &y, &candidates, 0);
    y
}

pub(super) fn avg_pool2d_input_grad(g: &CubeStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> CubeStorage {
    let dx = CubeStorage::empty(&g.device, &input_shape, DType::F32);
    let [n, c, h, w] = input_shape;
    let client = g.client();
    let window = |out: &CubeStorage| {
        launch_over(out.numel(), |count, cube| {
            avg_pool_grad_kernel::launch(client, count, cube, g.arg(), out.arg(), pool_window(o))
        });
        Ok(())
    };
    let cubek = |out: &CubeStorage| {
        cubek_runs(&g.device)?;
        if out.numel() == 0 || g.numel() == 0 {
            return Err("an empty gradient".to_owned());
        }
        let dl = CubeStorage::empty(&g.device, &[n, h, w, c], DType::F32);
        let dtype = f32::elem_type_native();
        // The input is read for its shape only: the gradient's stands in.
        cubek_pool::pool2d_backward(
            client,
            dl.binding(),
            channels_last(g).binding(),
            dl.binding(),
            cubek_avg(o),
            dtype,
        )
        .map_err(|e| e.to_string())?;
        channels_first_into(&dl, out);
        Ok(())
    };
    let candidates: [Candidate<'_>; 2] = [("blaze_window", &window), ("cubek_pool", &cubek)];
    let key = pool_key("avg_pool2d_input_grad", &input_shape, o);
    super::tune::run(&g.device, "avg_pool2d_input_grad", &key, &dx, &candidates, 0);
    dx
}

#[cfg(test)]
mod tests {
    //! Every candidate of every tuned convolution and pooling op, run on
    //! its own and compared with the CPU backend, over windows with
    //! stride, padding, dilation and groups.

    use blaze_cpu::Cpu;
    use blaze_runtime::{Conv2dOptions, Pool2dOptions, Primitives, TensorData};

    use crate::backend::testing::{check, data, device};
    use super::super::tune::forcing;
    use crate::{CubeDevice, CubeNative};

    /// Whether candidate `name` may refuse on `dev`: cubek's convolution
    /// and pooling where shaders lack 64-bit integers.
    fn may_refuse(dev: &CubeDevice, name: &str) -> bool {
        name.starts_with("cubek") && !dev.inner.int64
    }

    /// `[n, c, h, w]`, `[oc, kh, kw]` and the options.
    fn convs() -> Vec<([usize; 4], [usize; 3], Conv2dOptions)> {
        let o = |stride, padding, dilation, groups| Conv2dOptions { stride, padding, dilation, groups };
        vec![
            ([2, 3, 9, 8], [4, 3, 3], o([1, 1], [1, 1], [1, 1], 1)),
            ([1, 4, 11, 10], [6, 3, 2], o([2, 1], [0, 1], [1, 2], 2)),
            ([3, 6, 7, 7], [6, 1, 1], o([1, 1], [0, 0], [1, 1], 6)),
            ([2, 2, 5, 6], [3, 5, 5], o([2, 2], [2, 2], [1, 1], 1)),
            ([1, 8, 16, 16], [16, 3, 3], o([1, 1], [1, 1], [1, 1], 1)),
        ]
    }

    #[test]
    fn every_convolution_candidate_agrees_with_the_cpu() {
        let Some(dev) = device() else { return };
        let cpu = Default::default();
        for (i, ([n, c, h, w], [oc, kh, kw], o)) in convs().into_iter().enumerate() {
            let seed = i as u64 * 3;
            let (xd, wd) = (data(&[n, c, h, w], seed), data(&[oc, c / o.groups, kh, kw], seed + 1));
            let bd = data(&[oc], seed + 2);
            let (x, wt, b) =
                (Cpu::from_data(xd.clone(), &cpu), Cpu::from_data(wd.clone(), &cpu), Cpu::from_data(bd.clone(), &cpu));
            let y = Cpu::conv2d(&x, &wt, Some(&b), &o);
            let gd = data(Cpu::shape(&y), seed + 3);
            let g = Cpu::from_data(gd.clone(), &cpu);
            let want = [
                Cpu::to_data(&y),
                Cpu::to_data(&Cpu::conv2d_input_grad(&g, &wt, [n, c, h, w], &o)),
                Cpu::to_data(&Cpu::conv2d_weight_grad(&x, &g, [oc, c / o.groups, kh, kw], &o)),
            ];
            let up = |d: &TensorData| CubeNative::from_data(d.clone(), &dev);
            let (x, wt, b, g) = (up(&xd), up(&wd), up(&bd), up(&gd));
            for name in ["blaze_direct", "im2col", "cubek_direct"] {
                let got = forcing("conv2d", name, || CubeNative::to_data(&CubeNative::conv2d(&x, &wt, Some(&b), &o)));
                check(&format!("conv2d #{i}"), name, got, &want[0], may_refuse(&dev, name));
            }
            for name in ["blaze_window", "col2im"] {
                let got = forcing("conv2d_input_grad", name, || {
                    CubeNative::to_data(&CubeNative::conv2d_input_grad(&g, &wt, [n, c, h, w], &o))
                });
                check(&format!("conv2d_input_grad #{i}"), name, got, &want[1], may_refuse(&dev, name));
            }
            for name in ["blaze_direct", "im2col"] {
                let got = forcing("conv2d_weight_grad", name, || {
                    CubeNative::to_data(&CubeNative::conv2d_weight_grad(&x, &g, [oc, c / o.groups, kh, kw], &o))
                });
                check(&format!("conv2d_weight_grad #{i}"), name, got, &want[2], may_refuse(&dev, name));
            }
        }
    }

    #[test]
    fn every_average_pooling_candidate_agrees_with_the_cpu() {
        let Some(dev) = device() else { return };
        let cpu = Default::default();
        let pools = [
            ([2, 3, 8, 8], Pool2dOptions::new(2)),
            ([1, 5, 9, 7], Pool2dOptions { kernel: [3, 2], stride: [2, 1], padding: [1, 1], ceil_mode: false }),
            ([2, 16, 6, 6], Pool2dOptions { kernel: [3, 3], stride: [1, 1], padding: [1, 0], ceil_mode: false }),
        ];
        for (i, (shape, o)) in pools.into_iter().enumerate() {
            let xd = data(&shape, 40 + i as u64);
            let x = Cpu::from_data(xd.clone(), &cpu);
            let y = Cpu::avg_pool2d(&x, &o);
            let gd = data(Cpu::shape(&y), 50 + i as u64);
            let want = [
                Cpu::to_data(&y),
                Cpu::to_data(&Cpu::avg_pool2d_input_grad(&Cpu::from_data(gd.clone(), &cpu), shape, &o)),
            ];
            let (x, g) = (CubeNative::from_data(xd, &dev), CubeNative::from_data(gd, &dev));
            for name in ["blaze_window", "cubek_pool"] {
                let got = forcing("avg_pool2d", name, || CubeNative::to_data(&CubeNative::avg_pool2d(&x, &o)));
                check(&format!("avg_pool2d #{i}"), name, got, &want[0], may_refuse(&dev, name));
                let got = forcing("avg_pool2d_input_grad", name, || {
                    CubeNative::to_data(&CubeNative::avg_pool2d_input_grad(&g, shape, &o))
                });
                check(&format!("avg_pool2d_input_grad #{i}"), name, got, &want[1], may_refuse(&dev, name));
            }
        }
    }
}
