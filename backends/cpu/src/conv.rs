//! 2-D convolution (im2col + gemm, with the bias folded into the product)
//! and direct max/average pooling, parallel over samples and planes.

use std::ops::Range;

use blaze_runtime::reduction::{Reduction, max};
use blaze_runtime::shape::window_output_size;
use blaze_runtime::{Conv2dOptions, Pool2dOptions};

use crate::gemm_bf16::RoundedBf16;
use crate::matmul::{Product, gemm_raw};
use crate::parallel::{CHUNK, chunks_mut, chunks_mut2, should_fork};
use crate::pool::{self, AnyBits, with_scratch};
use crate::simd::dispatch;
use crate::storage::{Array, Float, Num};

/// What a convolution multiplies: f32 or f64, summed in its own type, or
/// f32 rounded to bf16 and summed in f32 (a convolution under a bf16
/// precision, on the bf16 kernels).
pub(crate) trait ConvOperand: Product<Out: Float> + AnyBits + crate::pool::Pooled {}

impl ConvOperand for f32 {}
impl ConvOperand for f64 {}
impl ConvOperand for RoundedBf16 {}

/// The output positions `o` along one axis whose tap `o * stride + offset`
/// (with `offset = tap * dilation - padding`) falls inside `0..size`.
fn valid_range(out: usize, size: usize, stride: usize, offset: isize) -> Range<usize> {
    // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride)
    let lo = if offset >= 0 { 0 } else { ((-offset) as usize).div_ceil(stride) };
    // o * stride + offset < size  <=>  o < ceil((size - offset) / stride)
    let hi = if offset >= size as isize { 0 } else { ((size as isize - offset) as usize).div_ceil(stride) };
    let lo = lo.min(out);
    lo..hi.min(out).max(lo)
}

/// Unfolds one group of one sample `x: [cg, h, w]` into `cols: [cg * kh * kw, oh * ow]`.
fn im2col<T: Copy + Default>(
    x: &[T],
    cols: &mut [T],
    [cg, h, w]: [usize; 3],
    [kh, kw]: [usize; 2],
    [oh, ow]: [usize; 2],
    o: &Conv2dOptions,
) {
    let [sh, sw] = o.stride;
    let [ph, pw] = o.padding;
    let [dh, dw] = o.dilation;
    for c in 0..cg {
        let plane = &x[c * h * w..(c + 1) * h * w];
        for ki in 0..kh {
            let off_y = (ki * dh) as isize - ph as isize;
            let ys = valid_range(oh, h, sh, off_y);
            for kj in 0..kw {
                let off_x = (kj * dw) as isize - pw as isize;
                let xs = valid_range(ow, w, sw, off_x);
                let row = &mut cols[((c * kh + ki) * kw + kj) * oh * ow..][..oh * ow];
                for oy in 0..oh {
                    let dst = &mut row[oy * ow..(oy + 1) * ow];
                    if !ys.contains(&oy) {
                        dst.fill(T::default());
                        continue;
                    }
                    let iy = (oy * sh) as isize + off_y;
                    let src = &plane[iy as usize * w..(iy as usize + 1) * w];
                    dst[..xs.start].fill(T::default());
                    dst[xs.end..].fill(T::default());
                    if xs.is_empty() {
                        continue;
                    }
                    let x0 = (xs.start * sw) as isize + off_x;
                    if sw == 1 {
                        let len = xs.end - xs.start;
                        dst[xs.clone()].copy_from_slice(&src[x0 as usize..x0 as usize + len]);
                    } else {
                        for (i, ox) in xs.clone().enumerate() {
                            dst[ox] = src[x0 as usize + i * sw];
                        }
                    }
                }
            }
        }
    }
}

/// The adjoint of [`im2col`]: adds `cols: [cg * kh * kw, oh * ow]` back onto
/// the taps they were read from in `x: [cg, h, w]`.
fn col2im<T: Num>(
    cols: &[T],
    x: &mut [T],
    [cg, h, w]: [usize; 3],
    [kh, kw]: [usize; 2],
    [oh, ow]: [usize; 2],
    o: &Conv2dOptions,
) {
    let [sh, sw] = o.stride;
    let [ph, pw] = o.padding;
    let [dh, dw] = o.dilation;
    for c in 0..cg {
        let plane = &mut x[c * h * w..(c + 1) * h * w];
        for ki in 0..kh {
            let off_y = (ki * dh) as isize - ph as isize;
            let ys = valid_range(oh, h, sh, off_y);
            for kj in 0..kw {
                let off_x = (kj * dw) as isize - pw as isize;
                let xs = valid_range(ow, w, sw, off_x);
                if xs.is_empty() {
                    continue;
                }
                let row = &cols[((c * kh + ki) * kw + kj) * oh * ow..][..oh * ow];
                for oy in ys.clone() {
                    let iy = ((oy * sh) as isize + off_y) as usize;
                    let dst = &mut plane[iy * w..(iy + 1) * w];
                    let x0 = ((xs.start * sw) as isize + off_x) as usize;
                    for (i, ox) in xs.clone().enumerate() {
                        dst[x0 + i * sw] += row[oy * ow + ox];
                    }
                }
            }
        }
    }
}

/// Shapes a convolution works with, derived once.
struct ConvGeometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    cg: usize,
    og: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
}

impl ConvGeometry {
    fn new(x: [usize; 4], weight: [usize; 4], opt: &Conv2dOptions) -> Self {
        let [n, c, h, w] = x;
        let [co, cg, kh, kw] = weight;
        let size = |i: usize, k: usize| {
            window_output_size([h, w][i], k, opt.stride[i], opt.padding[i], opt.dilation[i])
                .expect("the runtime checked the window")
        };
        ConvGeometry { n, c, h, w, cg, og: co / opt.groups, kh, kw, oh: size(0, kh), ow: size(1, kw) }
    }
    fn plane(&self) -> usize {
        self.oh * self.ow
    }
    fn kdim(&self) -> usize {
        self.cg * self.kh * self.kw
    }
}

/// The input gradient of a convolution: `W_g^T @ grad` per sample and
/// group, folded back with [`col2im`].
pub(crate) fn conv2d_input_grad<P: ConvOperand>(
    grad: &Array<P>,
    weight: &Array<P>,
    input_shape: [usize; 4],
    opt: &Conv2dOptions,
) -> Array<P::Out> {
    let grad = pool::standard(grad);
    let weight = pool::standard(weight);
    let gs = grad.as_slice().expect("standard layout");
    let ws = weight.as_slice().expect("standard layout");
    let wshape: [usize; 4] = weight.shape().try_into().expect("rank 4");
    let geo = ConvGeometry::new(input_shape, wshape, opt);
    let (plane, kdim, g) = (geo.plane(), geo.kdim(), opt.groups);
    let per_sample = geo.c * geo.h * geo.w;
    let sample = |cols: &mut [P::Out], (s, dx): (usize, &mut [P::Out]), parallel: bool| {
        for gi in 0..g {
            let gout = &gs[(s * g + gi) * geo.og * plane..][..geo.og * plane];
            let wg = &ws[gi * geo.og * kdim..][..geo.og * kdim];
            // cols = wg^T @ gout: wg is og x kdim row-major, read transposed.
            // SAFETY: wg^T is kdim x og (row stride 1, column stride kdim),
            // gout og x plane and cols kdim x plane, all in bounds.
            unsafe {
                gemm_raw(
                    kdim,
                    plane,
                    geo.og,
                    cols.as_mut_ptr(),
                    plane as isize,
                    wg.as_ptr(),
                    1,
                    kdim as isize,
                    gout.as_ptr(),
                    plane as isize,
                    1,
                    false,
                    parallel,
                )
            };
            let dxg = &mut dx[gi * geo.cg * geo.h * geo.w..][..geo.cg * geo.h * geo.w];
            col2im(cols, dxg, [geo.cg, geo.h, geo.w], [geo.kh, geo.kw], [geo.oh, geo.ow], opt);
        }
    };
    pool::filled(&input_shape, <P::Out>::ZERO, |out| {
        for_each_sample(out, per_sample, kdim * plane, geo.n * geo.og * g * plane * kdim, sample);
    })
}

/// The weight gradient of a convolution: the sum over samples of
/// `grad_g @ cols_g^T`.
pub(crate) fn conv2d_weight_grad<P: ConvOperand>(
    x: &Array<P>,
    grad: &Array<P>,
    weight_shape: [usize; 4],
    opt: &Conv2dOptions,
) -> Array<P::Out> {
    let x = pool::standard(x);
    let grad = pool::standard(grad);
    let xs = x.as_slice().expect("standard layout");
    let gs = grad.as_slice().expect("standard layout");
    let xshape: [usize; 4] = x.shape().try_into().expect("rank 4");
    let geo = ConvGeometry::new(xshape, weight_shape, opt);
    let (plane, kdim, g) = (geo.plane(), geo.kdim(), opt.groups);
    let direct = geo.kh == 1 && geo.kw == 1 && opt.stride == [1, 1] && opt.padding == [0, 0];
    // dw += the samples' terms, with `cols` as scratch for im2col.
    let accumulate = |dw: &mut [P::Out], samples: std::ops::Range<usize>, parallel: bool, cols: &mut [P]| {
        for s in samples {
            for gi in 0..g {
                let xg = &xs[(s * geo.c + gi * geo.cg) * geo.h * geo.w..][..geo.cg * geo.h * geo.w];
                let rhs: &[P] = if direct {
                    xg
                } else {
                    im2col(xg, cols, [geo.cg, geo.h, geo.w], [geo.kh, geo.kw], [geo.oh, geo.ow], opt);
                    cols
                };
                let gout = &gs[(s * g + gi) * geo.og * plane..][..geo.og * plane];
                let dwg = &mut dw[gi * geo.og * kdim..][..geo.og * kdim];
                // dwg += gout @ rhs^T, rhs being kdim x plane row-major.
                // SAFETY: gout is og x plane, rhs^T plane x kdim (row stride 1,
                // column stride plane), dwg og x kdim, all in bounds.
                unsafe {
                    gemm_raw(
                        geo.og,
                        kdim,
                        plane,
                        dwg.as_mut_ptr(),
                        kdim as isize,
                        gout.as_ptr(),
                        plane as isize,
                        1,
                        rhs.as_ptr(),
                        1,
                        plane as isize,
                        true,
                        parallel,
                    )
                };
            }
        }
    };
    let scratch = if direct { 0 } else { kdim * plane };
    let wlen: usize = weight_shape.iter().product();
    let threads = rayon::current_num_threads();
    if geo.n > 1 && threads > 1 && geo.n * geo.og * g * plane * kdim >= 1 << 18 {
        // One partial sum per thread, added at the end, so samples run in parallel.
        let per = geo.n.div_ceil(threads);
        let partials = pool::filled(&[threads, wlen], <P::Out>::ZERO, |parts| {
            chunks_mut(parts, wlen, 1, &|t, dw| {
                with_scratch(scratch, |cols| accumulate(dw, t * per..((t + 1) * per).min(geo.n), false, cols));
            });
        });
        let parts = partials.as_slice().expect("a pooled array is contiguous");
        pool::output(&weight_shape, |dw| {
            dw.copy_from_slice(&parts[..wlen]);
            for part in parts[wlen..].chunks(wlen.max(1)) {
                dw.iter_mut().zip(part).for_each(|(x, &y)| *x += y);
            }
        })
    } else {
        pool::filled(&weight_shape, <P::Out>::ZERO, |dw| {
            with_scratch(scratch, |cols| accumulate(dw, 0..geo.n, true, cols))
        })
    }
}

/// Runs `sample(scratch, (index, out_block))` for every sample's block of
/// `out`: in parallel (each worker with its own scratch buffer and serial
/// gemms) when there are several samples and `flops` of work, else in
/// sequence with parallel gemms.
fn for_each_sample<T: Send, S: AnyBits>(
    out: &mut [T],
    per_sample: usize,
    scratch: usize,
    flops: usize,
    sample: impl Fn(&mut [S], (usize, &mut [T]), bool) + Sync,
) {
    let n = out.len() / per_sample.max(1);
    if n > 1 && should_fork(flops, 1 << 18) {
        chunks_mut(out, per_sample, 1, &|i, o| with_scratch(scratch, |cols| sample(cols, (i, o), false)));
    } else {
        with_scratch(scratch, |cols| {
            for job in out.chunks_mut(per_sample.max(1)).enumerate() {
                sample(cols, job, true);
            }
        });
    }
}

/// `x: [n, c, h, w]` convolved with `weight: [o, c / g, kh, kw]` plus `bias`.
pub(crate) fn conv2d<P: ConvOperand>(
    x: &Array<P>,
    weight: &Array<P>,
    bias: Option<&Array<P::Out>>,
    opt: &Conv2dOptions,
) -> Array<P::Out> {
    let x = pool::standard(x);
    let weight = pool::standard(weight);
    let xs = x.as_slice().expect("standard layout");
    let ws = weight.as_slice().expect("standard layout");
    let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (co, cg, kh, kw) = (weight.shape()[0], weight.shape()[1], weight.shape()[2], weight.shape()[3]);
    let g = opt.groups;
    let og = co / g;
    let size = |i: usize, k: usize| {
        window_output_size([h, w][i], k, opt.stride[i], opt.padding[i], opt.dilation[i])
            .expect("the runtime checked the window")
    };
    let (oh, ow) = (size(0, kh), size(1, kw));
    let (plane, kdim) = (oh * ow, cg * kh * kw);
    let bias = bias.map(pool::standard);
    let bias = bias.as_ref().map(|b| b.as_slice().expect("row-major"));
    // A 1x1 kernel with unit stride and no padding reads the input as is.
    let direct = kh == 1 && kw == 1 && opt.stride == [1, 1] && opt.padding == [0, 0];

    let sample = |cols: &mut [P], (s, dst): (usize, &mut [P::Out]), parallel: bool| {
        if let Some(b) = bias {
            for (oc, d) in dst.chunks_mut(plane).enumerate() {
                d.fill(b[oc]);
            }
        }
        for gi in 0..g {
            let xg = &xs[(s * c + gi * cg) * h * w..][..cg * h * w];
            let rhs: &[P] = if direct {
                xg
            } else {
                im2col(xg, cols, [cg, h, w], [kh, kw], [oh, ow], opt);
                cols
            };
            let lhs = &ws[gi * og * kdim..][..og * kdim];
            let d = &mut dst[gi * og * plane..][..og * plane];
            // SAFETY: lhs is og x kdim, rhs kdim x plane and d og x plane,
            // all row-major slices of exactly those sizes.
            unsafe {
                gemm_raw(
                    og,
                    plane,
                    kdim,
                    d.as_mut_ptr(),
                    plane as isize,
                    lhs.as_ptr(),
                    kdim as isize,
                    1,
                    rhs.as_ptr(),
                    plane as isize,
                    1,
                    bias.is_some(),
                    parallel,
                )
            };
        }
    };
    let scratch = if direct { 0 } else { kdim * plane };
    pool::output(&[n, co, oh, ow], |out| for_each_sample(out, co * plane, scratch, n * co * plane * kdim, sample))
}

/// Geometry of a pooling window over one `[h, w]` plane.
struct PoolGeometry {
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    opt: Pool2dOptions,
}

impl PoolGeometry {
    fn new(h: usize, w: usize, opt: &Pool2dOptions) -> Self {
        let [oh, ow] = opt.output_plane(h, w).expect("the runtime checked the window");
        PoolGeometry { h, w, oh, ow, opt: *opt }
    }

    /// The input rows and columns of output `(oy, ox)`'s window, clipped to the plane.
    #[inline]
    fn window(&self, oy: usize, ox: usize) -> (Range<usize>, Range<usize>) {
        let clip = |o: usize, s: usize, p: usize, k: usize, n: usize| {
            let start = (o * s) as isize - p as isize;
            (start.max(0) as usize)..((start + k as isize).min(n as isize).max(0) as usize)
        };
        let [kh, kw] = self.opt.kernel;
        (
            clip(oy, self.opt.stride[0], self.opt.padding[0], kh, self.h),
            clip(ox, self.opt.stride[1], self.opt.padding[1], kw, self.w),
        )
    }
}

/// Runs `plane(p, src, out, idx)` over every `[h, w]` plane, in parallel
/// when there is enough work.
fn for_each_plane<T: Num>(
    xs: &[T],
    planes: usize,
    geo: &PoolGeometry,
    out: &mut [T],
    idx: &mut [i64],
    plane: impl Fn(&[T], &mut [T], &mut [i64]) + Sync,
) {
    let (ins, outs) = (geo.h * geo.w, geo.oh * geo.ow);
    let fork = planes > 1 && should_fork(xs.len(), 1 << 16);
    let src = |p: usize| &xs[p * ins..(p + 1) * ins];
    // Planes are small: hand each task enough of them to be worth a task.
    let per_task = (CHUNK / ins.max(1)).max(1);
    if idx.is_empty() {
        if fork {
            chunks_mut(out, outs, per_task, &|p, o| plane(src(p), o, &mut []));
        } else {
            out.chunks_mut(outs.max(1)).enumerate().for_each(|(p, o)| plane(src(p), o, &mut []));
        }
    } else if fork {
        chunks_mut2(out, outs, idx, outs, per_task, &|p, o, i| plane(src(p), o, i));
    } else {
        for (p, (o, i)) in out.chunks_mut(outs.max(1)).zip(idx.chunks_mut(outs.max(1))).enumerate() {
            plane(src(p), o, i);
        }
    }
}

/// Max pooling; padding never wins (it counts as `-inf`), NaN does.
pub(crate) fn max_pool2d<T: Num>(
    x: &Array<T>,
    opt: &Pool2dOptions,
    with_indices: bool,
) -> (Array<T>, Option<Array<i64>>) {
    let x = pool::standard(x);
    let xs = x.as_slice().expect("standard layout");
    let (n, c) = (x.shape()[0], x.shape()[1]);
    let geo = PoolGeometry::new(x.shape()[2], x.shape()[3], opt);
    // Without padding and rounding down, every window lies inside the plane.
    let unpadded = opt.padding == [0, 0] && !opt.ceil_mode;
    let [kh, kw] = opt.kernel;
    let [sh, sw] = opt.stride;
    let shape = [n, c, geo.oh, geo.ow];
    let mut indices = None;
    let values = pool::output(&shape, |out| {
        let run = |out: &mut [T], idx: &mut [i64]| {
            for_each_plane(xs, n * c, &geo, out, idx, |src, out, idx| {
                if unpadded && kh == 2 && kw == 2 {
                    max_pool_2x2(src, out, idx, &geo, [sh, sw]);
                    return;
                }
                for oy in 0..geo.oh {
                    for ox in 0..geo.ow {
                        // Without padding (or a last window past the plane) the
                        // taps need no clipping; otherwise clip at the borders.
                        let (ys, xr) =
                            if unpadded { (oy * sh..oy * sh + kh, ox * sw..ox * sw + kw) } else { geo.window(oy, ox) };
                        // The runtime keeps padding below half the window, so every
                        // window holds at least one real tap.
                        let mut best_at = ys.start * geo.w + xr.start;
                        let mut best = src[best_at];
                        for y in ys {
                            let row = &src[y * geo.w..][..geo.w];
                            for x in xr.clone() {
                                let v = row[x];
                                if max::Kernel::beats(v, best) {
                                    best = v;
                                    best_at = y * geo.w + x;
                                }
                            }
                        }
                        out[oy * geo.ow + ox] = best;
                        if let Some(slot) = idx.get_mut(oy * geo.ow + ox) {
                            *slot = best_at as i64;
                        }
                    }
                }
            })
        };
        if with_indices {
            indices = Some(pool::output(&shape, |idx| run(out, idx)));
        } else {
            run(out, &mut []);
        }
    });
    (values, indices)
}

/// [`max_pool2d`] of one plane with an unpadded 2x2 window (the common
/// `MaxPool2d<2>`): two row slices and four taps per output, no clipping,
/// branch-free, in the widest vector code the CPU has (for stride 2, each
/// row's taps are read as pairs, which vectorises). Same rule: the first
/// NaN wins, else the first largest tap.
fn max_pool_2x2<T: Num>(src: &[T], out: &mut [T], idx: &mut [i64], geo: &PoolGeometry, [sh, sw]: [usize; 2]) {
    if sw == 2 && crate::maxpool::plane_2x2(src, out, idx, [geo.h, geo.w, geo.oh, geo.ow], sh) {
        return;
    }
    let (w, ow) = (geo.w, geo.ow);
    dispatch(
        #[inline(always)]
        || {
            for oy in 0..geo.oh {
                let y = oy * sh;
                let (r0, r1) = (&src[y * w..][..w], &src[(y + 1) * w..][..w]);
                let o = &mut out[oy * ow..][..ow];
                let at = (y * w) as i64;
                match (sw, idx.is_empty()) {
                    (2, true) => {
                        for ((o, a), b) in o.iter_mut().zip(r0.chunks_exact(2)).zip(r1.chunks_exact(2)) {
                            *o = best_of_4([a[0], a[1], b[0], b[1]], w as i64).0;
                        }
                    }
                    (2, false) => {
                        let i = &mut idx[oy * ow..][..ow];
                        let pairs = r0.chunks_exact(2).zip(r1.chunks_exact(2));
                        for (x, ((o, i), (a, b))) in o.iter_mut().zip(i.iter_mut()).zip(pairs).enumerate() {
                            let (best, off) = best_of_4([a[0], a[1], b[0], b[1]], w as i64);
                            *o = best;
                            *i = at + 2 * x as i64 + off;
                        }
                    }
                    _ => {
                        for ox in 0..ow {
                            let x = ox * sw;
                            let (best, off) = best_of_4([r0[x], r0[x + 1], r1[x], r1[x + 1]], w as i64);
                            o[ox] = best;
                            if let Some(slot) = idx.get_mut(oy * ow + ox) {
                                *slot = at + x as i64 + off;
                            }
                        }
                    }
                }
            }
        },
    );
}

/// The input gradient of [`max_pool2d`]: plane by plane, zeros with each
/// output's gradient added at its maximum, written once while the plane
/// is in cache (windows may overlap, so gradients add).
pub(crate) fn max_pool2d_input_grad<T: Num>(grad: &Array<T>, indices: &Array<i64>, from: [usize; 4]) -> Array<T> {
    let (grad, indices) = (pool::standard(grad), pool::standard(indices));
    let gs = grad.as_slice().expect("standard layout");
    let is = indices.as_slice().expect("standard layout");
    let (ins, outs) = (from[2] * from[3], grad.shape()[2] * grad.shape()[3]);
    pool::output(&from, |dx| {
        let plane = |p: usize, dx: &mut [T]| {
            dx.fill(T::ZERO);
            let range = p * outs..(p + 1) * outs;
            for (&i, &g) in is[range.clone()].iter().zip(&gs[range]) {
                dx[i as usize] += g;
            }
        };
        if ins == 0 {
            return;
        }
        if should_fork(dx.len(), 1 << 16) {
            chunks_mut(dx, ins, (CHUNK / ins).max(1), &|p, d| plane(p, d));
        } else {
            dx.chunks_mut(ins).enumerate().for_each(|(p, d)| plane(p, d));
        }
    })
}

/// The winner of a 2x2 window's taps (top-left, top-right, bottom-left,
/// bottom-right, rows `w` apart) and its offset from the top-left: the
/// first NaN, else the first largest.
#[inline(always)]
fn best_of_4<T: Num>(taps: [T; 4], w: i64) -> (T, i64) {
    let offsets = [0, 1, w, w + 1];
    let (mut best, mut at) = (taps[0], 0);
    for k in 1..4 {
        let v = taps[k];
        // Selects, not branches: the outcome is data-dependent, and a
        // branch on it mispredicts half the time.
        let take = max::Kernel::beats(v, best);
        best = if take { v } else { best };
        at = if take { offsets[k] } else { at };
    }
    (best, at)
}

/// Average pooling; padded zeros count in the divisor (`count_include_pad`).
pub(crate) fn avg_pool2d<T: Num + num_traits::Float>(x: &Array<T>, opt: &Pool2dOptions) -> Array<T> {
    let x = pool::standard(x);
    let xs = x.as_slice().expect("standard layout");
    let (n, c) = (x.shape()[0], x.shape()[1]);
    let geo = PoolGeometry::new(x.shape()[2], x.shape()[3], opt);
    let area = T::from_f64((opt.kernel[0] * opt.kernel[1]) as f64);
    pool::output(&[n, c, geo.oh, geo.ow], |out| {
        for_each_plane(xs, n * c, &geo, out, &mut [], |src, out, _| {
            for oy in 0..geo.oh {
                for ox in 0..geo.ow {
                    let (ys, xr) = geo.window(oy, ox);
                    let mut sum = T::ZERO;
                    for y in ys {
                        for x in xr.clone() {
                            sum += src[y * geo.w + x];
                        }
                    }
                    out[oy * geo.ow + ox] = sum / area;
                }
            }
        });
    })
}

/// The input gradient of [`avg_pool2d`]: each output's gradient spread
/// evenly over its window (padding taps take their share and drop it).
pub(crate) fn avg_pool2d_input_grad<T: Num + num_traits::Float>(
    grad: &Array<T>,
    input_shape: [usize; 4],
    opt: &Pool2dOptions,
) -> Array<T> {
    let grad = pool::standard(grad);
    let gs = grad.as_slice().expect("standard layout");
    let [_, _, h, w] = input_shape;
    let [kh, kw] = opt.kernel;
    let [sh, sw] = opt.stride;
    let [ph, pw] = opt.padding;
    let oh = window_output_size(h, kh, sh, ph, 1).expect("the runtime checked the window");
    let ow = window_output_size(w, kw, sw, pw, 1).expect("the runtime checked the window");
    let area = T::from_f64((kh * kw) as f64);
    pool::filled(&input_shape, T::ZERO, |out| {
        for (p, dx) in out.chunks_mut((h * w).max(1)).enumerate() {
            let g = &gs[p * oh * ow..(p + 1) * oh * ow];
            for oy in 0..oh {
                for ox in 0..ow {
                    let share = g[oy * ow + ox] / area;
                    for i in 0..kh {
                        let y = (oy * sh + i) as isize - ph as isize;
                        if y < 0 || y as usize >= h {
                            continue;
                        }
                        for j in 0..kw {
                            let x = (ox * sw + j) as isize - pw as isize;
                            if x >= 0 && (x as usize) < w {
                                dx[y as usize * w + x as usize] += share;
                            }
                        }
                    }
                }
            }
        }
    })
}
