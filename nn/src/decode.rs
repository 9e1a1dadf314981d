//! Generation with a cache: [`Decode`], the incremental step `#[model]`
//! derives for a forward body whose only op across positions is causal
//! attention, and [`generate`], which samples from it one token at a time.

use blaze_runtime::rng::Rng;
use blaze_runtime::{Backend, Tensor};

/// A model that runs one position at a time, keeping what later positions
/// need (each causal attention's keys and values) in its state: the
/// logits of each step equal the full forward's at that position.
/// `#[model]` implements it for a forward body over `[T]` (or `[T, ..]`)
/// whose ops act on each position alone, but for causal self-attention.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not decode one position at a time",
    label = "no `Decode` impl",
    note = "`#[model]` derives `Decode` for a forward body over `[T, ..]` whose ops act on each position on its own (layers over the last dim, elementwise ops, `positions(T)`) but for causal self-attention (`#[layer(causal = true)]`), and whose nested models decode too"
)]
pub trait Decode<B: Backend> {
    /// A step's input: the inputs of new positions, `[n, s, ..]`.
    type Input;
    /// A step's output: the outputs at the new positions.
    type Output;
    /// What the model keeps between steps.
    type State;

    /// The state before any position.
    fn decode_state(&self) -> Self::State;
    /// The outputs at new positions after those `state` has seen; `state`
    /// then holds them too.
    fn decode_step(&self, x: &Self::Input, state: &mut Self::State) -> Self::Output;
    /// How many positions `state` has seen.
    fn decoded(state: &Self::State) -> usize;
    /// Where its tensors live (`None` for a model without any).
    fn device(&self) -> Option<B::Device>;
}

/// How [`generate`] picks each token.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateConfig {
    /// Tokens to add at most.
    pub max_new_tokens: usize,
    /// Logits are divided by it before sampling; 0 picks the most likely
    /// token (greedy).
    pub temperature: f64,
    /// Only the `k` most likely tokens are drawn from (0: all of them).
    pub top_k: Option<usize>,
    /// Only the most likely tokens whose probabilities add up to `p` are
    /// drawn from (nucleus sampling).
    pub top_p: Option<f64>,
    /// The seed of the draws.
    pub seed: u64,
    /// Generation stops after any of these tokens (which is kept).
    pub stop: Vec<i64>,
    /// The most positions the model takes (its position table's size):
    /// when the state is full, it is rebuilt from the last half of this
    /// many tokens. `None`: no limit.
    pub context: Option<usize>,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            max_new_tokens: 64,
            temperature: 1.0,
            top_k: None,
            top_p: None,
            seed: 0,
            stop: Vec::new(),
            context: None,
        }
    }
}

impl GenerateConfig {
    /// Greedy decoding of up to `max_new_tokens`.
    pub fn greedy(max_new_tokens: usize) -> Self {
        GenerateConfig { max_new_tokens, temperature: 0.0, ..GenerateConfig::default() }
    }
}

/// Continues `prompt` (token ids, not empty) with up to
/// `config.max_new_tokens` tokens, calling `on_token` with each as soon as
/// it is drawn; returns the new tokens. The prompt runs through the
/// model's decode step once, then each token is one step over the cache.
pub fn generate<B, M>(model: &M, prompt: &[i64], config: &GenerateConfig, mut on_token: impl FnMut(i64)) -> Vec<i64>
where
    B: Backend,
    M: Decode<B, Input = Tensor<B, 2>, Output = Tensor<B, 3>>,
{
    assert!(!prompt.is_empty(), "generate: the prompt is empty");
    assert!(
        config.temperature >= 0.0 && config.temperature.is_finite(),
        "generate: temperature {} is not a finite number >= 0",
        config.temperature
    );
    if let Some(p) = config.top_p {
        assert!(p > 0.0 && p <= 1.0, "generate: top_p {p} is outside (0, 1]");
    }
    let device = model.device().expect("generate: the model has no parameters to tell its device");
    let mut rng = Rng::seed_from_u64(config.seed);
    let mut state = model.decode_state();
    let mut tokens = prompt.to_vec();
    let mut fed = 0;
    let mut out = Vec::new();
    while out.len() < config.max_new_tokens {
        if let Some(c) = config.context
            && M::decoded(&state) + (tokens.len() - fed) > c
        {
            // Full: start again from the last half of the window.
            state = model.decode_state();
            fed = tokens.len() - (c / 2).max(1).min(tokens.len());
        }
        let new = &tokens[fed..];
        let x = Tensor::<B, 2>::from_vec(new.to_vec(), [1, new.len()], &device);
        let logits = model.decode_step(&x, &mut state);
        fed = tokens.len();
        let [_, s, v] = logits.shape();
        let last = logits.narrow(1, s - 1, 1).reshape([v]).to_dtype(blaze_runtime::DType::F64).to_vec::<f64>();
        let next = pick(&last, config, &mut rng);
        tokens.push(next);
        out.push(next);
        on_token(next);
        if config.stop.contains(&next) {
            break;
        }
    }
    out
}

/// The next token from `logits` as `config` says.
fn pick(logits: &[f64], config: &GenerateConfig, rng: &mut Rng) -> i64 {
    let best = |l: &[f64]| l.iter().enumerate().fold(0, |b, (i, &x)| if x > l[b] || l[b].is_nan() { i } else { b });
    // A NaN logit is no candidate; without a finite top there is nothing
    // to weigh, and the most likely token (an infinite one) is taken.
    let finite_top = logits.iter().filter(|x| !x.is_nan()).fold(f64::NEG_INFINITY, |m, &x| m.max(x));
    if config.temperature == 0.0 || !finite_top.is_finite() {
        return best(logits) as i64;
    }
    // The candidates, most likely first.
    let mut order: Vec<usize> = (0..logits.len()).filter(|&i| !logits[i].is_nan()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    // As `transformers`: a top-k of 0 keeps every token.
    if let Some(k) = config.top_k.filter(|&k| k > 0) {
        order.truncate(k);
    }
    let top = logits[order[0]];
    let weights: Vec<f64> = order.iter().map(|&i| ((logits[i] - top) / config.temperature).exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut probs: Vec<f64> = weights.iter().map(|w| w / total).collect();
    if let Some(p) = config.top_p {
        // The smallest head of the order whose mass reaches p.
        let mut mass = 0.0;
        let keep = probs.iter().position(|&q| {
            mass += q;
            mass >= p
        });
        probs.truncate(keep.map_or(probs.len(), |i| i + 1));
    }
    let total: f64 = probs.iter().sum();
    let mut u = rng.next_f64() * total;
    for (q, &i) in probs.iter().zip(&order) {
        if u < *q {
            return i as i64;
        }
        u -= q;
    }
    order[probs.len() - 1] as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_follow_the_config() {
        let logits = [0.5, 3.0, 2.9, -1.0];
        let mut rng = Rng::seed_from_u64(1);
        assert_eq!(pick(&logits, &GenerateConfig::greedy(1), &mut rng), 1);
        let top1 = GenerateConfig { top_k: Some(1), ..GenerateConfig::default() };
        assert!((0..50).all(|_| pick(&logits, &top1, &mut rng) == 1));
        // Two tokens hold almost all the mass: top_p 0.9 keeps only them.
        let nucleus = GenerateConfig { top_p: Some(0.9), ..GenerateConfig::default() };
        let drawn: Vec<i64> = (0..200).map(|_| pick(&logits, &nucleus, &mut rng)).collect();
        assert!(drawn.iter().all(|&t| t == 1 || t == 2) && drawn.contains(&1) && drawn.contains(&2));
        // A high temperature flattens: every token turns up.
        let hot = GenerateConfig { temperature: 50.0, ..GenerateConfig::default() };
        let drawn: Vec<i64> = (0..400).map(|_| pick(&logits, &hot, &mut rng)).collect();
        assert!((0..4).all(|t| drawn.contains(&t)));
        // NaN logits are never drawn; top_k 0 keeps every token.
        let nan = [f64::NAN, 1.0, 0.5];
        let all = GenerateConfig { top_k: Some(0), ..GenerateConfig::default() };
        assert!((0..100).all(|_| pick(&nan, &all, &mut rng) != 0));
        assert_eq!(pick(&[f64::NEG_INFINITY, f64::INFINITY], &all, &mut rng), 1);
        // The same seed draws the same tokens.
        let a: Vec<i64> = (0..20).map(|_| pick(&logits, &hot, &mut Rng::seed_from_u64(9))).collect();
        let b: Vec<i64> = (0..20).map(|_| pick(&logits, &hot, &mut Rng::seed_from_u64(9))).collect();
        assert_eq!(a, b);
    }
}
