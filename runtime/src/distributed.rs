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

use std::sync::{Arc, Once};

/// The MPI bindings this module is built on, for what it does not wrap.
pub use mpi;

use mpi::collective::SystemOperation;
use mpi::environment::{Threading, Universe};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Equivalence, Root};

use crate::nn::{Module, ParamMapper, ParamVisitor};
use crate::{Backend, DType, DataVec, Tensor, TensorData};

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
        Ok(World { universe: Some(universe), rank, size, local_rank })
    }

    /// A world of one process, without MPI.
    pub fn single() -> World {
        World { universe: None, rank: 0, size: 1, local_rank: 0 }
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
        let mut flat = Flat::default();
        M::visit_grad_tensors(grads, "", &mut flat);
        let sum32 = all_reduce_in_chunks(&comm, &flat.f32, bucket_bytes);
        let sum64 = all_reduce_in_chunks(&comm, &flat.f64, bucket_bytes);
        let scale = 1.0 / self.size as f64;
        let (mut at32, mut at64) = (0, 0);
        M::map_grad_tensors(
            grads,
            "",
            &mut Rebuilt(|name: &str, shape: &[usize], dtype: DType| {
                let n: usize = shape.iter().product();
                let values = match dtype {
                    DType::F32 => {
                        let s = scale as f32;
                        at32 += n;
                        DataVec::F32(sum32[at32 - n..at32].iter().map(|&x| x * s).collect())
                    }
                    DType::F64 => {
                        at64 += n;
                        DataVec::F64(sum64[at64 - n..at64].iter().map(|&x| x * scale).collect())
                    }
                    other => panic!("average_grads: gradient `{name}` has dtype {other:?}"),
                };
                TensorData { shape: shape.to_vec(), values }
            }),
        );
    }
}

/// How [`fit`](crate::train::fit) trains data-parallel: the ranks of
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
}

impl DataParallel {
    /// Data parallelism over `world`, in 25 MB buckets.
    pub fn new(world: Arc<World>) -> Self {
        DataParallel { world, bucket_bytes: 25 << 20 }
    }
}

/// The sums of `values` over all ranks, reduced in messages of at most
/// `bytes`.
fn all_reduce_in_chunks<T: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    values: &[T],
    bytes: usize,
) -> Vec<T> {
    let mut sums = vec![T::default(); values.len()];
    let per = (bytes / size_of::<T>()).max(1);
    for (mine, sum) in values.chunks(per).zip(sums.chunks_mut(per)) {
        comm.all_reduce_into(mine, sum, SystemOperation::sum());
    }
    sums
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

/// Each gradient's values appended to one vector per float dtype.
#[derive(Default)]
struct Flat {
    f32: Vec<f32>,
    f64: Vec<f64>,
}

impl<B: Backend> ParamVisitor<B> for Flat {
    fn visit<const D: usize>(&mut self, name: &str, tensor: &Tensor<B, D>) {
        match tensor.to_data().values {
            DataVec::F32(v) => self.f32.extend_from_slice(&v),
            DataVec::F64(v) => self.f64.extend_from_slice(&v),
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
