//! Seeded random numbers that give the same stream on every platform and
//! every release, so `manual_seed(s)` reproduces a run bit for bit.
//!
//! Values are drawn on the host and uploaded, so a seeded model initialises to
//! the same weights on every backend.

use std::sync::Mutex;

/// A xoshiro256++ generator seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose stream depends only on `seed`.
    pub fn seed_from_u64(seed: u64) -> Self {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[low, high)`.
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.next_f64()
    }

    /// Standard normal, by the Box-Muller transform.
    pub fn normal(&mut self) -> f64 {
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform integer in `0..n` (`n > 0`), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below: n must be positive");
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// A generator for a separate stream, derived from this one.
    pub fn fork(&mut self) -> Rng {
        Rng::seed_from_u64(self.next_u64())
    }
}

/// The counter-based generator kernels draw per-element noise from: the
/// bits at element `index` of a draw under `seed` are a function of the
/// two alone, so a kernel computes them where it needs them (a dropout
/// mask is drawn in the forward pass and drawn again in the backward,
/// never stored), in any order and on any backend, with the same result.
/// Two rounds of a 32-bit integer hash (lowbias32), keyed by the seed's
/// halves; the WGSL twin is [`COUNTER_WGSL`].
#[inline(always)]
pub fn counter_bits(seed: u64, index: u32) -> u32 {
    #[inline(always)]
    fn mix(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x7feb_352d);
        h ^= h >> 15;
        h = h.wrapping_mul(0x846c_a68b);
        h ^ (h >> 16)
    }
    mix(mix(index ^ seed as u32) ^ (seed >> 32) as u32)
}

/// Uniform in `[0, 1)` at element `index` of a draw under `seed`: 24
/// random bits, so the value is exact in `f32` and the same on every
/// backend.
#[inline(always)]
pub fn counter_uniform(seed: u64, index: u32) -> f32 {
    (counter_bits(seed, index) >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// [`counter_uniform`] in WGSL, as `blaze_uniform(seed_lo, seed_hi, index)`.
pub const COUNTER_WGSL: &str = "
fn blaze_mix(x: u32) -> u32 {
    var h = x ^ (x >> 16u);
    h = h * 0x7feb352du;
    h = h ^ (h >> 15u);
    h = h * 0x846ca68bu;
    return h ^ (h >> 16u);
}
fn blaze_uniform(k0: u32, k1: u32, i: u32) -> f32 {
    return f32(blaze_mix(blaze_mix(i ^ k0) ^ k1) >> 8u) / 16777216.0;
}
";

static GLOBAL: Mutex<Option<Rng>> = Mutex::new(None);

/// Seeds the global generator behind `Tensor::rand_uniform` and friends, as
/// `torch.manual_seed` does. Before the first call the seed is 0, so runs are
/// reproducible by default.
pub fn manual_seed(seed: u64) {
    *GLOBAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(Rng::seed_from_u64(seed));
}

/// Runs `f` with the global generator.
pub fn with_global_rng<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    let mut guard = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(|| Rng::seed_from_u64(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_draws_are_uniform_and_keyed_by_the_seed() {
        let n = 1 << 16;
        let draw = |seed| (0..n).map(|i| counter_uniform(seed, i)).collect::<Vec<f32>>();
        let (a, b) = (draw(1), draw(2));
        assert!(a.iter().all(|u| (0.0..1.0).contains(u)));
        let mean = a.iter().map(|&u| f64::from(u)).sum::<f64>() / f64::from(n);
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        // A tenth of the draws fall below 0.1, and neighbours are not alike.
        let below = a.iter().filter(|&&u| u < 0.1).count() as f64 / f64::from(n);
        assert!((below - 0.1).abs() < 0.01, "{below}");
        let close = a.windows(2).filter(|w| (w[0] - w[1]).abs() < 0.01).count() as f64 / f64::from(n);
        assert!(close < 0.03, "{close}");
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        assert!(same < 8, "{same} equal draws under two seeds");
        assert_eq!(a, draw(1), "a draw depends on the seed and the index only");
    }

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let a: Vec<u64> = {
            let mut r = Rng::seed_from_u64(7);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::seed_from_u64(7);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::seed_from_u64(8);
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn normal_has_unit_moments() {
        let mut r = Rng::seed_from_u64(1);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        // Standard errors are 1/sqrt(n) ~ 0.002 for the mean and ~0.003 for the variance.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.015, "var {var}");
    }

    #[test]
    fn uniform_stays_in_range_and_below_is_unbiased_enough() {
        let mut r = Rng::seed_from_u64(2);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            let u = r.uniform(-2.0, 3.0);
            assert!((-2.0..3.0).contains(&u));
            counts[r.below(3) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }
}
