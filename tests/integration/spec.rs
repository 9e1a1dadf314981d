//! The runtime's built-in layers hold exactly what the spec lists: each
//! parameter and buffer under its name, with its shape and initial values,
//! in order; and `#[model]`'s parameter count is the spec's.

use blaze::nn::{self, FromSpec, Module};
use blaze::prelude::*;
use blaze::spec::{Init, Layer, Options};

fn holds<M: Module<Cpu> + FromSpec<Cpu>>(sizes: &[usize], options: Options) {
    let layer = <M as FromSpec<Cpu>>::LAYER;
    let m = M::from_spec(&options, &mut blaze::Rng::seed_from_u64(0), &CpuDevice);
    let got: Vec<(String, Vec<usize>)> = nn::state_dict::<Cpu, _>(&m).into_iter().map(|(n, t)| (n, t.shape)).collect();
    let spec = layer.params(sizes, &options);
    let want: Vec<(String, Vec<usize>)> = spec.iter().map(|p| (p.name.to_owned(), p.shape.clone())).collect();
    assert_eq!(got, want, "{layer:?}");
    assert_eq!(nn::num_params::<Cpu, M>(&m), layer.num_params(sizes, &options), "{layer:?}: trainable scalars");
    for (p, (_, t)) in spec.iter().zip(nn::state_dict::<Cpu, _>(&m)) {
        let v = t.values.to_f64_vec();
        let ok = match p.init {
            Init::FanInUniform { fan_in } => v.iter().all(|x| x.abs() <= 1.0 / (fan_in as f64).sqrt()),
            Init::XavierUniform { fan_in, fan_out } => {
                let bound = (6.0 / (fan_in + fan_out) as f64).sqrt();
                v.iter().all(|x| x.abs() <= bound) && v.iter().any(|x| x.abs() > bound / 2.0)
            }
            Init::Normal => v.iter().any(|x| x.abs() > 1.0) && v.iter().all(|x| x.is_finite()),
            Init::Ones => v.iter().all(|&x| x == 1.0),
            Init::Zeros => v.iter().all(|&x| x == 0.0),
        };
        assert!(ok, "{layer:?}.{}: values do not follow {:?}", p.name, p.init);
    }
}

#[test]
fn every_built_in_layer_holds_what_the_spec_lists() {
    let d = Options::default();
    holds::<nn::Linear<Cpu, 7, 5>>(&[7, 5], d);
    holds::<nn::Linear<Cpu, 7, 5>>(&[7, 5], Options { bias: false, ..d });
    holds::<nn::Conv2d<Cpu, 4, 6, 3>>(&[4, 6, 3], d);
    holds::<nn::Conv2d<Cpu, 4, 6, 3>>(&[4, 6, 3], Options { groups: 2, bias: false, ..d });
    holds::<nn::BatchNorm2d<Cpu, 5>>(&[5], d);
    holds::<nn::LayerNorm<Cpu, 5>>(&[5], d);
    holds::<nn::Embedding<Cpu, 30, 8>>(&[30, 8], d);
    holds::<nn::MaxPool2d<2>>(&[2], d);
    holds::<nn::Relu>(&[], d);
    holds::<nn::Dropout>(&[], Options { p: 0.2, ..d });
    holds::<nn::ConvTranspose2d<Cpu, 4, 6, 3>>(&[4, 6, 3], d);
    holds::<nn::ConvTranspose2d<Cpu, 4, 6, 3>>(&[4, 6, 3], Options { groups: 2, bias: false, ..d });
    holds::<nn::AdaptiveAvgPool2d<2, 3>>(&[2, 3], d);
    holds::<nn::Lstm<Cpu, 4, 3>>(&[4, 3], d);
    holds::<nn::Lstm<Cpu, 4, 3>>(&[4, 3], Options { num_layers: 3, bidirectional: true, ..d });
    holds::<nn::Gru<Cpu, 4, 3>>(&[4, 3], Options { num_layers: 2, bias: false, ..d });
    holds::<nn::MultiHeadAttention<Cpu, 8, 2>>(&[8, 2], Layer::MultiHeadAttention.defaults());
    holds::<nn::MultiHeadAttention<Cpu, 8, 2>>(
        &[8, 2],
        Options { bias: false, ..Layer::MultiHeadAttention.defaults() },
    );
    holds::<nn::Upsample>(&[], Layer::Upsample.defaults());
    holds::<nn::RMSNorm<Cpu, 6>>(&[6], Layer::RMSNorm.defaults());
    holds::<nn::RMSNorm<Cpu, 6>>(&[6], Options { elementwise_affine: false, ..Layer::RMSNorm.defaults() });
}

#[test]
fn options_reach_the_runtime_layers() {
    let o = Options {
        stride: Some(2),
        padding: 1,
        dilation: 2,
        p: 0.3,
        negative_slope: 0.2,
        eps: 1e-3,
        momentum: 0.5,
        ..Options::default()
    };
    let rng = &mut blaze::Rng::seed_from_u64(0);
    let conv = <nn::Conv2d<Cpu, 2, 2, 3> as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice);
    assert_eq!((conv.options.stride, conv.options.padding, conv.options.dilation), ([2, 2], [1, 1], [2, 2]));
    let pool = <nn::MaxPool2d<3> as FromSpec<Cpu>>::from_spec(&Options::default(), rng, &CpuDevice);
    assert_eq!(pool.options.stride, [3, 3], "pooling's stride defaults to its window");
    let bn = <nn::BatchNorm2d<Cpu, 2> as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice);
    assert_eq!((bn.config.eps, bn.config.momentum), (1e-3, 0.5));
    assert_eq!(<nn::Dropout as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice).p, 0.3);
    assert_eq!(Layer::Linear.name(), "Linear");
    let o = Options { alpha: 0.5, beta: 2.0, threshold: 3.0, dim: 1, ..Options::default() };
    let softplus = <nn::Softplus as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice);
    assert_eq!((softplus.beta, softplus.threshold), (2.0, 3.0));
    assert_eq!(<nn::Elu as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice).alpha, 0.5);
    assert_eq!(<nn::Softmax as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice).dim, 1);
    let o = Options { scale_factor: 3.0, mode: blaze::spec::Interpolation::Bilinear, ..Options::default() };
    let up = <nn::Upsample as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice);
    assert_eq!((up.scale_factor, up.mode), (3.0, blaze::spec::Interpolation::Bilinear));
    let up = nn::Upsample::default();
    assert_eq!((up.scale_factor, up.mode, up.align_corners), (2.0, blaze::spec::Interpolation::Nearest, false));
    let o = Options { mode: blaze::spec::Interpolation::Bilinear, align_corners: true, ..Options::default() };
    assert!(<nn::Upsample as FromSpec<Cpu>>::from_spec(&o, rng, &CpuDevice).align_corners);
}

#[test]
fn activation_keys_check_their_values_and_default_as_pytorch() {
    use blaze::spec::Value;
    let mut o = Layer::Softmax.defaults();
    assert_eq!(o.dim, -1, "the last dim");
    o.set(Layer::Softmax, "dim", Value::Int(-2)).expect("valid");
    assert_eq!(o.dim, -2);
    let err = |l: Layer, k, v| l.defaults().set(l, k, v).expect_err("invalid").0;
    assert_eq!(err(Layer::Softmax, "dim", Value::Float(1.0)), "`dim` takes an integer (negative counts from the last)");
    assert_eq!(err(Layer::Softplus, "beta", Value::Float(0.0)), "`beta` must be positive, got 0");
    assert_eq!(err(Layer::Elu, "beta", Value::Int(1)), "`Elu` has no option `beta`");
    let d = Layer::Softplus.defaults();
    assert_eq!((d.beta, d.threshold, Layer::Elu.defaults().alpha), (1.0, 20.0, 1.0));
    let (sp, elu) = (nn::Softplus::default(), nn::Elu::default());
    assert_eq!((sp.beta, sp.threshold, elu.alpha, nn::Softmax::default().dim), (1.0, 20.0, 1.0, -1));
}

/// The summary counts with the spec.
#[model(input = [1, 8, 8])]
struct Small {
    #[layer(padding = 1, groups = 1)]
    conv: Conv2d<1, 4, 3>,
    act: Relu,
    flat: Flatten,
    fc: Linear<256, 3>,
}

#[test]
fn the_models_parameter_count_is_the_specs() {
    let m = Small::<Cpu>::new(&CpuDevice);
    assert_eq!(nn::num_params::<Cpu, _>(&m), 40 + 771);
    assert!(m.summary().contains("Total params: 811"), "{}", m.summary());
}

#[test]
fn rms_norm_defaults_as_pytorch_where_layer_norm_does_not() {
    assert_eq!(Layer::RMSNorm.defaults().eps, f32::EPSILON as f64);
    assert_eq!(Layer::LayerNorm.defaults().eps, 1e-5);
    let config = nn::RMSNormConfig::default();
    assert_eq!((config.eps, config.elementwise_affine), (f32::EPSILON as f64, true));
    let rms = <nn::RMSNorm<Cpu, 3> as FromSpec<Cpu>>::from_spec(
        &Options { eps: 1e-3, elementwise_affine: false, ..Options::default() },
        &mut blaze::Rng::seed_from_u64(0),
        &CpuDevice,
    );
    assert_eq!((rms.config.eps, rms.weight.is_none()), (1e-3, true));
}

/// Tensor ops refuse shapes by the shared rules (`blaze::spec::rules`), in
/// the words `#[model]` uses for a forward body at compile time (see
/// `ui-tests/graph/shape_mismatch.stderr`).
#[test]
fn tensor_ops_refuse_shapes_by_the_shared_rules() {
    fn refusal(f: impl FnOnce()) -> String {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("the op ran");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }
    let t = |shape: [usize; 2]| Tensor::<Cpu, 2>::zeros(shape, &CpuDevice);
    assert_eq!(
        refusal(|| drop(t([2, 16]) + t([2, 8]))),
        "add: shapes [2, 16] and [2, 8] do not broadcast (dim 1: 16 vs 8)"
    );
    assert_eq!(
        refusal(|| drop(t([2, 3]).matmul(&t([4, 5])))),
        "matmul: [2, 3] times [4, 5]: inner dims 3 and 4 differ"
    );
    assert_eq!(refusal(|| drop(t([2, 3]).narrow(1, 2, 2))), "narrow: 2..4 is out of range for dim 1 of [2, 3]");
    assert_eq!(refusal(|| drop(t([2, 3]).softmax(2))), "softmax: dim 2 is out of range for a tensor of rank 2");
    assert_eq!(refusal(|| drop(t([2, 3]).reshape([4, -1]))), "reshape: cannot infer the -1 in [4, -1] from [2, 3]");
    assert_eq!(refusal(|| drop(t([2, 3]).reshape([5, 1]))), "reshape: [2, 3] has 6 elements, [5, 1] has 5");
    assert_eq!(
        refusal(|| drop(t([2, 3]).permute([1, 1]))),
        "permute: [1, 1] is not a permutation of the 2 dims of [2, 3]"
    );
    assert_eq!(
        refusal(|| drop(Tensor::cat(&[t([2, 3]), t([2, 4]), t([3, 4])], 1))),
        "cat: tensor 2 has shape [3, 4], which does not match [2, 3] outside dim 1"
    );
}
