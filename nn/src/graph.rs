//! What the code `#[model]` emits for a `forward` body calls: the
//! [`Graph`] trait every model implements (so one model can call another),
//! the const check of such a call, and the constants a body may build
//! (causal masks, positions). The gradients its backward computes are the
//! ops' own, in `blaze_runtime::adjoint`.
//!
//! Shapes in a body are per sample; a value built from constants alone has
//! a batch dim of 1 and broadcasts against the batch.

use super::{GradSource, Module, StaticShape};
use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor};

/// A model's shapes as the compiler sees them.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The input shapes, in the order `forward` takes them: each dim a
    /// size, or [`blaze_spec::symbol`]`(k)` for the model's `k`-th dim
    /// known only by name (`T`).
    pub inputs: &'static [StaticShape],
    /// The output shape.
    pub output: StaticShape,
}

/// Every `#[model]`, sequential or with a `forward` body: what another
/// model's `forward` needs to call it as a field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no forward pass",
    label = "a #[model] struct without `input` needs its forward body",
    note = "write `#[model(input = [T, 64])] impl {Self} {{ fn forward(&self, x: Tensor) -> Tensor {{ .. }} }}` next to the struct, or give the struct `#[model(input = [..])]` to chain its fields in order"
)]
pub trait Graph<B: Backend>: Module<B> + Clone + std::fmt::Debug + Sized {
    /// Its shapes, for the caller's compile-time check.
    const SIGNATURE: Signature;
    /// Number of trainable scalars.
    const NUM_PARAMS: usize;
    /// What its training forward keeps for its backward pass.
    type Cache;

    /// A freshly initialised model drawing from `rng`.
    fn init(rng: &mut Rng, device: &B::Device) -> Self;
}

/// Checks, while compiling, a call of a model with `sig` on arguments of
/// per-sample shapes `args` (the caller's symbols encoded like the callee's,
/// so they never equal a size; a dim the caller cannot name as a size or a
/// symbol is 0, which no dim equals): the number of inputs, their ranks
/// and sizes, and that the output has the shape `out` the caller assumes.
/// Callee symbols bind to whatever the caller passes, consistently. Fails
/// with `what`.
pub const fn check_call(sig: Signature, args: &[StaticShape], out: StaticShape, what: &str) {
    if sig.inputs.len() != args.len() {
        panic!("{}", what);
    }
    // Callee symbol k binds to bound[k] (0 while unbound: no dim is 0).
    let mut bound = [0usize; 8];
    let mut i = 0;
    while i < args.len() {
        bind(&sig.inputs[i], &args[i], &mut bound, what);
        i += 1;
    }
    bind(&sig.output, &out, &mut bound, what);
}

const fn bind(want: &StaticShape, got: &StaticShape, bound: &mut [usize; 8], what: &str) {
    if want.rank != got.rank {
        panic!("{}", what);
    }
    let mut d = 0;
    while d < want.rank {
        let (w, g) = (want.dims[d], got.dims[d]);
        match blaze_spec::symbol_index(w) {
            None => {
                if w != g {
                    panic!("{}", what);
                }
            }
            Some(k) => {
                if k >= 8 {
                    panic!("{}", what);
                }
                if bound[k] == 0 {
                    bound[k] = g;
                } else if bound[k] != g {
                    panic!("{}", what);
                }
            }
        }
        d += 1;
    }
}

/// The causal mask of `t` positions, `[1, .., 1, t, t]`: true above the
/// diagonal, where position `i` would see a later position `j > i`.
pub fn causal_mask<B: Backend, const D: usize>(t: usize, device: &B::Device) -> Tensor<B, D> {
    assert!(D >= 2, "causal_mask: needs rank >= 2, got {D}");
    let ids = Tensor::<B, 1>::arange(0..t as i64, device);
    let (rows, cols): (Tensor<B, 2>, Tensor<B, 2>) = (ids.reshape([t, 1]), ids.reshape([1, t]));
    let mut shape = [1; D];
    shape[D - 2] = t;
    shape[D - 1] = t;
    // Built from device ops (no host values), so a training step that
    // calls it allocates nothing.
    rows.lt(&cols).reshape(shape)
}

/// The positions `0..t` as i64 ids, `[1, t]`: one row that broadcasts
/// against the batch.
pub fn positions<B: Backend>(t: usize, device: &B::Device) -> Tensor<B, 2> {
    positions_from::<B>(0, t, device)
}

/// The positions `start..start + t` as `[1, t]`: a decoding step's, after
/// `start` positions already seen.
pub fn positions_from<B: Backend>(start: usize, t: usize, device: &B::Device) -> Tensor<B, 2> {
    Tensor::<B, 1>::arange(start as i64..(start + t) as i64, device).reshape([1, t])
}

/// Gradients of zeros for every parameter of `m`: those of a layer whose
/// output does not reach the model's output.
pub fn zero_grads<B: Backend, M: Module<B>>(m: &M) -> M::Grads {
    struct Zeros;
    impl<B: Backend> GradSource<B> for Zeros {
        fn grad<const D: usize>(&mut self, _: &str, p: &Tensor<B, D>) -> Tensor<B, D> {
            p.zeros_like()
        }
    }
    m.make_grads("", &mut Zeros)
}

/// How `#[model]` fused a forward body's elementwise ops while the model
/// compiled (`Model::FUSION`; `#[model(input = .., fuse = false)]` turns
/// fusion off): each group runs as one kernel (one pass over memory, on
/// the CPU and as one WGSL shader), and its backward as one adjoint kernel
/// per input that needs a gradient.
#[derive(Clone, Copy, Debug)]
pub struct FusionPlan {
    /// The fused groups, in the order the forward runs them.
    pub groups: &'static [FusedGroup],
    /// The softmaxes that apply a scale or causal mask in their own pass
    /// (`Tensor::softmax_with`), each with the ops it replaces.
    pub softmaxes: &'static [&'static [&'static str]],
    /// Ops that run in a layer's bias pass, after its bias
    /// (`Linear::forward_fused`), as `"fc2 + add"` or `"fc1 + relu"`.
    pub epilogues: &'static [&'static str],
    /// Layer inputs the backward recomputes from the cache of the layer
    /// or activation that made them, rather than the training forward
    /// keeping them (`nn::Recompute`), as `"fc2 <- gelu"`.
    pub recomputed: &'static [&'static str],
    /// Ops the body itself runs per forward, with this plan and without
    /// fusion (a layer's or nested model's call counts as one).
    pub forward_ops: [usize; 2],
    /// Adjoint ops the body runs per backward (the full one, which
    /// computes the inputs' gradients too), with this plan and without.
    pub backward_ops: [usize; 2],
    /// The precision `#[model(precision = ..)]` runs the passes' products
    /// in (`None`: the caller's, see [`blaze_runtime::precision::autocast`]).
    pub precision: Option<blaze_runtime::Precision>,
    /// Under a 16-bit precision, each part of the model that multiplies
    /// matrices and what it runs in 16 bits: `"fc1: bf16"`, or what stays
    /// f32 and why (`"attn: bf16, but per-head scores f32 (depth 16 <
    /// 32)"`).
    pub products: &'static [&'static str],
}

/// One fused group of a [`FusionPlan`].
#[derive(Clone, Copy, Debug)]
pub struct FusedGroup {
    /// The kernel's name (`{Model}_fused{i}`).
    pub name: &'static str,
    /// The ops it runs, in order, as the body names them.
    pub ops: &'static [&'static str],
    /// Its arguments: tensors (broadcast to the output) and scalars.
    pub inputs: usize,
    /// The per-sample shape of its output.
    pub output: &'static str,
    /// The kernel as a WGSL function, validated by naga when the model compiled.
    pub wgsl: &'static str,
}

impl std::fmt::Display for FusionPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [fwd, fwd_unfused] = self.forward_ops;
        let [bwd, bwd_unfused] = self.backward_ops;
        writeln!(
            f,
            "Ops per forward: {fwd} ({fwd_unfused} unfused); per backward: {bwd} ({bwd_unfused} unfused); \
             fused groups: {}, fused softmaxes: {}, bias-pass epilogues: {}, inputs recomputed in the backward: {}",
            self.groups.len(),
            self.softmaxes.len(),
            self.epilogues.len(),
            self.recomputed.len()
        )?;
        for g in self.groups {
            writeln!(f, "  {}: {} -> [batch, {}]", g.name, g.ops.join(", "), g.output.trim_matches(['[', ']']))?;
        }
        for s in self.softmaxes {
            writeln!(f, "  softmax_with: {}", s.join(", "))?;
        }
        for e in self.epilogues {
            writeln!(f, "  epilogue: {e}")?;
        }
        for r in self.recomputed {
            writeln!(f, "  recomputed input: {r}")?;
        }
        if let Some(p) = self.precision {
            match p.rounds_to() {
                Some(_) => writeln!(f, "Products in {p} (operands rounded, f32 sums; the rest f32):")?,
                None => writeln!(f, "Products in f32")?,
            }
        }
        for p in self.products {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}
