//! `HostFallback`'s composite ops: the device's own where it holds every
//! operand (and, for products under a 16-bit precision, rounds to the
//! dtype), else the composition, whose primitives move values between
//! device and host as their dtypes need.

use super::*;

impl<D: DeviceDtypes, H: Backend> Composites for HostFallback<D, H> {
    fn arange(range: Range<i64>, device: &D::Device) -> Placed<D, H> {
        Self::from_host(H::arange(range, &host::<H>()), device)
    }

    fn item(x: &Placed<D, H>) -> f64 {
        match x {
            Placed::Device(x) => D::item(x),
            Placed::Host(x, _) => H::item(x),
        }
    }

    fn matmul_rounded(a: &Placed<D, H>, b: &Placed<D, H>, dtype: DType) -> Placed<D, H> {
        match (a, b) {
            // The device's own rounded product where it holds `dtype`.
            (Placed::Device(x), Placed::Device(y)) if D::rounds_to(dtype, &D::device(x)) => {
                Self::from_device(D::matmul_rounded(x, y, dtype))
            }
            // Else the casts take the values where `dtype` lives and back.
            _ => blaze_runtime::backend::composed_matmul_rounded::<Self>(a, b, dtype),
        }
    }

    fn conv2d_rounded(
        x: &Placed<D, H>,
        w: &Placed<D, H>,
        bias: Option<&Placed<D, H>>,
        o: &Conv2dOptions,
        dtype: DType,
    ) -> Placed<D, H> {
        match (x, w, bias) {
            (Placed::Device(xd), Placed::Device(wd), None) if D::rounds_to(dtype, &D::device(xd)) => {
                Self::from_device(D::conv2d_rounded(xd, wd, None, o, dtype))
            }
            (Placed::Device(xd), Placed::Device(wd), Some(Placed::Device(b)))
                if D::rounds_to(dtype, &D::device(xd)) =>
            {
                Self::from_device(D::conv2d_rounded(xd, wd, Some(b), o, dtype))
            }
            _ => Self::conv2d(
                &blaze_runtime::backend::rounded::<Self>(x, dtype),
                &blaze_runtime::backend::rounded::<Self>(w, dtype),
                bias,
                o,
            ),
        }
    }

    fn conv2d_input_grad_rounded(
        g: &Placed<D, H>,
        w: &Placed<D, H>,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> Placed<D, H> {
        match (g, w) {
            (Placed::Device(gd), Placed::Device(wd)) if D::rounds_to(dtype, &D::device(gd)) => {
                Self::from_device(D::conv2d_input_grad_rounded(gd, wd, input_shape, o, dtype))
            }
            _ => {
                let round = |t: &Placed<D, H>| blaze_runtime::backend::rounded::<Self>(t, dtype);
                Self::conv2d_input_grad(&round(g), &round(w), input_shape, o)
            }
        }
    }

    fn conv2d_weight_grad_rounded(
        x: &Placed<D, H>,
        g: &Placed<D, H>,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
        dtype: DType,
    ) -> Placed<D, H> {
        match (x, g) {
            (Placed::Device(xd), Placed::Device(gd)) if D::rounds_to(dtype, &D::device(xd)) => {
                Self::from_device(D::conv2d_weight_grad_rounded(xd, gd, weight_shape, o, dtype))
            }
            _ => {
                let round = |t: &Placed<D, H>| blaze_runtime::backend::rounded::<Self>(t, dtype);
                Self::conv2d_weight_grad(&round(x), &round(g), weight_shape, o)
            }
        }
    }

    fn softmax(x: &Placed<D, H>, dim: usize, o: SoftmaxOptions) -> Placed<D, H> {
        Self::view(x, |x| D::softmax(x, dim, o), |x| H::softmax(x, dim, o))
    }

    fn softmax_backward(g: &Placed<D, H>, y: &Placed<D, H>, dim: usize, o: SoftmaxOptions) -> Placed<D, H> {
        match (g, y) {
            (Placed::Device(g), Placed::Device(y)) => Placed::Device(D::softmax_backward(g, y, dim, o)),
            (Placed::Host(g, d), Placed::Host(y, _)) => Placed::Host(H::softmax_backward(g, y, dim, o), d.clone()),
            (g, y) => mixed("softmax_backward", &[g, y]),
        }
    }

    fn bias_act(x: Placed<D, H>, bias: Option<&Placed<D, H>>, dim: usize, act: Option<UnaryOp>) -> Placed<D, H> {
        match (x, bias) {
            (Placed::Device(x), None) => Placed::Device(D::bias_act(x, None, dim, act)),
            (Placed::Device(x), Some(Placed::Device(b))) => Placed::Device(D::bias_act(x, Some(b), dim, act)),
            (Placed::Host(x, d), None) => Placed::Host(H::bias_act(x, None, dim, act), d),
            (Placed::Host(x, d), Some(Placed::Host(b, _))) => Placed::Host(H::bias_act(x, Some(b), dim, act), d),
            (x, Some(b)) => mixed("bias_act", &[&x, b]),
        }
    }

    fn bias_act_add(
        x: Placed<D, H>,
        bias: Option<&Placed<D, H>>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: &Placed<D, H>,
    ) -> Placed<D, H> {
        match (x, bias, residual) {
            (Placed::Device(x), None, Placed::Device(r)) => Placed::Device(D::bias_act_add(x, None, dim, act, r)),
            (Placed::Device(x), Some(Placed::Device(b)), Placed::Device(r)) => {
                Placed::Device(D::bias_act_add(x, Some(b), dim, act, r))
            }
            (Placed::Host(x, d), None, Placed::Host(r, _)) => Placed::Host(H::bias_act_add(x, None, dim, act, r), d),
            (Placed::Host(x, d), Some(Placed::Host(b, _)), Placed::Host(r, _)) => {
                Placed::Host(H::bias_act_add(x, Some(b), dim, act, r), d)
            }
            (x, Some(b), r) => mixed("bias_act_add", &[&x, b, r]),
            (x, None, r) => mixed("bias_act_add", &[&x, r]),
        }
    }

    fn max_pool2d_input_grad(g: &Placed<D, H>, indices: &Placed<D, H>, from: [usize; 4]) -> Placed<D, H> {
        match (g, indices) {
            (Placed::Device(g), Placed::Device(i)) => Placed::Device(D::max_pool2d_input_grad(g, i, from)),
            (Placed::Host(g, d), Placed::Host(i, _)) => Placed::Host(H::max_pool2d_input_grad(g, i, from), d.clone()),
            // Indices the device cannot hold stay on the host: scatter there.
            (g, i) => blaze_runtime::backend::composed_max_pool2d_input_grad::<Self>(g, i, from),
        }
    }

    fn sum_squares(x: &Placed<D, H>) -> Placed<D, H> {
        Self::view(x, D::sum_squares, H::sum_squares)
    }

    fn cross_entropy(
        logits: &Placed<D, H>,
        targets: &Placed<D, H>,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(Placed<D, H>, Placed<D, H>)> {
        // Fused where the logits live: class indices the device cannot
        // hold go to it as f32 (exact below 2^24 classes, a few bytes a
        // row); otherwise the loss composes ops.
        match (logits, targets) {
            (Placed::Device(z), Placed::Device(t)) => D::cross_entropy(z, t, smoothing, ignore_index, grad_scale)
                .map(|(l, g)| (Placed::Device(l), Placed::Device(g))),
            (Placed::Device(z), t @ Placed::Host(..))
                if D::holds(DType::F32, &D::device(z)) && D::shape(z)[1] < 1 << 24 =>
            {
                let Placed::Device(t) = Self::cast(t, DType::F32) else { return None };
                D::cross_entropy(z, &t, smoothing, ignore_index, grad_scale)
                    .map(|(l, g)| (Placed::Device(l), Placed::Device(g)))
            }
            (Placed::Host(z, d), Placed::Host(t, _)) => H::cross_entropy(z, t, smoothing, ignore_index, grad_scale)
                .map(|(l, g)| (Placed::Host(l, d.clone()), Placed::Host(g, d.clone()))),
            _ => None,
        }
    }

    fn attention(q: &Placed<D, H>, k: &Placed<D, H>, v: &Placed<D, H>, o: SoftmaxOptions) -> Placed<D, H> {
        match q {
            Placed::Device(qd) => {
                let [k, v] = [k, v].map(|p| on_device("attention", q, p));
                Placed::Device(D::attention(qd, k, v, o))
            }
            Placed::Host(qh, d) => {
                let [k, v] = [k, v].map(|p| on_host("attention", q, p));
                Placed::Host(H::attention(qh, k, v, o), d.clone())
            }
        }
    }

    fn norm(
        x: &Placed<D, H>,
        weight: Option<&Placed<D, H>>,
        bias: Option<&Placed<D, H>>,
        eps: f64,
        centre: bool,
    ) -> [Placed<D, H>; 2] {
        match x {
            Placed::Device(xd) => {
                let [w, b] = [weight, bias].map(|p| p.map(|p| on_device("norm", x, p)));
                D::norm(xd, w, b, eps, centre).map(Placed::Device)
            }
            Placed::Host(xh, d) => {
                let [w, b] = [weight, bias].map(|p| p.map(|p| on_host("norm", x, p)));
                H::norm(xh, w, b, eps, centre).map(|y| Placed::Host(y, d.clone()))
            }
        }
    }

    fn norm_backward(
        g: &Placed<D, H>,
        x: &Placed<D, H>,
        stats: &Placed<D, H>,
        weight: Option<&Placed<D, H>>,
        centre: bool,
    ) -> [Placed<D, H>; 3] {
        match g {
            Placed::Device(gd) => {
                let [x, stats] = [x, stats].map(|p| on_device("norm_backward", g, p));
                let w = weight.map(|p| on_device("norm_backward", g, p));
                D::norm_backward(gd, x, stats, w, centre).map(Placed::Device)
            }
            Placed::Host(gh, d) => {
                let [x, stats] = [x, stats].map(|p| on_host("norm_backward", g, p));
                let w = weight.map(|p| on_host("norm_backward", g, p));
                H::norm_backward(gh, x, stats, w, centre).map(|y| Placed::Host(y, d.clone()))
            }
        }
    }

    fn adam(p: &mut Placed<D, H>, m: &mut Placed<D, H>, v: &mut Placed<D, H>, g: &Placed<D, H>, o: AdamStep) {
        match (&mut *p, &mut *m, &mut *v, g) {
            (Placed::Device(p), Placed::Device(m), Placed::Device(v), Placed::Device(g)) => D::adam(p, m, v, g, o),
            (Placed::Host(p, _), Placed::Host(m, _), Placed::Host(v, _), Placed::Host(g, _)) => H::adam(p, m, v, g, o),
            _ => mixed("adam", &[&p.clone(), &m.clone(), &v.clone(), g]),
        }
    }

    fn axpby(y: &mut Placed<D, H>, a: f64, x: &Placed<D, H>, b: f64) {
        match (&mut *y, x) {
            (Placed::Device(y), Placed::Device(x)) => D::axpby(y, a, x, b),
            (Placed::Host(y, _), Placed::Host(x, _)) => H::axpby(y, a, x, b),
            _ => mixed("axpby", &[&y.clone(), x]),
        }
    }
}
