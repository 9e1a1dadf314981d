//! Every epoch's metrics, the best epoch, and the history as it is kept
//! in a checkpoint's metadata and drawn as curves (feature `plot`).

use std::path::Path;

use super::error::TrainError;
use super::metrics::{Confusion, Scores};
#[cfg(feature = "plot")]
use super::plot;
use super::task::higher_is_better;

/// Metrics of one epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// The training split's metrics, as measured while training (dropout
    /// active, weights changing).
    pub train: Scores,
    /// The validation split's metrics after the epoch.
    pub val: Scores,
    /// Wall time of the training part of the epoch.
    pub seconds: f64,
    /// Training samples per second.
    pub samples_per_second: f64,
    /// Optimizer steps taken.
    pub steps: usize,
    /// The median wall time of this process's optimizer steps (their
    /// batches' forward and backward passes and the update).
    pub step_seconds: f64,
    /// Steps skipped for a non-finite loss or gradient ([`NonFinite::SkipStep`](super::NonFinite::SkipStep)).
    pub skipped_steps: usize,
}

/// The validation metric that picks the best epoch and drives early
/// stopping.
#[derive(Clone, Debug, PartialEq)]
pub struct Monitor {
    /// The metric's name (`accuracy`, `loss`, `f1`, `r2`, ...).
    pub metric: String,
    /// Whether a larger value is better.
    pub higher_is_better: bool,
}

impl Monitor {
    /// Watches `metric`, in the direction its name implies (`None` for a
    /// name `fit` does not report).
    pub fn new(metric: &str) -> Option<Self> {
        Some(Monitor { metric: metric.to_owned(), higher_is_better: higher_is_better(metric)? })
    }

    /// Whether `a` is better than `b` by more than `min_delta`.
    pub fn improves(&self, a: f64, b: f64, min_delta: f64) -> bool {
        if self.higher_is_better { a > b + min_delta } else { a < b - min_delta }
    }
}

impl Default for Monitor {
    fn default() -> Self {
        Monitor { metric: "accuracy".into(), higher_is_better: true }
    }
}

/// Every epoch's metrics so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// One entry per epoch, in order.
    pub epochs: Vec<EpochMetrics>,
    /// The metric that picks [`History::best`].
    pub monitor: Monitor,
    /// A classifier's confusion matrix on the validation split after the
    /// last epoch this run trained.
    pub confusion: Option<Confusion>,
    /// Why training ended before `FitConfig::epochs`, if it did (early
    /// stopping).
    pub stopped_early: Option<String>,
    /// The epoch whose weights `fit` put back into the model at the end
    /// ([`EarlyStopping::restore_best`](super::EarlyStopping::restore_best)),
    /// when that was not the last epoch trained: the model then holds
    /// [`History::best`]'s weights, not the last epoch's.
    pub restored_epoch: Option<usize>,
}

impl History {
    /// The monitored validation metric of `e` (NaN if it was not recorded).
    pub fn monitored(&self, e: &EpochMetrics) -> f64 {
        e.val.get(&self.monitor.metric).unwrap_or(f64::NAN)
    }

    /// The epoch with the best monitored validation metric among those
    /// whose losses and metric are finite (the first of equals).
    pub fn best(&self) -> Option<&EpochMetrics> {
        let mut best: Option<&EpochMetrics> = None;
        for e in self
            .epochs
            .iter()
            .filter(|e| e.train.loss().is_finite() && e.val.loss().is_finite() && self.monitored(e).is_finite())
        {
            if best.is_none_or(|b| self.monitor.improves(self.monitored(e), self.monitored(b), 0.0)) {
                best = Some(e);
            }
        }
        best
    }

    pub(super) fn encode(&self) -> String {
        let split = |prefix: &str, s: &Scores| s.iter().map(|(n, v)| format!(" {prefix}.{n}={v}")).collect::<String>();
        self.epochs
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {}{}{}",
                    e.epoch,
                    e.seconds,
                    e.samples_per_second,
                    e.steps,
                    e.step_seconds,
                    e.skipped_steps,
                    split("train", &e.train),
                    split("val", &e.val)
                )
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads what [`History::encode`] wrote, and the fixed columns of
    /// checkpoints from before named metrics (epoch, train loss and
    /// accuracy, validation loss and accuracy, seconds, samples/s and,
    /// later, skipped steps); `None` for anything else, epochs out of
    /// order or counts that are not counts included.
    pub(super) fn decode(s: &str) -> Option<History> {
        let mut epochs: Vec<EpochMetrics> = Vec::new();
        let count = |x: f64| (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as usize);
        for row in s.split(';').filter(|r| !r.is_empty()) {
            let fields: Vec<&str> = row.split(' ').collect();
            let named = fields.iter().position(|f| f.contains('=')).unwrap_or(fields.len());
            let v: Vec<f64> = fields[..named].iter().map(|x| x.parse().ok()).collect::<Option<_>>()?;
            let epoch = count(*v.first()?).filter(|&e| e == epochs.len() + 1)?;
            let e = if named < fields.len() || v.len() == 6 {
                if v.len() != 6 {
                    return None;
                }
                let (mut train, mut val) = (Scores::default(), Scores::default());
                for f in &fields[named..] {
                    let (key, value) = f.split_once('=')?;
                    let value: f64 = value.parse().ok()?;
                    match key.split_once('.')? {
                        ("train", name) if !name.is_empty() => train.set(name, value),
                        ("val", name) if !name.is_empty() => val.set(name, value),
                        _ => return None,
                    }
                }
                EpochMetrics {
                    epoch,
                    train,
                    val,
                    seconds: v[1],
                    samples_per_second: v[2],
                    steps: count(v[3])?,
                    step_seconds: v[4],
                    skipped_steps: count(v[5])?,
                }
            } else {
                if v.len() != 7 && v.len() != 8 {
                    return None;
                }
                let scores = |loss: f64, accuracy: f64| {
                    let mut s = Scores::default();
                    s.set("loss", loss);
                    s.set("accuracy", accuracy);
                    s
                };
                EpochMetrics {
                    epoch,
                    train: scores(v[1], v[2]),
                    val: scores(v[3], v[4]),
                    seconds: v[5],
                    samples_per_second: v[6],
                    steps: 0,
                    step_seconds: f64::NAN,
                    skipped_steps: v.get(7).map_or(Some(0), |&x| count(x))?,
                }
            };
            epochs.push(e);
        }
        Some(History { epochs, ..History::default() })
    }

    /// The curves in `dir`: `curve.svg` (`fit` writes it after every
    /// epoch), or with `png` `curve.png` (once, at the end of a run).
    /// Without the `plot` feature there is nothing to draw them with, and
    /// nothing is written.
    #[cfg_attr(not(feature = "plot"), allow(unused_variables))]
    pub(crate) fn write_curves(&self, dir: &Path, metric: &str, png: bool) -> Result<(), TrainError> {
        #[cfg(feature = "plot")]
        match png {
            false => write_file(&dir.join("curve.svg"), self.svg(metric).as_bytes())?,
            true => write_file(&dir.join("curve.png"), &self.png(metric))?,
        }
        Ok(())
    }

    /// The curves as an SVG: the loss on the left, `metric` on the right
    /// (feature `plot`).
    #[cfg(feature = "plot")]
    pub fn svg(&self, metric: &str) -> String {
        let ((loss, left), (name, right)) = (self.series("loss"), self.series(metric));
        plot::two_panel_svg("epoch", (loss, &left), (name, &right))
    }

    /// The same curves as a PNG file's bytes (feature `plot`).
    #[cfg(feature = "plot")]
    pub fn png(&self, metric: &str) -> Vec<u8> {
        let ((loss, left), (name, right)) = (self.series("loss"), self.series(metric));
        plot::two_panel_png("epoch", (loss, &left), (name, &right))
    }

    /// The training and validation curves of metric `name`.
    #[cfg(feature = "plot")]
    fn series<'a>(&self, name: &'a str) -> (&'a str, [plot::Series<'static>; 2]) {
        let pts = |f: &dyn Fn(&EpochMetrics) -> Option<f64>| {
            self.epochs.iter().filter_map(|e| Some((e.epoch as f64, f(e)?))).collect()
        };
        let train = plot::Series { name: "train", color: "#1f77b4", points: pts(&|e| e.train.get(name)) };
        let val = plot::Series { name: "validation", color: "#d62728", points: pts(&|e| e.val.get(name)) };
        (name, [train, val])
    }
}

/// `bytes` written to `path` atomically, as checkpoints are.
#[cfg(feature = "plot")]
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TrainError> {
    blaze_record::write_atomic(path, bytes).map_err(|e| match e {
        blaze_record::RecordError::Io { path, source } => TrainError::Io { path, source },
        other => TrainError::Record(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the `plot` feature the curves are written; without it, nothing
    /// is (and `fit` needs no chart drawer or PNG encoder).
    #[test]
    fn curves_are_written_with_the_plot_feature_alone() {
        let dir = std::env::temp_dir().join(format!("blaze-train-curves-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let history = History { epochs: vec![epoch(1, 0.9, 0.1), epoch(2, 0.5, 0.5)], ..History::default() };
        history.write_curves(&dir, "accuracy", false).expect("writes the SVG");
        history.write_curves(&dir, "accuracy", true).expect("writes the PNG");
        let written = ["curve.svg", "curve.png"].map(|f| dir.join(f).is_file());
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(written, [cfg!(feature = "plot"); 2]);
    }

    fn scores(loss: f64, accuracy: f64) -> Scores {
        let mut s = Scores::default();
        s.set("loss", loss);
        s.set("accuracy", accuracy);
        s
    }

    fn epoch(epoch: usize, val_loss: f64, val_accuracy: f64) -> EpochMetrics {
        EpochMetrics {
            epoch,
            train: scores(0.5, 0.5),
            val: scores(val_loss, val_accuracy),
            seconds: 1.0,
            samples_per_second: 10.0,
            steps: 4,
            step_seconds: 0.25,
            skipped_steps: 0,
        }
    }

    #[test]
    fn the_best_epoch_is_a_finite_one_by_the_monitored_metric() {
        let mut h = History {
            epochs: vec![epoch(1, 1.0, 0.6), epoch(2, f64::NAN, 0.9), epoch(3, 0.8, 0.7), epoch(4, 0.7, 0.7)],
            ..History::default()
        };
        assert_eq!(h.best().map(|e| e.epoch), Some(3), "the first of equals");
        h.monitor = Monitor::new("loss").expect("a metric");
        assert_eq!(h.best().map(|e| e.epoch), Some(4));
        let none = History { epochs: vec![epoch(1, f64::INFINITY, 0.9)], ..History::default() };
        assert!(none.best().is_none());
        assert!(Monitor::new("speed").is_none());
        let loss = Monitor::new("loss").expect("a metric");
        assert!(loss.improves(0.5, 0.6, 0.05) && !loss.improves(0.58, 0.6, 0.05));
    }

    #[test]
    fn history_round_trips_and_rejects_what_it_did_not_write() {
        let mut h = History { epochs: vec![epoch(1, 1.0, 0.6), epoch(2, 0.9, 0.7)], ..History::default() };
        h.epochs[1].val.set("f1", 0.25);
        assert_eq!(History::decode(&h.encode()), Some(h));
        // Older checkpoints wrote seven, then eight, fixed columns.
        let old = History::decode("1 0.5 0.5 1 0.6 1 10").expect("seven columns");
        assert_eq!((old.epochs[0].skipped_steps, old.epochs[0].val["accuracy"]), (0, 0.6));
        assert_eq!(History::decode("1 0.5 0.5 1 0.6 1 10 2").map(|h| h.epochs[0].skipped_steps), Some(2));
        for bad in [
            "1 2",
            "2 0.5 0.5 1 0.6 1 10",
            "1 0.5 0.5 1 0.6 1 10 -3",
            "1.5 0.5 0.5 1 0.6 1 10",
            "x",
            "1e300 1 1 1 1 1 1",
            "1 1 1 1 1 0 train.loss",
            "1 1 1 1 1 0 test.loss=1",
            "1 1 1 1 1 0 train.=1",
            "1 1 1 1 1 train.loss=1",
            "1 1 1 1 1 0 train.loss=x",
        ] {
            assert_eq!(History::decode(bad), None, "{bad}");
        }
    }
}
