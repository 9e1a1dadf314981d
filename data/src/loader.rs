//! Loading batches: `DataLoader` (a dataset in shuffled batches, prepared
//! on a background thread, sharded across ranks), the `Loader` trait `fit`
//! reads through, and `Batches`, one epoch's iterator.

use super::*;

/// Batches of a dataset, shuffled per epoch from a seed, optionally without
/// the last partial batch, prepared on a background thread.
#[derive(Debug)]
pub struct DataLoader<D: Dataset> {
    dataset: Arc<D>,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    seed: u64,
    epoch: u64,
    prefetch: usize,
    shard: Option<Shard>,
}

/// What a sharded loader does with an epoch whose length the number of
/// ranks does not divide (PyTorch's `DistributedSampler(drop_last=...)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardTail {
    /// Repeat samples from the start of the epoch's order until every rank
    /// has as many: each sample is seen at least once an epoch.
    #[default]
    Pad,
    /// Leave out the last samples of the epoch's order: each sample is seen
    /// at most once an epoch.
    Drop,
}

/// The order of `n` samples in `epoch`: shuffled from `(seed, epoch)`
/// when there is a seed, then `shard`'s share of it.
fn sample_order(n: usize, seed: Option<u64>, epoch: u64, shard: Option<Shard>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if let Some(seed) = seed {
        let mut rng = Rng::seed_from_u64(seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.shuffle(&mut order);
    }
    match shard {
        Some(s) => s.select(order),
        None => order,
    }
}

/// Rank `rank`'s share of every epoch among `ranks` processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shard {
    rank: usize,
    ranks: usize,
    tail: ShardTail,
}

impl Shard {
    /// Samples per rank and epoch out of `n`.
    fn len(&self, n: usize) -> usize {
        match self.tail {
            ShardTail::Pad => n.div_ceil(self.ranks),
            ShardTail::Drop => n / self.ranks,
        }
    }

    /// This rank's positions of the epoch's `order`: every `ranks`-th from
    /// `rank` on, after the tail is padded or dropped.
    fn select(&self, order: Vec<usize>) -> Vec<usize> {
        let total = self.len(order.len()) * self.ranks;
        let padded = order.iter().copied().cycle().take(if order.is_empty() { 0 } else { total });
        padded.skip(self.rank).step_by(self.ranks).collect()
    }
}

impl<D: Dataset> DataLoader<D> {
    /// Batches of `batch_size` in order; panics on a zero batch size.
    pub fn new(dataset: D, batch_size: usize) -> Self {
        assert!(batch_size > 0, "DataLoader: batch_size must be positive");
        DataLoader {
            dataset: Arc::new(dataset),
            batch_size,
            shuffle: false,
            drop_last: false,
            seed: 0,
            epoch: 0,
            prefetch: 2,
            shard: None,
        }
    }

    /// Gives this loader rank `rank`'s share of every epoch among `ranks`
    /// processes, as PyTorch's `DistributedSampler`: the epoch's order is
    /// drawn from the seed and the epoch as before, so it is the same on
    /// every rank that shares them, made a multiple of `ranks` as `tail`
    /// says, and rank `r` takes positions `r, r + ranks, r + 2 ranks, ..`.
    /// The shares of one epoch are disjoint (with [`ShardTail::Drop`]) and
    /// together hold every sample; every rank gets as many batches.
    /// Panics unless `rank < ranks`.
    pub fn shard(mut self, rank: usize, ranks: usize, tail: ShardTail) -> Self {
        self.set_shard(rank, ranks, tail);
        self
    }

    /// [`DataLoader::shard`] in place.
    pub fn set_shard(&mut self, rank: usize, ranks: usize, tail: ShardTail) {
        assert!(rank < ranks, "DataLoader::shard: rank {rank} of {ranks} ranks");
        self.shard = Some(Shard { rank, ranks, tail });
    }

    /// The rank and the number of ranks this loader's share is for, if sharded.
    pub fn shard_of(&self) -> Option<(usize, usize)> {
        self.shard.map(|s| (s.rank, s.ranks))
    }

    /// Shuffles every epoch; epoch `e` uses the order drawn from `(seed, e)`.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.shuffle = true;
        self.seed = seed;
        self
    }

    /// Leaves out the last batch when it is smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// How many batches the background thread prepares ahead (0: build
    /// batches on the calling thread).
    pub fn prefetch(mut self, batches: usize) -> Self {
        self.prefetch = batches;
        self
    }

    /// The epoch the next call to [`DataLoader::epoch`] will produce.
    pub fn next_epoch(&self) -> u64 {
        self.epoch
    }

    /// Continues from `epoch` (for resumed training).
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// Samples per batch (the last may hold fewer unless `drop_last`).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Whether the last, partial batch is left out.
    pub fn drops_last(&self) -> bool {
        self.drop_last
    }

    /// The dataset index of sample `row` of batch `batch` in epoch `epoch`.
    pub fn sample_index(&self, epoch: u64, batch: usize, row: usize) -> Option<usize> {
        self.order(epoch).get(batch * self.batch_size + row).copied()
    }

    /// The dataset.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// Samples per epoch: the dataset's, or this rank's share of them.
    pub fn samples(&self) -> usize {
        let n = self.dataset.len();
        self.shard.map_or(n, |s| s.len(n))
    }

    /// Number of batches per epoch.
    pub fn len(&self) -> usize {
        let n = self.samples();
        if self.drop_last { n / self.batch_size } else { n.div_ceil(self.batch_size) }
    }

    /// True when an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample order of epoch `epoch` (this rank's share of it, when
    /// sharded).
    pub fn order(&self, epoch: u64) -> Vec<usize> {
        sample_order(self.dataset.len(), self.shuffle.then_some(self.seed), epoch, self.shard)
    }

    /// The batches of the next epoch.
    pub fn epoch(&mut self) -> Batches {
        let order = self.order(self.epoch);
        self.epoch += 1;
        // The dataset's type ends here: what follows is compiled once.
        let dataset: Arc<dyn Dataset> = self.dataset.clone();
        Batches::new(dataset, &order, self.batch_size, self.drop_last, self.prefetch)
    }
}

impl Batches {
    /// The batches of `dataset` in `order`, `batch_size` at a time (the
    /// last one left out with `drop_last` when smaller), built ahead by
    /// `prefetch` on a worker thread, or on the calling thread for 0.
    fn new(dataset: Arc<dyn Dataset>, order: &[usize], batch_size: usize, drop_last: bool, prefetch: usize) -> Self {
        let mut chunks: Vec<Vec<usize>> = order.chunks(batch_size).map(<[usize]>::to_vec).collect();
        if drop_last && chunks.last().is_some_and(|c| c.len() < batch_size) {
            chunks.pop();
        }
        if prefetch == 0 {
            return Batches::Inline(Box::new(chunks.into_iter().map(move |c| dataset.batch(&c))));
        }
        let (tx, rx) = sync_channel(prefetch);
        let worker = std::thread::spawn(move || {
            for c in chunks {
                // The receiver hung up: the epoch was abandoned.
                if tx.send(dataset.batch(&c)).is_err() {
                    break;
                }
            }
        });
        Batches::Prefetched { rx, worker: Some(worker) }
    }
}

/// A [`DataLoader`] whatever its dataset: what `fit`'s loop reads, as a
/// trait object, so the loop is compiled once and not once per dataset
/// type (see [`Precompiled`](blaze_runtime::Precompiled)).
pub trait Loader: Send {
    /// [`DataLoader::epoch`].
    fn epoch(&mut self) -> Batches;
    /// [`DataLoader::len`].
    fn len(&self) -> usize;
    /// [`DataLoader::is_empty`].
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// [`DataLoader::next_epoch`].
    fn next_epoch(&self) -> u64;
    /// [`DataLoader::set_epoch`].
    fn set_epoch(&mut self, epoch: u64);
    /// [`DataLoader::sample_index`].
    fn sample_index(&self, epoch: u64, batch: usize, row: usize) -> Option<usize>;
    /// The number of samples in the dataset.
    fn dataset_len(&self) -> usize;
    /// [`DataLoader::batch_size`].
    fn batch_size(&self) -> usize;
    /// [`DataLoader::drops_last`].
    fn drops_last(&self) -> bool;
    /// [`DataLoader::shard_of`].
    fn shard_of(&self) -> Option<(usize, usize)>;
    /// [`DataLoader::set_shard`].
    fn set_shard(&mut self, rank: usize, ranks: usize, tail: ShardTail);
}

impl<D: Dataset> Loader for DataLoader<D> {
    fn epoch(&mut self) -> Batches {
        DataLoader::epoch(self)
    }
    fn len(&self) -> usize {
        DataLoader::len(self)
    }
    fn next_epoch(&self) -> u64 {
        DataLoader::next_epoch(self)
    }
    fn set_epoch(&mut self, epoch: u64) {
        DataLoader::set_epoch(self, epoch);
    }
    fn sample_index(&self, epoch: u64, batch: usize, row: usize) -> Option<usize> {
        DataLoader::sample_index(self, epoch, batch, row)
    }
    fn dataset_len(&self) -> usize {
        self.dataset.len()
    }
    fn batch_size(&self) -> usize {
        DataLoader::batch_size(self)
    }
    fn drops_last(&self) -> bool {
        DataLoader::drops_last(self)
    }
    fn shard_of(&self) -> Option<(usize, usize)> {
        DataLoader::shard_of(self)
    }
    fn set_shard(&mut self, rank: usize, ranks: usize, tail: ShardTail) {
        DataLoader::set_shard(self, rank, ranks, tail);
    }
}

/// The batches of one epoch.
pub enum Batches {
    /// Built on the calling thread.
    Inline(Box<dyn Iterator<Item = Batch> + Send>),
    /// Built ahead on a worker thread.
    Prefetched {
        /// Batches as they are ready.
        rx: Receiver<Batch>,
        /// The worker, joined when the epoch ends.
        worker: Option<JoinHandle<()>>,
    },
}

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Batches::Inline(_) => "Batches::Inline",
            Batches::Prefetched { .. } => "Batches::Prefetched",
        })
    }
}

impl Iterator for Batches {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        match self {
            Batches::Inline(it) => it.next(),
            Batches::Prefetched { rx, worker } => match rx.recv() {
                Ok(b) => Some(b),
                Err(_) => {
                    // The worker finished; a panic there is re-raised here.
                    if let Some(w) = worker.take()
                        && let Err(e) = w.join()
                    {
                        std::panic::resume_unwind(e);
                    }
                    None
                }
            },
        }
    }
}
