//! `Composites` for `CubeNative`: the fused passes (softmax, norms, a bias
//! with its activation, the optimizers' updates, cross-entropy) and the
//! f16 products that keep their operands in f16.

use super::*;

/// Whether a product of f32 `x` under a precision rounding to `dtype`
/// runs in f16 here: f16, on an adapter with 16-bit floats.
fn f16_products(x: &CubeStorage, dtype: DType) -> bool {
    dtype == DType::F16 && x.dtype == DType::F32 && x.device.holds(DType::F16)
}

impl Composites for CubeNative {
    /// f16 rounding on an adapter with 16-bit floats runs on cubek's f16
    /// matmul with f32 results; other roundings (bf16, which WGSL lacks)
    /// round through casts.
    fn matmul_rounded(a: &CubeStorage, b: &CubeStorage, dtype: DType) -> CubeStorage {
        let (a, b) = (floats("matmul_rounded", a), floats("matmul_rounded", b));
        if f16_products(a, dtype) {
            return matmul::matmul_f16_to_f32(a, b);
        }
        composed::composed_matmul_rounded::<Self>(a, b, dtype)
    }

    fn conv2d_rounded(
        x: &CubeStorage,
        w: &CubeStorage,
        bias: Option<&CubeStorage>,
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CubeStorage {
        if f16_products(x, dtype) {
            return conv::conv2d(x, float("conv2d", w), bias, o, conv::Products::F16);
        }
        Self::conv2d(&composed::rounded::<Self>(x, dtype), &composed::rounded::<Self>(w, dtype), bias, o)
    }

    fn conv2d_input_grad_rounded(
        g: &CubeStorage,
        w: &CubeStorage,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CubeStorage {
        if f16_products(g, dtype) {
            return conv::conv2d_input_grad(g, float("conv2d_input_grad", w), input_shape, o, conv::Products::F16);
        }
        Self::conv2d_input_grad(
            &composed::rounded::<Self>(g, dtype),
            &composed::rounded::<Self>(w, dtype),
            input_shape,
            o,
        )
    }

    fn conv2d_weight_grad_rounded(
        x: &CubeStorage,
        g: &CubeStorage,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> CubeStorage {
        if f16_products(x, dtype) {
            return conv::conv2d_weight_grad(x, float("conv2d_weight_grad", g), weight_shape, o, conv::Products::F16);
        }
        Self::conv2d_weight_grad(
            &composed::rounded::<Self>(x, dtype),
            &composed::rounded::<Self>(g, dtype),
            weight_shape,
            o,
        )
    }

    fn bias_act(x: CubeStorage, bias: Option<&CubeStorage>, dim: usize, act: Option<UnaryOp>) -> CubeStorage {
        if let Some(h) = half(&x) {
            return Self::fused_bias_act(&x.widen(), wide(bias).as_ref(), dim, act, None).narrow(h);
        }
        Self::fused_bias_act(&x, bias, dim, act, None)
    }

    fn bias_act_add(
        x: CubeStorage,
        bias: Option<&CubeStorage>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: &CubeStorage,
    ) -> CubeStorage {
        if let Some(h) = half(&x) {
            let r = residual.widen();
            return Self::fused_bias_act(&x.widen(), wide(bias).as_ref(), dim, act, Some(&r)).narrow(h);
        }
        Self::fused_bias_act(&x, bias, dim, act, Some(residual))
    }

    fn axpby(y: &mut CubeStorage, a: f64, x: &CubeStorage, b: f64) {
        if let Some(h) = half(y) {
            let mut yw = y.widen();
            Self::axpby(&mut yw, a, &x.widen(), b);
            *y = yw.narrow(h);
            return;
        }
        let (yn, xn) = (float("axpby", y), float("axpby", x));
        assert!(yn.shape == xn.shape, "cubecl axpby: y {:?} and x {:?}", yn.shape, xn.shape);
        optim::axpby(y, a, x, b);
    }

    fn adam(
        p: &mut CubeStorage,
        m: &mut CubeStorage,
        v: &mut CubeStorage,
        g: &CubeStorage,
        o: blaze_runtime::AdamStep,
    ) {
        if let Some(h) = half(p) {
            let (mut pw, mut mw, mut vw) = (p.widen(), m.widen(), v.widen());
            Self::adam(&mut pw, &mut mw, &mut vw, &g.widen(), o);
            (*p, *m, *v) = (pw.narrow(h), mw.narrow(h), vw.narrow(h));
            return;
        }
        for t in [&*p, &*m, &*v, g] {
            float("adam", t);
        }
        optim::adam(p, m, v, g, o);
    }

    /// The runtime's row kernel (`blaze_runtime::rows::cross_entropy`),
    /// which the wgpu backend runs too, for f32 logits and the f32 class
    /// indices `HostFallback` sends.
    fn cross_entropy(
        logits: &CubeStorage,
        targets: &CubeStorage,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(CubeStorage, CubeStorage)> {
        launch::cross_entropy::<Self>(logits, targets, smoothing, ignore_index, grad_scale)
    }

    // The composed defaults, on f32 copies of f16 operands: one rounding
    // at the end, and no f16 overflow in between (a sum of squares).
    fn sum_squares(x: &CubeStorage) -> CubeStorage {
        let h = x.dtype;
        composed::composed_sum_squares::<Self>(&x.widen()).narrow(h)
    }

    fn attention(q: &CubeStorage, k: &CubeStorage, v: &CubeStorage, o: blaze_runtime::SoftmaxOptions) -> CubeStorage {
        let h = q.dtype;
        composed::composed_attention::<Self>(&q.widen(), &k.widen(), &v.widen(), o).narrow(h)
    }

    fn norm(
        x: &CubeStorage,
        weight: Option<&CubeStorage>,
        bias: Option<&CubeStorage>,
        eps: f64,
        centre: bool,
    ) -> [CubeStorage; 2] {
        let (w, b) = (wide(weight), wide(bias));
        let h = x.dtype;
        launch::norm::<Self>(float("norm", &x.widen()), w.as_ref(), b.as_ref(), eps, centre).map(|t| t.narrow(h))
    }

    fn norm_backward(
        g: &CubeStorage,
        x: &CubeStorage,
        stats: &CubeStorage,
        weight: Option<&CubeStorage>,
        centre: bool,
    ) -> [CubeStorage; 3] {
        let (w, h) = (wide(weight), g.dtype);
        launch::norm_backward::<Self>(&g.widen(), &x.widen(), &stats.widen(), w.as_ref(), centre).map(|t| t.narrow(h))
    }

    fn softmax(x: &CubeStorage, dim: usize, o: blaze_runtime::SoftmaxOptions) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::softmax(&x.widen(), dim, o).narrow(h);
        }
        launch::softmax::<Self>(float("softmax", x), dim, o)
    }

    fn softmax_backward(g: &CubeStorage, y: &CubeStorage, dim: usize, o: blaze_runtime::SoftmaxOptions) -> CubeStorage {
        if let Some(h) = half(g) {
            return Self::softmax_backward(&g.widen(), &y.widen(), dim, o).narrow(h);
        }
        launch::softmax_backward::<Self>(float("softmax_backward", g), float("softmax_backward", y), dim, o)
    }
}
