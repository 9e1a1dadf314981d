//! Weights on disk in the safetensors format, with PyTorch's names and
//! layouts: a PyTorch `state_dict` saved with `safetensors.torch.save_file`
//! loads into the Blaze model of the same architecture, and back.
//!
//! Writes are atomic (a temporary file in the same folder, fsync, rename,
//! fsync of the folder): a crash mid-save leaves the previous file intact.
//! Loading checks every name and shape before it changes the model, so a
//! bad file is an error that names the tensor and leaves the model as it was.
#![deny(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

pub mod safetensors;

use blaze_runtime::module::{Module, ModuleTensors, Optimizer, host_tensors};
use blaze_runtime::{Backend, DType, DataVec, TensorData};

use crate::safetensors::Entry;

blaze_runtime::precompiled_table! {
    /// Saving, loading and restoring a module, compiled once per backend
    /// ([`blaze_runtime::Precompiled`]).
    pub struct Table<B> {
        save_module: fn(&dyn ModuleTensors<B>, &Path) -> Result<(), RecordError> = save_module::<B>,
        load_module: fn(&mut dyn ModuleTensors<B>, &Path) -> Result<(), RecordError> = load_module::<B>,
        restore: fn(&mut dyn ModuleTensors<B>, &Path) -> Result<Checkpoint, RecordError> = restore::<B>,
    }
}

/// What can go wrong reading or writing weights. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not a valid safetensors file.
    #[error("{path}: not a valid safetensors file: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A tensor the model needs is not in the file.
    #[error("{path}: tensor `{name}` is missing (the model expects shape {expected:?})")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// The file holds a tensor the model does not have.
    #[error("{path}: tensor `{name}` is not part of the model")]
    Unexpected {
        /// The file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
    },
    /// A tensor has another shape than the model's.
    #[error("{path}: tensor `{name}` has shape {found:?}, the model expects {expected:?}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The shape in the file.
        found: Vec<usize>,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// A tensor the model reads under another name (`#[load]`) is not in
    /// the file.
    #[error("{path}: tensor `{from}` is missing (the model reads it into {name}, shape {expected:?})")]
    MissingSource {
        /// The file.
        path: PathBuf,
        /// The name the model reads.
        from: String,
        /// The model's tensor it is for.
        name: String,
        /// The shape the model expects (as the file would store it).
        expected: Vec<usize>,
    },
    /// A `#[load]` entry names a tensor the model does not have.
    #[error("{path}: #[load] reads `{from}` into {name}, which is no tensor of the model")]
    Unmapped {
        /// The file.
        path: PathBuf,
        /// The name in the file.
        from: String,
        /// The model's tensor that does not exist.
        name: String,
    },
    /// A tensor's dtype has no Blaze equivalent.
    #[error("{path}: tensor `{name}` has dtype {found}, which Blaze cannot read")]
    DType {
        /// The file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The dtype in the file.
        found: String,
    },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io { path: path.to_owned(), source }
}

fn format(path: &Path, message: impl ToString) -> RecordError {
    RecordError::Format { path: path.to_owned(), message: message.to_string() }
}

/// The safetensors dtype and little-endian bytes of `values`.
pub fn to_bytes(values: &DataVec) -> (&'static str, Vec<u8>) {
    match values {
        DataVec::F32(v) => ("F32", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        DataVec::F64(v) => ("F64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        DataVec::F16(v) => ("F16", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        DataVec::BF16(v) => ("BF16", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        DataVec::I64(v) => ("I64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        DataVec::Bool(v) => ("BOOL", v.iter().map(|&b| u8::from(b)).collect()),
    }
}

/// Tensor `name` of file `path` as host data, from its parsed entry.
pub fn from_entry(path: &Path, name: &str, entry: &Entry<'_>) -> Result<TensorData, RecordError> {
    let d = entry.data;
    let values = match entry.dtype.as_str() {
        "F32" => DataVec::F32(d.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        "F64" => DataVec::F64(d.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()),
        "F16" => DataVec::F16(d.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]])).collect()),
        "BF16" => DataVec::BF16(d.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]])).collect()),
        "I64" => DataVec::I64(d.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()),
        "BOOL" => DataVec::Bool(d.iter().map(|&b| b != 0).collect()),
        other => {
            return Err(RecordError::DType { path: path.to_owned(), name: name.to_owned(), found: other.to_owned() });
        }
    };
    TensorData::from_values(values, entry.shape.clone()).map_err(|e| format(path, format!("tensor `{name}`: {e}")))
}

/// Writes named tensors (and string metadata) to `path`, atomically.
pub fn save_tensors(
    path: &Path,
    tensors: &[(String, TensorData)],
    metadata: &[(&str, String)],
) -> Result<(), RecordError> {
    let mut names: Vec<&str> = tensors.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format(path, format!("tensor `{}` is given twice", w[0])));
    }
    let bytes: Vec<(&str, Vec<u8>)> = tensors.iter().map(|(_, t)| to_bytes(&t.values)).collect();
    let views: Vec<(&str, &str, &[usize], &[u8])> = tensors
        .iter()
        .zip(&bytes)
        .map(|((n, t), (dtype, b))| (n.as_str(), *dtype, t.shape.as_slice(), b.as_slice()))
        .collect();
    let meta: Vec<(&str, &str)> = metadata.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let buf = safetensors::serialize(&views, &meta);
    write_atomic(path, &buf)
}

/// Replaces `path` with `bytes` so that a crash leaves either the old or the
/// new file, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| format(path, "not a file path"))?;
    let tmp = dir.join(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // Make the rename itself durable.
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io(path))
}

/// Named tensors, sorted by name.
pub type NamedTensors = Vec<(String, TensorData)>;

/// Reads every tensor and the metadata of a safetensors file.
pub fn load_tensors(path: &Path) -> Result<(NamedTensors, HashMap<String, String>), RecordError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let (tensors, metadata) = safetensors::parse(&bytes).map_err(|e| format(path, e))?;
    // `parse` keys them by name: they come out sorted.
    let mut out = Vec::with_capacity(tensors.len());
    for (name, entry) in &tensors {
        out.push((name.clone(), from_entry(path, name, entry)?));
    }
    Ok((out, metadata))
}

/// The names and shapes of a module's parameters and buffers, in order.
fn expected<B: Backend>(model: &dyn ModuleTensors<B>) -> Vec<(String, Vec<usize>, DType)> {
    let mut all = Vec::new();
    model.visit(true, &mut |name, t| all.push((name.to_owned(), B::shape(t).to_vec(), B::dtype(t))));
    all
}

/// Saves a module's parameters and buffers under their PyTorch names.
pub fn save_model<B: Backend, M: Module<B>>(model: &M, path: &Path) -> Result<(), RecordError> {
    (Table::<B>::of().save_module)(model, path)
}

fn save_module<B: Backend>(model: &dyn ModuleTensors<B>, path: &Path) -> Result<(), RecordError> {
    save_host_module(path, &host_tensors(model), &[])
}

/// A module's tensors, read to the host, saved as [`save_model`] writes
/// them: with PyTorch's `format` in the metadata, and `metadata` after it.
pub fn save_host_module(
    path: &Path,
    tensors: &[(String, TensorData)],
    metadata: &[(&str, String)],
) -> Result<(), RecordError> {
    let mut meta = vec![("format", "pt".to_owned())];
    meta.extend_from_slice(metadata);
    save_tensors(path, tensors, &meta)
}

/// Loads a module's parameters and buffers from `path`, which must hold
/// exactly the module's tensors with the module's shapes (PyTorch's
/// `num_batches_tracked` counters are accepted and ignored). Values are
/// converted to each parameter's dtype. On error the module is unchanged.
pub fn load_model<B: Backend, M: Module<B>>(model: &mut M, path: &Path) -> Result<(), RecordError> {
    (Table::<B>::of().load_module)(model, path)
}

fn load_module<B: Backend>(model: &mut dyn ModuleTensors<B>, path: &Path) -> Result<(), RecordError> {
    let (tensors, _) = load_tensors(path)?;
    load_named(model, path, tensors.into_iter().collect())
}

/// Loads a module's parameters and buffers from a checkpoint that names
/// them its own way, as the module's [`Module::sources`] says (a Hugging
/// Face `model.safetensors` into a `#[model]` whose fields say
/// `#[load(..)]`): each tensor is read under its source name, transposed
/// where the source is, and checked for its shape; tensors of the file no
/// source names (a tied copy, unused heads) are left alone. Values are
/// converted to each parameter's dtype. On error the module is unchanged.
pub fn load_model_from<B: Backend, M: Module<B>>(model: &mut M, path: &Path) -> Result<(), RecordError> {
    let mut sources = Vec::new();
    model.sources("", "", &mut sources);
    let want = expected(model);
    let (tensors, _) = load_tensors(path)?;
    let file: BTreeMap<String, TensorData> = tensors.into_iter().collect();
    let mut named = BTreeMap::new();
    for s in &sources {
        let Some((_, shape, _)) = want.iter().find(|(n, _, _)| *n == s.name) else {
            return Err(RecordError::Unmapped { path: path.to_owned(), from: s.from.clone(), name: s.name.clone() });
        };
        // The shape as the file stores it.
        let stored: Vec<usize> = if s.transposed { shape.iter().rev().copied().collect() } else { shape.clone() };
        let Some(t) = file.get(&s.from) else {
            let (from, name) = (s.from.clone(), s.name.clone());
            return Err(RecordError::MissingSource { path: path.to_owned(), from, name, expected: stored });
        };
        if t.shape != stored {
            let (name, found) = (s.from.clone(), t.shape.clone());
            return Err(RecordError::Shape { path: path.to_owned(), name, found, expected: stored });
        }
        let t = if s.transposed { transposed(path, &s.from, t)? } else { t.clone() };
        named.insert(s.name.clone(), t);
    }
    load_named(model, path, named)
}

/// A 2-D tensor of the file transposed.
fn transposed(path: &Path, name: &str, t: &TensorData) -> Result<TensorData, RecordError> {
    let &[rows, cols] = t.shape.as_slice() else {
        return Err(format(path, format!("tensor `{name}` is read transposed but has shape {:?}, not 2-D", t.shape)));
    };
    let values = t.values.to_f64_vec();
    let out: Vec<f64> = (0..cols * rows).map(|k| values[(k % rows) * cols + k / rows]).collect();
    let out = TensorData::new(out, vec![cols, rows]).map_err(|e| format(path, e))?;
    Ok(out.convert(t.values.dtype()))
}

/// The names, shapes and dtypes of a module's tensors.
type Expected = [(String, Vec<usize>, DType)];

fn load_named<B: Backend>(
    model: &mut dyn ModuleTensors<B>,
    path: &Path,
    file: BTreeMap<String, TensorData>,
) -> Result<(), RecordError> {
    let mut file = check_named(path, &expected(model), file)?;
    model.map(&mut |name, t| match take(&mut file, name) {
        // Names and shapes were checked before.
        Some(d) => B::from_data(d.convert(B::dtype(&t)), &B::device(&t)),
        None => t,
    });
    Ok(())
}

/// Takes tensor `name` out of `file` (a function of its own, compiled
/// once, not in every model's loading code).
fn take(file: &mut BTreeMap<String, TensorData>, name: &str) -> Option<TensorData> {
    file.remove(name)
}

/// `file`'s tensors once each of `want` is there with its shape and
/// nothing else is (PyTorch's `num_batches_tracked` counters are left
/// out). Independent of the model's type, so compiled once.
fn check_named(
    path: &Path,
    want: &Expected,
    mut file: BTreeMap<String, TensorData>,
) -> Result<BTreeMap<String, TensorData>, RecordError> {
    file.retain(|k, _| !k.ends_with(".num_batches_tracked") && k != "num_batches_tracked");
    for (name, shape, _) in want {
        match file.get(name) {
            None => {
                return Err(RecordError::Missing {
                    path: path.to_owned(),
                    name: name.clone(),
                    expected: shape.clone(),
                });
            }
            Some(t) if &t.shape != shape => {
                return Err(RecordError::Shape {
                    path: path.to_owned(),
                    name: name.clone(),
                    found: t.shape.clone(),
                    expected: shape.clone(),
                });
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = file.keys().find(|k| !want.iter().any(|(n, _, _)| n == *k)) {
        return Err(RecordError::Unexpected { path: path.to_owned(), name: extra.clone() });
    }
    Ok(file)
}

/// Prefix of optimizer tensors inside a checkpoint.
const OPTIM: &str = "optimizer.";

/// Saves model, optimizer state and string metadata (epoch, metrics) in one
/// file, atomically. The model's tensors keep their PyTorch names; the
/// optimizer's are prefixed `optimizer.`.
pub fn save_checkpoint<B: Backend, M: Module<B>, O: Optimizer<B>>(
    path: &Path,
    model: &M,
    optimizer: &O,
    metadata: &[(&str, String)],
) -> Result<(), RecordError> {
    write_checkpoint(path, host_tensors(model), optimizer.state(), metadata)
}

/// [`save_checkpoint`] once the tensors are on the host: compiled once,
/// not for every model and optimizer.
fn write_checkpoint(
    path: &Path,
    mut tensors: NamedTensors,
    (state, steps): (NamedTensors, u64),
    metadata: &[(&str, String)],
) -> Result<(), RecordError> {
    tensors.extend(state.into_iter().map(|(n, t)| (format!("{OPTIM}{n}"), t)));
    let mut meta: Vec<(&str, String)> = metadata.to_vec();
    meta.push(("optimizer_steps", steps.to_string()));
    save_tensors(path, &tensors, &meta)
}

/// Restores a checkpoint written by [`save_checkpoint`] into `model` and
/// `optimizer`; returns its metadata.
pub fn load_checkpoint<B: Backend, M: Module<B>, O: Optimizer<B>>(
    path: &Path,
    model: &mut M,
    optimizer: &mut O,
    device: &B::Device,
) -> Result<HashMap<String, String>, RecordError> {
    let c = (Table::<B>::of().restore)(model, path)?;
    optimizer.load_state(c.optimizer, c.steps, device);
    Ok(c.metadata)
}

/// Reads the checkpoint at `path`, checks it against `model` and loads
/// its weights; returns the rest.
fn restore<B: Backend>(model: &mut dyn ModuleTensors<B>, path: &Path) -> Result<Checkpoint, RecordError> {
    let mut c = read_checkpoint(path, &expected(model))?;
    load_named(model, path, std::mem::take(&mut c.weights))?;
    Ok(c)
}

/// A checkpoint's parts, checked against a model.
pub(crate) struct Checkpoint {
    weights: BTreeMap<String, TensorData>,
    /// Named `<parameter>.<slot>`.
    optimizer: NamedTensors,
    steps: u64,
    metadata: HashMap<String, String>,
}

/// Reads a checkpoint and checks its optimizer state against the model's
/// tensors `want` (its weights are checked as they load).
fn read_checkpoint(path: &Path, want: &Expected) -> Result<Checkpoint, RecordError> {
    let (tensors, metadata) = load_tensors(path)?;
    let (opt, weights): (Vec<_>, Vec<_>) = tensors.into_iter().partition(|(n, _)| n.starts_with(OPTIM));
    let steps = metadata
        .get("optimizer_steps")
        .map(|s| s.parse::<u64>().map_err(|e| format(path, format!("optimizer_steps: {e}"))))
        .transpose()?
        .unwrap_or(0);
    let optimizer = optimizer_state(want, path, opt)?;
    Ok(Checkpoint { weights: weights.into_iter().collect(), optimizer, steps, metadata })
}

/// The optimizer's tensors of a checkpoint, checked before anything
/// changes: each is `optimizer.<parameter>.<slot>` for a parameter of the
/// model, with its number of values; values take the parameter's dtype.
fn optimizer_state(params: &Expected, path: &Path, tensors: NamedTensors) -> Result<NamedTensors, RecordError> {
    tensors
        .into_iter()
        .map(|(name, t)| {
            let key = name[OPTIM.len()..].to_owned();
            let param = key.rsplit_once('.').and_then(|(p, _)| params.iter().find(|(n, _, _)| n == p));
            let Some((_, shape, dtype)) = param else {
                return Err(RecordError::Unexpected { path: path.to_owned(), name });
            };
            if t.numel() != shape.iter().product::<usize>() {
                return Err(RecordError::Shape {
                    path: path.to_owned(),
                    name,
                    found: t.shape,
                    expected: shape.clone(),
                });
            }
            Ok((key, t.convert(*dtype)))
        })
        .collect()
}
