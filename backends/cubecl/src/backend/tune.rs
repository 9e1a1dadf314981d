//! Running an op's candidates ([`run`]): the choice the device's tuner
//! (`crate::tune::Tuner`) holds for the shape class, or, for a new class,
//! each candidate checked against the reference and timed.

use std::time::Instant;

use crate::CubeDevice;
use crate::backend::CubeStorage;

/// One way to compute an op: a name for the cache, and the launch into
/// the output it is given, which reports a shape or device it cannot
/// take as `Err` without running.
pub(crate) type Candidate<'a> = (&'static str, &'a dyn Fn(&CubeStorage) -> Result<(), String>);

/// A candidate's launch, boxed.
pub(crate) type Launch<'a> = Box<dyn Fn(&CubeStorage) -> Result<(), String> + 'a>;

/// Samples timed per candidate, after one run that compiles it.
const SAMPLES: usize = 3;

/// Runs the candidate chosen for `key` on `device` into `out`,
/// choosing it first if `key` is new ([`choose`]; `candidates[0]` is
/// the reference, `preferred` the choice when not measuring). An
/// empty `out` has nothing to compute.
pub(crate) fn run(
    device: &CubeDevice,
    op: &str,
    key: &str,
    out: &CubeStorage,
    candidates: &[Candidate<'_>],
    preferred: usize,
) {
    if out.numel() == 0 {
        return;
    }
    let (tuner, id) = (&device.inner.tuner, || device.identity());
    #[cfg(test)]
    if let Some(name) = forced(op)
        && let Some((_, launch)) = candidates.iter().find(|(n, _)| *n == name)
    {
        match launch(out) {
            Ok(()) => return,
            Err(e) => REFUSED.set(Some(e)),
        }
    }
    if let Some(name) = tuner.choice(&id, key)
        && let Some((_, launch)) = candidates.iter().find(|(n, _)| *n == name)
        && launch(out).is_ok()
    {
        return;
    }
    let (name, timed) = choose(device, op, key, out, candidates, tuner.measures(), preferred);
    let (_, launch) = candidates.iter().find(|(n, _)| *n == name).expect("the chosen candidate is listed");
    launch(out).unwrap_or_else(|e| panic!("cubecl {op} ({key}): {name} took the shape, then refused it: {e}"));
    tuner.remember(&id, key, name, timed);
}

#[cfg(test)]
thread_local! {
    /// The candidate this thread's tests run for an op, in place of the tuner's choice.
    static FORCED: std::cell::Cell<Option<(&'static str, &'static str)>> = const { std::cell::Cell::new(None) };
    /// Why the forced candidate refused, if it did (the tuner's choice ran instead).
    static REFUSED: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
fn forced(op: &str) -> Option<&'static str> {
    FORCED.get().filter(|(o, _)| *o == op).map(|(_, name)| name)
}

/// `f`'s result with `op` on this thread running candidate `name`,
/// untuned, or why the candidate refused.
#[cfg(test)]
pub(crate) fn forcing<T>(op: &'static str, name: &'static str, f: impl FnOnce() -> T) -> Result<T, String> {
    FORCED.set(Some((op, name)));
    REFUSED.set(None);
    let out = f();
    FORCED.set(None);
    match REFUSED.take() {
        None => Ok(out),
        Some(why) => Err(why),
    }
}

/// Picks a candidate for a new shape class. The first candidate is the
/// reference (a kernel of this crate, simple enough to trust): it runs
/// into a scratch tensor of `out`'s shape, and every other candidate's
/// result must agree with it, so a kernel that computes wrongly on this
/// adapter or shape is refused, not chosen. With `measure`, each that
/// agrees is timed over [`SAMPLES`] runs after one that compiles it, and
/// the fastest wins (`true`: worth caching); without, `preferred` wins if
/// it agrees, else the reference. A candidate also drops out when it
/// refuses the shape, or when CubeCL reports its launch failed (which it
/// does on the buffer the launch was to write, not at the launch).
fn choose(
    device: &CubeDevice,
    op: &str,
    key: &str,
    out: &CubeStorage,
    candidates: &[Candidate<'_>],
    measure: bool,
    preferred: usize,
) -> (&'static str, bool) {
    let client = device.client();
    let run = |launch: &dyn Fn(&CubeStorage) -> Result<(), String>| -> Result<Vec<f32>, String> {
        let scratch = CubeStorage::empty(device, &out.shape, out.dtype);
        launch(&scratch)?;
        let bytes = client.read_one(scratch.handle.clone()).map_err(|e| crate::first_line(&e.to_string()))?;
        Ok(scratch.data(&bytes).values.to_f64_vec().into_iter().map(|x| x as f32).collect())
    };
    let (reference_name, reference) = candidates[0];
    let want = run(reference).unwrap_or_else(|e| panic!("cubecl {op} ({key}): {reference_name} failed: {e}"));
    let mut best: Option<(f64, &'static str)> = None;
    for (i, (name, launch)) in candidates.iter().enumerate() {
        if i > 0 {
            match run(*launch) {
                Ok(got) if agrees(&got, &want, out.dtype) => {}
                Ok(_) => continue,
                Err(_) => continue,
            }
        }
        if !measure {
            if i == preferred {
                return (name, false);
            }
            continue;
        }
        let scratch = CubeStorage::empty(device, &out.shape, out.dtype);
        let mut times = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let start = Instant::now();
            let _ = launch(&scratch);
            let _ = cubecl::future::block_on(client.sync_buffers([&scratch.handle]));
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[SAMPLES / 2];
        if best.is_none_or(|(t, _)| median < t) {
            best = Some((median, name));
        }
    }
    match best {
        Some((_, name)) => (name, true),
        None => (reference_name, false),
    }
}

/// Whether a candidate's result matches the reference's: NaN where it
/// has NaN, else within a relative 1e-3 (the orders of summation differ),
/// or two f16 steps (each rounds its own f32 sum).
fn agrees(got: &[f32], want: &[f32], dtype: blaze_runtime::DType) -> bool {
    let tol = if dtype == blaze_runtime::DType::F16 { 2e-3 } else { 1e-3 };
    got.len() == want.len()
        && got.iter().zip(want).all(|(&g, &w)| (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * (1.0 + w.abs()))
}
