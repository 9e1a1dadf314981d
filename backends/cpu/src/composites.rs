//! The CPU's composite ops (`Composites`): where it does better than the
//! runtime's compositions of primitives, one pass or one kernel (fused
//! bias and activation, attention, softmax and norms, Adam, products under
//! a 16-bit precision, int8 products and convolutions).

use super::*;

/// The f32 operands of a product under a 16-bit precision, rounded in
/// one pass each and kept in their layout (a transposed weight stays a
/// view).
enum Rounded<const N: usize> {
    /// To bf16, for the bf16 kernels (f32 sums stored as f32).
    Bf16([Array<gemm_bf16::RoundedBf16>; N]),
    /// Rounded values kept in f32, for the f32 kernels: f16, or bf16 on a
    /// CPU without bf16 kernels. The products are the same (a product of
    /// two 16-bit floats is exact in f32).
    F32([Array<f32>; N]),
}

/// `operands` rounded to `dtype` (bf16 or f16), as [`Rounded`].
fn rounded_operands<const N: usize>(op: &str, operands: &[&CpuStorage; N], dtype: DType) -> Rounded<N> {
    let arrays = operands.map(|s| match s {
        CpuStorage::F32(x) => x,
        other => panic!("{op}: rounds f32 operands, not {}", other.dtype()),
    });
    match dtype {
        DType::BF16 if gemm_bf16::bf16_kernel_runs_here() => {
            Rounded::Bf16(arrays.map(|a| map_keeping_layout(a, CHEAP_OP_MIN, gemm_bf16::RoundedBf16::of)))
        }
        DType::BF16 => Rounded::F32(
            arrays.map(|a| map_keeping_layout(a, CHEAP_OP_MIN, |x| blaze_runtime::bf16::from_f32(x).to_f32())),
        ),
        DType::F16 => Rounded::F32(arrays.map(|a| map_keeping_layout(a, CHEAP_OP_MIN, elementwise::f16_rounded))),
        other => panic!("{op}: operands round to bf16 or f16, not {other}"),
    }
}

impl Composites for Cpu {
    fn conv2d_int8(
        x: &CpuStorage,
        weights: &[&blaze_runtime::int8::QWeight],
        shape: &blaze_runtime::int8::ConvShape,
        input: blaze_runtime::int8::InputQuant,
    ) -> CpuStorage {
        let (CpuStorage::F32(a), true) = (x, x.shape() == shape.input) else {
            return blaze_runtime::backend::composed_conv2d_int8::<Self>(x, weights, shape, input);
        };
        let [oh, ow] = shape.output().expect("conv2d_int8: the kernel fits the padded input");
        let outs = weights.len() * weights[0].rows();
        let a = pool::standard(a);
        let images = a.as_slice().expect("a standard-layout array is contiguous");
        CpuStorage::F32(pool::output(&[shape.input[0], outs, oh, ow], |out| {
            gemm_int8::conv2d_int8(images, shape, weights, input, out)
        }))
    }

    fn linear_int8(
        x: &CpuStorage,
        w: &blaze_runtime::int8::QWeight,
        input: blaze_runtime::int8::InputQuant,
    ) -> CpuStorage {
        let (CpuStorage::F32(a), &[m, k]) = (x, x.shape()) else {
            return blaze_runtime::backend::composed_linear_int8::<Self>(x, w, input);
        };
        assert!(k == w.cols(), "linear_int8: expects f32 rows [m, {}], got {:?}", w.cols(), x.shape());
        let a = pool::standard(a);
        let rows = a.as_slice().expect("a standard-layout array is contiguous");
        CpuStorage::F32(pool::output(&[m, w.rows()], |out| gemm_int8::linear_int8(rows, m, w, input, out)))
    }

    fn matmul_rounded(a: &CpuStorage, b: &CpuStorage, dtype: DType) -> CpuStorage {
        if let (CpuStorage::F32(a), CpuStorage::F32(b), DType::BF16) = (a, b, dtype)
            && gemm_bf16::bf16_kernel_runs_here()
        {
            // Rounded as the bf16 kernels pack them, not in a pass first.
            return CpuStorage::F32(matmul::matmul_as::<gemm_bf16::RoundsToBf16, f32>(a, b));
        }
        CpuStorage::F32(match rounded_operands("matmul_rounded", &[a, b], dtype) {
            Rounded::Bf16([a, b]) => matmul::matmul(&a, &b),
            Rounded::F32([a, b]) => matmul::matmul(&a, &b),
        })
    }

    fn conv2d_rounded(
        x: &CpuStorage,
        w: &CpuStorage,
        bias: Option<&CpuStorage>,
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CpuStorage {
        let bias = bias.map(|b| match b {
            CpuStorage::F32(b) => b,
            other => panic!("conv2d_rounded: an f32 bias, not {}", other.dtype()),
        });
        CpuStorage::F32(match rounded_operands("conv2d_rounded", &[x, w], dtype) {
            Rounded::Bf16([x, w]) => conv::conv2d(&x, &w, bias, o),
            Rounded::F32([x, w]) => conv::conv2d(&x, &w, bias, o),
        })
    }

    fn conv2d_input_grad_rounded(
        g: &CpuStorage,
        w: &CpuStorage,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CpuStorage {
        CpuStorage::F32(match rounded_operands("conv2d_input_grad_rounded", &[g, w], dtype) {
            Rounded::Bf16([g, w]) => conv::conv2d_input_grad(&g, &w, input_shape, o),
            Rounded::F32([g, w]) => conv::conv2d_input_grad(&g, &w, input_shape, o),
        })
    }

    fn conv2d_weight_grad_rounded(
        x: &CpuStorage,
        g: &CpuStorage,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CpuStorage {
        CpuStorage::F32(match rounded_operands("conv2d_weight_grad_rounded", &[x, g], dtype) {
            Rounded::Bf16([x, g]) => conv::conv2d_weight_grad(&x, &g, weight_shape, o),
            Rounded::F32([x, g]) => conv::conv2d_weight_grad(&x, &g, weight_shape, o),
        })
    }

    fn max_pool2d_input_grad(g: &CpuStorage, indices: &CpuStorage, from: [usize; 4]) -> CpuStorage {
        if let Some(h) = half(g) {
            return Self::max_pool2d_input_grad(&g.widen(), indices, from).narrow(h);
        }
        let CpuStorage::I64(i) = indices else { unsupported("max_pool2d_input_grad indices", indices.dtype()) };
        match g {
            CpuStorage::F32(g) => CpuStorage::F32(conv::max_pool2d_input_grad(g, i, from)),
            CpuStorage::F64(g) => CpuStorage::F64(conv::max_pool2d_input_grad(g, i, from)),
            other => unsupported("max_pool2d_input_grad", other.dtype()),
        }
    }

    fn arange(range: Range<i64>, _device: &CpuDevice) -> CpuStorage {
        let n = (range.end - range.start) as usize;
        CpuStorage::I64(pool::output(&[n], |out| out.iter_mut().zip(range).for_each(|(o, i)| *o = i)))
    }

    fn item(x: &CpuStorage) -> f64 {
        let first = "item: the runtime checked for one element";
        match x {
            CpuStorage::F32(a) => f64::from(*a.first().expect(first)),
            CpuStorage::F64(a) => *a.first().expect(first),
            CpuStorage::F16(a) => a.first().expect(first).to_f64(),
            CpuStorage::BF16(a) => a.first().expect(first).to_f64(),
            CpuStorage::I64(a) => *a.first().expect(first) as f64,
            CpuStorage::Bool(a) => f64::from(u8::from(*a.first().expect(first))),
        }
    }

    fn softmax(x: &CpuStorage, dim: usize, o: SoftmaxOptions) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::softmax(&x.widen(), dim, o).narrow(h);
        }
        let last = dim + 1 == x.shape().len();
        let fused = match x {
            CpuStorage::F32(a) if last => elementwise::softmax_last(a, o).map(CpuStorage::F32),
            CpuStorage::F64(a) if last => elementwise::softmax_last(a, o).map(CpuStorage::F64),
            _ => None,
        };
        fused.unwrap_or_else(|| blaze_runtime::backend::composed_softmax::<Self>(x, dim, o))
    }

    fn softmax_backward(g: &CpuStorage, y: &CpuStorage, dim: usize, o: SoftmaxOptions) -> CpuStorage {
        if let Some(h) = half(g) {
            return Self::softmax_backward(&g.widen(), &y.widen(), dim, o).narrow(h);
        }
        let last = dim + 1 == g.shape().len();
        let fused = match (g, y) {
            (CpuStorage::F32(g), CpuStorage::F32(y)) if last => {
                elementwise::softmax_last_backward(g, y, o).map(CpuStorage::F32)
            }
            (CpuStorage::F64(g), CpuStorage::F64(y)) if last => {
                elementwise::softmax_last_backward(g, y, o).map(CpuStorage::F64)
            }
            _ => None,
        };
        fused.unwrap_or_else(|| blaze_runtime::backend::composed_softmax_backward::<Self>(g, y, dim, o))
    }

    fn bias_act(x: CpuStorage, bias: Option<&CpuStorage>, dim: usize, act: Option<UnaryOp>) -> CpuStorage {
        if let Some(h) = half(&x) {
            return Self::bias_act(x.widen(), wide(bias).as_ref(), dim, act).narrow(h);
        }
        match bias_act_fused(x, bias, dim, act, None) {
            Ok(done) => done,
            Err(x) => blaze_runtime::backend::composed_bias_act::<Self>(x, bias, dim, act),
        }
    }

    fn bias_act_add(
        x: CpuStorage,
        bias: Option<&CpuStorage>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: &CpuStorage,
    ) -> CpuStorage {
        if let Some(h) = half(&x) {
            return Self::bias_act_add(x.widen(), wide(bias).as_ref(), dim, act, &residual.widen()).narrow(h);
        }
        match bias_act_fused(x, bias, dim, act, Some(residual)) {
            Ok(done) => done,
            Err(x) => Self::binary(BinaryOp::Add, &Self::bias_act(x, bias, dim, act), residual),
        }
    }

    fn attention(q: &CpuStorage, k: &CpuStorage, v: &CpuStorage, o: SoftmaxOptions) -> CpuStorage {
        if let Some(h) = half(q) {
            return Self::attention(&q.widen(), &k.widen(), &v.widen(), o).narrow(h);
        }
        let tiled = match (q, k, v) {
            (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => {
                attention::attention(q, k, v, o).map(CpuStorage::F32)
            }
            (CpuStorage::F64(q), CpuStorage::F64(k), CpuStorage::F64(v)) => {
                attention::attention(q, k, v, o).map(CpuStorage::F64)
            }
            _ => None,
        };
        tiled.unwrap_or_else(|| blaze_runtime::backend::composed_attention::<Self>(q, k, v, o))
    }

    fn norm(
        x: &CpuStorage,
        weight: Option<&CpuStorage>,
        bias: Option<&CpuStorage>,
        eps: f64,
        centre: bool,
    ) -> [CpuStorage; 2] {
        if let Some(h) = half(x) {
            let wide = Self::norm(&x.widen(), wide(weight).as_ref(), wide(bias).as_ref(), eps, centre);
            return wide.map(|t| t.narrow(h));
        }
        let fused = match x {
            CpuStorage::F32(a) => optional(weight, CpuStorage::f32s)
                .zip(optional(bias, CpuStorage::f32s))
                .and_then(|(w, b)| norm::norm(a, w, b, eps, centre))
                .map(|o| o.map(CpuStorage::F32)),
            CpuStorage::F64(a) => optional(weight, CpuStorage::f64s)
                .zip(optional(bias, CpuStorage::f64s))
                .and_then(|(w, b)| norm::norm(a, w, b, eps, centre))
                .map(|o| o.map(CpuStorage::F64)),
            _ => None,
        };
        fused.unwrap_or_else(|| blaze_runtime::backend::composed_norm::<Self>(x, weight, bias, eps, centre))
    }

    fn norm_backward(
        g: &CpuStorage,
        x: &CpuStorage,
        stats: &CpuStorage,
        weight: Option<&CpuStorage>,
        centre: bool,
    ) -> [CpuStorage; 3] {
        if let Some(h) = half(g) {
            let wide = Self::norm_backward(&g.widen(), &x.widen(), &stats.widen(), wide(weight).as_ref(), centre);
            return wide.map(|t| t.narrow(h));
        }
        let fused = match (g, x, stats) {
            (CpuStorage::F32(g), CpuStorage::F32(x), CpuStorage::F32(s)) => optional(weight, CpuStorage::f32s)
                .and_then(|w| norm::norm_backward(g, x, s, w, centre))
                .map(|o| o.map(CpuStorage::F32)),
            (CpuStorage::F64(g), CpuStorage::F64(x), CpuStorage::F64(s)) => optional(weight, CpuStorage::f64s)
                .and_then(|w| norm::norm_backward(g, x, s, w, centre))
                .map(|o| o.map(CpuStorage::F64)),
            _ => None,
        };
        fused.unwrap_or_else(|| blaze_runtime::backend::composed_norm_backward::<Self>(g, x, stats, weight, centre))
    }

    fn sum_squares(x: &CpuStorage) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::sum_squares(&x.widen()).narrow(h);
        }
        match x {
            CpuStorage::F32(a) => CpuStorage::F32(reduce::sum_squares(a)),
            CpuStorage::F64(a) => CpuStorage::F64(reduce::sum_squares(a)),
            other => blaze_runtime::backend::composed_sum_squares::<Self>(other),
        }
    }

    fn cross_entropy(
        logits: &CpuStorage,
        targets: &CpuStorage,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(CpuStorage, CpuStorage)> {
        if let Some(h) = half(logits) {
            let wide = Self::cross_entropy(&logits.widen(), targets, smoothing, ignore_index, grad_scale);
            return wide.map(|(l, g)| (l.narrow(h), g.narrow(h)));
        }
        let t = targets.as_i64("cross_entropy");
        match logits {
            CpuStorage::F32(z) => elementwise::cross_entropy_rows(z, t, smoothing, ignore_index, grad_scale)
                .map(|(l, g)| (CpuStorage::F32(l), CpuStorage::F32(g))),
            CpuStorage::F64(z) => elementwise::cross_entropy_rows(z, t, smoothing, ignore_index, grad_scale)
                .map(|(l, g)| (CpuStorage::F64(l), CpuStorage::F64(g))),
            _ => None,
        }
    }

    fn adam(p: &mut CpuStorage, m: &mut CpuStorage, v: &mut CpuStorage, g: &CpuStorage, o: AdamStep) {
        if let Some(h) = half(p) {
            let (mut pw, mut mw, mut vw) = (p.widen(), m.widen(), v.widen());
            Self::adam(&mut pw, &mut mw, &mut vw, &g.widen(), o);
            (*p, *m, *v) = (pw.narrow(h), mw.narrow(h), vw.narrow(h));
            return;
        }
        let done = match (&mut *p, &mut *m, &mut *v, g) {
            (CpuStorage::F32(p), CpuStorage::F32(m), CpuStorage::F32(v), CpuStorage::F32(g)) => {
                elementwise::adam_in_place(p, m, v, g, o)
            }
            (CpuStorage::F64(p), CpuStorage::F64(m), CpuStorage::F64(v), CpuStorage::F64(g)) => {
                elementwise::adam_in_place(p, m, v, g, o)
            }
            _ => false,
        };
        if !done {
            blaze_runtime::backend::composed_adam::<Self>(p, m, v, g, o);
        }
    }

    fn axpby(y: &mut CpuStorage, a: f64, x: &CpuStorage, b: f64) {
        if let Some(h) = half(y) {
            let mut yw = y.widen();
            Self::axpby(&mut yw, a, &x.widen(), b);
            *y = yw.narrow(h);
            return;
        }
        let done = match (&mut *y, x) {
            (CpuStorage::F32(ya), CpuStorage::F32(xa)) => elementwise::axpby_in_place(ya, a as f32, xa, b as f32),
            (CpuStorage::F64(ya), CpuStorage::F64(xa)) => elementwise::axpby_in_place(ya, a, xa, b),
            _ => false,
        };
        if !done {
            blaze_runtime::backend::composed_axpby::<Self>(y, a, x, b);
        }
    }
}
