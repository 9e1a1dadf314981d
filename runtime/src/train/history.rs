//! Every epoch's metrics, the best epoch, and the history as it is kept
//! in a checkpoint's metadata and drawn as curves.

use super::plot;

/// Metrics of one epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss.
    pub train_loss: f64,
    /// Training accuracy (with dropout active, as measured while training).
    pub train_accuracy: f64,
    /// Validation loss.
    pub val_loss: f64,
    /// Validation accuracy.
    pub val_accuracy: f64,
    /// Wall time of the training part of the epoch.
    pub seconds: f64,
    /// Training samples per second.
    pub samples_per_second: f64,
    /// Steps skipped for a non-finite loss or gradient ([`NonFinite::SkipStep`](super::NonFinite::SkipStep)).
    pub skipped_steps: usize,
}

/// Every epoch's metrics so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// One entry per epoch, in order.
    pub epochs: Vec<EpochMetrics>,
}

impl History {
    /// The epoch with the best validation accuracy among those whose
    /// losses are finite.
    pub fn best(&self) -> Option<&EpochMetrics> {
        self.epochs
            .iter()
            .filter(|e| e.train_loss.is_finite() && e.val_loss.is_finite())
            .max_by(|a, b| a.val_accuracy.total_cmp(&b.val_accuracy))
    }

    pub(super) fn encode(&self) -> String {
        self.epochs
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {} {} {}",
                    e.epoch,
                    e.train_loss,
                    e.train_accuracy,
                    e.val_loss,
                    e.val_accuracy,
                    e.seconds,
                    e.samples_per_second,
                    e.skipped_steps
                )
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads what [`History::encode`] wrote (7 fields per epoch in
    /// checkpoints from before `skipped_steps`); `None` for anything else,
    /// epochs out of order or counts that are not counts included.
    pub(super) fn decode(s: &str) -> Option<History> {
        let mut epochs: Vec<EpochMetrics> = Vec::new();
        for row in s.split(';').filter(|r| !r.is_empty()) {
            let v: Vec<f64> = row.split(' ').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            if v.len() != 7 && v.len() != 8 {
                return None;
            }
            let count = |x: f64| (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as usize);
            let epoch = count(v[0]).filter(|&e| e == epochs.len() + 1)?;
            epochs.push(EpochMetrics {
                epoch,
                train_loss: v[1],
                train_accuracy: v[2],
                val_loss: v[3],
                val_accuracy: v[4],
                seconds: v[5],
                samples_per_second: v[6],
                skipped_steps: v.get(7).map_or(Some(0), |&x| count(x))?,
            });
        }
        Some(History { epochs })
    }

    /// The curves as an SVG: loss on the left, accuracy on the right.
    pub fn svg(&self) -> String {
        use plot::Series;
        let pts = |f: fn(&EpochMetrics) -> f64| self.epochs.iter().map(|e| (e.epoch as f64, f(e))).collect();
        let loss = [
            Series { name: "train", color: "#1f77b4", points: pts(|e| e.train_loss) },
            Series { name: "validation", color: "#d62728", points: pts(|e| e.val_loss) },
        ];
        let acc = [
            Series { name: "train", color: "#1f77b4", points: pts(|e| e.train_accuracy) },
            Series { name: "validation", color: "#d62728", points: pts(|e| e.val_accuracy) },
        ];
        plot::two_panel_svg("epoch", ("loss", &loss), ("accuracy", &acc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(epoch: usize, val_loss: f64, val_accuracy: f64) -> EpochMetrics {
        EpochMetrics {
            epoch,
            train_loss: 0.5,
            train_accuracy: 0.5,
            val_loss,
            val_accuracy,
            seconds: 1.0,
            samples_per_second: 10.0,
            skipped_steps: 0,
        }
    }

    #[test]
    fn the_best_epoch_is_a_finite_one() {
        let h = History { epochs: vec![epoch(1, 1.0, 0.6), epoch(2, f64::NAN, 0.9), epoch(3, 0.8, 0.7)] };
        assert_eq!(h.best().map(|e| e.epoch), Some(3));
        let none = History { epochs: vec![epoch(1, f64::INFINITY, 0.9)] };
        assert!(none.best().is_none());
    }

    #[test]
    fn history_round_trips_and_rejects_what_it_did_not_write() {
        let h = History { epochs: vec![epoch(1, 1.0, 0.6), epoch(2, 0.9, 0.7)] };
        assert_eq!(History::decode(&h.encode()), Some(h));
        // Older checkpoints wrote seven fields.
        assert_eq!(History::decode("1 0.5 0.5 1 0.6 1 10").map(|h| h.epochs[0].skipped_steps), Some(0));
        for bad in [
            "1 2",
            "2 0.5 0.5 1 0.6 1 10",
            "1 0.5 0.5 1 0.6 1 10 -3",
            "1.5 0.5 0.5 1 0.6 1 10",
            "x",
            "1e300 1 1 1 1 1 1",
        ] {
            assert_eq!(History::decode(bad), None, "{bad}");
        }
    }
}
