//! Compile-time fusion of forward bodies: the groups `#[model]` plans,
//! and every fused group agreeing with the ops it replaces (the same body
//! compiled with `fuse = false`), forward and every gradient, in f32 and
//! (through the finite-difference check, which runs in f64) f64.

use blaze::nn::gradcheck::check_model;
use blaze::nn::{Ctx, grads_dict};
use blaze::prelude::*;

use crate::fused_models::{Dropped, DroppedUnfused, Mlp, MlpUnfused, SeqMlp, SeqTwin, twice};

twice!(Fused, Unfused, [T, 8], { fc: Linear<8, 8>, gate: Linear<8, 8>, pos: Embedding<16, 8> }, {
    let a = self.fc(x);
    let b = self.gate(x);
    // A per-position table broadcast over the batch, a gate, a residual
    // and scalars: one group.
    let h = (a + self.pos(positions(T))) * sigmoid(b) - x * 0.5;
    // `h` is read twice, so a second group starts here.
    let r = relu(h) + tanh(h / 2.0) - (exp(b * 0.1) + 1.0).log() + gelu(h * 1.5);
    r * 2.0 + sqrt(a * a + 1.0) / (3.0 - b.neg().exp().sqrt().neg())
});

// Every built-in activation in one group, after a layer: fused, each is a
// call of the op table's kernel that the unfused op runs too.
twice!(Acts, ActsUnfused, [T, 8], { fc: Linear<8, 8> }, {
    let h = self.fc(x) * 3.0;
    relu(gelu(tanh(sigmoid(h) * h)) * h) - 0.25
});

// The other ops of the op table a body may call, in groups.
twice!(Table, TableUnfused, [T, 8], { fc: Linear<8, 8> }, {
    let h = self.fc(x) * 3.0;
    let a = sin(h) * cos(h) + erf(h) - sqrt(abs(h)) + log(abs(h) + 1.0) * recip(h * h + 1.0);
    let b = relu6(h) + hardswish(h) * mish(h) - softsign(h) + logsigmoid(h) * hardsigmoid(h);
    a + b + exp(-abs(h)) + floor(h) * 0.25 + ceil(h) * 0.5 - sign(h)
});

// The op table's ops of two tensors inside chains, broadcast (a column
// `g`), and a number form (`powf`).
twice!(Binaries, BinariesUnfused, [T, 8], { fc: Linear<8, 8>, gate: Linear<8, 1> }, {
    let h = self.fc(x);
    let g = self.gate(x);
    let m = maximum(h * 2.0, g) - h.minimum(tanh(x)) * 0.5;
    let p = (abs(h) + 0.5).pow(sigmoid(g) + 0.5) + pow(abs(x) + 1.0, h * 0.25);
    (m + p).powf(2.0) + m * p
});

// Attention written out: the scale and the causal mask fold into the
// softmax, forward and backward.
twice!(Attn, AttnUnfused, [T, 8], { qkv: Linear<8, 24>, proj: Linear<8, 8> }, {
    let [q, k, v] = self.qkv(x).split(8, -1);
    let q = q.reshape([T, 2, 4]).transpose(0, 1);
    let k = k.reshape([T, 2, 4]).transpose(0, 1);
    let v = v.reshape([T, 2, 4]).transpose(0, 1);
    let att = (q.matmul(k.transpose(-2, -1)) * 0.5).masked_fill(causal_mask(T), -1e9).softmax(-1);
    let s = q.matmul(k.transpose(-2, -1)) / 2.0;
    let lp = s.masked_fill(causal_mask(T), f32::NEG_INFINITY).log_softmax(-1);
    self.proj((att + lp.exp()).matmul(v).transpose(0, 1).reshape([T, 8]))
});

// A softmax folded after a group whose row has no finite entry (the log
// of zeros): the row weighs nothing, as unfused.
twice!(Empty, EmptyUnfused, [T, 8], { fc: Linear<8, 8> }, {
    let h = self.fc(x);
    relu(h * 0.0 - 1.0).log().softmax(-1) + h.softmax(-1)
});

// A convolution takes its activation into its bias pass (GELU in inference
// only); the Linear after it takes its residual.
twice!(Conv, ConvUnfused, [2, 5, 5], { conv: Conv2d<2, 2, 3>, conv2: Conv2d<2, 2, 1>, fc: Linear<18, 18> }, {
    let h = relu(self.conv(x));
    let g = gelu(self.conv2(h)).reshape([18]);
    g + self.fc(g)
});

// A residual block of convolutions: `conv2` adds `x` in its bias pass,
// after `conv1`'s ReLU ran in its own.
twice!(ResConv, ResConvUnfused, [2, 5, 5], { conv1: Conv2d<2, 3, 1>, conv2: Conv2d<3, 2, 1> }, {
    x + self.conv2(relu(self.conv1(x)))
});

// Reductions over the last dim run in the pass of the group before them:
// a mean after a chain, a sum after a single product.
twice!(Reduced, ReducedUnfused, [T, 8], { fc: Linear<8, 8> }, {
    let h = self.fc(x);
    let energy = (h * h + 1.0).log().mean_dim(-1);
    let dot = (h * x).sum_dim(-1);
    h * energy + dot
});

// A causal fill that no softmax reads joins the group around it: the mask
// is one more argument of the kernel.
twice!(Masked, MaskedUnfused, [T, 4], { fc: Linear<4, 4> }, {
    let s = self.fc(x).matmul(x.transpose(-2, -1));
    let w = tanh((s * 0.5).masked_fill(causal_mask(T), 0.25)) + 1.0;
    w.matmul(x)
});

// A sequential model runs its GELU and dropout fields as one kernel (the
// mask drawn inside it) and `fc2`'s tanh in its bias pass; its twin, a
// forward body with fusion off, runs each on its own.
#[model(input = [8])]
pub struct SeqDrop {
    fc1: Linear<8, 16>,
    act: Gelu,
    drop: Dropout,
    fc2: Linear<16, 4>,
    out: Tanh,
}

#[model]
pub struct SeqDropTwin {
    fc1: Linear<8, 16>,
    act: Gelu,
    drop: Dropout,
    fc2: Linear<16, 4>,
    out: Tanh,
}

#[model(input = [8], fuse = false)]
impl SeqDropTwin {
    fn forward(&self, x: Tensor) -> Tensor {
        self.out(self.fc2(self.drop(self.act(self.fc1(x)))))
    }
}

// The same fields in a forward body with fusion on: a field that is an op
// of the op table is that op, so the body fuses as the sequential model.
#[model]
pub struct SeqDropBody {
    fc1: Linear<8, 16>,
    act: Gelu,
    drop: Dropout,
    fc2: Linear<16, 4>,
    out: Tanh,
}

#[model(input = [8])]
impl SeqDropBody {
    fn forward(&self, x: Tensor) -> Tensor {
        self.out(self.fc2(self.drop(self.act(self.fc1(x)))))
    }
}

// After a nested model the shapes are the compiler's, not the macro's:
// the fields after it fuse and recompute all the same.
#[model(input = [8])]
pub struct InnerFc {
    fc: Linear<8, 8>,
}

#[model(input = [8])]
pub struct AfterNested {
    inner: InnerFc,
    act: Gelu,
    drop: Dropout,
    norm: LayerNorm<8>,
    fc: Linear<8, 4>,
    act2: Gelu,
    out: Linear<4, 2>,
}

#[model(input = [8], fuse = false)]
pub struct AfterNestedPlain {
    inner: InnerFc,
    act: Gelu,
    drop: Dropout,
    norm: LayerNorm<8>,
    fc: Linear<8, 4>,
    act2: Gelu,
    out: Linear<4, 2>,
}

// The same fields with fusion off: each runs on its own, but for the tanh
// in `fc2`'s bias pass.
#[model(input = [8], fuse = false)]
pub struct SeqDropPlain {
    fc1: Linear<8, 16>,
    act: Gelu,
    drop: Dropout,
    fc2: Linear<16, 4>,
    out: Tanh,
}

blaze::kernel! {
    /// SiLU with a slope, as a user writes an activation.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

// A `kernel!` function inside a group: inlined into its loop and WGSL,
// its partials into the adjoints.
twice!(Kerneled, KerneledUnfused, [T, 8], { fc: Linear<8, 8>, gate: Linear<8, 8> }, {
    let h = self.fc(x);
    let g = self.gate(x);
    swish(h * 2.0, 1.5) * sigmoid(g) + swish(g, h) - h
});

// A softmax or log-softmax over the last dim after a group runs in the
// group's pass: each row is evaluated into the output and normalised there.
twice!(Softmaxed, SoftmaxedUnfused, [T, 8], { fc: Linear<8, 8>, gate: Linear<8, 8> }, {
    let h = self.fc(x);
    let g = self.gate(x);
    let p = (h * 0.5 + g).softmax(-1);
    let lp = (tanh(h) - g).log_softmax(-1);
    p * h + lp
});

// The same over rows wider than the CPU's vector loops (lanes and a
// tail). (A product by a number just before a softmax is folded into its
// scale, which rounds differently: `folded_softmaxes_agree...` checks it.)
twice!(WideSoftmaxed, WideSoftmaxedUnfused, [T, 37], { fc: Linear<37, 37>, gate: Linear<37, 37> }, {
    let h = self.fc(x);
    let g = self.gate(x);
    (h - g).softmax(-1) + (tanh(h) + g).log_softmax(-1)
});

// A LayerNorm after a residual add and an RMSNorm after a chain run in the
// pass of the group before them: each row is evaluated, its statistics
// taken and its output written while it is in cache; in training the
// group's values and statistics are the layer's cache.
twice!(Normed, NormedUnfused, [T, 8], { fc: Linear<8, 8>, ln: LayerNorm<8>, rms: RMSNorm<8>, out: Linear<8, 8>, head: Linear<8, 8> }, {
    let h = self.fc(x);
    let a = self.ln(x * 0.5 + tanh(h));
    let b = self.rms(gelu(h) * 2.0 - a);
    self.out(a) * self.head(b)
});

fn normal<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<Cpu, D> {
    let mut rng = blaze::Rng::seed_from_u64(seed);
    Tensor::normal_with(shape, 0.0, 1.0, &mut rng, &CpuDevice)
}

/// Fused and unfused values agree to `tol` (relative and absolute).
fn close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol + tol * y.abs(), "{what}[{i}]: fused {x}, unfused {y}");
    }
}

fn values<const D: usize>(t: &Tensor<Cpu, D>) -> Vec<f64> {
    t.to_data().values.to_f64_vec()
}

#[test]
fn the_macro_plans_groups_and_reports_them() {
    let plan = Fused::<Cpu>::FUSION;
    assert!(plan.groups.len() >= 2, "{plan}");
    assert!(Unfused::<Cpu>::FUSION.groups.is_empty());
    let [fused, unfused] = plan.forward_ops;
    assert!(fused < unfused && unfused == Unfused::<Cpu>::FUSION.forward_ops[0], "{plan}");
    assert!(plan.backward_ops[0] < plan.backward_ops[1], "{plan}");
    let first = &plan.groups[0];
    assert!(first.ops.contains(&"sigmoid") && first.ops.contains(&"mul_scalar"), "{plan}");
    assert!(plan.groups.iter().any(|g| g.ops.contains(&"gelu") && g.wgsl.contains("unary_gelu(")), "{plan}");
    assert_eq!(first.output, "[T, 8]");
    assert!(first.wgsl.contains("fn Fused_fused0("), "{}", first.wgsl);
    let summary = Fused::new_seeded(0, &CpuDevice).summary();
    assert!(summary.contains("Ops per forward") && summary.contains("Fused_fused1"), "{summary}");
}

/// A fused model and its unfused twin, from one seed, agree on `x`, in
/// f32 and in f64: inference, training output, the input's and every
/// parameter's gradient.
macro_rules! agree {
    ($fused:ident, $unfused:ident, $x:expr, $params:expr) => {{
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            let mut fused = $fused::new_seeded(3, &CpuDevice);
            let mut unfused = $unfused::new_seeded(3, &CpuDevice);
            blaze::nn::to_dtype(&mut fused, dtype);
            blaze::nn::to_dtype(&mut unfused, dtype);
            let x = $x.to_dtype(dtype);
            close("inference", &values(&fused.forward(&x)), &values(&unfused.forward(&x)), tol);
            let (yf, cf) = fused.forward_train(&x, &mut Ctx::train(0));
            let (yu, cu) = unfused.forward_train(&x, &mut Ctx::train(0));
            close("training output", &values(&yf), &values(&yu), tol);
            let g = normal(yf.shape(), 5).to_dtype(dtype);
            let (dxf, gf) = fused.backward(&cf, &g);
            let (dxu, gu) = unfused.backward(&cu, &g);
            close("input gradient", &values(&dxf), &values(&dxu), tol);
            let (gf, gu) = (grads_dict::<Cpu, $fused<Cpu>>(&gf), grads_dict::<Cpu, $unfused<Cpu>>(&gu));
            assert_eq!(gf.len(), $params);
            for ((name, f), (_, u)) in gf.iter().zip(&gu) {
                close(name, &f.values.to_f64_vec(), &u.values.to_f64_vec(), tol);
            }
            // The parameter-only backward agrees with the full one.
            let only = grads_dict::<Cpu, $fused<Cpu>>(&fused.backward_params(&cf, &g));
            for ((name, a), (_, b)) in only.iter().zip(&gf) {
                assert_eq!(a.values.to_f64_vec(), b.values.to_f64_vec(), "{name}");
            }
        }
    }};
}

/// A fused model and its unfused twin, from one seed, compute the same
/// bits on `x` in f32 and in f64 (inference and the training output).
macro_rules! same_bits {
    ($fused:ident, $unfused:ident, $x:expr) => {
        for dtype in [DType::F32, DType::F64] {
            let mut fused = $fused::new_seeded(3, &CpuDevice);
            let mut unfused = $unfused::new_seeded(3, &CpuDevice);
            blaze::nn::to_dtype(&mut fused, dtype);
            blaze::nn::to_dtype(&mut unfused, dtype);
            let x = $x.to_dtype(dtype);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (yf, yu) = (values(&fused.forward(&x)), values(&unfused.forward(&x)));
            assert_eq!(bits(&yf), bits(&yu), "{}, {dtype}: fused {yf:?}\nunfused {yu:?}", stringify!($fused));
            let (yf, _) = fused.forward_train(&x, &mut Ctx::train(0));
            let (yu, _) = unfused.forward_train(&x, &mut Ctx::train(0));
            let (yf, yu) = (values(&yf), values(&yu));
            assert_eq!(bits(&yf), bits(&yu), "{} training, {dtype}: fused {yf:?}\nunfused {yu:?}", stringify!($fused));
        }
    };
}

/// Every fused chain of these tests, softmaxes and norms after a group
/// included, computes on the CPU the bits its unfused twin does: the
/// fused path calls the op table's bodies and the row ops' one body.
#[test]
fn fused_chains_compute_the_bits_the_unfused_ops_do() {
    let plan = WideSoftmaxed::<Cpu>::FUSION;
    let ends = |op: &str| plan.groups.iter().any(|g| g.ops.last() == Some(&op));
    assert!(ends("softmax") && ends("log_softmax"), "{plan}");
    same_bits!(Fused, Unfused, normal([2, 5, 8], 4));
    same_bits!(Attn, AttnUnfused, normal([2, 5, 8], 4));
    same_bits!(Empty, EmptyUnfused, normal([2, 5, 8], 4));
    same_bits!(Conv, ConvUnfused, normal([2, 2, 5, 5], 4));
    same_bits!(ResConv, ResConvUnfused, normal([2, 2, 5, 5], 4));
    same_bits!(Reduced, ReducedUnfused, normal([2, 5, 8], 4));
    same_bits!(Masked, MaskedUnfused, normal([2, 5, 4], 4));
    same_bits!(Kerneled, KerneledUnfused, normal([2, 5, 8], 4));
    same_bits!(Softmaxed, SoftmaxedUnfused, normal([2, 5, 8], 4) * 30.0);
    same_bits!(WideSoftmaxed, WideSoftmaxedUnfused, normal([2, 5, 37], 4) * 30.0);
    same_bits!(Normed, NormedUnfused, normal([2, 5, 8], 4));
}

/// Regression: the fused sigmoid was `(1 + tanh(x / 2)) / 2` and the
/// unfused one `1 / (1 + e^-x)`, so fusing a model changed its numbers.
#[test]
fn fused_activations_compute_the_bits_the_unfused_ops_do() {
    assert!(Acts::<Cpu>::FUSION.groups.iter().any(|g| g.ops.contains(&"sigmoid") && g.ops.contains(&"gelu")));
    let ops: Vec<&str> = Table::<Cpu>::FUSION.groups.iter().flat_map(|g| g.ops.iter().copied()).collect();
    let table = ["sin", "cos", "erf", "sqrt", "abs", "log", "recip", "exp", "floor", "ceil", "sign", "relu6"];
    for op in table.into_iter().chain(["hardswish", "mish", "softsign", "logsigmoid", "hardsigmoid"]) {
        assert!(ops.contains(&op), "{op} in no group: {}", Table::<Cpu>::FUSION);
    }
    // Wide enough that sigmoid's exponential overflows at the low end.
    same_bits!(Acts, ActsUnfused, normal([2, 5, 8], 6) * 40.0);
    same_bits!(Table, TableUnfused, normal([2, 5, 8], 6) * 40.0);
    agree!(Acts, ActsUnfused, normal([2, 5, 8], 4), 2);
    agree!(Table, TableUnfused, normal([2, 5, 8], 4), 2);
    let ops: Vec<&str> = Binaries::<Cpu>::FUSION.groups.iter().flat_map(|g| g.ops.iter().copied()).collect();
    for op in ["maximum", "minimum", "pow", "powf"] {
        assert!(ops.contains(&op), "{op} in no group: {}", Binaries::<Cpu>::FUSION);
    }
    same_bits!(Binaries, BinariesUnfused, normal([2, 5, 8], 6) * 4.0);
    agree!(Binaries, BinariesUnfused, normal([2, 5, 8], 4), 4);
}

#[test]
fn fused_groups_agree_with_the_ops_they_replace() {
    agree!(Fused, Unfused, normal([2, 5, 8], 4), 5);
}

#[test]
fn folded_softmaxes_agree_with_the_ops_they_replace() {
    let plan = Attn::<Cpu>::FUSION;
    assert_eq!(
        plan.softmaxes,
        &[&["mul_scalar", "masked_fill", "softmax"][..], &["div_scalar", "masked_fill", "log_softmax"]]
    );
    assert!(AttnUnfused::<Cpu>::FUSION.softmaxes.is_empty());
    agree!(Attn, AttnUnfused, normal([3, 6, 8], 8), 4);
    let m = Attn::new_seeded(9, &CpuDevice);
    check_model(&m, &normal([2, 4, 8], 10), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

/// A row of `-inf` only gives softmax 0, not NaN, folded into a group as
/// unfused (see `SoftmaxOptions`).
#[test]
fn folded_softmaxes_of_rows_with_no_finite_entry_are_zero() {
    let plan = Empty::<Cpu>::FUSION;
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["relu", "log", "softmax"])), "{plan}");
    let x = normal([2, 3, 8], 12);
    let fused = Empty::new_seeded(3, &CpuDevice).forward(&x);
    let unfused = EmptyUnfused::new_seeded(3, &CpuDevice).forward(&x);
    close("output", &values(&fused), &values(&unfused), 1e-6);
    // The masked rows add nothing: each row of the sum is a softmax's.
    for row in values(&fused).chunks(8) {
        let total: f64 = row.iter().sum();
        assert!((total - 1.0).abs() < 1e-5, "a row sums to {total}: {row:?}");
    }
}

#[test]
fn epilogues_and_recomputed_inputs_agree() {
    assert_eq!(Mlp::<Cpu>::FUSION.recomputed, &["fc1 <- ln", "fc2 <- gelu", "head <- rms"]);
    assert!(MlpUnfused::<Cpu>::FUSION.recomputed.is_empty());
    assert_eq!(Mlp::<Cpu>::FUSION.epilogues, &["fc2 + add", "skip + add"]);
    assert!(MlpUnfused::<Cpu>::FUSION.epilogues.is_empty());
    let [fused, unfused] = Mlp::<Cpu>::FUSION.forward_ops;
    assert_eq!(fused + 2, unfused, "{}", Mlp::<Cpu>::FUSION);
    agree!(Mlp, MlpUnfused, normal([3, 5, 8], 11), 11);
    // What each training forward keeps: `tests/memory.rs`.
    let m = Mlp::new_seeded(1, &CpuDevice);
    check_model(&m, &normal([2, 3, 8], 13), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn convolution_epilogues_agree() {
    assert_eq!(Conv::<Cpu>::FUSION.epilogues, &["conv + relu", "fc + add"]);
    agree!(Conv, ConvUnfused, normal([3, 2, 5, 5], 14), 6);
}

#[test]
fn convolutions_take_residuals_too() {
    assert_eq!(ResConv::<Cpu>::FUSION.epilogues, &["conv1 + relu", "conv2 + add"]);
    assert_eq!(ResConvUnfused::<Cpu>::FUSION.epilogues, &["conv1 + relu"]);
    agree!(ResConv, ResConvUnfused, normal([3, 2, 5, 5], 34), 4);
    let m = ResConv::new_seeded(35, &CpuDevice);
    check_model(&m, &normal([2, 2, 5, 5], 36), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn reductions_after_groups_agree() {
    let plan = Reduced::<Cpu>::FUSION;
    let ops: Vec<&[&str]> = plan.groups.iter().map(|g| g.ops).collect();
    assert!(ops.contains(&&["mul", "add_scalar", "log", "mean"][..]) && ops.contains(&&["mul", "sum"][..]), "{plan}");
    assert!(plan.groups.iter().all(|g| g.output == "[T, 1]" || !g.ops.contains(&"sum")), "{plan}");
    agree!(Reduced, ReducedUnfused, normal([3, 5, 8], 15), 2);
    let m = Reduced::new_seeded(16, &CpuDevice);
    check_model(&m, &normal([2, 4, 8], 17), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn masked_fills_in_groups_agree() {
    let plan = Masked::<Cpu>::FUSION;
    assert_eq!(plan.groups.len(), 1, "{plan}");
    assert_eq!(plan.groups[0].ops, ["mul_scalar", "masked_fill", "tanh", "add_scalar"]);
    agree!(Masked, MaskedUnfused, normal([3, 5, 4], 18), 2);
    let m = Masked::new_seeded(19, &CpuDevice);
    check_model(&m, &normal([2, 4, 4], 20), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn sequential_models_recompute_inputs_too() {
    let x = normal([6, 8], 21);
    let (mut m, mut twin) = (SeqMlp::new_seeded(22, &CpuDevice), SeqTwin::new_seeded(22, &CpuDevice));
    let (y, cache) = m.forward_train(&x, &mut Ctx::train(0));
    let (yt, cache_t) = twin.forward_train(&x, &mut Ctx::train(0));
    close("output", &values(&y), &values(&yt), 0.0);
    let g = normal(y.shape(), 23);
    let (dx, grads) = m.backward(&cache, &g);
    let (dxt, grads_t) = twin.backward(&cache_t, &g);
    close("input gradient", &values(&dx), &values(&dxt), 0.0);
    let (a, b) = (grads_dict::<Cpu, SeqMlp<Cpu>>(&grads), grads_dict::<Cpu, SeqTwin<Cpu>>(&grads_t));
    assert_eq!(a.len(), 6);
    for ((name, f), (_, u)) in a.iter().zip(&b) {
        close(name, &f.values.to_f64_vec(), &u.values.to_f64_vec(), 0.0);
    }
    let params = grads_dict::<Cpu, SeqMlp<Cpu>>(&m.backward_params(&cache, &g));
    for ((name, p), (_, f)) in params.iter().zip(&a) {
        assert_eq!(p.values.to_f64_vec(), f.values.to_f64_vec(), "{name}");
    }
    check_model(&m, &normal([3, 8], 24), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn kernel_functions_in_groups_agree() {
    let plan = Kerneled::<Cpu>::FUSION;
    assert_eq!(plan.groups.len(), 1, "{plan}");
    assert_eq!(plan.groups[0].ops.iter().filter(|o| **o == "swish").count(), 2, "{plan}");
    assert!(plan.groups[0].wgsl.contains("= swish("), "{}", plan.groups[0].wgsl);
    agree!(Kerneled, KerneledUnfused, normal([3, 5, 8], 25), 4);
    let m = Kerneled::new_seeded(26, &CpuDevice);
    check_model(&m, &normal([2, 4, 8], 27), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn fused_backward_matches_finite_differences_in_f64() {
    let m = Fused::new_seeded(6, &CpuDevice);
    let x = normal([2, 4, 8], 7);
    check_model(&m, &x, true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn dropouts_in_groups_agree_and_drop_only_in_training() {
    let plan = Dropped::<Cpu>::FUSION;
    let ops: Vec<&[&str]> = plan.groups.iter().map(|g| g.ops).collect();
    assert!(ops.iter().any(|o| o.starts_with(&["gelu", "mul_scalar", "dropout", "add"])), "{plan}");
    assert!(ops.iter().any(|o| o.starts_with(&["tanh", "dropout", "mul"])), "{plan}");
    assert!(plan.groups.iter().all(|g| g.wgsl.contains("select(")), "{plan}");
    agree!(Dropped, DroppedUnfused, normal([3, 5, 8], 23), 2);
    // Training drops about half of what the group computes; inference
    // drops nothing.
    let x = normal([8, 32, 8], 24);
    let mut m = Dropped::new_seeded(25, &CpuDevice);
    let (y, _) = m.forward_train(&x, &mut Ctx::train(26));
    let unchanged = values(&y).iter().zip(values(&m.forward(&x))).filter(|(a, b)| *a == b).count();
    assert!(unchanged < y.numel() / 2, "{unchanged} of {} unchanged in training", y.numel());
    check_model(&m, &normal([2, 3, 8], 27), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn softmaxes_after_groups_agree() {
    let plan = Softmaxed::<Cpu>::FUSION;
    let ops: Vec<&[&str]> = plan.groups.iter().map(|g| g.ops).collect();
    assert!(ops.contains(&&["mul_scalar", "add", "softmax"][..]), "{plan}");
    assert!(ops.contains(&&["tanh", "sub", "log_softmax"][..]), "{plan}");
    assert!(plan.forward_ops[0] < plan.forward_ops[1], "{plan}");
    agree!(Softmaxed, SoftmaxedUnfused, normal([3, 5, 8], 28), 4);
    let m = Softmaxed::new_seeded(29, &CpuDevice);
    check_model(&m, &normal([2, 4, 8], 30), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn sequential_models_fuse_runs_of_elementwise_fields() {
    let plan = SeqDrop::<Cpu>::FUSION;
    assert_eq!(plan.groups.len(), 1, "{plan}");
    assert_eq!(plan.groups[0].ops, ["gelu", "dropout"]);
    assert!(plan.groups[0].wgsl.contains("unary_gelu("), "{}", plan.groups[0].wgsl);
    assert_eq!(plan.epilogues, &["fc2 + out"]);
    assert_eq!(plan.forward_ops, [3, 4]);
    assert_eq!(plan.backward_ops, [4, 5]);
    assert!(SeqDrop::new_seeded(0, &CpuDevice).summary().contains("SeqDrop_fused0"));
    agree!(SeqDrop, SeqDropTwin, normal([6, 8], 31), 4);
    let plain = SeqDropPlain::<Cpu>::FUSION;
    assert!(plain.groups.is_empty() && plain.recomputed.is_empty(), "{plain}");
    assert_eq!((plain.epilogues, plain.forward_ops), (&["fc2 + out"][..], [4, 4]));
    agree!(SeqDrop, SeqDropPlain, normal([6, 8], 37), 4);
    let m = SeqDrop::new_seeded(32, &CpuDevice);
    check_model(&m, &normal([3, 8], 33), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
}

#[test]
fn fields_after_a_nested_model_fuse_too() {
    let plan = AfterNested::<Cpu>::FUSION;
    assert_eq!(plan.groups.len(), 1, "{plan}");
    assert_eq!(plan.groups[0].ops, ["gelu", "dropout", "layer_norm"]);
    assert!(plan.recomputed.contains(&"out <- act2"), "{plan}");
    agree!(AfterNested, AfterNestedPlain, normal([6, 8], 47), 8);
}

#[test]
fn activation_fields_of_forward_bodies_fuse_as_their_ops() {
    let plan = SeqDropBody::<Cpu>::FUSION;
    assert_eq!(plan.groups.len(), 1, "{plan}");
    assert_eq!(plan.groups[0].ops, ["gelu", "dropout"]);
    assert_eq!(plan.epilogues, &["fc2 + out"]);
    assert_eq!(plan.forward_ops, [3, 4]);
    agree!(SeqDropBody, SeqDropTwin, normal([6, 8], 41), 4);
    agree!(SeqDropBody, SeqDrop, normal([6, 8], 43), 4);
}

#[test]
fn norms_after_groups_agree() {
    let plan = Normed::<Cpu>::FUSION;
    let ops: Vec<&[&str]> = plan.groups.iter().map(|g| g.ops).collect();
    assert!(ops.contains(&&["mul_scalar", "tanh", "add", "layer_norm"][..]), "{plan}");
    assert!(ops.contains(&&["gelu", "mul_scalar", "sub", "rms_norm"][..]), "{plan}");
    assert!(plan.forward_ops[0] < plan.forward_ops[1], "{plan}");
    agree!(Normed, NormedUnfused, normal([3, 5, 8], 40), 9);
    let m = Normed::new_seeded(41, &CpuDevice);
    check_model(&m, &normal([2, 4, 8], 42), true, |m, x, ctx| m.forward_train(x, ctx), |m, c, g| m.backward(c, g));
    // Rows longer than one piece of the CPU loop, and a batch big enough
    // to split over threads, against the layer run on the group's values.
    let (ln, x) = (LayerNorm::<Cpu, 1500>::new(Default::default(), &CpuDevice), normal([300, 1500], 43));
    let y = normal([1, 1500], 44);
    let group = |x: &Tensor<Cpu, 2>| x * 0.5 + (&y * 2.0).tanh();
    let (w, b) = (normal([1500], 45), normal([1500], 46));
    let ln = LayerNorm::<Cpu, 1500> { weight: w, bias: b, ..ln };
    let (want, want_stats) = group(&x).norm_with_stats(Some(&ln.weight), Some(&ln.bias), 1e-5, true);
    for keep in [false, true] {
        let (got, stats, kept) = blaze::runtime::kernel::call_norm::<norm_test::half_tanh::Kernel, Cpu, 2>(
            &[(&x).into(), (&y).into()],
            blaze::nn::RowNormLayer::row_norm(&ln),
            keep,
        );
        close("fused norm", &values(&got), &values(&want), 1e-5);
        close("fused norm statistics", &values(&stats), &values(&want_stats), 1e-5);
        assert_eq!(kept.is_some(), keep);
        if let Some(kept) = kept {
            close("kept values", &values(&kept), &values(&group(&x)), 1e-6);
        }
    }
}

mod norm_test {
    blaze::kernel! {
        /// `x / 2 + tanh(2 y)`.
        pub fn half_tanh(x: f32, y: f32) -> f32 {
            x * 0.5 + tanh(y * 2.0)
        }
    }
}
