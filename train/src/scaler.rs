//! Dynamic loss scaling for f16 training, as PyTorch's `GradScaler`: the
//! loss (so every gradient) is multiplied by a large factor, which lifts
//! small gradients above f16's smallest values; a step whose scaled
//! gradients overflow is skipped and the factor halved, and after a run
//! of good steps it doubles again.

/// The state of dynamic loss scaling (`torch.amp.GradScaler`, with its
/// defaults from [`GradScaler::new`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScaler {
    scale: f64,
    /// What the scale is multiplied by after `growth_interval` good steps.
    pub growth_factor: f64,
    /// What it is multiplied by after an overflow.
    pub backoff_factor: f64,
    /// Good steps in a row before the scale grows.
    pub growth_interval: u32,
    good: u32,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new()
    }
}

impl GradScaler {
    /// PyTorch's defaults: scale 2^16, doubled after 2000 good steps,
    /// halved at each overflow.
    pub fn new() -> Self {
        GradScaler::with_scale(65536.0)
    }

    /// The defaults but the first scale.
    pub fn with_scale(scale: f64) -> Self {
        assert!(scale.is_finite() && scale > 0.0, "GradScaler: the scale must be positive and finite, got {scale}");
        GradScaler { scale, growth_factor: 2.0, backoff_factor: 0.5, growth_interval: 2000, good: 0 }
    }

    /// The factor the loss's gradient is multiplied by now.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The state a checkpoint keeps (PyTorch's `state_dict`: the scale and
    /// the good steps since it last changed), as text.
    pub fn encode(&self) -> String {
        format!("{} {}", self.scale, self.good)
    }

    /// The defaults with the state of [`GradScaler::encode`]; `None` if
    /// `text` is not one.
    pub fn decode(text: &str) -> Option<GradScaler> {
        let (scale, good) = text.split_once(' ')?;
        let scale: f64 = scale.parse().ok()?;
        let good: u32 = good.parse().ok()?;
        (scale.is_finite() && scale > 0.0).then_some(GradScaler { scale, good, ..GradScaler::new() })
    }

    /// After a step: `finite` says whether its scaled gradients were all
    /// finite (the step was taken, the gradients divided by [`Self::scale`]
    /// first) or not (it was skipped). Halves the scale on an overflow,
    /// doubles it after `growth_interval` finite steps in a row.
    pub fn update(&mut self, finite: bool) {
        if finite {
            self.good += 1;
            if self.good >= self.growth_interval {
                let grown = self.scale * self.growth_factor;
                // As PyTorch: a scale that would overflow f32 stays.
                if grown.is_finite() && grown <= f64::from(f32::MAX) {
                    self.scale = grown;
                }
                self.good = 0;
            }
        } else {
            self.scale = (self.scale * self.backoff_factor).max(f64::MIN_POSITIVE);
            self.good = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_on_overflow_and_grows_after_a_run_of_good_steps() {
        let mut s = GradScaler { growth_interval: 3, ..GradScaler::new() };
        assert_eq!(s.scale(), 65536.0);
        s.update(false);
        assert_eq!(s.scale(), 32768.0);
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 32768.0);
        // An overflow restarts the count.
        s.update(false);
        assert_eq!(s.scale(), 16384.0);
        for _ in 0..3 {
            s.update(true);
        }
        assert_eq!(s.scale(), 32768.0);
    }

    #[test]
    fn the_state_round_trips_through_text() {
        let mut s = GradScaler::new();
        s.update(false);
        s.update(true);
        assert_eq!(GradScaler::decode(&s.encode()), Some(s));
        for bad in ["", "1", "x 2", "-1 0", "inf 0", "2 -1"] {
            assert_eq!(GradScaler::decode(bad), None, "{bad:?}");
        }
    }
}
