//! [`Export`] for every built-in layer: the ONNX operators that compute
//! what its inference forward computes, its weights under the names its
//! parameters have. The op table's activations are generated
//! (`__unary_exports!`), each through [`ops::unary`].

use blaze_nn::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose2d, Dropout, Elu, Embedding,
    Flatten, GlobalAvgPool, GroupNorm, Gru, Identity, LayerNorm, LeakyRelu, Linear, LogSoftmax, Lstm, Map, MaxPool2d,
    MultiHeadAttention, RMSNorm, Silu, Softmax, Softplus, Upsample, join,
};
use blaze_runtime::kernel::Elementwise;
use blaze_runtime::{Backend, Conv2dOptions, Tensor};
use blaze_spec::Interpolation;

use crate::graph::{Attr, OnnxGraph, Value};
use crate::{Export, ops};

fn ints(v: &[usize]) -> Attr {
    Attr::Ints(v.iter().map(|&x| x as i64).collect())
}

/// A parameter of the layer under `name`.
fn param<B: Backend, const D: usize>(g: &mut OnnxGraph, name: &str, field: &str, t: &Tensor<B, D>) -> Value {
    g.weight(&join(name, field), &t.to_data())
}

/// `x W^T + b` over the last dim: `Linear`'s forward, and `out_proj`'s.
pub(crate) fn linear<B: Backend>(
    g: &mut OnnxGraph,
    name: &str,
    x: &Value,
    weight: &Tensor<B, 2>,
    bias: Option<&Tensor<B, 1>>,
) -> Value {
    let w = param(g, name, "weight", weight);
    if x.rank() == 2 {
        // `Gemm` with `W` transposed, as PyTorch exports a `Linear` of
        // rows: the weight stays as the checkpoint holds it.
        let b = bias.map(|b| param(g, name, "bias", b));
        let attrs = vec![("transB", Attr::Int(1))];
        return g.nodes("Gemm", &[Some(x), Some(&w), b.as_ref()], attrs, &[2]).remove(0);
    }
    let wt = g.node("Transpose", &[&w], vec![("perm", Attr::Ints(vec![1, 0]))], 2);
    let y = g.node("MatMul", &[x, &wt], vec![], x.rank());
    with_param(g, "Add", y, name, "bias", bias)
}

/// `op` of `y` and the parameter `field` where the layer has it (an
/// optional bias or weight), else `y`.
fn with_param<B: Backend>(
    g: &mut OnnxGraph,
    op: &'static str,
    y: Value,
    name: &str,
    field: &str,
    t: Option<&Tensor<B, 1>>,
) -> Value {
    match t {
        Some(t) => {
            let p = param(g, name, field, t);
            g.map(op, &[&y, &p])
        }
        None => y,
    }
}

impl<B: Backend, const I: usize, const O: usize> Export for Linear<B, I, O> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        linear(g, name, &x[0], &self.weight, self.bias.as_ref())
    }
}

/// `op` (`Conv`, `ConvTranspose`) of `x` by the layer's weight and bias,
/// with `attrs` for each spatial dim.
fn conv<B: Backend, const D: usize>(
    g: &mut OnnxGraph,
    op: &'static str,
    name: &str,
    x: &Value,
    weight: &Tensor<B, D>,
    bias: Option<&Tensor<B, 1>>,
    attrs: Vec<(&'static str, Attr)>,
) -> Value {
    let w = param(g, name, "weight", weight);
    let b = bias.map(|b| param(g, name, "bias", b));
    g.nodes(op, &[Some(x), Some(&w), b.as_ref()], attrs, &[x.rank()]).remove(0)
}

/// A convolution's attributes for each spatial dim: `kernel` square,
/// the padding on both sides of each dim.
fn conv_attrs(kernel: usize, o: &Conv2dOptions, dims: std::ops::Range<usize>) -> Vec<(&'static str, Attr)> {
    let pads: Vec<usize> = o.padding[dims.clone()].iter().chain(&o.padding[dims.clone()]).copied().collect();
    vec![
        ("kernel_shape", ints(&vec![kernel; dims.len()])),
        ("strides", ints(&o.stride[dims.clone()])),
        ("pads", ints(&pads)),
        ("dilations", ints(&o.dilation[dims])),
        ("group", Attr::Int(o.groups as i64)),
    ]
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Export for Conv2d<B, CIN, COUT, K> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let attrs = conv_attrs(K, &self.options, 0..2);
        conv(g, "Conv", name, &x[0], &self.weight, self.bias.as_ref(), attrs)
    }
}

/// A 1-D convolution runs as a 2-D one of height 1: its own sizes are the
/// options' widths.
impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Export for Conv1d<B, CIN, COUT, K> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let attrs = conv_attrs(K, &self.options, 1..2);
        conv(g, "Conv", name, &x[0], &self.weight, self.bias.as_ref(), attrs)
    }
}

impl<B: Backend, const CIN: usize, const COUT: usize, const K: usize> Export for ConvTranspose2d<B, CIN, COUT, K> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let mut attrs = conv_attrs(K, &self.options, 0..2);
        attrs.push(("output_padding", ints(&[self.output_padding, self.output_padding])));
        conv(g, "ConvTranspose", name, &x[0], &self.weight, self.bias.as_ref(), attrs)
    }
}

fn pool(
    g: &mut OnnxGraph,
    op: &'static str,
    x: &Value,
    o: &blaze_runtime::Pool2dOptions,
    extra: Vec<(&'static str, Attr)>,
) -> Value {
    let [ph, pw] = o.padding;
    let mut attrs = vec![
        ("kernel_shape", ints(&o.kernel)),
        ("strides", ints(&o.stride)),
        ("pads", ints(&[ph, pw, ph, pw])),
        ("ceil_mode", Attr::Int(i64::from(o.ceil_mode))),
    ];
    attrs.extend(extra);
    g.node(op, &[x], attrs, x.rank())
}

impl<const K: usize> Export for MaxPool2d<K> {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        pool(g, "MaxPool", &x[0], &self.options, vec![])
    }
}

/// PyTorch's default: the padding counts in each window's divisor.
impl<const K: usize> Export for AvgPool2d<K> {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        pool(g, "AveragePool", &x[0], &self.options, vec![("count_include_pad", Attr::Int(1))])
    }
}

/// A global average where the output is 1x1, else windows of the input
/// over the output (as PyTorch exports it, which needs each input side a
/// multiple of the output's).
impl<const H: usize, const W: usize> Export for AdaptiveAvgPool2d<H, W> {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        let x = &x[0];
        if H == 1 && W == 1 {
            return g.node("GlobalAveragePool", &[x], vec![], x.rank());
        }
        let (Some(ih), Some(iw)) = (x.size(2), x.size(3)) else {
            panic!("export: AdaptiveAvgPool2d<{H}, {W}> needs its input's height and width while exporting");
        };
        assert!(
            ih % H == 0 && iw % W == 0,
            "export: AdaptiveAvgPool2d<{H}, {W}> on a {ih}x{iw} input has no ONNX form: ONNX pools with one window \
             size, which needs each input side a multiple of the output's"
        );
        let (kh, kw) = (ih / H, iw / W);
        let attrs = vec![("kernel_shape", ints(&[kh, kw])), ("strides", ints(&[kh, kw]))];
        g.node("AveragePool", &[x], attrs, x.rank())
    }
}

impl Export for GlobalAvgPool {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        let pooled = g.node("GlobalAveragePool", &[&x[0]], vec![], 4);
        g.node("Flatten", &[&pooled], vec![("axis", Attr::Int(1))], 2)
    }
}

impl Export for Upsample {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        let x = &x[0];
        let s = self.scale_factor as f32;
        let scales = g.floats("scales", &[4], &[1.0, 1.0, s, s]);
        let attrs = match (self.mode, self.align_corners) {
            (Interpolation::Nearest, _) => vec![
                ("mode", Attr::Str("nearest".into())),
                ("coordinate_transformation_mode", Attr::Str("asymmetric".into())),
                ("nearest_mode", Attr::Str("floor".into())),
            ],
            (Interpolation::Bilinear, corners) => vec![
                ("mode", Attr::Str("linear".into())),
                (
                    "coordinate_transformation_mode",
                    Attr::Str(if corners { "align_corners" } else { "pytorch_half_pixel" }.into()),
                ),
            ],
        };
        g.nodes("Resize", &[Some(x), None, Some(&scales)], attrs, &[x.rank()]).remove(0)
    }
}

impl Export for Flatten {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        g.node("Flatten", &[&x[0]], vec![("axis", Attr::Int(1))], 2)
    }
}

impl Export for LeakyRelu {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        g.node("LeakyRelu", &[&x[0]], vec![("alpha", Attr::Float(self.negative_slope as f32))], x[0].rank())
    }
}

impl Export for Elu {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        g.node("Elu", &[&x[0]], vec![("alpha", Attr::Float(self.alpha as f32))], x[0].rank())
    }
}

/// `softplus(beta x) / beta`; PyTorch's `threshold` (linear past it)
/// moves the value by less than `e^-threshold`, and ONNX has none.
impl Export for Softplus {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        let x = &x[0];
        if self.beta == 1.0 {
            return g.node("Softplus", &[x], vec![], x.rank());
        }
        let beta = g.scalar(self.beta, crate::elem::FLOAT);
        let bx = g.map("Mul", &[x, &beta]);
        let s = g.node("Softplus", &[&bx], vec![], x.rank());
        g.map("Div", &[&s, &beta])
    }
}

impl Export for Silu {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        let s = g.node("Sigmoid", &[&x[0]], vec![], x[0].rank());
        g.map("Mul", &[&x[0], &s])
    }
}

impl Export for Identity {
    fn export(&self, _: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        x[0].clone()
    }
}

/// Inference keeps every element.
impl Export for Dropout {
    fn export(&self, _: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        x[0].clone()
    }
}

impl Export for Softmax {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        g.node("Softmax", &[&x[0]], vec![("axis", Attr::Int(self.dim))], x[0].rank())
    }
}

impl Export for LogSoftmax {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        g.node("LogSoftmax", &[&x[0]], vec![("axis", Attr::Int(self.dim))], x[0].rank())
    }
}

/// The kernel's own ONNX form, printed by `kernel!`.
impl<K: Elementwise> Export for Map<K> {
    fn export(&self, g: &mut OnnxGraph, _: &str, x: &[Value]) -> Value {
        K::onnx(g, &x[..1])
    }
}

fn batch_norm<B: Backend>(g: &mut OnnxGraph, name: &str, x: &Value, p: [&Tensor<B, 1>; 4], eps: f64) -> Value {
    let fields = ["weight", "bias", "running_mean", "running_var"];
    let p: Vec<Value> = p.iter().zip(fields).map(|(t, f)| param(g, name, f, *t)).collect();
    let attrs = vec![("epsilon", Attr::Float(eps as f32))];
    g.node("BatchNormalization", &[x, &p[0], &p[1], &p[2], &p[3]], attrs, x.rank())
}

impl<B: Backend, const C: usize> Export for BatchNorm2d<B, C> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let p = [&self.weight, &self.bias, &self.running_mean, &self.running_var];
        batch_norm(g, name, &x[0], p, self.config.eps)
    }
}

impl<B: Backend, const C: usize> Export for BatchNorm1d<B, C> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let p = [&self.weight, &self.bias, &self.running_mean, &self.running_var];
        batch_norm(g, name, &x[0], p, self.config.eps)
    }
}

impl<B: Backend, const N: usize> Export for LayerNorm<B, N> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let (w, b) = (param(g, name, "weight", &self.weight), param(g, name, "bias", &self.bias));
        let attrs = vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(self.config.eps as f32))];
        g.node("LayerNormalization", &[&x[0], &w, &b], attrs, x[0].rank())
    }
}

/// `x / sqrt(mean(x²) + eps)` over the last dim, times the weight.
impl<B: Backend, const N: usize> Export for RMSNorm<B, N> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let x = &x[0];
        let sq = g.map("Mul", &[x, x]);
        let axes = g.ints(&[-1]);
        let mean = g.node("ReduceMean", &[&sq, &axes], vec![("keepdims", Attr::Int(1))], x.rank());
        let eps = g.scalar(self.config.eps, crate::elem::FLOAT);
        let var = g.map("Add", &[&mean, &eps]);
        let std = g.map("Sqrt", &[&var]);
        let y = g.map("Div", &[x, &std]);
        with_param(g, "Mul", y, name, "weight", self.weight.as_ref())
    }
}

/// The channels in `G` groups, each normalised over its channels and
/// positions (`InstanceNormalization` of the grouped view), then the
/// per-channel weight and bias.
impl<B: Backend, const G: usize, const C: usize> Export for GroupNorm<B, G, C> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let x = &x[0];
        let grouped_shape = g.ints(&[0, G as i64, -1]);
        let grouped = g.node("Reshape", &[x, &grouped_shape], vec![], 3);
        let ones = g.floats("ones", &[G], &vec![1.0; G]);
        let zeros = g.floats("zeros", &[G], &vec![0.0; G]);
        let attrs = vec![("epsilon", Attr::Float(self.config.eps as f32))];
        let normed = g.node("InstanceNormalization", &[&grouped, &ones, &zeros], attrs, 3);
        let shape = g.node("Shape", &[x], vec![], 1);
        let y = g.node("Reshape", &[&normed, &shape], vec![], x.rank());
        // [C] as [C, 1, ..] against the channel dim.
        let axes: Vec<i64> = (1..x.rank() as i64 - 1).collect();
        let axes = g.ints(&axes);
        let (w, b) = (param(g, name, "weight", &self.weight), param(g, name, "bias", &self.bias));
        let w = g.node("Unsqueeze", &[&w, &axes], vec![], x.rank() - 1);
        let b = g.node("Unsqueeze", &[&b, &axes], vec![], x.rank() - 1);
        let y = g.map("Mul", &[&y, &w]);
        g.map("Add", &[&y, &b])
    }
}

impl<B: Backend, const V: usize, const D: usize> Export for Embedding<B, V, D> {
    const TAKES_IDS: bool = true;

    fn export(&self, g: &mut OnnxGraph, name: &str, ids: &[Value]) -> Value {
        let w = param(g, name, "weight", &self.weight);
        g.node("Gather", &[&w, &ids[0]], vec![("axis", Attr::Int(0))], ids[0].rank() + 1)
    }
}

/// Called on one input, self-attention; on a query, keys and values (and
/// maybe a key-padding mask), attention of the query over the keys.
impl<B: Backend, const D: usize, const H: usize> Export for MultiHeadAttention<B, D, H> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let (q, k, v) = match x {
            [x] => (x, x, x),
            [q, k, v, ..] => (q, k, v),
            [] | [_, _] => panic!("export: MultiHeadAttention<{D}, {H}> takes one input or a query, keys and values"),
        };
        let w = param(g, name, "in_proj_weight", &self.in_proj_weight);
        let b = self.in_proj_bias.as_ref().map(|b| param(g, name, "in_proj_bias", b));
        // [n, len, D] projected by rows i D.. of the weights, as heads
        // [n, H, len, D / H].
        let heads = |g: &mut OnnxGraph, x: &Value, i: usize| {
            let (start, end) = (g.ints(&[(i * D) as i64]), g.ints(&[((i + 1) * D) as i64]));
            let zero = g.ints(&[0]);
            let wi = g.node("Slice", &[&w, &start, &end, &zero], vec![], 2);
            let wt = g.node("Transpose", &[&wi], vec![("perm", Attr::Ints(vec![1, 0]))], 2);
            // The bias's share first: an importer reads `MatMul` then `Add`
            // of a known bias as one linear map.
            let bi = b.as_ref().map(|b| g.node("Slice", &[b, &start, &end, &zero], vec![], 1));
            let mut y = g.node("MatMul", &[x, &wt], vec![], 3);
            if let Some(bi) = &bi {
                y = g.map("Add", &[&y, bi]);
            }
            let split = g.ints(&[0, 0, H as i64, (D / H) as i64]);
            let y = g.node("Reshape", &[&y, &split], vec![], 4);
            g.node("Transpose", &[&y], vec![("perm", Attr::Ints(vec![0, 2, 1, 3]))], 4)
        };
        let (qh, kh, vh) = (heads(g, q, 0), heads(g, k, 1), heads(g, v, 2));
        let kt = g.node("Transpose", &[&kh], vec![("perm", Attr::Ints(vec![0, 1, 3, 2]))], 4);
        let scores = g.node("MatMul", &[&qh, &kt], vec![], 4);
        let scale = g.scalar(1.0 / ((D / H) as f64).sqrt(), crate::elem::FLOAT);
        let mut scores = g.map("Mul", &[&scores, &scale]);
        if self.config.causal {
            scores = ops::causal_fill(g, &scores, f64::NEG_INFINITY);
        }
        if let Some(mask) = x.get(3) {
            // Nonzero where a key is padding: [n, S] as [n, 1, 1, S].
            let zero = g.scalar(0.0, crate::elem::FLOAT);
            let padding = g.map("Equal", &[mask, &zero]);
            let padding = g.node("Not", &[&padding], vec![], 2);
            let axes = g.ints(&[1, 2]);
            let padding = g.node("Unsqueeze", &[&padding, &axes], vec![], 4);
            let ninf = g.scalar(f64::NEG_INFINITY, crate::elem::FLOAT);
            scores = g.map("Where", &[&padding, &ninf, &scores]);
        }
        let weights = g.node("Softmax", &[&scores], vec![("axis", Attr::Int(-1))], 4);
        let heads = g.node("MatMul", &[&weights, &vh], vec![], 4);
        let heads = g.node("Transpose", &[&heads], vec![("perm", Attr::Ints(vec![0, 2, 1, 3]))], 4);
        let joined_shape = g.ints(&[0, 0, D as i64]);
        let joined = g.node("Reshape", &[&heads, &joined_shape], vec![], 3);
        let out = join(name, "out_proj");
        linear(g, &out, &joined, &self.out_proj.weight, self.out_proj.bias.as_ref())
    }
}

/// Blocks of `h` rows of `m` (`[rows, cols]`) in the order `order`.
fn gate_rows(m: &[f32], h: usize, cols: usize, order: &[usize]) -> Vec<f32> {
    order.iter().flat_map(|&b| m[b * h * cols..(b + 1) * h * cols].iter().copied()).collect()
}

/// A stack of recurrent layers as ONNX `op` nodes (`LSTM`, `GRU`) with
/// gates reordered from PyTorch's rows by `order`: each layer reads
/// `[T, n, features]` and hands `[T, n, dirs H]` on; the input and output
/// are batch-first.
struct Rnn<'a, B: Backend> {
    op: &'static str,
    gates: usize,
    /// PyTorch's gate blocks in ONNX's order.
    order: &'static [usize],
    extra: Vec<(&'static str, Attr)>,
    weights: &'a [blaze_nn::RnnWeights<B>],
    config: &'a blaze_nn::RnnConfig,
    hidden: usize,
}

impl<B: Backend> Rnn<'_, B> {
    fn export(self, g: &mut OnnxGraph, name: &str, x: &Value) -> Value {
        let (h, gates) = (self.hidden, self.gates);
        let dirs = self.config.directions();
        let mut seq = g.node("Transpose", &[x], vec![("perm", Attr::Ints(vec![1, 0, 2]))], 3);
        for l in 0..self.config.num_layers {
            let ws = &self.weights[l * dirs..(l + 1) * dirs];
            let host = |t: &Tensor<B, 2>| (t.to_vec::<f32>(), t.shape()[1]);
            let mut w = Vec::new();
            let mut r = Vec::new();
            let mut b = Vec::new();
            let mut cols = 0;
            for d in ws {
                let (wi, c) = host(&d.weight_ih.to_dtype(blaze_runtime::DType::F32));
                cols = c;
                w.extend(gate_rows(&wi, h, c, self.order));
                let (wh, _) = host(&d.weight_hh.to_dtype(blaze_runtime::DType::F32));
                r.extend(gate_rows(&wh, h, h, self.order));
                if let (Some(bi), Some(bh)) = (&d.bias_ih, &d.bias_hh) {
                    b.extend(gate_rows(&bi.to_dtype(blaze_runtime::DType::F32).to_vec::<f32>(), h, 1, self.order));
                    b.extend(gate_rows(&bh.to_dtype(blaze_runtime::DType::F32).to_vec::<f32>(), h, 1, self.order));
                }
            }
            let stem = join(name, &format!("l{l}"));
            let w = g.floats(&join(&stem, "W"), &[dirs, gates * h, cols], &w);
            let r = g.floats(&join(&stem, "R"), &[dirs, gates * h, h], &r);
            let b = (!b.is_empty()).then(|| g.floats(&join(&stem, "B"), &[dirs, 2 * gates * h], &b));
            let mut attrs = vec![
                ("hidden_size", Attr::Int(h as i64)),
                ("direction", Attr::Str(if dirs == 2 { "bidirectional" } else { "forward" }.into())),
            ];
            attrs.extend(self.extra.iter().cloned());
            // Y is [T, dirs, n, H]: the directions side by side per step.
            let y = g.nodes(self.op, &[Some(&seq), Some(&w), Some(&r), b.as_ref()], attrs, &[4]).remove(0);
            let y = g.node("Transpose", &[&y], vec![("perm", Attr::Ints(vec![0, 2, 1, 3]))], 4);
            let merged = g.ints(&[0, 0, -1]);
            seq = g.node("Reshape", &[&y, &merged], vec![], 3);
        }
        g.node("Transpose", &[&seq], vec![("perm", Attr::Ints(vec![1, 0, 2]))], 3)
    }
}

/// PyTorch's gates are `i, f, g, o`; ONNX's `i, o, f, c`.
impl<B: Backend, const I: usize, const H: usize> Export for Lstm<B, I, H> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let rnn = Rnn {
            op: "LSTM",
            gates: 4,
            order: &[0, 3, 1, 2],
            extra: vec![],
            weights: &self.weights,
            config: &self.config,
            hidden: H,
        };
        rnn.export(g, name, &x[0])
    }
}

/// PyTorch's gates are `r, z, n`, its candidate reset after the hidden
/// projection; ONNX's `z, r, h`, with `linear_before_reset` saying so.
impl<B: Backend, const I: usize, const H: usize> Export for Gru<B, I, H> {
    fn export(&self, g: &mut OnnxGraph, name: &str, x: &[Value]) -> Value {
        let rnn = Rnn {
            op: "GRU",
            gates: 3,
            order: &[1, 0, 2],
            extra: vec![("linear_before_reset", Attr::Int(1))],
            weights: &self.weights,
            config: &self.config,
            hidden: H,
        };
        rnn.export(g, name, &x[0])
    }
}

blaze_macros::__unary_exports!();
