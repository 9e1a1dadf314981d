//! Data-parallel training across processes and machines, on MPI (cargo
//! feature `mpi`). Each process (rank) trains a replica of the model on
//! its shard of every batch; the replicas start from rank 0's parameters
//! ([`World::broadcast_module`]) and stay equal because every step applies
//! the gradients averaged over all ranks ([`World::average_grads`]), as
//! PyTorch's `DistributedDataParallel` does.
//!
//! A [`World`] starts from the environment `mpirun` (Open MPI) or Slurm
//! sets; launched without them it is a world of one that never touches
//! MPI, so the same program runs alone or under `mpirun -np N`.
#![deny(missing_docs)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};

/// The MPI bindings this module is built on, for what it does not wrap.
pub use mpi;

use mpi::collective::SystemOperation;
use mpi::environment::{Threading, Universe};
use mpi::request::{LocalScope, Request};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Equivalence, Root};

use blaze_nn::{Module, ParamMapper, ParamVisitor};
use blaze_runtime::{Backend, DType, DataVec, Tensor, TensorData};

/// What can go wrong starting a [`World`].
#[derive(Debug, thiserror::Error)]
pub enum DistributedError {
    /// The launcher's environment asked for MPI, and it did not start.
    #[error("MPI did not start ({0}); the launcher set {1}")]
    Init(&'static str, String),
}

/// Environment variables whose presence says a launcher started this
/// process as one rank of several: Open MPI's `mpirun`, PMIx (Slurm's
/// `srun --mpi=pmix`), and the Hydra launcher of MPICH.
const LAUNCHED_BY: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"];

/// The rank within its machine, as the launchers report it.
const LOCAL_RANK: [&str; 3] = ["OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"];

/// The processes of one training job: this one's rank among `size`, and
/// its rank among those on its machine.
pub struct World {
    /// Held while MPI is up; finalises MPI when the world is dropped.
    universe: Option<Universe>,
    rank: usize,
    size: usize,
    local_rank: usize,
    /// Host buffers the gradient averages reuse from step to step.
    scratch: Mutex<Scratch>,
}

/// The flattened gradients and their sums over the ranks, kept between
/// steps: fresh buffers of a model's size would fault in their pages on
/// every step (a 41 MB model's average took 3x the raw all-reduce so).
#[derive(Default)]
struct Scratch {
    send32: Vec<f32>,
    sum32: Vec<f32>,
    send64: Vec<f64>,
    sum64: Vec<f64>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("local_rank", &self.local_rank)
            .field("mpi", &self.universe.is_some())
            .finish()
    }
}

impl World {
    /// The job this process belongs to. Under `mpirun` or `srun`, starts
    /// MPI (MPI calls may come from any thread, one at a time, as `fit`
    /// runs on the device's thread) and installs a panic hook that ends
    /// the whole job with this rank's message: a rank that unwinds alone
    /// would leave the others waiting in a collective forever. Otherwise a
    /// world of one, without MPI. Call it once per process.
    pub fn init() -> Result<World, DistributedError> {
        let Some(var) = LAUNCHED_BY.iter().find(|v| std::env::var_os(v).is_some()) else {
            return Ok(World::single());
        };
        let launched = format!("{var}={}", std::env::var(var).unwrap_or_default());
        let Some((universe, threading)) = mpi::initialize_with_threading(Threading::Serialized) else {
            return Err(DistributedError::Init("it was started already", launched));
        };
        if threading < Threading::Serialized {
            return Err(DistributedError::Init("it offers no serialized multi-threading", launched));
        }
        let comm = universe.world();
        let (rank, size) = (comm.rank() as usize, comm.size() as usize);
        let local_rank = LOCAL_RANK
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse().ok())
            .unwrap_or_else(|| comm.split_shared(rank as i32).rank() as usize);
        if size > 1 {
            abort_job_on_panic(rank);
        }
        Ok(World { universe: Some(universe), rank, size, local_rank, scratch: Mutex::default() })
    }

    /// A world of one process, without MPI.
    pub fn single() -> World {
        World { universe: None, rank: 0, size: 1, local_rank: 0, scratch: Mutex::default() }
    }

    /// This process's rank, `0..size`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's rank among those on its machine.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Whether this is rank 0, the one that prints and writes checkpoints.
    pub fn is_main(&self) -> bool {
        self.rank == 0
    }

    /// The communicator of every rank, when MPI is up and there are several.
    pub fn comm(&self) -> Option<SimpleCommunicator> {
        self.universe.as_ref().filter(|_| self.size > 1).map(Universe::world)
    }

    /// Ends every rank of the job: prints `message` with this rank, then
    /// aborts through MPI (a world of one exits with status 1). For an
    /// error one rank meets alone, which would otherwise leave the others
    /// waiting in a collective.
    pub fn abort(&self, message: &str) -> ! {
        eprintln!("blaze: rank {} of {}: {message}; aborting the job", self.rank, self.size);
        match self.comm() {
            Some(comm) => comm.abort(1),
            None => std::process::exit(1),
        }
    }

    /// Waits until every rank has called it.
    pub fn barrier(&self) {
        if let Some(comm) = self.comm() {
            comm.barrier();
        }
    }

    /// Sums `values` element by element over all ranks, in place.
    pub fn all_reduce_sum(&self, values: &mut [f64]) {
        if let Some(comm) = self.comm() {
            let mine = values.to_vec();
            comm.all_reduce_into(&mine[..], values, SystemOperation::sum());
        }
    }

    /// Gives every rank rank 0's parameters and buffers (running
    /// statistics), so the replicas start equal.
    pub fn broadcast_module<B: Backend, M: Module<B>>(&self, model: &mut M) {
        let Some(comm) = self.comm() else { return };
        let root = comm.process_at_rank(0);
        model.map_tensors(
            "",
            &mut Mapped(|t: TensorData| {
                let mut t = t;
                match &mut t.values {
                    DataVec::F32(v) => root.broadcast_into(&mut v[..]),
                    DataVec::F64(v) => root.broadcast_into(&mut v[..]),
                    DataVec::F16(v) => broadcast_bits(&root, v, half::f16::to_bits, half::f16::from_bits),
                    DataVec::BF16(v) => broadcast_bits(&root, v, half::bf16::to_bits, half::bf16::from_bits),
                    DataVec::I64(v) => root.broadcast_into(&mut v[..]),
                    DataVec::Bool(v) => {
                        let mut bytes: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
                        root.broadcast_into(&mut bytes[..]);
                        *v = bytes.into_iter().map(|b| b != 0).collect();
                    }
                }
                t
            }),
        );
    }

    /// Replaces every gradient by its mean over all ranks, reduced in
    /// messages of at most `bucket_bytes` (PyTorch's `bucket_cap_mb`): with
    /// every rank's batch the same size, the mean of the ranks' mean-loss
    /// gradients is the gradient of the mean loss over the global batch.
    pub fn average_grads<B: Backend, M: Module<B>>(&self, grads: &mut M::Grads, bucket_bytes: usize) {
        let Some(comm) = self.comm() else { return };
        // Every gradient flattened, f32 and f64 apart, in visiting order,
        // summed into a second buffer, then scaled on the way back.
        let mut scratch = self.scratch();
        let Scratch { send32, sum32, send64, sum64 } = &mut *scratch;
        send32.clear();
        send64.clear();
        M::visit_grad_tensors(grads, "", &mut Flat { f32: &mut *send32, f64: &mut *send64 });
        all_reduce_in_chunks(&comm, send32, sum32, bucket_bytes);
        all_reduce_in_chunks(&comm, send64, sum64, bucket_bytes);
        let (mut at32, mut at64) = (0, 0);
        M::map_grad_tensors(
            grads,
            "",
            &mut Rebuilt(|name: &str, shape: &[usize], dtype: DType| {
                let n: usize = shape.iter().product();
                let at = match dtype {
                    DType::F64 => &mut at64,
                    _ => &mut at32,
                };
                *at += n;
                self.mean(name, shape, dtype, *at - n, sum32, sum64)
            }),
        );
    }

    /// The mean over the ranks of gradient `name` (of `shape` and
    /// `dtype`), whose sums start at `at` in its dtype's buffer.
    fn mean(&self, name: &str, shape: &[usize], dtype: DType, at: usize, sum32: &[f32], sum64: &[f64]) -> TensorData {
        let n: usize = shape.iter().product();
        let scale = 1.0 / self.size as f64;
        let values = match dtype {
            DType::F32 => DataVec::F32(sum32[at..at + n].iter().map(|&x| x * scale as f32).collect()),
            DType::F64 => DataVec::F64(sum64[at..at + n].iter().map(|&x| x * scale).collect()),
            // Half-precision gradients were summed in f32: one rounding, at the end.
            DType::F16 | DType::BF16 => {
                DataVec::F32(sum32[at..at + n].iter().map(|&x| x * scale as f32).collect()).convert(dtype)
            }
            other => panic!("average_grads: gradient `{name}` has dtype {other:?}"),
        };
        TensorData { shape: shape.to_vec(), values }
    }

    /// The host buffers, whoever held them last (a panic aborts the job).
    fn scratch(&self) -> MutexGuard<'_, Scratch> {
        self.scratch.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl World {
    /// Runs `backward`, which hands each gradient to the [`Overlap`] it is
    /// given as soon as it exists (as [`Differentiable::backward_params_each`]
    /// does, last layer first), and returns its gradients averaged over
    /// all ranks, as [`World::average_grads`] would. The all-reduce of
    /// each bucket of `bucket_bytes` starts once the bucket is full, while
    /// the backward goes on; since MPI moves a reduction on only inside
    /// its calls, each handed-over layer also tests the oldest pending
    /// bucket. `model`'s parameters size the buckets (a gradient has its
    /// parameter's shape).
    ///
    /// [`Differentiable::backward_params_each`]: blaze_nn::Differentiable::backward_params_each
    pub fn average_grads_during<B: Backend, M: Module<B>>(
        &self,
        model: &M,
        bucket_bytes: usize,
        backward: impl FnOnce(&mut Overlap<'_, '_>) -> M::Grads,
    ) -> M::Grads {
        let Some(comm) = self.comm() else {
            return backward(&mut Overlap { buckets: None });
        };
        let mut count = Count::default();
        model.visit_params("", &mut count);
        let mut scratch = self.scratch();
        let Scratch { send32, sum32, send64, sum64 } = &mut *scratch;
        send32.resize(count.f32, 0.0);
        sum32.resize(count.f32, 0.0);
        send64.resize(count.f64, 0.0);
        sum64.resize(count.f64, 0.0);
        let (mut grads, placed) = mpi::request::scope(|scope| {
            let mut overlap = Overlap {
                buckets: Some(Buckets {
                    comm: &comm,
                    scope,
                    f32: Lane::new(send32, sum32, bucket_bytes),
                    f64: Lane::new(send64, sum64, bucket_bytes),
                    placed: HashMap::new(),
                }),
            };
            let grads = backward(&mut overlap);
            let mut buckets = overlap.buckets.take().expect("set above");
            buckets.f32.finish(&comm, scope);
            buckets.f64.finish(&comm, scope);
            (grads, buckets.placed)
        });
        M::map_grad_tensors(
            &mut grads,
            "",
            &mut Rebuilt(|name: &str, shape: &[usize], dtype: DType| {
                let &(at_dtype, at) = placed.get(name).unwrap_or_else(|| {
                    panic!("average_grads_during: the backward did not hand over gradient `{name}`")
                });
                assert_eq!(at_dtype, dtype, "average_grads_during: gradient `{name}` changed dtype");
                self.mean(name, shape, dtype, at, sum32, sum64)
            }),
        );
        grads
    }
}

/// What a backward hands its gradients to, layer by layer, in
/// [`World::average_grads_during`]: it copies each into the current bucket
/// and starts the bucket's all-reduce once it is full.
pub struct Overlap<'a, 's> {
    /// `None` in a world of one: nothing to reduce.
    buckets: Option<Buckets<'a, 's>>,
}

impl std::fmt::Debug for Overlap<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Overlap");
        match &self.buckets {
            None => d.field("reducing", &false),
            Some(b) => d
                .field("reducing", &true)
                .field("gradients", &b.placed.len())
                .field("pending", &(b.f32.pending.len() + b.f64.pending.len())),
        }
        .finish()
    }
}

/// The buckets of one step's reduction, f32 and f64 apart.
struct Buckets<'a, 's> {
    comm: &'a SimpleCommunicator,
    scope: &'s LocalScope<'a>,
    f32: Lane<'a, 's, f32>,
    f64: Lane<'a, 's, f64>,
    /// Each handed-over gradient's dtype and offset in its lane.
    placed: HashMap<String, (DType, usize)>,
}

/// The values of one dtype: the part not yet sent, the bucket being
/// filled at its front, and the reductions under way, oldest first.
struct Lane<'a, 's, T> {
    /// Values per bucket.
    per: usize,
    /// Offset of `send[0]` in the whole lane.
    at: usize,
    /// Values in the bucket being filled (`send[..filled]`).
    filled: usize,
    send: &'a mut [T],
    sum: &'a mut [T],
    pending: VecDeque<Request<'a, [T], &'s LocalScope<'a>>>,
}

impl<'a, 's, T: Equivalence + Copy> Lane<'a, 's, T> {
    fn new(send: &'a mut [T], sum: &'a mut [T], bucket_bytes: usize) -> Self {
        let per = (bucket_bytes / size_of::<T>()).max(1);
        Lane { per, at: 0, filled: 0, send, sum, pending: VecDeque::new() }
    }

    /// Appends `values`, starting each bucket that fills; returns their
    /// offset in the lane.
    fn push(&mut self, comm: &'a SimpleCommunicator, scope: &'s LocalScope<'a>, name: &str, mut values: &[T]) -> usize {
        let offset = self.at + self.filled;
        assert!(
            self.filled + values.len() <= self.send.len(),
            "average_grads_during: gradient `{name}` goes past the model's parameters"
        );
        while !values.is_empty() {
            let n = (self.per - self.filled).min(values.len());
            self.send[self.filled..self.filled + n].copy_from_slice(&values[..n]);
            self.filled += n;
            values = &values[n..];
            if self.filled == self.per {
                self.start(comm, scope);
            }
        }
        offset
    }

    /// Starts the all-reduce of the bucket being filled.
    fn start(&mut self, comm: &'a SimpleCommunicator, scope: &'s LocalScope<'a>) {
        if self.filled == 0 {
            return;
        }
        let (send, rest) = std::mem::take(&mut self.send).split_at_mut(self.filled);
        self.send = rest;
        let (sum, rest) = std::mem::take(&mut self.sum).split_at_mut(self.filled);
        self.sum = rest;
        let send: &'a [T] = send;
        self.pending.push_back(comm.immediate_all_reduce_into(scope, send, sum, SystemOperation::sum()));
        self.at += self.filled;
        self.filled = 0;
    }

    /// Lets MPI move the oldest pending reduction on.
    fn progress(&mut self) {
        if let Some(request) = self.pending.pop_front()
            && let Err(request) = request.test()
        {
            self.pending.push_front(request);
        }
    }

    /// Starts the last, partial bucket and waits for every reduction.
    fn finish(&mut self, comm: &'a SimpleCommunicator, scope: &'s LocalScope<'a>) {
        self.start(comm, scope);
        while let Some(request) = self.pending.pop_front() {
            request.wait();
        }
    }
}

impl<B: Backend> ParamVisitor<B> for Overlap<'_, '_> {
    fn visit<const D: usize>(&mut self, name: &str, tensor: &Tensor<B, D>) {
        let Some(b) = &mut self.buckets else { return };
        let (comm, scope) = (b.comm, b.scope);
        let (dtype, at) = match tensor.to_data().values {
            DataVec::F32(v) => (DType::F32, b.f32.push(comm, scope, name, &v)),
            DataVec::F64(v) => (DType::F64, b.f64.push(comm, scope, name, &v)),
            v @ (DataVec::F16(_) | DataVec::BF16(_)) => {
                let DataVec::F32(wide) = v.convert(DType::F32) else { unreachable!("converted to f32") };
                (v.dtype(), b.f32.push(comm, scope, name, &wide))
            }
            other => panic!("average_grads_during: gradient `{name}` has dtype {:?}", other.dtype()),
        };
        b.placed.insert(name.to_owned(), (dtype, at));
        b.f32.progress();
        b.f64.progress();
    }
}

/// The number of parameter values of each float dtype.
#[derive(Default)]
struct Count {
    f32: usize,
    f64: usize,
}

impl<B: Backend> ParamVisitor<B> for Count {
    fn visit<const D: usize>(&mut self, _: &str, tensor: &Tensor<B, D>) {
        let n = tensor.shape().iter().product::<usize>();
        match tensor.dtype() {
            DType::F32 | DType::F16 | DType::BF16 => self.f32 += n,
            DType::F64 => self.f64 += n,
            _ => {}
        }
    }
}

/// How `fit` trains data-parallel: the ranks of
/// `world`, each on its shard of every epoch (the training loader's batch
/// size is per rank: the global batch is `ranks` times it), gradients
/// averaged in messages of at most `bucket_bytes`.
#[derive(Clone, Debug)]
pub struct DataParallel {
    /// The job's processes.
    pub world: Arc<World>,
    /// The largest all-reduce message; PyTorch's `bucket_cap_mb` default
    /// is 25 MB.
    pub bucket_bytes: usize,
    /// Whether a `#[model]`'s buckets start reducing while its backward
    /// goes on ([`World::average_grads_during`]); otherwise, and for
    /// tape-trained models, gradients are averaged after the backward.
    pub overlap: bool,
}

impl DataParallel {
    /// Data parallelism over `world`, in 25 MB buckets, overlapped.
    pub fn new(world: Arc<World>) -> Self {
        DataParallel { world, bucket_bytes: 25 << 20, overlap: true }
    }
}

/// The sums of `values` over all ranks into `sums`, reduced in messages
/// of at most `bytes`.
fn all_reduce_in_chunks<T: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    values: &[T],
    sums: &mut Vec<T>,
    bytes: usize,
) {
    sums.resize(values.len(), T::default());
    let per = (bytes / size_of::<T>()).max(1);
    for (mine, sum) in values.chunks(per).zip(sums.chunks_mut(per)) {
        comm.all_reduce_into(mine, sum, SystemOperation::sum());
    }
}

/// Installs (once) a panic hook that prints the panic as usual, says which
/// rank ends the job, and aborts every rank through MPI.
fn abort_job_on_panic(rank: usize) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            eprintln!("blaze: rank {rank} panicked; aborting the MPI job");
            SimpleCommunicator::world().abort(1);
        }));
    });
}

/// Broadcasts 16-bit floats from `root` as their bits.
fn broadcast_bits<T: Copy>(root: &impl Root, values: &mut Vec<T>, to_bits: fn(T) -> u16, from_bits: fn(u16) -> T) {
    let mut bits: Vec<u16> = values.iter().map(|&x| to_bits(x)).collect();
    root.broadcast_into(&mut bits[..]);
    *values = bits.into_iter().map(from_bits).collect();
}

/// Each gradient's values appended to one vector per float dtype (half
/// precision widened to f32).
struct Flat<'a> {
    f32: &'a mut Vec<f32>,
    f64: &'a mut Vec<f64>,
}

impl<B: Backend> ParamVisitor<B> for Flat<'_> {
    fn visit<const D: usize>(&mut self, name: &str, tensor: &Tensor<B, D>) {
        match tensor.to_data().values {
            DataVec::F32(v) => self.f32.extend_from_slice(&v),
            DataVec::F64(v) => self.f64.extend_from_slice(&v),
            DataVec::F16(v) => self.f32.extend(v.iter().map(|x| x.to_f32())),
            DataVec::BF16(v) => self.f32.extend(v.iter().map(|x| x.to_f32())),
            other => panic!("average_grads: gradient `{name}` has dtype {:?}", other.dtype()),
        }
    }
}

/// Replaces every tensor by one built on the host from its name, shape
/// and dtype, on the tensor's device.
struct Rebuilt<F>(F);

impl<B: Backend, F: FnMut(&str, &[usize], DType) -> TensorData> ParamMapper<B> for Rebuilt<F> {
    fn map<const D: usize>(&mut self, name: &str, tensor: Tensor<B, D>) -> Tensor<B, D> {
        let data = (self.0)(name, &tensor.shape(), tensor.dtype());
        Tensor::from_data(data, &tensor.device())
            .unwrap_or_else(|e| panic!("distributed: `{name}` does not go back to its device: {e}"))
    }
}

/// Maps every tensor through its host values, back onto its device.
struct Mapped<F>(F);

impl<B: Backend, F: FnMut(TensorData) -> TensorData> ParamMapper<B> for Mapped<F> {
    fn map<const D: usize>(&mut self, name: &str, tensor: Tensor<B, D>) -> Tensor<B, D> {
        let data = (self.0)(tensor.to_data());
        Tensor::from_data(data, &tensor.device())
            .unwrap_or_else(|e| panic!("distributed: `{name}` does not come back from the host: {e}"))
    }
}
