//! The parallel loops of the CPU backend and its GEMMs: indices and
//! chunks of a slice on rayon's threads, with one copy of rayon's
//! splitting for every loop; and keeping the pool's threads awake between
//! those loops through a long stretch of work ([`keep_awake`]).

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

/// How many times more work than from one of the pool's threads a
/// parallel loop needs to fork from a thread outside the pool (a
/// program's own thread calling ops, as inference does). Such a fork hands
/// every piece to the pool's threads, which may be asleep, and sleeps
/// until they are done: two wake-ups. On a two-core Zen 5 VM an empty
/// `rayon::join` from outside a pool of two took 20 µs back to back and
/// 45-76 µs after half a millisecond idle, where the forks the loops'
/// thresholds were set for, between the pool's own threads, cost next to
/// nothing; the MLP example's batch-1 forward called from the main thread
/// took 12-24 µs on two threads against 8 µs on one, for the one product
/// large enough to fork.
pub const OUTSIDE_POOL: usize = 16;

/// Whether work of `n` (elements, multiply-adds) at or above `threshold`
/// should fork: on a pool of more than one thread, and from outside the
/// pool only for [`OUTSIDE_POOL`] times the work. Every parallel loop of
/// the CPU backend and its GEMMs decides here.
#[inline]
pub fn should_fork(n: usize, threshold: usize) -> bool {
    let scale = if rayon::current_thread_index().is_some() { 1 } else { OUTSIDE_POOL };
    rayon::current_num_threads() > 1 && n >= threshold.saturating_mul(scale)
}

/// `f(i)` for every `i` in `0..n`, on rayon's threads, at least `min_len`
/// indices a task. Every parallel loop of the CPU backend goes through here
/// (or the chunk helpers below, built on it), so rayon's splitting is
/// compiled once rather than once per loop; a call per index (per chunk of work)
/// costs nothing next to the work.
pub fn for_each_index(n: usize, min_len: usize, f: &(dyn Fn(usize) + Sync)) {
    fork(|| (0..n).into_par_iter().with_min_len(min_len.max(1)).for_each(f));
}

/// A slice split into chunks of `len` (the last may be shorter) that
/// [`for_each_index`]'s tasks take by index.
struct Chunks<'a, T> {
    ptr: *mut T,
    total: usize,
    len: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Chunks` hands out disjoint parts of a slice it borrows
// mutably, each to one task (see `get`), so sharing it between threads is
// sharing `&mut [T]` parts: fine for `T: Send`.
unsafe impl<T: Send> Sync for Chunks<'_, T> {}

impl<'a, T> Chunks<'a, T> {
    fn new(xs: &'a mut [T], len: usize) -> Self {
        Chunks { ptr: xs.as_mut_ptr(), total: xs.len(), len: len.max(1), _slice: PhantomData }
    }

    fn count(&self) -> usize {
        self.total.div_ceil(self.len)
    }

    /// Chunk `i`.
    ///
    /// # Safety
    /// `i < self.count()`, and no other reference to chunk `i` is live:
    /// each index of a [`for_each_index`] call is handed out once.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self, i: usize) -> &'a mut [T] {
        let start = i * self.len;
        let len = self.len.min(self.total - start);
        // SAFETY: `start..start + len` lies in the slice (`i < count`) and
        // no other reference to it is live (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

/// `f(i, chunk)` for every `len`-long chunk of `xs` (the last may be
/// shorter), in parallel, at least `min_len` chunks a task: what
/// `xs.par_chunks_mut(len).enumerate()` does, with one copy of rayon's
/// splitting for the crate.
pub fn chunks_mut<T: Send>(xs: &mut [T], len: usize, min_len: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let xs = Chunks::new(xs, len);
    // SAFETY: `for_each_index` hands out each `i < count` once.
    for_each_index(xs.count(), min_len, &|i| f(i, unsafe { xs.get(i) }));
}

/// What [`chunks_mut2`] calls with chunk `i` of each slice.
pub type ChunkPairFn<'a, T, U> = dyn Fn(usize, &mut [T], &mut [U]) + Sync + 'a;

/// [`chunks_mut`] over two slices at once, chunk `i` of each together, for
/// as many chunks as the shorter has (as rayon's `zip`).
pub fn chunks_mut2<T: Send, U: Send>(
    xs: &mut [T],
    x_len: usize,
    ys: &mut [U],
    y_len: usize,
    min_len: usize,
    f: &ChunkPairFn<'_, T, U>,
) {
    let (xs, ys) = (Chunks::new(xs, x_len), Chunks::new(ys, y_len));
    // SAFETY: as in `chunks_mut`, for both slices.
    for_each_index(xs.count().min(ys.count()), min_len, &|i| f(i, unsafe { xs.get(i) }, unsafe { ys.get(i) }));
}

/// How long a polling thread goes without finding work before it lets
/// rayon put it to sleep. Rayon's own wait is 32 yields (tens of
/// microseconds), shorter than most of the serial stretches between a
/// training step's parallel ops. Waking the thread again costs tens of
/// microseconds, a fraction of a percent of a pause this long; at 2 ms the
/// GPT example's step still woke the other thread about a dozen times.
const BLOCKTIME: Duration = Duration::from_millis(20);

/// Rounds of 64 empty polls (each round a few microseconds) a poller also
/// makes before it sleeps: a thread the OS set aside for longer than
/// [`BLOCKTIME`] polls again rather than leaving as soon as it runs. Waking
/// it again allocates rayon's broadcast job, which a training step must
/// not do without cause.
const IDLE_ROUNDS: u64 = 1000;

/// Stretches of [`keep_awake`] work in progress, process-wide. The other
/// threads poll only while there is exactly one: a poller runs other
/// threads' jobs on top of whatever its own thread was waiting for, so two
/// stretches sharing a pool could each bury the other's work.
static STRETCHES: AtomicUsize = AtomicUsize::new(0);

/// One [`keep_awake`] stretch: whether it has ended, and how many of its
/// pollers are still polling.
#[derive(Default)]
struct Stretch {
    ended: AtomicBool,
    polling: AtomicUsize,
}

thread_local! {
    /// The stretch this thread runs, if it runs one.
    static RUNS: RefCell<Option<Arc<Stretch>>> = const { RefCell::new(None) };
    /// How many [`fork`]s this thread is inside.
    static FORKS: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f`, a long stretch of work called on a thread of rayon's pool,
/// with the pool's other threads polling for its parallel work between
/// forks instead of sleeping, as OpenMP's threads spin between parallel
/// regions. A sleeping thread is woken with a system call (in a VM, an
/// exit to the host too): on two threads that was a tenth of the GPT
/// example's step. A thread that finds no work for 20 ms (`BLOCKTIME`) goes back
/// to rayon's sleep, and the next fork at the top of `f` starts it polling
/// again. Nested calls, calls off the pool and pools of one thread just
/// run `f`, as does every call when `BLAZE_POLL=0` (or `off`): the
/// threads then sleep between forks, as rayon's do (OpenMP's
/// `OMP_WAIT_POLICY=passive`), for processes that share their cores.
///
/// A poller runs its jobs on top of whatever its thread was doing when it
/// took the poller up. At the start of a stretch called from outside any
/// parallel loop (`fit`'s, a benchmark's) the other threads are idle; one
/// called from inside a piece of another loop may hold that loop's other
/// pieces back until the stretch ends.
pub fn keep_awake<R>(f: impl FnOnce() -> R) -> R {
    if rayon::current_thread_index().is_none()
        || rayon::current_num_threads() < 2
        || RUNS.with(|runs| runs.borrow().is_some())
        || blaze_runtime::tune_cache::switched_off("BLAZE_POLL")
    {
        return f();
    }
    /// Ends the stretch however `f` leaves.
    struct End(Arc<Stretch>);
    impl Drop for End {
        fn drop(&mut self) {
            self.0.ended.store(true, Ordering::Release);
            RUNS.with(|runs| runs.borrow_mut().take());
            STRETCHES.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let stretch = Arc::new(Stretch::default());
    let alone = STRETCHES.fetch_add(1, Ordering::AcqRel) == 0;
    RUNS.with(|runs| *runs.borrow_mut() = Some(Arc::clone(&stretch)));
    let _end = End(Arc::clone(&stretch));
    // Beside another stretch its pollers would stop at once; the first
    // fork after the other ends starts them.
    if alone {
        stretch.start_polling();
    }
    f()
}

impl Stretch {
    /// Sets every other thread of the pool polling.
    fn start_polling(self: &Arc<Self>) {
        let owner = rayon::current_thread_index();
        self.polling.store(rayon::current_num_threads() - 1, Ordering::Release);
        let stretch = Arc::clone(self);
        rayon::spawn_broadcast(move |ctx| {
            // The owner runs its copy when it next waits in a fork:
            // polling there would bury the owner's own work.
            if Some(ctx.index()) != owner {
                stretch.poll();
            }
        });
    }

    /// Runs the pool's pending jobs until the stretch ends, another one
    /// starts, or none has come for [`BLOCKTIME`] and [`IDLE_ROUNDS`];
    /// yields the core to other threads every 64 empty polls.
    fn poll(&self) {
        let mut empty = 0u64;
        let mut idle_since = None;
        while !self.ended.load(Ordering::Acquire) && STRETCHES.load(Ordering::Acquire) == 1 {
            if let Some(rayon::Yield::Executed) = rayon::yield_now() {
                empty = 0;
                idle_since = None;
                continue;
            }
            empty += 1;
            if empty.is_multiple_of(64) {
                let now = Instant::now();
                if now - *idle_since.get_or_insert(now) > BLOCKTIME && empty >= 64 * IDLE_ROUNDS {
                    break;
                }
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        self.polling.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `f`, which forks onto the pool. At the top of a [`keep_awake`]
/// stretch (not inside another fork, where the other threads may be
/// inside one of its pieces) it first sets them polling again if they have
/// gone to sleep. Every parallel loop goes through here.
pub fn fork<R>(f: impl FnOnce() -> R) -> R {
    let depth = FORKS.get();
    if depth == 0 {
        RUNS.with(|runs| {
            if let Some(stretch) = runs.borrow().as_ref()
                && stretch.polling.load(Ordering::Acquire) == 0
                && STRETCHES.load(Ordering::Acquire) == 1
            {
                stretch.start_polling();
            }
        });
    }
    /// Leaves the fork however `f` leaves.
    struct Leave(usize);
    impl Drop for Leave {
        fn drop(&mut self) {
            FORKS.set(self.0);
        }
    }
    FORKS.set(depth + 1);
    let _leave = Leave(depth);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The stretch count is process-wide: tests that start stretches take
    /// turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    /// Waits up to a second for `ok`.
    fn eventually(ok: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while !ok() {
            if start.elapsed() > Duration::from_secs(1) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn squares(n: usize) -> Vec<usize> {
        let mut xs = vec![0; n];
        chunks_mut(&mut xs, 7, 1, &|i, chunk| {
            for (j, x) in chunk.iter_mut().enumerate() {
                *x = (i * 7 + j) * (i * 7 + j);
            }
        });
        xs
    }

    #[test]
    fn work_forks_from_outside_the_pool_only_at_outside_pool_times_the_threshold() {
        let inside = pool(2).install(|| (should_fork(1000, 1000), should_fork(999, 1000)));
        assert_eq!(inside, (true, false));
        assert!(!pool(1).install(|| should_fork(1 << 30, 1000)), "a pool of one never forks");
        // This test's own thread is no pool's.
        assert!(rayon::current_thread_index().is_none());
        assert!(!should_fork(OUTSIDE_POOL * 1000 - 1, 1000));
        assert_eq!(should_fork(OUTSIDE_POOL * 1000, 1000), rayon::current_num_threads() > 1);
    }

    #[test]
    fn the_other_threads_poll_through_a_stretch_and_stop_after_it() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool(3);
        let stretch = pool.install(|| {
            keep_awake(|| {
                let stretch = current();
                assert_eq!(stretch.polling.load(Ordering::Acquire), 2, "both other threads poll");
                for _ in 0..50 {
                    assert_eq!(squares(1000), (0..1000).map(|i| i * i).collect::<Vec<_>>());
                }
                // Nested: no second stretch.
                keep_awake(|| assert_eq!(STRETCHES.load(Ordering::Acquire), 1));
                stretch
            })
        });
        assert!(stretch.ended.load(Ordering::Acquire));
        assert_eq!(STRETCHES.load(Ordering::Acquire), 0);
        assert!(eventually(|| stretch.polling.load(Ordering::Acquire) == 0), "the pollers stop when it ends");
        assert!(RUNS.with(|runs| runs.borrow().is_none()));
    }

    /// The stretch this thread runs.
    fn current() -> Arc<Stretch> {
        RUNS.with(|runs| Arc::clone(runs.borrow().as_ref().expect("a stretch")))
    }

    /// Runs `then` inside a stretch on two threads once its poller has gone
    /// to sleep for want of work.
    fn after_idling(then: impl FnOnce(&Stretch) + Send) {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        pool(2).install(|| {
            keep_awake(|| {
                let stretch = current();
                std::thread::sleep(BLOCKTIME * 2);
                assert!(eventually(|| stretch.polling.load(Ordering::Acquire) == 0), "idle pollers go to sleep");
                then(&stretch);
            });
        });
    }

    #[test]
    fn idle_pollers_sleep_and_the_next_fork_at_the_top_wakes_them() {
        after_idling(|stretch| {
            fork(|| ());
            assert_eq!(stretch.polling.load(Ordering::Acquire), 1);
            assert_eq!(squares(100)[99], 99 * 99);
        });
    }

    #[test]
    fn a_fork_inside_a_fork_leaves_sleeping_pollers_alone() {
        after_idling(|stretch| {
            FORKS.set(1);
            fork(|| assert_eq!(stretch.polling.load(Ordering::Acquire), 0));
            FORKS.set(0);
        });
    }

    #[test]
    fn blaze_poll_0_switches_the_pollers_off() {
        const TEST: &str = "threads::tests::blaze_poll_0_switches_the_pollers_off";
        if std::env::var_os("BLAZE_POLL").is_none() {
            // The switch is read from the environment: run this test again
            // in a process of its own with it set.
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST, "--test-threads", "1"])
                .env("BLAZE_POLL", "0")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}");
            return;
        }
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let polled = pool(2).install(|| keep_awake(|| RUNS.with(|runs| runs.borrow().is_some())));
        assert_eq!(polled, std::env::var("BLAZE_POLL").unwrap() != "0");
    }

    #[test]
    fn a_stretch_that_panics_ends() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool(2);
        let caught = pool.install(|| std::panic::catch_unwind(|| keep_awake(|| panic!("in the stretch"))));
        assert!(caught.is_err());
        assert_eq!(STRETCHES.load(Ordering::Acquire), 0);
        assert!(pool.install(|| RUNS.with(|runs| runs.borrow().is_none())));
    }

    #[test]
    fn two_stretches_on_one_pool_finish_side_by_side() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool(2);
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        pool.install(|| {
                            keep_awake(|| (0..200).map(|_| squares(5000).iter().sum::<usize>()).collect::<Vec<_>>())
                        })
                    })
                })
                .collect();
            let want: usize = (0..5000).map(|i| i * i).sum();
            for run in runs {
                assert!(run.join().unwrap().iter().all(|&sum| sum == want));
            }
        });
        assert_eq!(STRETCHES.load(Ordering::Acquire), 0);
    }
}
