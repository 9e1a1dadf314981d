//! Gradient checks: a backward pass against central finite differences of
//! the training forward, in f64.
//!
//! The scalar checked is `L = sum(y * r)` for a fixed random `r`, so every
//! output element contributes with its own weight; its gradient with respect
//! to `y` is `r`, which is what `backward` receives.

use super::{Block, Ctx, Layer, Module, ParamMapper, ParamVisitor, grads_dict, to_dtype};
use blaze_runtime::{Backend, DType, Rng, Tensor, TensorData};

/// How close analytic and numeric gradients must be: `|a - n| <= TOL * max(1, |a|, |n|)`.
pub const TOL: f64 = 1e-6;
/// Step of the central differences.
const EPS: f64 = 1e-6;
/// Elements checked per tensor at most (evenly spread).
const MAX_CHECKS: usize = 48;

/// Random values in `[-1, 1)` shaped like `shape`, in f64.
pub fn projection<B: Backend, const D: usize>(shape: [usize; D], seed: u64, device: &B::Device) -> Tensor<B, D> {
    let mut rng = Rng::seed_from_u64(seed);
    Tensor::<B, D>::uniform_with(shape, -1.0, 1.0, &mut rng, device).to_dtype(DType::F64)
}

fn perturbed<B: Backend, const D: usize>(t: &Tensor<B, D>, i: usize, delta: f64) -> Tensor<B, D> {
    let mut data = t.to_data().convert(DType::F64);
    if let blaze_runtime::DataVec::F64(v) = &mut data.values {
        v[i] += delta;
    }
    Tensor::from_data(data, &t.device()).unwrap_or_else(|e| panic!("gradcheck: {e}"))
}

fn positions(n: usize) -> impl Iterator<Item = usize> {
    let step = n.div_ceil(MAX_CHECKS).max(1);
    (0..n).step_by(step)
}

#[track_caller]
fn compare(what: &str, i: usize, analytic: f64, numeric: f64) {
    let scale = 1f64.max(analytic.abs()).max(numeric.abs());
    assert!(
        (analytic - numeric).abs() <= TOL * scale,
        "gradcheck {what}[{i}]: backward gives {analytic:e}, finite differences {numeric:e}"
    );
}

/// Replaces the parameter `name` by a copy with element `i` moved by `delta`.
struct Nudge<'a> {
    name: &'a str,
    i: usize,
    delta: f64,
}

impl<B: Backend> ParamMapper<B> for Nudge<'_> {
    fn map<const D: usize>(&mut self, name: &str, t: Tensor<B, D>) -> Tensor<B, D> {
        if name == self.name { perturbed(&t, self.i, self.delta) } else { t }
    }
}

/// Checks `layer.backward` against finite differences, for the input (when
/// it is a float tensor) and every parameter, in f64. The training forward
/// runs with `Ctx::train(seed)` when `train`, else `Ctx::eval()`, fresh for
/// every evaluation so dropout masks repeat. Panics naming the tensor and
/// element that disagree.
pub fn check_layer<B, L, const DI: usize, const DO: usize>(layer: &L, x: &Tensor<B, DI>, train: bool)
where
    B: Backend,
    L: Layer<B, DI, DO> + Clone,
{
    check_model(layer, x, train, |l, x, ctx| l.forward_train(x, ctx), |l, c, g| l.backward(c, g));
}

/// [`check_layer`] for a whole model (or any [`Block`]).
pub fn check_block<B, M, const DI: usize, const DO: usize>(model: &M, x: &Tensor<B, DI>, train: bool)
where
    B: Backend,
    M: Block<B, Input = Tensor<B, DI>, Output = Tensor<B, DO>> + Clone,
{
    check_model(model, x, train, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

/// The check behind [`check_layer`] and [`check_block`], for any model
/// with a training forward `run` and a backward `back` (a model with a
/// `forward` body and symbolic dims, say).
pub fn check_model<B, M, C, const DI: usize, const DO: usize>(
    module: &M,
    x: &Tensor<B, DI>,
    train: bool,
    run: impl Fn(&mut M, &Tensor<B, DI>, &mut Ctx) -> (Tensor<B, DO>, C),
    back: impl Fn(&M, &C, &Tensor<B, DO>) -> (Tensor<B, DI>, M::Grads),
) where
    B: Backend,
    M: Module<B> + Clone,
{
    let mut l = module.clone();
    to_dtype(&mut l, DType::F64);
    let x = if x.dtype().is_float() { x.to_dtype(DType::F64) } else { x.clone() };
    let ctx = || if train { Ctx::train(7) } else { Ctx::eval() };
    let (y, cache) = run(&mut l.clone(), &x, &mut ctx());
    let r = projection::<B, DO>(y.shape(), 99, &x.device());
    let loss = |l: &M, x: &Tensor<B, DI>| run(&mut l.clone(), x, &mut ctx()).0.mul(&r).sum().item();
    let (dx, grads) = back(&l, &cache, &r);

    if x.dtype().is_float() {
        assert_eq!(dx.shape(), x.shape(), "gradcheck: input gradient shape");
        let dxv = dx.to_data().values.to_f64_vec();
        for i in positions(x.numel()) {
            let numeric = (loss(&l, &perturbed(&x, i, EPS)) - loss(&l, &perturbed(&x, i, -EPS))) / (2.0 * EPS);
            compare("input", i, dxv[i], numeric);
        }
    }
    let mut checked = Vec::new();
    for (name, grad) in grads_dict::<B, M>(&grads) {
        let gv = grad.values.to_f64_vec();
        for i in positions(gv.len()) {
            let nudged = |delta| {
                let mut p = l.clone();
                p.map_tensors("", &mut Nudge { name: &name, i, delta });
                loss(&p, &x)
            };
            let numeric = (nudged(EPS) - nudged(-EPS)) / (2.0 * EPS);
            compare(&name, i, gv[i], numeric);
        }
        checked.push(name);
    }
    // Every parameter must have a gradient, of its own shape.
    struct Shapes(Vec<(String, Vec<usize>)>);
    impl<B: Backend> ParamVisitor<B> for Shapes {
        fn visit<const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
            self.0.push((name.to_owned(), t.shape().to_vec()));
        }
    }
    let mut params = Shapes(Vec::new());
    l.visit_params("", &mut params);
    let grad_shapes: Vec<(String, Vec<usize>)> =
        grads_dict::<B, M>(&grads).into_iter().map(|(n, d): (String, TensorData)| (n, d.shape)).collect();
    assert_eq!(params.0, grad_shapes, "gradcheck: parameters and gradients differ in names or shapes");
}

/// Checks `grad` as the gradient of the scalar function `f` at `x`
/// (a loss, say) against central finite differences, in f64.
pub fn check_function<B: Backend, const D: usize>(
    x: &Tensor<B, D>,
    f: impl Fn(&Tensor<B, D>) -> Tensor<B, 0>,
    grad: &Tensor<B, D>,
) {
    let x = x.to_dtype(DType::F64);
    assert_eq!(grad.shape(), x.shape(), "gradcheck: gradient shape");
    let g = grad.to_data().values.to_f64_vec();
    for i in positions(x.numel()) {
        let numeric = (f(&perturbed(&x, i, EPS)).item() - f(&perturbed(&x, i, -EPS)).item()) / (2.0 * EPS);
        compare("input", i, g[i], numeric);
    }
}
