//! Post-training int8 quantization for inference (`blaze::quant`).
//!
//! Every `#[model]` struct `Net` has an int8 form, `NetInt8`, that the
//! macro generates from the same fields: `Linear`, `Conv1d`, `Conv2d`,
//! `Embedding` and `MultiHeadAttention`'s projections become their int8
//! layers ([`Int8Linear`], ...), weights quantized per output channel
//! ([`QWeight`]); every other layer (activations, norms, pools,
//! recurrent layers) stays as it is. The forward is the model's own, its
//! fusions included, calling the int8 layers.
//!
//! ```ignore
//! let int8 = blaze::quant::quantize_dynamic(&model);  // a NetInt8<B>
//! let y = int8.forward(&x);
//! int8.save("net-int8.safetensors".as_ref())?;
//! let back = NetInt8::<Cpu>::load("net-int8.safetensors".as_ref(), &CpuDevice)?;
//! print!("{}", back.summary());
//! ```
//!
//! Activations are quantized where a product reads them: per row at run
//! time ([`quantize_dynamic`], as `torch.ao.quantization.quantize_dynamic`),
//! or for convolutions with a range calibrated beforehand over sample
//! batches ([`quantize_static`]). Products are exact in `i32` and scaled
//! back to f32; the CPU backend runs them on AMX-INT8 or AVX512-VNNI where
//! the CPU has them, other backends on the host's portable kernel.

mod layers;
mod state;

/// The int8 weight type and the arithmetic every int8 kernel shares (the
/// core's, as backends implement the int8 products).
pub use blaze_runtime::int8 as weight;

pub use layers::{
    Int8Conv1d, Int8Conv2d, Int8Embedding, Int8Linear, Int8MultiHeadAttention, Int8Recurrent, Int8RnnWeights, Observer,
};
pub use state::{StateReader, StateWriter, calibrated, load, save, summary};
pub use weight::{InputQuant, QWeight};

use std::fmt::Debug;

use crate::{Differentiable, Layer, Module};
use blaze_runtime::{Backend, Tensor};

/// A layer or model with an int8 form for inference.
///
/// `#[model]` implements it for every model whose fields all have one;
/// the built-in layers do (those without int8 kernels as themselves,
/// through [`KeepsFloat`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no int8 form",
    label = "no `blaze::quant::Quantize` impl",
    note = "a model has an int8 form when each of its fields has one; a layer of your own gets one by \
            implementing `blaze::quant::KeepsFloat` (it runs as it is, in f32) or `blaze::quant::Quantize`"
)]
pub trait Quantize<B: Backend> {
    /// The int8 form.
    type Quantized: QuantModule<B> + Clone + Debug + Send;

    /// Quantizes the weights (per output channel); inputs are quantized
    /// per row at run time until [`calibrate`] fixes their ranges.
    fn quantize(&self) -> Self::Quantized;
}

/// A layer a quantized model keeps in floating point: it has no product
/// to quantize (activations, pools, norms) or no int8 kernel yet
/// (transposed and recurrent layers). A user layer may implement it to
/// take part in quantized models as it is.
pub trait KeepsFloat {}

impl<B: Backend, T: KeepsFloat + Module<B> + Clone + Debug> Quantize<B> for T {
    type Quantized = T;

    fn quantize(&self) -> T {
        self.clone()
    }
}

impl<B: Backend, T: Quantize<B>, const N: usize> Quantize<B> for [T; N] {
    type Quantized = [T::Quantized; N];

    fn quantize(&self) -> Self::Quantized {
        std::array::from_fn(|i| self[i].quantize())
    }
}

/// What calibration tells a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Start recording the range of every input a calibrated layer
    /// quantizes (forwards meanwhile quantize per row).
    Start,
    /// Fix each input's scale and zero point from the range recorded.
    Finish,
}

/// A quantized module's tensors and calibration: what saving, loading,
/// summaries and [`calibrate`] walk.
pub trait QuantModule<B: Backend> {
    /// Writes every tensor under `prefix`: int8 weights with their scales,
    /// float parameters and buffers, calibrated input ranges.
    fn save_state(&self, prefix: &str, out: &mut StateWriter);
    /// Reads them back from `src` (which records what is missing or
    /// mismatched).
    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>);
    /// Passes a calibration phase to every layer that calibrates.
    fn calibrate(&mut self, _phase: Phase) {}
    /// The device of its first tensor (`None` for a module without any).
    fn device(&self) -> Option<B::Device>;
}

/// Float layers save and load their parameters and buffers as the float
/// model does.
impl<B: Backend, T: KeepsFloat + Module<B>> QuantModule<B> for T {
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        state::save_float(self, prefix, out);
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        state::load_float(self, prefix, src);
    }

    fn device(&self) -> Option<B::Device> {
        crate::device_of(self)
    }
}

impl<B: Backend, T: QuantModule<B>, const N: usize> QuantModule<B> for [T; N] {
    fn save_state(&self, prefix: &str, out: &mut StateWriter) {
        for (i, m) in self.iter().enumerate() {
            m.save_state(&blaze_runtime::module::join(prefix, &i.to_string()), out);
        }
    }

    fn load_state(&mut self, prefix: &str, src: &mut StateReader<'_, B>) {
        for (i, m) in self.iter_mut().enumerate() {
            m.load_state(&blaze_runtime::module::join(prefix, &i.to_string()), src);
        }
    }

    fn calibrate(&mut self, phase: Phase) {
        self.iter_mut().for_each(|m| m.calibrate(phase));
    }

    fn device(&self) -> Option<B::Device> {
        self.iter().find_map(|m| m.device())
    }
}

/// A step of a quantized model from a rank-`DI` batch to a rank-`DO` one:
/// the inference forward of an int8 layer, or of a float layer it keeps.
/// The int8 model `#[model]` generates calls its fields through it.
pub trait Infer<B: Backend, const DI: usize, const DO: usize> {
    /// The inference forward.
    fn forward(&self, x: &Tensor<B, DI>) -> Tensor<B, DO>;
}

impl<B: Backend, T: KeepsFloat + Layer<B, DI, DO>, const DI: usize, const DO: usize> Infer<B, DI, DO> for T {
    fn forward(&self, x: &Tensor<B, DI>) -> Tensor<B, DO> {
        Layer::forward(self, x)
    }
}

/// A nested model or a user block that a quantized model calls: the int8
/// form `#[model]` generates, or a block that stays in float
/// ([`KeepsFloat`]) run through its [`Differentiable`] forward.
pub trait InferBlock<B: Backend, const DI: usize, const DO: usize> {
    /// The inference forward.
    fn forward(&self, x: &Tensor<B, DI>) -> Tensor<B, DO>;
}

impl<B, T, const DI: usize, const DO: usize> InferBlock<B, DI, DO> for T
where
    B: Backend,
    T: KeepsFloat + Differentiable<B, Input = Tensor<B, DI>, Output = Tensor<B, DO>>,
{
    fn forward(&self, x: &Tensor<B, DI>) -> Tensor<B, DO> {
        Differentiable::forward(self, x)
    }
}

/// Attention a quantized forward body calls on a query, keys and values:
/// [`crate::Attend::attend`]'s int8 counterpart.
pub trait InferAttend<B: Backend> {
    /// The attention output `[n, T, D]`.
    fn attend(
        &self,
        q: &Tensor<B, 3>,
        k: &Tensor<B, 3>,
        v: &Tensor<B, 3>,
        key_padding_mask: Option<&Tensor<B, 2>>,
    ) -> Tensor<B, 3>;
}

/// The int8 form of `model`, its inputs quantized per row at run time
/// (PyTorch's `quantize_dynamic`, which quantizes `Linear` layers; here
/// convolutions, embeddings and attention projections too).
pub fn quantize_dynamic<B: Backend, M: Quantize<B>>(model: &M) -> M::Quantized {
    model.quantize()
}

/// The int8 form of `model` with its convolutions' input ranges
/// calibrated: `run` feeds it representative batches (a few hundred
/// samples: `for (x, _) in loader { q.forward(&x); }`), whose ranges fix
/// each convolution's scale and zero point (PyTorch's static
/// quantization with min-max observers). Layers `run` never reached
/// stay dynamic.
pub fn quantize_static<B: Backend, M: Quantize<B>>(model: &M, run: impl FnOnce(&M::Quantized)) -> M::Quantized {
    let mut q = model.quantize();
    calibrate(&mut q, run);
    q
}

/// Calibrates an int8 model in place (see [`quantize_static`]); calling it
/// again replaces the ranges.
pub fn calibrate<B: Backend, M: QuantModule<B>>(model: &mut M, run: impl FnOnce(&M)) {
    model.calibrate(Phase::Start);
    run(model);
    model.calibrate(Phase::Finish);
}
