//! Int8 weights and the arithmetic every int8 kernel shares: how a weight
//! and a row of activations are quantized, and the portable product the
//! vector kernels must reproduce bit for bit.
//!
//! Weights are symmetric per output channel (PyTorch's
//! `per_channel_symmetric`): row `o` of a `[out, in]` matrix is
//! `scale[o] * q[o, ..]` with `q` in `-127..=127`. Activations are
//! asymmetric `u8` (`x = scale * (q - zero_point)`), which is what the
//! VNNI and AMX instructions multiply (`u8 x i8`, four products summed
//! into an `i32` lane): a row after ReLU uses all 256 levels for its
//! positive range. A product row `i` of the input with channel `o` is
//! then `scale_x * scale[o] * (Σ q_x q_w - zero_point * Σ q_w)`, summed
//! exactly in `i32` (at most 255 * 127 * in, which fits for `in` below
//! 66 000) and scaled once.

use std::any::Any;
use std::fmt;
use std::sync::OnceLock;

/// The largest magnitude of an int8 weight: symmetric, so -128 is unused
/// (as in PyTorch and oneDNN).
pub const WEIGHT_MAX: f32 = 127.0;

/// A weight quantized to int8 per output channel (its first dim), with
/// its scales and each channel's sum of values (for the zero-point
/// correction), and a slot where a backend keeps its own layout of the
/// values (packed for its kernels), built once on first use.
pub struct QWeight {
    shape: Vec<usize>,
    values: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<i32>,
    packed: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl QWeight {
    /// Quantizes `values` (row-major, `shape[0]` output channels): each
    /// channel's scale is its largest magnitude over 127, rounded up to
    /// the next f16 value (so that a file holds it in two bytes, exactly,
    /// as GGML's `Q8_0` does, and no value passes 127 levels), each value
    /// rounded to the nearest level (ties to even).
    pub fn quantize(values: &[f32], shape: &[usize]) -> QWeight {
        let rows = shape.first().copied().unwrap_or(1);
        let cols = shape.iter().skip(1).product::<usize>();
        assert!(values.len() == rows * cols, "QWeight::quantize: {} values for the shape {shape:?}", values.len());
        let mut q = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(rows);
        for row in values.chunks(cols.max(1)).take(rows) {
            let max = row.iter().fold(0f32, |m, &v| m.max(v.abs()));
            let scale = if max > 0.0 && max.is_finite() { half_up(max / WEIGHT_MAX) } else { 1.0 };
            q.extend(row.iter().map(|&v| (v / scale).round_ties_even().clamp(-WEIGHT_MAX, WEIGHT_MAX) as i8));
            scales.push(scale);
        }
        Self::new(q, scales, shape.to_vec())
    }

    /// A weight from its parts (as a file stores them): `values` fill
    /// `shape`, one positive finite scale per output channel.
    pub fn from_parts(values: Vec<i8>, scales: Vec<f32>, shape: Vec<usize>) -> Result<QWeight, String> {
        let rows = shape.first().copied().unwrap_or(1);
        if values.len() != shape.iter().product::<usize>() {
            return Err(format!("{} int8 values for the shape {shape:?}", values.len()));
        }
        if scales.len() != rows {
            return Err(format!("{} scales for {rows} output channels", scales.len()));
        }
        if let Some(bad) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(format!("a scale of {bad}: scales are positive and finite"));
        }
        Ok(Self::new(values, scales, shape))
    }

    fn new(values: Vec<i8>, scales: Vec<f32>, shape: Vec<usize>) -> QWeight {
        let cols = shape.iter().skip(1).product::<usize>().max(1);
        let sums = values.chunks(cols).map(|r| r.iter().map(|&v| i32::from(v)).sum()).collect();
        QWeight { shape, values, scales, sums, packed: OnceLock::new() }
    }

    /// The float weight's shape (`[out, in]`, `[out, in / groups, k, k]`).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Output channels: the rows of the product's right operand, transposed.
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Values per output channel: the product's depth.
    pub fn cols(&self) -> usize {
        self.shape.iter().skip(1).product()
    }

    /// The values, row-major.
    pub fn values(&self) -> &[i8] {
        &self.values
    }

    /// One scale per output channel.
    pub fn scales(&self) -> &[f32] {
        &self.scales
    }

    /// Each output channel's sum of values.
    pub fn sums(&self) -> &[i32] {
        &self.sums
    }

    /// Bytes it takes in a file: a byte per value, four per scale.
    pub fn bytes(&self) -> usize {
        self.values.len() + 4 * self.scales.len()
    }

    /// The float weight it stands for: `scale[o] * q[o, ..]`.
    pub fn dequantize(&self) -> Vec<f32> {
        let cols = self.cols().max(1);
        self.values.iter().enumerate().map(|(i, &q)| f32::from(q) * self.scales[i / cols]).collect()
    }

    /// The rows `range` of output channels as a weight of their own.
    pub fn rows_of(&self, range: std::ops::Range<usize>) -> QWeight {
        let cols = self.cols();
        let mut shape = self.shape.clone();
        shape[0] = range.len();
        let values = self.values[range.start * cols..range.end * cols].to_vec();
        Self::new(values, self.scales[range].to_vec(), shape)
    }

    /// Weights stacked along their output channels (each with the same
    /// trailing dims): the inverse of [`QWeight::rows_of`].
    pub fn stack(parts: &[&QWeight]) -> QWeight {
        let mut shape = parts[0].shape.clone();
        shape[0] = parts.iter().map(|p| p.rows()).sum();
        let values = parts.iter().flat_map(|p| p.values.iter().copied()).collect();
        let scales = parts.iter().flat_map(|p| p.scales.iter().copied()).collect();
        Self::new(values, scales, shape)
    }

    /// A backend's own layout of the values (built by `build` the first
    /// time, then shared by every call): packed panels for its kernels.
    /// Panics if another type was stored before, which would be two
    /// backends' kernels sharing a weight.
    pub fn packed<T: Any + Send + Sync>(&self, build: impl FnOnce(&QWeight) -> T) -> &T {
        self.packed
            .get_or_init(|| Box::new(build(self)))
            .downcast_ref()
            .expect("QWeight::packed: one layout per weight (the backend that first used it)")
    }
}

/// `s` rounded up to an f16 value, or `s` itself past f16's range (a
/// weight over 8 million: the file then keeps f32 scales).
fn half_up(s: f32) -> f32 {
    let h = half::f16::from_f32(s);
    let up = if h.to_f32() < s { half::f16::from_bits(h.to_bits() + 1) } else { h };
    if up.is_finite() && up.to_f32() >= s { up.to_f32() } else { s }
}

impl Clone for QWeight {
    /// The values and scales; the packed layout is rebuilt on first use.
    fn clone(&self) -> Self {
        QWeight {
            shape: self.shape.clone(),
            values: self.values.clone(),
            scales: self.scales.clone(),
            sums: self.sums.clone(),
            packed: OnceLock::new(),
        }
    }
}

impl fmt::Debug for QWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QWeight(int8 {:?}, per-channel scales)", self.shape)
    }
}

/// How a layer quantizes its input: each row over its own range at run
/// time, or with one scale and zero point calibrated beforehand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputQuant {
    /// Per row, from the row's minimum and maximum (PyTorch's dynamic
    /// quantization, per token rather than per tensor).
    Dynamic,
    /// Calibrated (`blaze::quant::calibrate`): every row `x = scale *
    /// (q - zero_point)`, values outside the range clamped.
    Static {
        /// The step between levels.
        scale: f32,
        /// The level of 0.
        zero_point: u8,
    },
}

/// The scale and zero point covering `[lo, hi]` with 256 levels, widened
/// to hold 0 (so that zero padding is exact); a degenerate range gets
/// scale 1.
pub fn input_params(lo: f32, hi: f32) -> (f32, u8) {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let scale = (hi - lo) / 255.0;
    if !(scale > 0.0 && scale.is_finite()) {
        return (1.0, 0);
    }
    let zero_point = (-lo / scale).round_ties_even().clamp(0.0, 255.0) as u8;
    (scale, zero_point)
}

/// The scale and zero point of row `x` under `input`.
pub fn row_params(x: &[f32], input: InputQuant) -> (f32, u8) {
    match input {
        InputQuant::Static { scale, zero_point } => (scale, zero_point),
        InputQuant::Dynamic => {
            let (lo, hi) = x.iter().fold((0f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            input_params(lo, hi)
        }
    }
}

/// Quantizes `x` into `out` (as long) with `scale` and `zero_point`:
/// `clamp(round(x / scale) + zero_point, 0, 255)`, rounding ties to even
/// after one multiplication by the reciprocal, as the vector kernels do.
pub fn quantize_row(x: &[f32], scale: f32, zero_point: u8, out: &mut [u8]) {
    let inv = 1.0 / scale;
    let zp = f32::from(zero_point);
    for (o, &v) in out.iter_mut().zip(x) {
        *o = ((v * inv).round_ties_even() + zp).clamp(0.0, 255.0) as u8;
    }
}

/// `y = scale_x * scale_w[o] * (acc - zero_point * sum_w[o])` for one
/// product row: the one rounding every kernel shares.
#[inline(always)]
pub fn dequantize(acc: i32, zero_point: u8, sum: i32, scale: f32) -> f32 {
    (acc - i32::from(zero_point) * sum) as f32 * scale
}

/// `x w^T` for f32 rows `x` (`m x k`, row-major) and `w` (`[n, k]`), its
/// rows quantized as `input` says: the portable kernel, on which the
/// vector kernels are tested. Writes `m x n` values to `out`.
pub fn linear_int8(x: &[f32], m: usize, w: &QWeight, input: InputQuant, out: &mut [f32]) {
    let (k, n) = (w.cols(), w.rows());
    assert!(x.len() == m * k && out.len() == m * n, "linear_int8: {m} x {k} inputs for {:?}", w.shape());
    let mut q = vec![0u8; k];
    for (row, y) in x.chunks_exact(k.max(1)).zip(out.chunks_exact_mut(n.max(1))).take(m) {
        let (scale, zp) = row_params(row, input);
        quantize_row(row, scale, zp, &mut q);
        for (o, y) in y.iter_mut().enumerate() {
            let wr = &w.values[o * k..(o + 1) * k];
            let acc: i32 = q.iter().zip(wr).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum();
            *y = dequantize(acc, zp, w.sums[o], scale * w.scales[o]);
        }
    }
}

/// The shape of an int8 convolution: `[n, c, h, w]` in, the kernel, and
/// stride, padding and dilation (groups are the weights given).
#[derive(Clone, Copy, Debug)]
pub struct ConvShape {
    /// The input's dims.
    pub input: [usize; 4],
    /// The kernel's height and width.
    pub kernel: [usize; 2],
    /// Stride, padding, dilation (its `groups` is unused: one weight per
    /// group says how many).
    pub options: crate::Conv2dOptions,
}

impl ConvShape {
    /// The output's height and width; `None` when the kernel is larger
    /// than the padded input.
    pub fn output(&self) -> Option<[usize; 2]> {
        let ([_, _, h, w], [kh, kw], o) = (self.input, self.kernel, &self.options);
        let span = |size: usize, i: usize, k: usize| (size + 2 * o.padding[i]).checked_sub(o.dilation[i] * (k - 1) + 1);
        Some([span(h, 0, kh)? / o.stride[0] + 1, span(w, 1, kw)? / o.stride[1] + 1])
    }

    /// The input position window `(y, x)`'s tap `(ky, kx)` reads, if inside.
    #[inline(always)]
    pub fn tap(&self, y: usize, x: usize, ky: usize, kx: usize) -> Option<(usize, usize)> {
        let o = &self.options;
        let iy = (y * o.stride[0] + ky * o.dilation[0]).checked_sub(o.padding[0])?;
        let ix = (x * o.stride[1] + kx * o.dilation[1]).checked_sub(o.padding[1])?;
        (iy < self.input[2] && ix < self.input[3]).then_some((iy, ix))
    }
}

/// An int8 convolution of f32 `x` (`shape.input`, row-major) with one
/// weight per group (`[out / groups, c / groups * kh * kw]` as rows),
/// into `out` (`[n, out, oh, ow]`, no bias): each image quantized to `u8`
/// over its own range (or the calibrated one), windows read from the
/// quantized image (padding at the zero point, which stands for 0), the
/// products exact in `i32` and scaled once. The portable reference the
/// backends' kernels give the bits of.
pub fn conv2d_int8(x: &[f32], shape: &ConvShape, weights: &[&QWeight], input: InputQuant, out: &mut [f32]) {
    let [n, c, h, w] = shape.input;
    let [kh, kw] = shape.kernel;
    let [oh, ow] = shape.output().expect("conv2d_int8: the kernel fits the padded input");
    let groups = weights.len();
    let (cg, og) = (c / groups, weights[0].rows());
    let outs = og * groups;
    assert!(x.len() == n * c * h * w && out.len() == n * outs * oh * ow, "conv2d_int8: buffers for {shape:?}");
    let mut q = vec![0u8; c * h * w];
    let mut window = vec![0u8; cg * kh * kw];
    for (image, y) in x.chunks_exact(c * h * w).zip(out.chunks_exact_mut(outs * oh * ow)) {
        let (scale, zp) = row_params(image, input);
        quantize_row(image, scale, zp, &mut q);
        for (g, wg) in weights.iter().enumerate() {
            for (oy, ox) in (0..oh).flat_map(|a| (0..ow).map(move |b| (a, b))) {
                // The window's taps, read once for every output channel.
                for (t, v) in window.iter_mut().enumerate() {
                    let (ci, ky, kx) = (g * cg + t / (kh * kw), t / kw % kh, t % kw);
                    *v = shape.tap(oy, ox, ky, kx).map_or(zp, |(iy, ix)| q[(ci * h + iy) * w + ix]);
                }
                for (o, wr) in wg.values().chunks_exact(cg * kh * kw).enumerate() {
                    let acc: i32 = window.iter().zip(wr).map(|(&v, &wv)| i32::from(v) * i32::from(wv)).sum();
                    let channel = g * og + o;
                    y[(channel * oh + oy) * ow + ox] = dequantize(acc, zp, wg.sums()[o], scale * wg.scales()[o]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_per_channel_and_come_back_within_half_a_step() {
        let w = [0.5, -1.0, 0.25, 0.0, 0.0, 0.0, 3.0, 1.5, -0.75];
        let q = QWeight::quantize(&w, &[3, 3]);
        // 0.5 is 63.5 steps of 1/127, a little under with the scale rounded up.
        assert_eq!(q.values(), &[63, -127, 32, 0, 0, 0, 127, 63, -32]);
        // Each scale is the f16 value at or just above max / 127.
        for (&s, want) in q.scales().iter().zip([1.0 / 127.0, 1.0, 3.0 / 127.0]) {
            assert!(s >= want && s < want * (1.0 + 1.0 / 1024.0), "{s} for {want}");
            assert_eq!(half::f16::from_f32(s).to_f32(), s, "{s} is an f16 value");
        }
        assert_eq!(q.sums(), &[-32, 0, 158]);
        for (a, b) in q.dequantize().iter().zip(&w) {
            assert!((a - b).abs() <= 0.5 * 3.0 / 127.0, "{a} vs {b}");
        }
    }

    #[test]
    fn input_ranges_hold_zero_and_quantize_it_exactly() {
        assert_eq!(input_params(0.0, 2.55), (0.01, 0));
        // 1 / (2 / 255) rounds to just under 127.5 in f32.
        let (scale, zp) = input_params(-1.0, 1.0);
        assert_eq!(zp, 127);
        let mut q = [0u8; 4];
        quantize_row(&[0.0, -1.0, 1.0, 5.0], scale, zp, &mut q);
        assert_eq!(q, [127, 0, 254, 255]);
        assert_eq!(input_params(0.0, 0.0), (1.0, 0));
    }

    #[test]
    fn the_portable_product_is_close_to_the_float_one() {
        let (m, k, n) = (3, 37, 5);
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0).collect();
        let wf: Vec<f32> = (0..n * k).map(|i| ((i * 104729) % 31) as f32 / 15.0 - 1.0).collect();
        let w = QWeight::quantize(&wf, &[n, k]);
        let mut y = vec![0.0; m * n];
        linear_int8(&x, m, &w, InputQuant::Dynamic, &mut y);
        for i in 0..m {
            for o in 0..n {
                let exact: f32 = (0..k).map(|j| x[i * k + j] * wf[o * k + j]).sum();
                assert!((y[i * n + o] - exact).abs() < 0.05, "[{i}, {o}]: {} vs {exact}", y[i * n + o]);
            }
        }
    }
}
