//! ONNX models in, editable and trainable Blaze models out.
//!
//! [`import_file`] reads an ONNX file and returns `#[model]` source and the
//! model's weights. The source is what a person would write: a struct of
//! layers in sequence where the graph is a chain (an MLP, LeNet), a struct
//! and a forward body where it is not (residuals, attention). Field names
//! come from the file's initializer names (`conv1.weight` gives `conv1`),
//! and a comment gives each step's per-sample output shape. The weights
//! are saved under the generated model's parameter names, with ONNX's
//! layouts converted where Blaze's differ (a `MatMul` weight is stored
//! transposed, as `Linear` keeps it), so that
//! `blaze::record::load_model` loads them and the macro's generated
//! backward fine-tunes them.
//!
//! ```no_run
//! let import = blaze_onnx::import_file("lenet.onnx".as_ref(), None)?;
//! import.write("src/lenet.rs".as_ref(), "lenet.safetensors".as_ref())?;
//! # Ok::<(), blaze_onnx::Error>(())
//! ```
//!
//! The default ONNX opsets 13 to 21 are read ([`OPSETS`]); the operators are
//! listed in [`SUPPORTED`]. A graph using any other operator is refused
//! with one error naming each such operator and its nodes, before anything
//! is written. The batch dim is free in Blaze, so an input's first dim
//! (symbolic or not) becomes the batch; any other symbolic dim (`T` for a
//! sequence) becomes a symbolic dim of the generated model.
//!
//! The file is parsed with `onnx-ir`'s protobuf schema. Its higher-level
//! graph renames nodes and drops initializer and `dim_param` names, which
//! are exactly what the generated source is written with, so conversion
//! works on the protobuf model itself.

mod dim;
mod emit;
mod lower;
mod proto;

pub mod export;

use std::path::{Path, PathBuf};

pub use lower::SUPPORTED;
pub use proto::OPSETS;

/// Why a model was not converted.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The name asked for the model's struct cannot be used: not a Rust
    /// type name, or a name the generated source uses for something else.
    #[error("`{name}` {why}")]
    Name {
        /// The name asked for.
        name: String,
        /// Why not, and a name that would do.
        why: String,
    },
    /// The model could not be converted; nothing was written.
    #[error("{file}: {problem}")]
    Model {
        /// The model's file (or the name given for bytes).
        file: String,
        /// What the importer found.
        problem: Problem,
    },
}

/// What stops a model from converting.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// Not an ONNX model, or a part of it is broken.
    #[error("not a valid ONNX model: {0}")]
    Malformed(String),
    /// The default-domain opset is outside [`OPSETS`].
    #[error(
        "uses ONNX opset {0}; the importer reads opsets {lo} to {hi} (re-export with opset_version in that range)",
        lo = OPSETS.start(),
        hi = OPSETS.end()
    )]
    Opset(i64),
    /// Operators without a conversion, each with the nodes that use it.
    #[error("{}", unsupported(.0))]
    Unsupported(Vec<(String, Vec<String>)>),
    /// A node that cannot be converted as it is used.
    #[error("node `{node}` ({op}) {reason}")]
    Node {
        /// The node's name.
        node: String,
        /// Its operator.
        op: String,
        /// Why, in words.
        reason: String,
    },
}

fn unsupported(ops: &[(String, Vec<String>)]) -> String {
    let mut s = format!("{} operator(s) without a conversion to Blaze:", ops.len());
    for (op, nodes) in ops {
        s.push_str(&format!("\n  {op}: {}", nodes.join(", ")));
    }
    s.push_str(&format!("\nthe importer converts {}", SUPPORTED.join(", ")));
    s
}

/// A converted model.
#[derive(Debug, Clone)]
pub struct Import {
    /// The struct's name.
    pub name: String,
    /// The `#[model]` source.
    pub source: String,
    /// Every parameter and buffer under the generated model's names
    /// (`conv1.weight`), with its shape and values.
    pub weights: Vec<(String, Vec<usize>, Vec<f32>)>,
}

/// Reads and converts the ONNX model at `path`. The struct is called `name`,
/// or after the file (`lenet.onnx` gives `Lenet`; `lstm.onnx` gives
/// `LstmModel`, as `Lstm` is a layer's name).
pub fn import_file(path: &Path, name: Option<&str>) -> Result<Import, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    let file = path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
    let stem = path.file_stem().map_or_else(|| "Model".into(), |s| s.to_string_lossy().into_owned());
    let dir = path.parent().map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d });
    let default = match struct_name(&stem) {
        n if taken(&n) => format!("{n}Model"),
        n => n,
    };
    import(&bytes, &file, name.unwrap_or(&default), dir)
}

/// Converts an ONNX model held in memory; `file` names it in errors and in
/// the source's header. A model whose tensors live in external files
/// needs [`import_file`], which reads them beside the model.
pub fn import_bytes(bytes: &[u8], file: &str, name: &str) -> Result<Import, Error> {
    import(bytes, file, name, None)
}

/// [`import_bytes`], reading external tensor files from `dir`.
fn import(bytes: &[u8], file: &str, name: &str, dir: Option<&Path>) -> Result<Import, Error> {
    let fail = |problem| Error::Model { file: file.to_owned(), problem };
    if !is_type_name(name) {
        let why = format!(
            "is not a Rust type name for the model: it starts with an upper-case letter and holds only \
             ASCII letters, digits and `_` (`{}` would do)",
            struct_name(name)
        );
        return Err(Error::Name { name: name.to_owned(), why });
    }
    if taken(name) {
        let why = format!(
            "cannot name the model: the generated source uses it for Blaze's own `{name}` (`{name}Model` would do)"
        );
        return Err(Error::Name { name: name.to_owned(), why });
    }
    let graph = proto::read(bytes, dir).map_err(fail)?;
    let program = lower::lower(&graph).map_err(fail)?;
    let origin = emit::Origin { file, opset: graph.opset };
    let (source, fields) = emit::source(&program, name, &origin)
        .map_err(|reason| fail(Problem::Node { node: "(output)".into(), op: "shape".into(), reason }))?;
    let weights = fields
        .iter()
        .flat_map(|f| {
            f.tensors.iter().map(move |(p, d)| {
                let values = d.f32s().expect("weights are converted to f32").to_vec();
                (format!("{}.{p}", f.name), d.dims.clone(), values)
            })
        })
        .collect();
    Ok(Import { name: name.to_owned(), source, weights })
}

impl Import {
    /// The weights as a safetensors file, tensors sorted by name.
    pub fn weights_bytes(&self) -> Vec<u8> {
        let mut sorted: Vec<&(String, Vec<usize>, Vec<f32>)> = self.weights.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let bytes: Vec<(&str, &[usize], Vec<u8>)> = sorted
            .iter()
            .map(|(n, s, v)| (n.as_str(), s.as_slice(), v.iter().flat_map(|x| x.to_le_bytes()).collect()))
            .collect();
        let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = bytes
            .iter()
            .map(|(n, s, b)| {
                let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.to_vec(), b)
                    .expect("shape and byte count agree");
                (*n, view)
            })
            .collect();
        safetensors::serialize(views, None).expect("f32 tensors serialise")
    }

    /// Writes the source to `source` and the weights to `weights`,
    /// creating their folders where they are missing.
    pub fn write(&self, source: &Path, weights: &Path) -> Result<(), Error> {
        for (path, bytes) in [(source, self.source.as_bytes()), (weights, &self.weights_bytes()[..])] {
            let io = |source| Error::Io { path: path.to_owned(), source };
            if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder).map_err(|source| Error::Io { path: folder.to_owned(), source })?;
            }
            std::fs::write(path, bytes).map_err(io)?;
        }
        Ok(())
    }
}

/// `resnet_block` gives `ResnetBlock`.
fn struct_name(stem: &str) -> String {
    let mut out = String::new();
    for part in stem.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            out.push(c.to_ascii_uppercase());
            out.extend(cs);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "Model");
    }
    out
}

/// Whether the generated source needs `name` for something of Blaze's:
/// a layer's type, or `Tensor`.
fn taken(name: &str) -> bool {
    name == "Tensor" || blaze_spec::Layer::ALL.iter().any(|l| l.name() == name)
}

fn is_type_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_names_come_from_file_names() {
        assert_eq!(struct_name("lenet"), "Lenet");
        assert_eq!(struct_name("resnet_block"), "ResnetBlock");
        assert_eq!(struct_name("gpt-2.small"), "Gpt2Small");
        assert_eq!(struct_name("3d"), "Model3d");
        assert!(is_type_name("Gpt") && !is_type_name("gpt") && !is_type_name("Gpt Model"));
    }
}
