//! Naive reference implementations on row-major `f64` vectors: slow, obvious
//! and independent of any backend, so the suite can check every backend
//! against them.

use blaze_runtime::shape::{broadcast_shapes, contiguous_strides, window_output_size};
use blaze_runtime::{Conv2dOptions, Pool2dOptions};

/// Row-major position of multi-index `idx` in `shape`, broadcasting size-1 dims.
pub fn broadcast_offset(idx: &[usize], shape: &[usize]) -> usize {
    let strides = contiguous_strides(shape);
    idx.iter().zip(shape).zip(&strides).map(|((&i, &d), &s)| if d == 1 { 0 } else { i * s }).sum()
}

/// Every multi-index of `shape` in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// `f(a, b)` with NumPy broadcasting; returns the values and the shape.
pub fn binary(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], f: impl Fn(f64, f64) -> f64) -> (Vec<f64>, Vec<usize>) {
    let shape = broadcast_shapes(sa, sb).expect("reference::binary: shapes broadcast");
    let v = indices(&shape).iter().map(|i| f(a[broadcast_offset(i, sa)], b[broadcast_offset(i, sb)])).collect();
    (v, shape.to_vec())
}

/// Reduces `dim` with `f` over the values along it (kept with size 1).
pub fn reduce(x: &[f64], shape: &[usize], dim: usize, f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let mut out_shape = shape.to_vec();
    out_shape[dim] = 1;
    let strides = contiguous_strides(shape);
    indices(&out_shape)
        .iter()
        .map(|i| {
            let base: usize = i.iter().zip(&strides).map(|(a, b)| a * b).sum();
            let vals: Vec<f64> = (0..shape[dim]).map(|j| x[base + j * strides[dim]]).collect();
            f(&vals)
        })
        .collect()
}

/// `[m, k] x [k, n]`.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    out
}

/// Direct convolution of `x: [n, c, h, w]` with `w: [o, c/g, kh, kw]`.
pub fn conv2d(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    bias: Option<&[f64]>,
    o: &Conv2dOptions,
) -> (Vec<f64>, [usize; 4]) {
    let [n, c, h, wd] = xs;
    let [co, cg, kh, kw] = ws;
    let og = co / o.groups;
    let oh = window_output_size(h, kh, o.stride[0], o.padding[0], o.dilation[0]).expect("window fits");
    let ow = window_output_size(wd, kw, o.stride[1], o.padding[1], o.dilation[1]).expect("window fits");
    let mut out = vec![0.0; n * co * oh * ow];
    for s in 0..n {
        for oc in 0..co {
            let g = oc / og;
            for y in 0..oh {
                for xo in 0..ow {
                    let mut acc = bias.map_or(0.0, |b| b[oc]);
                    for ic in 0..cg {
                        for i in 0..kh {
                            for j in 0..kw {
                                let iy = (y * o.stride[0] + i * o.dilation[0]) as isize - o.padding[0] as isize;
                                let ix = (xo * o.stride[1] + j * o.dilation[1]) as isize - o.padding[1] as isize;
                                if iy < 0 || ix < 0 || iy as usize >= h || ix as usize >= wd {
                                    continue;
                                }
                                let xv = x[((s * c + g * cg + ic) * h + iy as usize) * wd + ix as usize];
                                acc += xv * w[((oc * cg + ic) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((s * co + oc) * oh + y) * ow + xo] = acc;
                }
            }
        }
    }
    (out, [n, co, oh, ow])
}

/// Max (with plane indices) or average pooling of `[n, c, h, w]`.
pub fn pool2d(x: &[f64], xs: [usize; 4], o: &Pool2dOptions, max: bool) -> (Vec<f64>, Vec<i64>, [usize; 4]) {
    let [n, c, h, w] = xs;
    // PyTorch's output size: (size + 2 pad - k) / stride + 1, rounded down
    // or, with ceil_mode, up, less a last window starting past the input
    // and its left padding.
    let size = |i: usize, len: usize| {
        let reach = len + 2 * o.padding[i] - o.kernel[i];
        let out = if o.ceil_mode { reach.div_ceil(o.stride[i]) } else { reach / o.stride[i] } + 1;
        if o.ceil_mode && (out - 1) * o.stride[i] >= len + o.padding[i] { out - 1 } else { out }
    };
    let (oh, ow) = (size(0, h), size(1, w));
    let mut out = Vec::new();
    let mut idx = Vec::new();
    for p in 0..n * c {
        for y in 0..oh {
            for xo in 0..ow {
                let mut best = f64::NEG_INFINITY;
                let mut best_i = -1i64;
                let mut sum = 0.0;
                for i in 0..o.kernel[0] {
                    for j in 0..o.kernel[1] {
                        let iy = (y * o.stride[0] + i) as isize - o.padding[0] as isize;
                        let ix = (xo * o.stride[1] + j) as isize - o.padding[1] as isize;
                        if iy < 0 || ix < 0 || iy as usize >= h || ix as usize >= w {
                            continue;
                        }
                        let flat = iy as usize * w + ix as usize;
                        let v = x[p * h * w + flat];
                        sum += v;
                        if best_i < 0 || v > best {
                            best = v;
                            best_i = flat as i64;
                        }
                    }
                }
                // The divisor: the window's part inside the padded input
                // (all of it, but for a window `ceil_mode` adds).
                let inside = |i: usize, at: usize, len: usize| {
                    let start = at * o.stride[i];
                    ((start + o.kernel[i]).min(len + 2 * o.padding[i]) - start) as f64
                };
                out.push(if max { best } else { sum / (inside(0, y, h) * inside(1, xo, w)) });
                idx.push(best_i);
            }
        }
    }
    (out, idx, [n, c, oh, ow])
}
