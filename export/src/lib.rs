//! Writes a `#[model]` as an ONNX file, weights included, for ONNX
//! Runtime, TensorRT or a browser: `blaze::export::save_onnx(&model,
//! "model.onnx")`.
//!
//! Every built-in layer implements [`Export`] (here, in `layers.rs`); the
//! op table's activations write the ONNX operator their entry names or, for
//! ops ONNX lacks, their kernel's body as ONNX operators (`kernel!` prints
//! it, so a `kernel!` function exports too); `#[model]` implements
//! [`Export`] and [`OnnxModel`] for every model from the ops it checked,
//! with the batch and the symbolic dims (`T`) named in the file. The
//! weights keep the names the model's safetensors file gives them.

mod graph;
mod layers;
pub mod ops;
mod proto;

use std::path::Path;

pub use graph::{Attr, Dim, IR_VERSION, OPSET, OnnxGraph, Value, elem};

/// Something that writes itself as ONNX operators: a layer, or a model
/// `#[model]` generated.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not export to ONNX",
    label = "no `blaze::export::Export` impl",
    note = "a layer of your own exports once it implements `blaze::export::Export`: its `export` writes the layer's operators into the graph"
)]
pub trait Export {
    /// Whether its first input is token ids (int64 in ONNX) rather than
    /// floats.
    const TAKES_IDS: bool = false;

    /// Writes the operators that compute its output from `inputs` into
    /// `g`; its weights are named under `name` (`blocks.0.attn`), as its
    /// parameters are. Returns the output.
    fn export(&self, g: &mut OnnxGraph, name: &str, inputs: &[Value]) -> Value;
}

/// A whole model: what the file's inputs and output are.
pub trait OnnxModel: Export {
    /// The model's name (the graph's).
    const NAME: &'static str;

    /// Each input's per-sample dims (the batch excluded): sizes, and
    /// symbolic dims by name.
    fn onnx_inputs() -> Vec<Vec<Dim>>;

    /// Whether input `i` is token ids (int64 in the file): a layer that
    /// takes ids reads it, maybe through views (`narrow`, `reshape`).
    fn input_is_ids(i: usize) -> bool;
}

/// `layer`'s operators under `scope.name`: what a generated model calls
/// for each field.
pub fn sublayer<L: Export + ?Sized>(g: &mut OnnxGraph, l: &L, scope: &str, name: &str, inputs: &[Value]) -> Value {
    let full = blaze_runtime::module::join(scope, name);
    let outer = g.enter(&full);
    let out = l.export(g, &full, inputs);
    g.leave(outer);
    out
}

/// A per-sample shape the macro checked, as [`Value::with_sample_dims`]
/// takes it: symbolic dims unknown.
pub fn sample_dims(s: &blaze_spec::StaticShape) -> Vec<Option<usize>> {
    s.as_slice().iter().map(|&d| (!blaze_spec::is_symbolic(d)).then_some(d)).collect()
}

/// The model as a graph: inputs `input` (`input_1`, ...) with a named
/// `batch` dim first, and output `output`.
pub fn to_graph<M: OnnxModel>(model: &M) -> OnnxGraph {
    let mut g = OnnxGraph::new(M::NAME);
    let specs = M::onnx_inputs();
    let inputs: Vec<Value> = specs
        .iter()
        .enumerate()
        .map(|(i, dims)| {
            let name = if i == 0 { "input".to_string() } else { format!("input_{i}") };
            let elem = if M::input_is_ids(i) { elem::INT64 } else { elem::FLOAT };
            let dims = std::iter::once(Dim::Named("batch".into())).chain(dims.iter().cloned()).collect();
            g.input(&name, elem, dims)
        })
        .collect();
    let out = model.export(&mut g, "", &inputs);
    let dims = std::iter::once(Dim::Named("batch".into()))
        .chain((1..out.rank()).map(|a| match out.size(a) {
            Some(n) => Dim::Size(n),
            None => Dim::Named(format!("output_{a}")),
        }))
        .collect();
    g.output(&out, "output", dims);
    g
}

/// The model as the bytes of an ONNX file (opset [`OPSET`]).
pub fn to_onnx<M: OnnxModel>(model: &M) -> Vec<u8> {
    to_graph(model).to_bytes()
}

/// Why a model could not be saved.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct ExportError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What went wrong writing it.
    #[source]
    pub source: std::io::Error,
}

/// Writes the model as an ONNX file at `path` (its folder created if
/// missing), replacing the file only once the whole of it is written.
pub fn save_onnx<M: OnnxModel>(model: &M, path: impl AsRef<Path>) -> Result<(), ExportError> {
    let path = path.as_ref();
    let err = |source| ExportError { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    blaze_record::write_atomic(path, &to_onnx(model)).map_err(|e| match e {
        blaze_record::RecordError::Io { source, .. } => err(source),
        other => err(std::io::Error::other(other.to_string())),
    })
}
