//! Optimizers over a model's named parameters (SGD, Adam, AdamW), gradient
//! clipping by global norm, and learning-rate schedules. Updates follow
//! PyTorch's formulas (`torch.optim`), so hyper-parameters carry over.
//!
//! State (momentum buffers, moments) is kept per parameter name, flattened
//! to one dim; it round-trips through [`Optimizer::state`] and
//! [`Optimizer::load_state`] for resumable checkpoints.

use std::collections::BTreeMap;

pub use blaze_runtime::module::Optimizer;
use blaze_runtime::module::{Module, map_grad_storages, update_storages, visit_grad_storages};
use blaze_runtime::tensor::{adam_storage, axpby_storage};
use blaze_runtime::{AdamStep, Backend, Tensor, TensorData};

/// One parameter's state: named flat tensors (`momentum_buffer`,
/// `exp_avg`, ...).
type Slots<B> = Vec<(String, Tensor<B, 1>)>;

/// Every parameter's [`Slots`], by parameter name. The names live in an
/// index that does not depend on the backend, handled by functions
/// compiled once; only the tensors are per backend.
#[derive(Clone, Debug)]
pub(crate) struct States<B: Backend> {
    /// Parameter name to its place in `slots`.
    index: BTreeMap<String, usize>,
    slots: Vec<Slots<B>>,
}

impl<B: Backend> States<B> {
    fn new() -> Self {
        States { index: BTreeMap::new(), slots: Vec::new() }
    }

    /// The slots of parameter `name`, empty on its first step (looked up
    /// by `&str`, so later steps allocate no key).
    fn of(&mut self, name: &str) -> &mut Slots<B> {
        let at = place_of(&mut self.index, name, self.slots.len());
        if at == self.slots.len() {
            self.slots.push(Vec::new());
        }
        &mut self.slots[at]
    }

    /// Every slot as `parameter.slot`, copied to the host.
    pub(crate) fn export(&self) -> Vec<(String, TensorData)> {
        let mut out = Vec::new();
        for (param, at) in ordered(&self.index) {
            for (slot, t) in &self.slots[at] {
                out.push((format!("{param}.{slot}"), t.to_data()));
            }
        }
        out
    }

    /// Slots saved by [`States::export`], moved to `device`.
    pub(crate) fn import(tensors: Vec<(String, TensorData)>, device: &B::Device) -> Self {
        let (index, grouped) = group_slots(tensors);
        let slots = grouped
            .into_iter()
            .map(|slots| {
                slots.into_iter().filter_map(|(k, d)| Some((k, Tensor::<B, 1>::from_data(d, device).ok()?))).collect()
            })
            .collect();
        States { index, slots }
    }
}

/// Where parameter `name` sits in an index of `len` entries, added at
/// `len` when it is new.
fn place_of(index: &mut BTreeMap<String, usize>, name: &str, len: usize) -> usize {
    match index.get(name) {
        Some(&at) => at,
        None => {
            index.insert(name.to_owned(), len);
            len
        }
    }
}

/// The index's names with their places, in name order.
fn ordered(index: &BTreeMap<String, usize>) -> Vec<(&str, usize)> {
    index.iter().map(|(k, &at)| (k.as_str(), at)).collect()
}

/// `parameter.slot` tensors grouped by parameter: an index of the
/// parameters and each one's slots, flattened.
type Grouped = (BTreeMap<String, usize>, Vec<Vec<(String, TensorData)>>);

fn group_slots(tensors: Vec<(String, TensorData)>) -> Grouped {
    let (mut index, mut grouped) = (BTreeMap::new(), Vec::<Vec<(String, TensorData)>>::new());
    for (name, d) in tensors {
        if let Some((param, slot)) = name.rsplit_once('.') {
            let at = place_of(&mut index, param, grouped.len());
            if at == grouped.len() {
                grouped.push(Vec::new());
            }
            let flat = TensorData { shape: vec![d.numel()], values: d.values };
            grouped[at].push((slot.to_owned(), flat));
        }
    }
    (index, grouped)
}

/// One parameter's update: `p = keep * p - lr * step`, made in place.
pub(crate) struct Update<B: Backend> {
    keep: f64,
    lr: f64,
    step: Tensor<B, 1>,
}

/// An optimizer's rule for one parameter: its update from its name, its
/// flat values and its flat gradient.
pub(crate) type UpdateRule<'a, B> = dyn FnMut(&str, &Tensor<B, 1>, &Tensor<B, 1>) -> Update<B> + 'a;

/// Updates every parameter by `update(name, flat_param, flat_grad)`.
///
/// Here and in the steps and gradient passes below, the work on one
/// parameter is a function of the backend alone, called through the
/// backend's [`Table`](crate::Table) and kept out of line: in a
/// closure's body, or inlined into one, it would be compiled again for
/// every model.
fn for_each_param<B: Backend, M: Module<B>>(model: &mut M, grads: &M::Grads, update: &mut UpdateRule<'_, B>) {
    let update_param = crate::Table::<B>::of().update_param;
    update_storages::<B, M>(model, grads, &mut |name, p, g| update_param(update, name, p, g));
}

/// Updates parameter `p` in place by `update` and its gradient `g`.
#[inline(never)]
pub(crate) fn update_param<B: Backend>(update: &mut UpdateRule<'_, B>, name: &str, p: &mut B::Storage, g: &B::Storage) {
    assert!(
        B::shape(p) == B::shape(g),
        "optimizer: {name}: gradient {:?} for parameter {:?}",
        B::shape(g),
        B::shape(p)
    );
    // The flat view of `p` is gone before the update, so `p`'s
    // buffer is not shared and is updated in place.
    let Update { keep, lr, step } = update(name, &Tensor::flat(p), &Tensor::flat(g));
    let step = B::reshape(step.storage(), B::shape(p));
    axpby_storage::<B>(p, keep, &step, -lr);
}

/// The [`Optimizer`] methods every optimizer here shares: its `lr` field,
/// and its per-parameter `state` with the `steps` count.
macro_rules! bookkeeping {
    () => {
        fn lr(&self) -> f64 {
            self.lr
        }

        fn set_lr(&mut self, lr: f64) {
            self.lr = lr;
        }

        fn state(&self) -> (Vec<(String, TensorData)>, u64) {
            ((crate::Table::<B>::of().export_states)(&self.state), self.steps)
        }

        fn load_state(&mut self, tensors: Vec<(String, TensorData)>, steps: u64, device: &B::Device) {
            self.state = (crate::Table::<B>::of().import_states)(tensors, device);
            self.steps = steps;
        }
    };
}

/// Stochastic gradient descent, as `torch.optim.SGD`.
#[derive(Clone, Debug)]
pub struct Sgd<B: Backend> {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0 for plain SGD).
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    state: States<B>,
    steps: u64,
}

impl<B: Backend> Sgd<B> {
    /// Plain SGD with learning rate `lr`.
    pub fn new(lr: f64) -> Self {
        Sgd { lr, momentum: 0.0, dampening: 0.0, nesterov: false, weight_decay: 0.0, state: States::new(), steps: 0 }
    }

    /// Sets the momentum factor.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }

    /// Uses Nesterov momentum.
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
        self
    }

    /// Sets the L2 penalty.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
}

impl<B: Backend> Optimizer<B> for Sgd<B> {
    fn step<M: Module<B>>(&mut self, model: &mut M, grads: &M::Grads) {
        assert!(
            !(self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0)),
            "Sgd: Nesterov needs momentum and no dampening"
        );
        let Sgd { lr, momentum, dampening, nesterov, weight_decay, .. } = *self;
        let rule = SgdRule { lr, momentum, dampening, nesterov, weight_decay };
        let state = &mut self.state;
        let sgd_update = crate::Table::<B>::of().sgd_update;
        for_each_param(model, grads, &mut |name, p, g| sgd_update(&rule, state, name, p, g));
        self.steps = self.steps.saturating_add(1);
    }

    bookkeeping!();
}

/// [`Sgd`]'s settings for one step.
pub(crate) struct SgdRule {
    lr: f64,
    momentum: f64,
    dampening: f64,
    nesterov: bool,
    weight_decay: f64,
}

/// [`Sgd`]'s update of parameter `name`, from its flat values and gradient.
#[inline(never)]
pub(crate) fn sgd_update<B: Backend>(
    o: &SgdRule,
    state: &mut States<B>,
    name: &str,
    p: &Tensor<B, 1>,
    g: &Tensor<B, 1>,
) -> Update<B> {
    let mut d = if o.weight_decay != 0.0 { g.add(&p.mul_scalar(o.weight_decay)) } else { g.clone() };
    if o.momentum != 0.0 {
        let slots = state.of(name);
        // PyTorch starts the buffer at the first gradient, undamped.
        match slots.iter_mut().find(|(k, _)| k == "momentum_buffer") {
            Some((_, buf)) => buf.axpby_(o.momentum, &d, 1.0 - o.dampening),
            None => slots.push(("momentum_buffer".into(), d.clone())),
        }
        let (_, buf) = slots.iter().find(|(k, _)| k == "momentum_buffer").expect("set above");
        d = if o.nesterov { d.add(&buf.mul_scalar(o.momentum)) } else { buf.clone() };
    }
    Update { keep: 1.0, lr: o.lr, step: d }
}

/// Adam, as `torch.optim.Adam` (L2 weight decay added to the gradient), or
/// with `decoupled` weight decay, `torch.optim.AdamW`.
#[derive(Clone, Debug)]
pub struct Adam<B: Backend> {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first and second moments.
    pub betas: (f64, f64),
    /// Added to the denominator for stability.
    pub eps: f64,
    /// Weight decay factor.
    pub weight_decay: f64,
    /// Decoupled weight decay (AdamW) instead of an L2 term.
    pub decoupled: bool,
    state: States<B>,
    steps: u64,
}

impl<B: Backend> Adam<B> {
    /// Adam with PyTorch's defaults: betas (0.9, 0.999), eps 1e-8, no weight decay.
    pub fn new(lr: f64) -> Self {
        Adam { lr, betas: (0.9, 0.999), eps: 1e-8, weight_decay: 0.0, decoupled: false, state: States::new(), steps: 0 }
    }

    /// AdamW with PyTorch's defaults (weight decay 0.01).
    pub fn adamw(lr: f64) -> Self {
        Adam { weight_decay: 0.01, decoupled: true, ..Self::new(lr) }
    }

    /// Sets the moment decay rates.
    pub fn betas(mut self, b1: f64, b2: f64) -> Self {
        self.betas = (b1, b2);
        self
    }

    /// Sets the weight decay.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Sets eps.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
}

impl<B: Backend> Optimizer<B> for Adam<B> {
    fn step<M: Module<B>>(&mut self, model: &mut M, grads: &M::Grads) {
        self.steps = self.steps.saturating_add(1);
        // β^t is 0 in f64 long before t leaves i32's range.
        let t = self.steps.min(i32::MAX as u64) as i32;
        let ((beta1, beta2), decoupled) = (self.betas, self.decoupled);
        let o = AdamStep { lr: self.lr, beta1, beta2, eps: self.eps, weight_decay: self.weight_decay, decoupled, t };
        let state = &mut self.state;
        // The parameter and both moments in one update (one pass on
        // backends that fuse it); the moments start at zero.
        let adam_update = crate::Table::<B>::of().adam_update;
        update_storages::<B, M>(model, grads, &mut |name, p, g| adam_update(o, state, name, p, g));
    }

    bookkeeping!();
}

/// [`Adam`]'s update of parameter `name`, in place.
#[inline(never)]
pub(crate) fn adam_update<B: Backend>(
    o: AdamStep,
    state: &mut States<B>,
    name: &str,
    p: &mut B::Storage,
    g: &B::Storage,
) {
    let slots = state.of(name);
    for moment in ["exp_avg", "exp_avg_sq"] {
        if !slots.iter().any(|(k, _)| k == moment) {
            slots.push((moment.to_owned(), Tensor::flat(g).zeros_like()));
        }
    }
    let (mut m, mut v) = (None, None);
    for (key, slot) in slots.iter_mut() {
        match key.as_str() {
            "exp_avg" => m = Some(slot),
            "exp_avg_sq" => v = Some(slot),
            _ => {}
        }
    }
    adam_storage::<B>(p, m.expect("inserted above"), v.expect("inserted above"), g, o);
}

/// The global L2 norm of all gradients, summed on the device and read
/// back once.
pub fn grad_norm<B: Backend, M: Module<B>>(grads: &M::Grads) -> f64 {
    grad_sq_sum::<B, M>(grads).map_or(0.0, |t| t.item().sqrt())
}

/// The sum of every gradient's squares, on the device (`None` without
/// gradients).
#[doc(hidden)]
pub fn grad_sq_sum<B: Backend, M: Module<B>>(grads: &M::Grads) -> Option<Tensor<B, 0>> {
    let mut sum: Option<Tensor<B, 0>> = None;
    let add_sum_squares = crate::Table::<B>::of().add_sum_squares;
    visit_grad_storages::<B, M>(grads, &mut |_, g| add_sum_squares(&mut sum, g));
    sum
}

/// Adds the sum of `g`'s squares to `sum`.
#[inline(never)]
pub(crate) fn add_sum_squares<B: Backend>(sum: &mut Option<Tensor<B, 0>>, g: &B::Storage) {
    let s = Tensor::<B, 0>::wrap(B::sum_squares(g));
    *sum = Some(match sum.take() {
        Some(acc) => acc.add(&s.to_dtype(acc.dtype())),
        None => s,
    });
}

/// Multiplies every gradient by `factor`.
pub fn scale_grads<B: Backend, M: Module<B>>(grads: &mut M::Grads, factor: f64) {
    let scaled = crate::Table::<B>::of().scaled;
    map_grad_storages::<B, M>(grads, &mut |_, g| scaled(&g, factor));
}

/// `g * factor`.
#[inline(never)]
pub(crate) fn scaled<B: Backend>(g: &B::Storage, factor: f64) -> B::Storage {
    B::reshape(Tensor::<B, 1>::flat(g).mul_scalar(factor).storage(), B::shape(g))
}

/// Adds `more` to `grads`, gradient by gradient (accumulation over
/// several batches).
pub fn add_grads<B: Backend, M: Module<B>>(grads: &mut M::Grads, more: &M::Grads) {
    let mut flat = Vec::new();
    visit_grad_storages::<B, M>(more, &mut |_, g| flat.push(g.clone()));
    let mut more = flat.into_iter();
    let added = crate::Table::<B>::of().added;
    map_grad_storages::<B, M>(grads, &mut |name, g| added(name, &g, more.next()));
}

/// `g + more`, the gradient to add to `name`'s (of any shape with as many
/// values).
#[inline(never)]
pub(crate) fn added<B: Backend>(name: &str, g: &B::Storage, more: Option<B::Storage>) -> B::Storage {
    let m = Tensor::<B, 1>::flat(&more.unwrap_or_else(|| panic!("add_grads: no gradient to add for {name}")));
    let (gn, mn) = (B::shape(g).iter().product::<usize>(), m.numel());
    assert_eq!(gn, mn, "add_grads: {name}: {mn} values to add to {gn}");
    B::reshape(Tensor::<B, 1>::flat(g).add(&m).storage(), B::shape(g))
}

/// Scales all gradients so their global L2 norm is at most `max_norm`, as
/// `torch.nn.utils.clip_grad_norm_`; returns the norm before clipping.
pub fn clip_grad_norm<B: Backend, M: Module<B>>(grads: &mut M::Grads, max_norm: f64) -> f64 {
    let norm = grad_norm::<B, M>(grads);
    clip_to::<B, M>(grads, norm, max_norm);
    norm
}

/// Clips gradients whose norm is `norm` to `max_norm`.
pub(crate) fn clip_to<B: Backend, M: Module<B>>(grads: &mut M::Grads, norm: f64, max_norm: f64) {
    let scale = clip_factor(norm, max_norm);
    if scale < 1.0 {
        scale_grads::<B, M>(grads, scale);
    }
}

/// What clipping gradients whose norm is `norm` to `max_norm` multiplies
/// them by (1 when they are within it), as `torch.nn.utils.clip_grad_norm_`.
#[doc(hidden)]
pub fn clip_factor(norm: f64, max_norm: f64) -> f64 {
    (max_norm / (norm + 1e-6)).min(1.0)
}

/// A learning rate as a function of the step (counted from 0).
pub trait LrSchedule: std::fmt::Debug + Send + Sync {
    /// The learning rate for `step`.
    fn lr_at(&self, step: u64) -> f64;
}

/// Multiplies the rate by `gamma` every `step_size` steps (`torch.optim.lr_scheduler.StepLR`).
#[derive(Clone, Copy, Debug)]
pub struct StepLr {
    /// Initial rate.
    pub base: f64,
    /// Steps between decays.
    pub step_size: u64,
    /// Decay factor.
    pub gamma: f64,
}

impl LrSchedule for StepLr {
    fn lr_at(&self, step: u64) -> f64 {
        self.base * self.gamma.powi((step / self.step_size.max(1)) as i32)
    }
}

/// Linear warm-up from 0 to `base` over `warmup` steps, then cosine decay
/// to `min` at `total` steps (and `min` after).
#[derive(Clone, Copy, Debug)]
pub struct CosineWithWarmup {
    /// Peak rate.
    pub base: f64,
    /// Final rate.
    pub min: f64,
    /// Warm-up steps.
    pub warmup: u64,
    /// Total steps.
    pub total: u64,
}

impl LrSchedule for CosineWithWarmup {
    fn lr_at(&self, step: u64) -> f64 {
        if step < self.warmup {
            return self.base * (step + 1) as f64 / self.warmup as f64;
        }
        let span = self.total.saturating_sub(self.warmup).max(1) as f64;
        let progress = ((step - self.warmup) as f64 / span).min(1.0);
        self.min + 0.5 * (self.base - self.min) * (1.0 + (std::f64::consts::PI * progress).cos())
    }
}

/// Linear change from `base` to `end` over `total` steps (`LinearLR`).
#[derive(Clone, Copy, Debug)]
pub struct LinearDecay {
    /// Initial rate.
    pub base: f64,
    /// Final rate.
    pub end: f64,
    /// Steps to reach it.
    pub total: u64,
}

impl LrSchedule for LinearDecay {
    fn lr_at(&self, step: u64) -> f64 {
        let t = (step as f64 / self.total.max(1) as f64).min(1.0);
        self.base + (self.end - self.base) * t
    }
}
