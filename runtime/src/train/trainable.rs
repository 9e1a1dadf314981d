//! What `fit` trains: a model whose output a [`Criterion`] compares with
//! the targets, as a `#[model]` (its generated backward) or a hand-written
//! model through the tape ([`Taped`]).

use super::task::Criterion;
use super::{FitConfig, StepError};
use crate::autodiff::{Autodiff, no_grad, track};
use crate::nn::{Ctx, Differentiable, Module};
use crate::optim::Optimizer;
use crate::{Backend, Tensor};

/// What one forward and backward pass gave.
#[derive(Debug)]
pub struct Computed<B: Backend, const DO: usize, G> {
    /// The training-mode output, for metrics.
    pub output: Tensor<B, DO>,
    /// The mean loss of the batch (unscaled).
    pub loss: Tensor<B, 0>,
    /// The parameter gradients of the loss times the step's scale.
    pub grads: G,
}

/// What [`fit`](super::fit) trains: an output `[n, ...]` (rank `DO`) for
/// inputs `[n, ...]` (rank `DI`), gradients of a loss, and an optimizer
/// update. Every `#[model]` of one input tensor (any [`Differentiable`]:
/// sequential models and forward bodies, fixed or symbolic dims) is
/// trainable as it is; a hand-written model trains through the tape as
/// [`Taped`].
pub trait Trainable<B: Backend, const DI: usize, const DO: usize>: Module<B> {
    /// The output in evaluation mode.
    fn predict(&self, x: &Tensor<B, DI>) -> Tensor<B, DO>;

    /// The training forward, the loss against `y`, and the gradients of
    /// `scale` times the loss (a share of an accumulated step). With
    /// `average` the gradients are averaged over the ranks of a
    /// data-parallel run (while the backward runs, where it can).
    fn compute<L: Criterion<B, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, DT>,
        config: &FitConfig<L>,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<B, DO, Self::Grads>, StepError>;

    /// Updates the parameters with `grads`.
    fn apply<O: Optimizer<B>>(&mut self, optimizer: &mut O, grads: &Self::Grads);

    /// The model's summary table, for logs (empty if it has none).
    fn summary(&self) -> String {
        String::new()
    }
}

/// A `#[model]` trains with its generated backward.
impl<B, M, const DI: usize, const DO: usize> Trainable<B, DI, DO> for M
where
    B: Backend,
    M: Differentiable<B, Input = Tensor<B, DI>, Output = Tensor<B, DO>>,
{
    fn predict(&self, x: &Tensor<B, DI>) -> Tensor<B, DO> {
        self.forward(x)
    }

    fn compute<L: Criterion<B, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, DT>,
        config: &FitConfig<L>,
        ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<B, DO, M::Grads>, StepError> {
        let (output, cache) = self.forward_train(x, ctx);
        let loss = config.loss.loss(&output, y)?;
        let grad = if scale == 1.0 { loss.grad } else { loss.grad.mul_scalar(scale) };
        #[cfg(feature = "mpi")]
        if let Some(dp) = config.data_parallel.as_ref().filter(|dp| average && dp.overlap && dp.world.size() > 1) {
            let grads = dp.world.average_grads_during::<B, M>(self, dp.bucket_bytes, |ready| {
                self.backward_params_each(&cache, &grad, ready)
            });
            return Ok(Computed { output, loss: loss.value, grads });
        }
        let mut grads = self.backward_params(&cache, &grad);
        if average {
            config.average_grads::<B, M>(&mut grads);
        }
        Ok(Computed { output, loss: loss.value, grads })
    }

    fn apply<O: Optimizer<B>>(&mut self, optimizer: &mut O, grads: &M::Grads) {
        optimizer.step(self, grads);
    }

    fn summary(&self) -> String {
        Differentiable::summary(self)
    }
}

/// A hand-written model's forward, for training through the tape.
pub trait TapedForward<B: Backend, const DI: usize, const DO: usize>: Module<Autodiff<B>> {
    /// The output; `train` is true during training steps.
    fn forward(&self, x: &Tensor<Autodiff<B>, DI>, train: bool) -> Tensor<Autodiff<B>, DO>;
}

/// Trains a hand-written model (`#[derive(Module)]` plus a
/// [`TapedForward`]) with [`fit`](super::fit), differentiating through `Autodiff<B>`.
#[derive(Clone, Debug)]
pub struct Taped<M>(pub M);

impl<B: Backend, M: Module<Autodiff<B>>> Module<Autodiff<B>> for Taped<M> {
    type Grads = M::Grads;

    fn visit_params<V: crate::nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_params(prefix, v);
    }

    fn visit_buffers<V: crate::nn::ParamVisitor<Autodiff<B>>>(&self, prefix: &str, v: &mut V) {
        self.0.visit_buffers(prefix, v);
    }

    fn map_tensors<P: crate::nn::ParamMapper<Autodiff<B>>>(&mut self, prefix: &str, m: &mut P) {
        self.0.map_tensors(prefix, m);
    }

    fn visit_grads<V: crate::nn::GradVisitor<Autodiff<B>>>(&mut self, g: &M::Grads, prefix: &str, v: &mut V) {
        self.0.visit_grads(g, prefix, v);
    }

    fn visit_grad_tensors<V: crate::nn::ParamVisitor<Autodiff<B>>>(g: &M::Grads, prefix: &str, v: &mut V) {
        M::visit_grad_tensors(g, prefix, v);
    }

    fn map_grad_tensors<P: crate::nn::ParamMapper<Autodiff<B>>>(g: &mut M::Grads, prefix: &str, m: &mut P) {
        M::map_grad_tensors(g, prefix, m);
    }

    fn make_grads<F: crate::nn::GradSource<Autodiff<B>>>(&self, prefix: &str, f: &mut F) -> M::Grads {
        self.0.make_grads(prefix, f)
    }
}

impl<B, M, const DI: usize, const DO: usize> Trainable<Autodiff<B>, DI, DO> for Taped<M>
where
    B: Backend,
    M: TapedForward<B, DI, DO>,
{
    fn predict(&self, x: &Tensor<Autodiff<B>, DI>) -> Tensor<Autodiff<B>, DO> {
        no_grad(|| self.0.forward(x, false))
    }

    fn compute<L: Criterion<Autodiff<B>, DO, DT>, const DT: usize>(
        &mut self,
        x: &Tensor<Autodiff<B>, DI>,
        y: &Tensor<Autodiff<B>, DT>,
        config: &FitConfig<L>,
        _ctx: &mut Ctx,
        scale: f64,
        average: bool,
    ) -> Result<Computed<Autodiff<B>, DO, M::Grads>, StepError> {
        // Parameters replaced by a load or an update are leaves again.
        track(&mut self.0);
        let output = self.0.forward(x, true);
        let loss = config.loss.loss(&output, y)?.value;
        let scaled = if scale == 1.0 { loss.clone() } else { loss.mul_scalar(scale) };
        let mut grads = scaled.backward().for_module(&self.0);
        if average {
            config.average_grads::<Autodiff<B>, M>(&mut grads);
        }
        Ok(Computed { output: output.detach(), loss: loss.detach(), grads })
    }

    fn apply<O: Optimizer<Autodiff<B>>>(&mut self, optimizer: &mut O, grads: &M::Grads) {
        let model = &mut self.0;
        no_grad(|| optimizer.step(model, grads));
    }
}
