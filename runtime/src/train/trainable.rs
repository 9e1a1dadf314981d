//! What `fit` trains: a model that gives logits and takes an optimizer
//! step, as a `#[model]` (its generated backward) or a hand-written model
//! through the tape.

use super::{FitConfig, StepError};
use crate::autodiff::{Autodiff, no_grad, track};
use crate::backend::Device;
use crate::loss::{check_class_targets, cross_entropy_with};
use crate::nn::{Block, Ctx, Module};
use crate::optim::{Optimizer, clip_to, grad_sq_sum};
use crate::{Backend, Tensor};

/// What one training step did.
#[derive(Debug)]
pub struct Step<B: Backend> {
    /// The training-mode logits, for metrics.
    pub logits: Tensor<B, 2>,
    /// The loss.
    pub loss: f64,
    /// The global gradient norm before clipping.
    pub grad_norm: f64,
    /// False when the loss or the norm was not finite: nothing changed.
    pub applied: bool,
}

impl<B: Backend> Step<B> {
    /// Finishes a step once the loss and the gradients (averaged over the
    /// ranks) are known: waits for the device, reads loss and norm, and,
    /// when both are finite, clips and calls `update`.
    fn finish<M: Module<B>>(
        logits: Tensor<B, 2>,
        loss: &Tensor<B, 0>,
        mut grads: M::Grads,
        config: &FitConfig,
        update: impl FnOnce(&M::Grads),
    ) -> Result<Self, StepError> {
        let sq_sum = grad_sq_sum::<B, M>(&grads);
        logits.device().synchronize()?;
        let (loss, grad_norm) = (loss.item(), sq_sum.map_or(0.0, |s| s.item().sqrt()));
        // A non-finite loss on any rank makes every rank skip the step, so
        // the replicas stay equal (their gradient norms already agree).
        let mut non_finite = [f64::from(u8::from(!loss.is_finite()))];
        config.sum_over_ranks(&mut non_finite);
        let applied = non_finite[0] == 0.0 && grad_norm.is_finite();
        if applied {
            if let Some(max) = config.clip_grad_norm {
                clip_to::<B, M>(&mut grads, grad_norm, max);
            }
            update(&grads);
        }
        Ok(Step { logits, loss, grad_norm, applied })
    }
}

/// What [`fit`](super::fit) trains: logits for a batch, and one optimizer step with
/// cross-entropy.
pub trait Classifier<B: Backend, const DI: usize>: Module<B> {
    /// Logits `[n, classes]` in evaluation mode.
    fn logits(&self, x: &Tensor<B, DI>) -> Tensor<B, 2>;
    /// One training step on `(x, y)`: checks the targets against the
    /// logits' classes, computes loss and gradients, and updates the
    /// parameters unless the loss or the gradient norm is not finite.
    fn train_step<O: Optimizer<B>>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, 1>,
        optimizer: &mut O,
        ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<B>, StepError>;
}

/// A `#[model]` (any [`Block`] from a batch to logits) trains with its
/// generated backward.
impl<B, M, const DI: usize> Classifier<B, DI> for M
where
    B: Backend,
    M: Block<B, Input = Tensor<B, DI>, Output = Tensor<B, 2>>,
{
    fn logits(&self, x: &Tensor<B, DI>) -> Tensor<B, 2> {
        self.forward(x)
    }

    fn train_step<O: Optimizer<B>>(
        &mut self,
        x: &Tensor<B, DI>,
        y: &Tensor<B, 1>,
        optimizer: &mut O,
        ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<B>, StepError> {
        let (logits, cache) = self.forward_train(x, ctx);
        check_class_targets(y, logits.size(1), config.ignore_index)?;
        let loss = cross_entropy_with(&logits, y, config.loss_options());
        #[cfg(feature = "mpi")]
        if let Some(dp) = config.data_parallel.as_ref().filter(|dp| dp.overlap && dp.world.size() > 1) {
            let grads = dp.world.average_grads_during::<B, M>(self, dp.bucket_bytes, |ready| {
                self.backward_params_each(&cache, &loss.grad, ready)
            });
            return Step::finish::<M>(logits, &loss.value, grads, config, |g| optimizer.step(self, g));
        }
        let mut grads = self.backward_params(&cache, &loss.grad);
        config.average_grads::<B, M>(&mut grads);
        Step::finish::<M>(logits, &loss.value, grads, config, |g| optimizer.step(self, g))
    }
}

/// A hand-written model's forward, for training through the tape.
pub trait TapedForward<B: Backend, const DI: usize>: Module<Autodiff<B>> {
    /// Logits `[n, classes]`; `train` is true during training steps.
    fn forward(&self, x: &Tensor<Autodiff<B>, DI>, train: bool) -> Tensor<Autodiff<B>, 2>;
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

impl<B: Backend, M: TapedForward<B, DI>, const DI: usize> Classifier<Autodiff<B>, DI> for Taped<M> {
    fn logits(&self, x: &Tensor<Autodiff<B>, DI>) -> Tensor<Autodiff<B>, 2> {
        no_grad(|| self.0.forward(x, false))
    }

    fn train_step<O: Optimizer<Autodiff<B>>>(
        &mut self,
        x: &Tensor<Autodiff<B>, DI>,
        y: &Tensor<Autodiff<B>, 1>,
        optimizer: &mut O,
        _ctx: &mut Ctx,
        config: &FitConfig,
    ) -> Result<Step<Autodiff<B>>, StepError> {
        // Parameters replaced by a load or an update are leaves again.
        track(&mut self.0);
        let logits = self.0.forward(x, true);
        check_class_targets(y, logits.size(1), config.ignore_index)?;
        let loss = cross_entropy_with(&logits, y, config.loss_options()).value;
        let mut grads = loss.backward().for_module(&self.0);
        config.average_grads::<Autodiff<B>, M>(&mut grads);
        let model = &mut self.0;
        Step::finish::<M>(logits.detach(), &loss, grads, config, |g| no_grad(|| optimizer.step(model, g)))
    }
}
