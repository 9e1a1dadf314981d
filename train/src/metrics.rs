//! The metrics of an epoch: [`Scores`] by name, the running [`Tally`]
//! they come from, and the classifier's [`Confusion`] matrix.

use std::fmt;

use super::task::{Task, top_k_name};
use super::trainable::Observed;
use blaze_runtime::{Backend, DType, Tensor};

/// Named metrics of one split, in the order `fit` reports them (`loss`
/// first). Index by name: `scores["accuracy"]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores(Vec<(String, f64)>);

impl Scores {
    /// The metric `name`, if reported.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The mean loss (NaN when none was recorded).
    pub fn loss(&self) -> f64 {
        self.get("loss").unwrap_or(f64::NAN)
    }

    /// Sets `name` to `value`, adding it after the others if new.
    pub fn set(&mut self, name: &str, value: f64) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name.to_owned(), value)),
        }
    }

    /// Every metric with its value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(n, v)| (n.as_str(), *v))
    }

    /// The metrics' names.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }
}

impl std::ops::Index<&str> for Scores {
    type Output = f64;

    fn index(&self, name: &str) -> &f64 {
        match self.0.iter().find(|(n, _)| n == name) {
            Some((_, v)) => v,
            None => panic!("no metric `{name}` was recorded (there are: {})", self.names().join(", ")),
        }
    }
}

impl fmt::Display for Scores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.iter().enumerate() {
            let sep = if i > 0 { " " } else { "" };
            write!(f, "{sep}{name} {value:.4}")?;
        }
        Ok(())
    }
}

/// Counts of (true class, predicted class) pairs: row `t`, column `p`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confusion {
    classes: usize,
    counts: Vec<u64>,
}

impl Confusion {
    /// A matrix of zeros for `classes` classes.
    pub fn new(classes: usize) -> Self {
        Confusion { classes, counts: vec![0; classes * classes] }
    }

    /// The number of classes.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// How many samples of class `truth` were predicted as `predicted`.
    pub fn count(&self, truth: usize, predicted: usize) -> u64 {
        self.counts[truth * self.classes + predicted]
    }

    /// Counts one sample.
    pub fn add(&mut self, truth: usize, predicted: usize) {
        self.counts[truth * self.classes + predicted] += 1;
    }

    /// Precision, recall and F1 of each class that occurs among the
    /// targets or the predictions, `0` where undefined (scikit-learn's
    /// `zero_division=0`).
    pub fn per_class(&self) -> Vec<(usize, [f64; 3])> {
        let c = self.classes;
        (0..c)
            .filter_map(|k| {
                let tp = self.count(k, k) as f64;
                let predicted: u64 = (0..c).map(|t| self.count(t, k)).sum();
                let actual: u64 = (0..c).map(|p| self.count(k, p)).sum();
                if predicted == 0 && actual == 0 {
                    return None;
                }
                let ratio = |a: f64, b: u64| if b == 0 { 0.0 } else { a / b as f64 };
                let (p, r) = (ratio(tp, predicted), ratio(tp, actual));
                let f1 = if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) };
                Some((k, [p, r, f1]))
            })
            .collect()
    }

    /// Precision, recall and F1 averaged over the classes that occur
    /// (`average="macro"`).
    pub fn macro_average(&self) -> [f64; 3] {
        let rows = self.per_class();
        let n = rows.len().max(1) as f64;
        let mut sums = [0.0; 3];
        for (_, v) in &rows {
            for (s, x) in sums.iter_mut().zip(v) {
                *s += x;
            }
        }
        sums.map(|s| s / n)
    }
}

impl fmt::Display for Confusion {
    /// The matrix (rows: true class, columns: predicted) and each class's
    /// precision, recall and F1.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.classes;
        let width = self.counts.iter().max().map_or(1, |m| m.to_string().len()).max(c.to_string().len()).max(2);
        writeln!(f, "confusion matrix (rows: true class, columns: predicted)")?;
        write!(f, "{:>width$} |", "")?;
        for p in 0..c {
            write!(f, " {p:>width$}")?;
        }
        writeln!(f)?;
        writeln!(f, "{}", "-".repeat((width + 1) * (c + 1) + 1))?;
        for t in 0..c {
            write!(f, "{t:>width$} |")?;
            for p in 0..c {
                write!(f, " {:>width$}", self.count(t, p))?;
            }
            writeln!(f)?;
        }
        let label = width.max(5);
        writeln!(f, "{:>label$}  precision recall     f1", "class")?;
        for (k, [p, r, f1]) in self.per_class() {
            writeln!(f, "{k:>label$}  {p:>9.4} {r:>6.4} {f1:>6.4}")?;
        }
        let [p, r, f1] = self.macro_average();
        write!(f, "{:>label$}  {p:>9.4} {r:>6.4} {f1:>6.4}", "macro")
    }
}

/// Running sums over an epoch's batches, from which its [`Scores`] come.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    task: Task,
    /// The k of the top-k accuracy; `None` leaves it out (training).
    top_k: Option<usize>,
    /// Sum of batch loss × counted samples, and the samples counted.
    loss_sum: f64,
    count: f64,
    /// Samples (batch rows) seen.
    samples: f64,
    correct: f64,
    top_k_correct: f64,
    /// Whether a batch had more classes than k (else top-k is left out).
    top_k_seen: bool,
    confusion: Option<Confusion>,
    /// Binary: true positives, predicted positives, actual positives.
    positives: [f64; 3],
    /// Regression, per output column: Σ|e|, Σe², Σt, Σt².
    columns: Vec<[f64; 4]>,
}

impl Tally {
    pub(crate) fn new(task: Task, top_k: Option<usize>) -> Self {
        Tally {
            task,
            top_k,
            loss_sum: 0.0,
            count: 0.0,
            samples: 0.0,
            correct: 0.0,
            top_k_correct: 0.0,
            top_k_seen: false,
            confusion: None,
            positives: [0.0; 3],
            columns: Vec::new(),
        }
    }

    /// The samples (batch rows) seen so far.
    pub(crate) fn samples(&self) -> f64 {
        self.samples
    }

    /// The loss and the task's first metric so far, for a progress bar.
    pub(crate) fn brief(&self) -> String {
        let n = self.count.max(1.0);
        let (name, value) = match self.task {
            Task::Classification | Task::Binary => ("acc", self.correct / n),
            Task::Regression => ("mae", self.error_mean(0)),
            Task::LanguageModel => ("ppl", self.loss().exp()),
        };
        format!("loss {:.4} {name} {value:.4}", self.loss())
    }

    /// Adds a batch: its output, targets and mean loss. Class targets
    /// equal to `ignore` are left out.
    pub(crate) fn add<B: Backend>(&mut self, batch: &Observed<B>, loss: f64, ignore: Option<i64>) {
        let (output, target) = (&batch.output, &batch.target);
        let counted = match self.task {
            Task::Classification | Task::LanguageModel => self.classes(output, &target.reshape([-1]), ignore),
            Task::Binary => self.binary(output, target),
            Task::Regression => self.regression(output, target),
        };
        self.samples += batch.samples as f64;
        if counted > 0.0 {
            self.loss_sum += loss * counted;
            self.count += counted;
        }
    }

    /// Accuracy, top-k and confusion counts; returns the rows counted.
    fn classes<B: Backend>(&mut self, logits: &Tensor<B, 2>, targets: &Tensor<B, 1>, ignore: Option<i64>) -> f64 {
        let [n, classes] = logits.shape();
        let predicted: Tensor<B, 1> = logits.argmax(1).squeeze(1);
        let (predicted, truth) = (predicted.to_vec::<i64>(), targets.to_vec::<i64>());
        let kept = |t: i64| Some(t) != ignore;
        let counted = truth.iter().filter(|&&t| kept(t)).count();
        self.correct += truth.iter().zip(&predicted).filter(|&(&t, &p)| kept(t) && t == p).count() as f64;
        if self.task == Task::Classification {
            let m = self.confusion.get_or_insert_with(|| Confusion::new(classes));
            if m.classes() == classes {
                for (&t, &p) in truth.iter().zip(&predicted) {
                    if kept(t) {
                        m.add(t as usize, p as usize);
                    }
                }
            }
        }
        // Top-k says something only when there are more than k classes.
        if let Some(k) = self.top_k.filter(|&k| self.task == Task::Classification && n > 0 && classes > k) {
            self.top_k_seen = true;
            // A row is right within k when fewer than k logits beat the
            // target's (ignored rows look at class 0 and are not counted).
            let safe = targets.masked_fill(&targets.lt_scalar(0.0), 0.0);
            let picked = logits.gather(1, &safe.reshape([n, 1]));
            let above: Tensor<B, 2> = logits.gt(&picked.expand([n, classes])).to_dtype(DType::I64).sum_dim(1);
            let above = above.to_vec::<i64>();
            self.top_k_correct +=
                truth.iter().zip(&above).filter(|&(&t, &a)| kept(t) && (a as usize) < k).count() as f64;
        }
        counted as f64
    }

    /// Counts of positives (logit above 0, target at least one half).
    fn binary<B: Backend>(&mut self, logits: &Tensor<B, 2>, targets: &Tensor<B, 2>) -> f64 {
        let predicted = logits.gt_scalar(0.0);
        let actual = targets.ge_scalar(0.5);
        let count = |t: &Tensor<B, 2>| t.to_dtype(DType::I64).sum().item();
        let tp = count(&predicted.logical_and(&actual));
        let (pp, ap) = (count(&predicted), count(&actual));
        let n = logits.numel() as f64;
        // Right: both positive, or both negative.
        self.correct += tp + (n - pp - ap + tp);
        for (s, x) in self.positives.iter_mut().zip([tp, pp, ap]) {
            *s += x;
        }
        n
    }

    /// Per-column error and target sums of `[n, columns]`.
    fn regression<B: Backend>(&mut self, output: &Tensor<B, 2>, target: &Tensor<B, 2>) -> f64 {
        let [n, k] = output.shape();
        let err = output.sub(target);
        let column = |t: Tensor<B, 2>| t.sum_dim(0).to_dtype(DType::F64).to_vec::<f64>();
        let sums = [column(err.abs()), column(err.square()), column(target.clone()), column(target.square())];
        if self.columns.len() != k {
            self.columns = vec![[0.0; 4]; k];
        }
        for (j, c) in self.columns.iter_mut().enumerate() {
            for (i, s) in c.iter_mut().enumerate() {
                *s += sums[i][j];
            }
        }
        n as f64
    }

    /// The mean loss so far.
    pub(crate) fn loss(&self) -> f64 {
        self.loss_sum / self.count.max(1.0)
    }

    /// The metrics so far (the loss of a split where nothing counted is
    /// NaN).
    pub(crate) fn scores(&self) -> Scores {
        let mut s = Scores::default();
        let n = self.count.max(1.0);
        s.set("loss", if self.count > 0.0 { self.loss() } else { f64::NAN });
        match self.task {
            Task::Classification => {
                s.set("accuracy", self.correct / n);
                if let Some(k) = self.top_k.filter(|_| self.top_k_seen) {
                    s.set(&top_k_name(k), self.top_k_correct / n);
                }
                let [p, r, f1] = self.confusion.as_ref().map_or([0.0; 3], Confusion::macro_average);
                s.set("precision", p);
                s.set("recall", r);
                s.set("f1", f1);
            }
            Task::Binary => {
                let [tp, pp, ap] = self.positives;
                let (p, r) = (if pp > 0.0 { tp / pp } else { 0.0 }, if ap > 0.0 { tp / ap } else { 0.0 });
                s.set("accuracy", self.correct / n);
                s.set("precision", p);
                s.set("recall", r);
                s.set("f1", if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 });
            }
            Task::Regression => {
                s.set("mae", self.error_mean(0));
                s.set("rmse", self.error_mean(1).sqrt());
                s.set("r2", self.r2());
            }
            Task::LanguageModel => {
                s.set("perplexity", s.loss().exp());
                s.set("accuracy", self.correct / n);
            }
        }
        s
    }

    /// The mean over every output value of running sum `k` of the
    /// regression columns (0: |e|, 1: e²).
    fn error_mean(&self, k: usize) -> f64 {
        let values = (self.columns.len() as f64 * self.count).max(1.0);
        self.columns.iter().map(|c| c[k]).sum::<f64>() / values
    }

    /// R² per column, averaged: `1 - SSE / SST`, scikit-learn's values
    /// for a constant column (1 when predicted exactly, else 0).
    fn r2(&self) -> f64 {
        let n = self.count;
        if self.columns.is_empty() || n == 0.0 {
            return f64::NAN;
        }
        let each = self.columns.iter().map(|&[_, sse, sum, sum_sq]| {
            let sst = sum_sq - sum * sum / n;
            if sst > 1e-12 * sum_sq.max(1e-300) {
                1.0 - sse / sst
            } else if sse == 0.0 {
                1.0
            } else {
                0.0
            }
        });
        each.sum::<f64>() / self.columns.len() as f64
    }

    /// The confusion matrix of a classifier.
    pub(crate) fn confusion(&self) -> Option<&Confusion> {
        self.confusion.as_ref()
    }

    /// Adds another rank's sums (data-parallel): `sums` is what
    /// [`Tally::to_sums`] gave there.
    pub(crate) fn load_sums(&mut self, sums: &[f64]) {
        let mut it = sums.iter().copied();
        let mut next = || it.next().unwrap_or(0.0);
        self.loss_sum = next();
        self.count = next();
        self.samples = next();
        self.correct = next();
        self.top_k_correct = next();
        for p in &mut self.positives {
            *p = next();
        }
        for c in &mut self.columns {
            for s in c {
                *s = next();
            }
        }
        if let Some(m) = &mut self.confusion {
            for c in &mut m.counts {
                *c = next() as u64;
            }
        }
    }

    /// Every running sum as one vector, to add up over ranks.
    pub(crate) fn to_sums(&self) -> Vec<f64> {
        let mut v = vec![self.loss_sum, self.count, self.samples, self.correct, self.top_k_correct];
        v.extend(self.positives);
        v.extend(self.columns.iter().flatten());
        if let Some(m) = &self.confusion {
            v.extend(m.counts.iter().map(|&c| c as f64));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_recall_and_f1_by_hand() {
        // Truth 0 0 1 1 2, predicted 0 1 1 1 0.
        let mut m = Confusion::new(3);
        for (t, p) in [(0, 0), (0, 1), (1, 1), (1, 1), (2, 0)] {
            m.add(t, p);
        }
        let rows = m.per_class();
        // Class 0: precision 1/2, recall 1/2; class 1: 2/3, 1; class 2: 0, 0.
        assert_eq!(rows[0].1, [0.5, 0.5, 0.5]);
        assert!((rows[1].1[0] - 2.0 / 3.0).abs() < 1e-12 && rows[1].1[1] == 1.0);
        assert!((rows[1].1[2] - 0.8).abs() < 1e-12);
        assert_eq!(rows[2].1, [0.0, 0.0, 0.0]);
        let [p, r, f1] = m.macro_average();
        assert!((p - (0.5 + 2.0 / 3.0) / 3.0).abs() < 1e-12);
        assert!((r - 0.5).abs() < 1e-12);
        assert!((f1 - 1.3 / 3.0).abs() < 1e-12);
        let text = m.to_string();
        assert!(text.contains("macro") && text.lines().count() == 11, "{text}");
    }

    #[test]
    fn scores_index_by_name_and_say_what_exists() {
        let mut s = Scores::default();
        s.set("loss", 0.5);
        s.set("accuracy", 0.75);
        s.set("loss", 0.25);
        assert_eq!((s["loss"], s.get("accuracy"), s.get("f1")), (0.25, Some(0.75), None));
        assert_eq!(s.to_string(), "loss 0.2500 accuracy 0.7500");
        let err = std::panic::catch_unwind(|| s["f1"]).expect_err("no f1");
        let msg = err.downcast_ref::<String>().expect("a message");
        assert!(msg.contains("`f1`") && msg.contains("loss, accuracy"), "{msg}");
    }
}
