//! Timing shared by the benchmark examples.

use std::time::Instant;

/// Median wall time of `runs` calls of `f`, in seconds.
pub fn median(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[runs / 2]
}
