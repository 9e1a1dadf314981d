//! The GEMM's plan per shape class, measured on the machine that runs it.
//!
//! The rule-based plan ([`gemm_plan`]: a kernel by ISA and maker, blocking
//! from the reported cache sizes) is right on the machines it was tuned on
//! and wrong somewhere else. So the first product of a shape class (each
//! size rounded up to a power of two, per element type) large enough for
//! blocking to matter searches around it on this CPU: the other kernels it
//! runs, then `KC`, `MC` and `NC` in turn, then whether deep tiles
//! prefetch their destination rows, each kept where it times faster
//! (`search`). The choice serves the class for the rest of the
//! process and is kept in a file, one line per CPU and class, so a later
//! process starts tuned: `$BLAZE_GEMM_TUNE_CACHE`, else
//! `$XDG_CACHE_HOME/blaze/cpu-gemm.tsv`, else
//! `$HOME/.cache/blaze/cpu-gemm.tsv` ([`gemm_tune_cache_path`]). Delete the
//! file, or call [`clear_gemm_tuning`], to measure again.
//!
//! A product split over threads gives each a block of rows or of columns;
//! the first one of a class (from 4M multiply-adds), per layout and thread
//! count, times both splits in turn with its plan, scaled down to about
//! 64M multiply-adds, and keeps the faster by the same margin (`split_for`,
//! a line of its own in the file). Either split gives the same bits.
//!
//! `BLAZE_GEMM_TUNE=0` turns the search off, as does `BLAZE_GEMM_KERNEL`
//! (a forced kernel); so does a build without optimisations, whose timings
//! would say nothing about an optimised one: those take the rule's plan.
//! A product's plan is its whole shape's, whatever thread count splits it,
//! and a class's plan is fixed at its first product: a product gives the
//! same bits on any number of threads and every time in a process. Its
//! depth blocking orders the sums, so products of different classes (a
//! row of a batch of 64 and of 128) and plans measured in different
//! processes may differ in their last bits.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use blaze_runtime::tune_cache;

use crate::cpuinfo::{CpuInfo, cpu_info};
use crate::gemm::{GemmFloat, GemmKernel, GemmPlan, MAX_NR, PREFETCH_DEPTH, Strided, gemm_plan};
use crate::product::{split_over_threads, split_rule};

/// Multiply-adds below which a product takes the rule's plan: its blocks
/// fit the caches whatever the blocking.
const TUNE_FLOPS: usize = 1 << 21;

/// Largest rows and depth, and columns, the search times a class at: a
/// product cut down to them bounds the search's cost, and keeps enough
/// columns for the column blocks (`NC`, from 512) to differ. Candidates
/// that cannot differ at those sizes are not timed.
const SEARCH_ROWS_DEPTH: usize = 512;
const SEARCH_COLUMNS: usize = 2048;

/// How much faster a plan must time to replace the best so far.
const GAIN: f64 = 0.97;

/// Multiply-adds from which a product's split over threads is measured
/// rather than taken from the rule.
const SPLIT_TUNE_FLOPS: usize = 1 << 22;

/// The most multiply-adds a timing of a split runs, a millisecond or so
/// on two threads: a larger product is timed scaled down, its
/// proportions kept.
const SPLIT_TIMED_FLOPS: usize = 1 << 26;

/// A shape class: the element's bytes and each size rounded up to a power
/// of two.
type Class = (u8, u32, u32, u32);

/// A split class: a shape class, which operands are stored transposed,
/// and the threads.
type SplitClass = (Class, [bool; 2], usize);

/// The plans chosen in this process.
struct Tuning {
    /// Whether classes are measured (else every product takes the rule).
    on: bool,
    /// The cache file, if any.
    path: Option<PathBuf>,
    /// What names this CPU in the file.
    owner: String,
    /// Choices read from the file, by class key, not yet used.
    saved: Mutex<Option<HashMap<String, String>>>,
    /// The plan of each class met so far.
    plans: RwLock<HashMap<Class, GemmPlan>>,
    /// Whether a class, with its operands so stored (transposed or not)
    /// and split over a number of threads, takes blocks of columns, for
    /// each met so far.
    splits: RwLock<HashMap<SplitClass, bool>>,
}

fn tuning() -> &'static Tuning {
    static TUNING: OnceLock<Tuning> = OnceLock::new();
    TUNING.get_or_init(|| Tuning {
        on: cfg!(not(debug_assertions))
            && std::env::var_os("BLAZE_GEMM_KERNEL").is_none()
            && !tune_cache::switched_off("BLAZE_GEMM_TUNE"),
        path: gemm_tune_cache_path(),
        owner: owner(cpu_info()),
        saved: Mutex::new(None),
        plans: RwLock::new(HashMap::new()),
        splits: RwLock::new(HashMap::new()),
    })
}

/// Where measured GEMM plans are kept (see the module's documentation).
pub fn gemm_tune_cache_path() -> Option<PathBuf> {
    tune_cache::cache_path("BLAZE_GEMM_TUNE_CACHE", "cpu-gemm.tsv")
}

/// Forgets every plan this CPU measured, in the cache file and for the
/// classes this process has not met yet (those it has keep their plan,
/// so its products stay consistent).
pub fn clear_gemm_tuning() -> std::io::Result<()> {
    let t = tuning();
    *t.saved.lock().unwrap_or_else(|p| p.into_inner()) = Some(HashMap::new());
    match &t.path {
        Some(path) => tune_cache::forget(path, &t.owner),
        None => Ok(()),
    }
}

/// This CPU in the cache file: maker, model, caches and this crate's
/// version (a new version measures again: its kernels may have changed).
fn owner(info: &CpuInfo) -> String {
    format!(
        "{:?}-{:x}-{:x}-l1d{}-l2{}-l3{}-blaze{}",
        info.vendor,
        info.family,
        info.model,
        info.l1d >> 10,
        info.l2 >> 10,
        info.l3 >> 10,
        env!("CARGO_PKG_VERSION")
    )
}

fn class<T>(m: usize, n: usize, k: usize) -> Class {
    let c = |x: usize| u32::try_from(x.max(1).next_power_of_two()).unwrap_or(u32::MAX);
    (std::mem::size_of::<T>() as u8, c(m), c(n), c(k))
}

fn key((bytes, m, n, k): Class) -> String {
    format!("f{}:m{m}:n{n}:k{k}", bytes * 8)
}

/// The plan for a product of `m x k` by `k x n` of `T` on this CPU.
pub(crate) fn plan_for<T: GemmFloat>(m: usize, n: usize, k: usize) -> GemmPlan {
    let t = tuning();
    if !t.on || m.saturating_mul(n).saturating_mul(k) < TUNE_FLOPS {
        return *gemm_plan();
    }
    let c = class::<T>(m, n, k);
    if let Some(plan) = t.plans.read().unwrap_or_else(|p| p.into_inner()).get(&c) {
        return *plan;
    }
    // The first product of the class: the saved plan, else a search, one
    // class at a time (a thread that meets a class being measured waits
    // for its plan, so the class has one plan in this process).
    let mut saved = t.saved.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(plan) = t.plans.read().unwrap_or_else(|p| p.into_inner()).get(&c) {
        return *plan;
    }
    let saved = saved.get_or_insert_with(|| tune_cache::load(t.path.as_deref(), &t.owner));
    let plan = match saved.get(&key(c)).and_then(|s| parse(s, cpu_info())) {
        Some(plan) => plan,
        None => {
            let dims = [m.min(SEARCH_ROWS_DEPTH), n.min(SEARCH_COLUMNS), k.min(SEARCH_ROWS_DEPTH)];
            let plan = search(gemm_plan(), dims, |p| time::<T>(p, dims));
            if let Some(path) = &t.path {
                tune_cache::store(path, &t.owner, &key(c), &format(&plan), "blaze-cpu");
            }
            plan
        }
    };
    t.plans.write().unwrap_or_else(|p| p.into_inner()).insert(c, plan);
    plan
}

/// Whether a product of `m x k` by `k x n` of `T` (`[m, n, k]`), split over `threads`
/// threads with `plan`, takes blocks of columns (else rows): measured
/// once per shape class, layout (which operands are `transposed`) and
/// thread count, from [`SPLIT_TUNE_FLOPS`], where the search is on, and
/// kept beside the plans (`f32:m256:n1024:k128:tn:t2 columns`);
/// the rule otherwise. The split does not change the bits. The timing
/// runs the product's own parallel loop, holding no lock: two threads
/// that meet a class together both time it, and a piece of another
/// product that this thread takes up while it waits may time its own.
pub(crate) fn split_for<T: GemmFloat>(
    [m, n, k]: [usize; 3],
    threads: usize,
    plan: &GemmPlan,
    transposed: [bool; 2],
) -> bool {
    let rule = split_rule(m, n, k);
    let t = tuning();
    if !t.on || m.saturating_mul(n).saturating_mul(k) < SPLIT_TUNE_FLOPS {
        return rule;
    }
    let c = class::<T>(m, n, k);
    if let Some(&columns) = t.splits.read().unwrap_or_else(|p| p.into_inner()).get(&(c, transposed, threads)) {
        return columns;
    }
    let key = split_key(c, transposed, threads);
    let saved = {
        let mut saved = t.saved.lock().unwrap_or_else(|p| p.into_inner());
        saved.get_or_insert_with(|| tune_cache::load(t.path.as_deref(), &t.owner)).get(&key).cloned()
    };
    let columns = match saved.as_deref() {
        Some("columns") => true,
        Some("rows") => false,
        _ => {
            let dims = scaled_to(SPLIT_TIMED_FLOPS, [m, n, k]);
            let columns = split_search(rule, |columns| time_split::<T>(plan, dims, transposed, columns));
            if let Some(path) = &t.path {
                tune_cache::store(path, &t.owner, &key, if columns { "columns" } else { "rows" }, "blaze-cpu");
            }
            columns
        }
    };
    t.splits.write().unwrap_or_else(|p| p.into_inner()).insert((c, transposed, threads), columns);
    columns
}

/// A split class in the cache file: the class's key, the layout (`n`
/// for an operand with contiguous rows, `t` for one stored transposed)
/// and the threads.
fn split_key(c: Class, [a, b]: [bool; 2], threads: usize) -> String {
    let layout = |t: bool| if t { 't' } else { 'n' };
    format!("{}:{}{}:t{threads}", key(c), layout(a), layout(b))
}

/// `[m, n, k]` scaled by one factor (rounded up to 16) so that their
/// product is at most `flops`, when it is larger.
fn scaled_to(flops: usize, [m, n, k]: [usize; 3]) -> [usize; 3] {
    let work = (m * n * k) as f64;
    if work <= flops as f64 {
        return [m, n, k];
    }
    let f = (flops as f64 / work).cbrt();
    [m, n, k].map(|d| ((d as f64 * f).ceil() as usize).next_multiple_of(16).min(d))
}

/// The split that `seconds` (one product's time, split in columns or
/// not) finds faster, the two timed in turn five times, the fastest of
/// each compared: the other split must beat the rule's by [`GAIN`].
fn split_search(rule: bool, mut seconds: impl FnMut(bool) -> f64) -> bool {
    let (mut ours, mut other) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..5 {
        ours = ours.min(seconds(rule));
        other = other.min(seconds(!rule));
    }
    if other < ours * GAIN { !rule } else { rule }
}

/// The shortest of three runs of a `dims` (`[m, n, k]`) product with
/// `plan`, its operands stored as `transposed` says, split over the
/// current pool's threads in columns or rows, after one that grows the
/// packing buffers.
fn time_split<T: GemmFloat>(plan: &GemmPlan, [m, n, k]: [usize; 3], [at, bt]: [bool; 2], columns: bool) -> f64 {
    let (a, b) = operands::<T>([m, n, k]);
    let mut c = vec![T::zero(); m * n];
    let (lhs, rhs) = (stored(&a, [m, k], at), stored(&b, [k, n], bt));
    let mut run = || {
        let start = Instant::now();
        // SAFETY: `a` is m x k, `b` k x n and `c` m x n, row-major and
        // apart; the plan's kernel runs on this CPU (it is the product's).
        unsafe { split_over_threads(plan, columns, m, n, k, c.as_mut_ptr(), n as isize, lhs, rhs, false) };
        start.elapsed()
    };
    run();
    (0..3).map(|_| run()).min().unwrap_or_default().as_secs_f64()
}

/// A `rows x cols` operand over `values`, row-major or, `transposed`,
/// stored as its transpose is (its columns contiguous).
fn stored<T>(values: &[T], [rows, cols]: [usize; 2], transposed: bool) -> Strided<T> {
    let (r, c) = (rows as isize, cols as isize);
    Strided { ptr: values.as_ptr(), rs: if transposed { 1 } else { c }, cs: if transposed { r } else { 1 } }
}

/// A plan as the cache file keeps it: `kernel KC MC NC prefetch`, the
/// last word `no-prefetch` where its tiles do not prefetch their rows.
fn format(p: &GemmPlan) -> String {
    let prefetch = if p.prefetch { "prefetch" } else { "no-prefetch" };
    format!("{} {} {} {} {prefetch}", p.kernel.name(), p.kc, p.mc, p.nc)
}

/// A plan from the cache file, if it is one this CPU runs and the
/// kernel's tiles fit. A line of an older build, which did not search
/// the prefetch, is none: the class is measured again.
fn parse(s: &str, info: &CpuInfo) -> Option<GemmPlan> {
    let mut words = s.split_whitespace();
    let kernel: GemmKernel = words.next()?.parse().ok()?;
    let [kc, mc, nc] = [words.next()?, words.next()?, words.next()?].map(|w| w.parse::<usize>().ok());
    let prefetch = match words.next()? {
        "prefetch" => true,
        "no-prefetch" => false,
        _ => return None,
    };
    let plan =
        GemmPlan { kc: kc?, mc: mc?, nc: nc?, prefetch, ..GemmPlan::for_kernel(kernel, info, "measured on this CPU") };
    (kernel.runs_here() && fits(&plan) && words.next().is_none()).then_some(plan)
}

/// Whether a blocking suits its kernel and stays within the sizes a
/// search tries (a cache file may have been edited): `MC` a multiple of
/// both tiles' rows up to 1024, `NC` of the widest tile's columns up to
/// 8192, `KC` within 16..=1024.
fn fits(p: &GemmPlan) -> bool {
    let step = p.kernel.row_step();
    (step..=1024).contains(&p.mc)
        && p.mc.is_multiple_of(step)
        && (MAX_NR..=8192).contains(&p.nc)
        && p.nc.is_multiple_of(MAX_NR)
        && (16..=1024).contains(&p.kc)
}

/// Whether `p` and `q` run a product of `[m, n, k]` differently: a
/// block no smaller than the product is the product, and tiles shallower
/// than [`PREFETCH_DEPTH`] never prefetch.
fn differ(p: &GemmPlan, q: &GemmPlan, [m, n, k]: [usize; 3]) -> bool {
    p.kernel != q.kernel
        || p.kc.min(k) != q.kc.min(k)
        || p.mc.min(m) != q.mc.min(m)
        || p.nc.min(n) != q.nc.min(n)
        || (p.prefetch != q.prefetch && p.kc.min(k) >= PREFETCH_DEPTH)
}

/// The plans a search tries around `rule`, one coordinate at a time: the
/// kernels this CPU runs (the portable one only where no other runs),
/// then depths, row blocks and column blocks around the rule's, then the
/// destination prefetch switched.
pub(crate) fn neighbours(rule: &GemmPlan) -> [Vec<GemmPlan>; 5] {
    let vector = GemmKernel::ALL.iter().any(|k| *k != GemmKernel::Scalar && k.runs_here());
    let kernels = GemmKernel::ALL
        .into_iter()
        .filter(|k| k.runs_here() && (*k != GemmKernel::Scalar || !vector))
        .map(|kernel| GemmPlan { kernel, ..*rule })
        .collect();
    let step = rule.kernel.row_step();
    let kcs = [128, 192, 256, 384, 512].into_iter().map(|kc| GemmPlan { kc, ..*rule }).collect();
    let mcs = [rule.mc / 2, rule.mc * 3 / 2, rule.mc * 2]
        .into_iter()
        .map(|mc| GemmPlan { mc: (mc / step * step).clamp(step, 1024 / step * step), ..*rule })
        .collect();
    let ncs = [rule.nc / 2, rule.nc * 2]
        .into_iter()
        .map(|nc| GemmPlan { nc: (nc / MAX_NR * MAX_NR).clamp(512, 8192), ..*rule })
        .collect();
    let prefetch = vec![GemmPlan { prefetch: !rule.prefetch, ..*rule }];
    [kernels, kcs, mcs, ncs, prefetch]
}

/// The fastest plan a walk from `rule` finds by `seconds` (the time of one
/// product of `dims`, `[m, n, k]`, with a plan): each coordinate in turn
/// (kernel, `KC`, `MC`, `NC`, prefetch) moves to its fastest value, the
/// others held; a new kernel keeps
/// the blocking, `MC` rounded down to its tiles. A walk that ends away
/// from the rule keeps its end only if it beats the rule again, timed in
/// turn with it.
pub(crate) fn search(rule: &GemmPlan, dims: [usize; 3], mut seconds: impl FnMut(&GemmPlan) -> f64) -> GemmPlan {
    let mut best = GemmPlan { reason: "measured on this CPU", ..*rule };
    let mut best_time = seconds(&best);
    for coordinate in 0..5 {
        for mut p in neighbours(&best)[coordinate].clone() {
            // Another kernel's tiles set the rows' step.
            let step = p.kernel.row_step();
            p.mc = (p.mc / step * step).max(step);
            if !fits(&p) || !differ(&p, &best, dims) {
                continue;
            }
            // A move must gain more than timing noise, so a machine where
            // the rule is right keeps it.
            let t = seconds(&p);
            if t < best_time * GAIN {
                (best, best_time) = (p, t);
            }
        }
    }
    // The walk times each plan once, and the machine may have been busier
    // early on (another thread's share of the same product): the winner
    // must beat the rule again, the two timed in turn.
    let start = GemmPlan { reason: best.reason, ..*rule };
    if differ(&best, &start, dims) {
        let (mut ours, mut theirs) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            theirs = theirs.min(seconds(&start));
            ours = ours.min(seconds(&best));
        }
        if ours >= theirs * GAIN {
            return start;
        }
    }
    best
}

/// The values of a timed `m x k` by `k x n` product: any will do, so
/// long as they are not all zero.
fn operands<T: GemmFloat>([m, n, k]: [usize; 3]) -> (Vec<T>, Vec<T>) {
    let fill = |len: usize, step: usize, period: usize| -> Vec<T> {
        (0..len)
            .map(|i| num_traits::cast::<f64, T>(((i * step) % period) as f64 / period as f64 - 0.5).expect("a float"))
            .collect()
    };
    (fill(m * k, 7, 13), fill(k * n, 5, 11))
}

/// The shortest of a few runs of a `dims` (`[m, n, k]`) product with
/// `plan` on this thread, after one that grows the packing buffers.
fn time<T: GemmFloat>(plan: &GemmPlan, [m, n, k]: [usize; 3]) -> f64 {
    let (a, b) = operands::<T>([m, n, k]);
    let mut c = vec![T::zero(); m * n];
    let (lhs, rhs) = (stored(&a, [m, k], false), stored(&b, [k, n], false));
    let mut run = || {
        let start = Instant::now();
        // SAFETY: `a` is m x k, `b` k x n and `c` m x n, row-major and
        // apart; the plan's kernel runs on this CPU (searches try only those).
        unsafe { T::serial(plan, m, n, k, c.as_mut_ptr(), n as isize, lhs, rhs, false) };
        start.elapsed()
    };
    run();
    let (mut best, mut spent, mut runs) = (Duration::MAX, Duration::ZERO, 0);
    while runs < 3 || (runs < 10 && spent < Duration::from_millis(2)) {
        let t = run();
        (best, spent, runs) = (best.min(t), spent + t, runs + 1);
    }
    best.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuinfo::Vendor;
    use crate::product::Product;

    /// The Intel machine of issue 48 (AVX-512, two FMA ports, L1d 48 KiB,
    /// L2 2 MiB), whose rule plan is `avx512-12x32, KC 384, MC 336, NC 4096`.
    fn intel() -> CpuInfo {
        CpuInfo {
            vendor: Vendor::Intel,
            family: 6,
            model: 0xa7,
            l1d: 48 << 10,
            l2: 2 << 20,
            l3: 105 << 20,
            caches_reported: true,
        }
    }

    #[test]
    fn the_search_walks_to_the_fastest_plan_one_coordinate_at_a_time() {
        let rule = *gemm_plan();
        // A made-up machine whose products are fastest at KC 384 and at
        // the largest row block, whatever the kernel.
        let cost = |p: &GemmPlan| (p.kc as f64 - 384.0).abs() + 1000.0 / p.mc as f64;
        let mut timed = 0;
        let big = [4096, 4096, 4096];
        let best = search(&rule, big, |p| {
            timed += 1;
            cost(p)
        });
        assert_eq!(best.kc, 384, "{best}");
        let largest = neighbours(&rule)[2].iter().map(|p| p.mc).max().unwrap();
        assert_eq!(best.mc, largest.max(rule.mc), "{best}");
        assert!(fits(&best), "{best}");
        assert!(timed <= 1 + 3 + 5 + 3 + 2 + 1 + 6, "a short search: {timed} timings");
        // A walk that moved only because the machine was busier when the
        // rule was timed (first) goes back to the rule.
        let mut calls = 0;
        let busy_first = search(&rule, big, |p| {
            calls += 1;
            if calls == 1 {
                2.0
            } else if p.kc == rule.kc && p.mc == rule.mc && p.nc == rule.nc && p.kernel == rule.kernel {
                1.0
            } else {
                1.5
            }
        });
        assert_eq!((busy_first.kc, busy_first.mc, busy_first.nc), (rule.kc, rule.mc, rule.nc));
        // At a product smaller than every block only the kernels differ,
        // and only they are timed.
        let mut tiny = 0;
        let _ = search(&rule, [8, 8, 8], |_| {
            tiny += 1;
            1.0
        });
        assert_eq!(tiny, neighbours(&rule)[0].iter().filter(|p| p.kernel != rule.kernel).count() + 1);
        // Within noise of the rule is not enough to leave it.
        let kept = search(&rule, big, |p| {
            if (p.kernel, p.kc, p.mc, p.nc, p.prefetch) == (rule.kernel, rule.kc, rule.mc, rule.nc, true) {
                1.0
            } else {
                0.98
            }
        });
        assert_eq!((kept.kernel, kept.kc, kept.mc, kept.nc), (rule.kernel, rule.kc, rule.mc, rule.nc));
        assert!(kept.prefetch);
        // A machine where the tiles' prefetch costs turns it off, and only
        // where tiles are deep enough to prefetch at all.
        let slower = |p: &GemmPlan| if p.prefetch { 1.2 } else { 1.0 };
        assert!(!search(&rule, big, slower).prefetch);
        assert!(search(&rule, [512, 512, PREFETCH_DEPTH - 1], slower).prefetch);
    }

    #[test]
    fn the_search_reaches_what_the_intel_machine_needs() {
        // Both AVX-512 tiles and KC/MC around the rule's are candidates
        // there (the kernels are filtered by this CPU, so list them by hand).
        let rule = GemmPlan::for_kernel(GemmKernel::Avx512x12, &intel(), "rule");
        assert_eq!((rule.kc, rule.mc, rule.nc), (384, 336, 4096), "{rule}");
        let [_, kcs, mcs, ncs, prefetch] = neighbours(&rule);
        assert!(rule.prefetch && prefetch.iter().any(|p| !p.prefetch), "the destination prefetch, off");
        assert!(kcs.iter().any(|p| p.kc == 512) && kcs.iter().any(|p| p.kc == 256));
        assert!(mcs.iter().any(|p| p.mc > rule.mc) && mcs.iter().any(|p| p.mc < rule.mc));
        assert!(ncs.iter().any(|p| p.nc == 8192));
        for p in kcs.iter().chain(&mcs).chain(&ncs) {
            assert!(fits(p), "{p}");
        }
        let eight = GemmPlan { kernel: GemmKernel::Avx512x8, mc: rule.mc / 24 * 24, ..rule };
        assert!(fits(&eight), "the other AVX-512 tile with the same blocking: {eight}");
    }

    #[test]
    fn measured_plans_compute_products_and_round_trip_through_the_file_format() {
        // A real search at a small size, in whatever build this is: every
        // plan it may pick computes the product.
        let rule = *gemm_plan();
        let plan = search(&rule, [24, 40, 48], |p| time::<f32>(p, [24, 40, 48]));
        let (m, n, k) = (37, 70, 129);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        for p in std::iter::once(plan).chain(neighbours(&rule).into_iter().flatten()).filter(fits) {
            let mut c = vec![0.0f32; m * n];
            let lhs = Strided { ptr: a.as_ptr(), rs: k as isize, cs: 1 };
            let rhs = Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 };
            // SAFETY: m x k by k x n into m x n, apart; `neighbours` lists
            // only kernels this CPU runs.
            unsafe { f32::serial(&p, m, n, k, c.as_mut_ptr(), n as isize, lhs, rhs, false) };
            for i in [0, m / 2, m - 1] {
                for j in [0, n / 3, n - 1] {
                    let want: f32 = (0..k).map(|q| a[i * k + q] * b[q * n + j]).sum();
                    assert_eq!(c[i * n + j], want, "{p} at ({i}, {j})");
                }
            }
        }
        assert_eq!(parse(&format(&plan), cpu_info()), Some(plan), "{plan}");
        let quiet = GemmPlan { prefetch: false, ..plan };
        assert_eq!(parse(&format(&quiet), cpu_info()), Some(quiet), "{quiet}");
        assert!(format(&quiet).ends_with(" no-prefetch"));
        assert_eq!(parse(&(format(&plan) + " again"), cpu_info()), None);
        // An older build's line, which never timed the prefetch.
        let old = format!("{} {} {} {}", plan.kernel.name(), plan.kc, plan.mc, plan.nc);
        assert_eq!(parse(&old, cpu_info()), None);
        assert_eq!(parse("avx2-6x16 256 97 2048 prefetch", cpu_info()), None, "MC not a multiple of the tiles");
        assert_eq!(parse("no-such-kernel 256 96 2048 prefetch", cpu_info()), None);
        assert_eq!(parse("avx2-6x16 256", cpu_info()), None);
    }

    #[test]
    fn the_split_leaves_the_rule_only_for_a_clear_gain() {
        // Columns 10% faster: taken, whichever the rule said.
        let faster_in_columns = |columns: bool| if columns { 0.9 } else { 1.0 };
        assert!(split_search(false, faster_in_columns));
        assert!(split_search(true, faster_in_columns));
        // Within noise: the rule stays.
        let close = |columns: bool| if columns { 0.99 } else { 1.0 };
        assert!(!split_search(false, close));
        // A slow first timing of the rule's split (a busy machine) does not
        // move it: each side keeps its fastest of five.
        let mut calls = 0;
        let busy_first = split_search(false, |columns| {
            calls += 1;
            if calls == 1 {
                5.0
            } else if columns {
                1.01
            } else {
                1.0
            }
        });
        assert!(!busy_first);
        assert_eq!(calls, 10);
        assert_eq!(split_key(class::<f32>(256, 784, 128), [true, false], 2), "f32:m256:n1024:k128:tn:t2");
    }

    #[test]
    fn a_split_product_is_timed_scaled_down_in_proportion() {
        assert_eq!(scaled_to(1 << 26, [256, 784, 128]), [256, 784, 128]);
        let [m, n, k] = scaled_to(1 << 26, [2048, 1024, 256]);
        assert!(m * n * k <= (1 << 26) * 11 / 10, "{m} {n} {k}");
        assert!(m == 2 * n && n == 4 * k, "{m} {n} {k}");
    }

    #[test]
    fn both_splits_give_the_serial_product_bits_in_every_layout() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        let plan = *gemm_plan();
        for (m, n, k) in [(70, 90, 33), (200, 48, 130), (33, 300, 70)] {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 / 13.0 - 0.5).collect();
            let b: Vec<f32> = (0..k * n).map(|i| (i % 11) as f32 / 11.0 - 0.5).collect();
            for (at, bt) in [(false, false), (true, false), (false, true), (true, true)] {
                // The same buffers read as a transposed operand's storage.
                let (lhs, rhs) = (stored(&a, [m, k], at), stored(&b, [k, n], bt));
                let mut serial = vec![0.0f32; m * n];
                // SAFETY: m x k and k x n operands over buffers of that
                // size, an m x n destination; the rule's kernel runs here.
                unsafe { f32::serial(&plan, m, n, k, serial.as_mut_ptr(), n as isize, lhs, rhs, false) };
                for columns in [false, true] {
                    let mut split = vec![0.0f32; m * n];
                    // SAFETY: as above.
                    pool.install(|| unsafe {
                        split_over_threads(&plan, columns, m, n, k, split.as_mut_ptr(), n as isize, lhs, rhs, false)
                    });
                    assert!(split == serial, "{m}x{k}x{n}, transposed {at} {bt}, columns {columns}");
                }
                assert!(pool.install(|| time_split::<f32>(&plan, [m, n, k], [at, bt], true)) > 0.0);
            }
        }
    }

    #[test]
    fn classes_round_sizes_up_and_name_the_element_type() {
        assert_eq!(class::<f32>(100, 64, 3), (4, 128, 64, 4));
        assert_eq!(key(class::<f64>(1, 0, 513)), "f64:m1:n1:k1024");
        assert!(owner(&intel()).starts_with("Intel-6-a7-l1d48-l22048-"), "{}", owner(&intel()));
    }
}
