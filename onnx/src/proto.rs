//! Reading an ONNX file: onnx-ir's protobuf schema parses the bytes, and
//! this module keeps what conversion needs with the names as the file
//! spells them (initializer names become field names, `dim_param`s become
//! symbolic dims).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use onnx_ir::{AttributeProto, Message, ModelProto, TensorProto, ValueInfoProto};

use crate::Problem;
use crate::dim::Dim;

/// The opsets whose operators the importer reads (the default domain).
pub const OPSETS: std::ops::RangeInclusive<i64> = 13..=21;

/// Values of a tensor held in the file.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

/// A tensor held in the file: an initializer or a `Constant`.
#[derive(Clone, Debug, PartialEq)]
pub struct Data {
    pub dims: Vec<usize>,
    pub values: Values,
}

impl Data {
    pub fn len(&self) -> usize {
        match &self.values {
            Values::F32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    /// The values as f64, whatever their type.
    pub fn as_f64(&self) -> Vec<f64> {
        match &self.values {
            Values::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::I64(v) => v.iter().map(|&x| x as f64).collect(),
            Values::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
        }
    }

    /// The values as integers, if they are integers.
    pub fn as_i64(&self) -> Option<Vec<i64>> {
        match &self.values {
            Values::I64(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// The one value of a tensor with one element.
    pub fn scalar(&self) -> Option<f64> {
        (self.len() == 1).then(|| self.as_f64()[0])
    }

    pub fn f32s(&self) -> Option<&[f32]> {
        match &self.values {
            Values::F32(v) => Some(v),
            _ => None,
        }
    }
}

/// Element types of graph inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    I64,
}

/// A graph input.
#[derive(Clone, Debug)]
pub struct ValueInfo {
    pub name: String,
    pub dtype: DType,
    pub dims: Vec<Dim>,
}

/// An attribute's value.
#[derive(Clone, Debug)]
pub enum Attr {
    Int(i64),
    Float(f32),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Str(String),
    Tensor(Data),
    /// A graph, a sparse tensor or another kind conversion never reads.
    Other,
}

/// One node as the file writes it.
#[derive(Clone, Debug)]
pub struct Node {
    pub op: String,
    pub domain: String,
    pub name: String,
    /// Input names; an empty name is an omitted optional input.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attrs: HashMap<String, Attr>,
}

impl Node {
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.attrs.get(name) {
            Some(Attr::Int(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f32> {
        match self.attrs.get(name) {
            Some(Attr::Float(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn ints(&self, name: &str) -> Option<&[i64]> {
        match self.attrs.get(name) {
            Some(Attr::Ints(v)) => Some(v),
            _ => None,
        }
    }

    pub fn string(&self, name: &str) -> Option<&str> {
        match self.attrs.get(name) {
            Some(Attr::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The `i`th input's name, if given.
    pub fn input(&self, i: usize) -> Option<&str> {
        self.inputs.get(i).map(String::as_str).filter(|s| !s.is_empty())
    }
}

/// The parts of a model that conversion reads.
#[derive(Debug)]
pub struct Graph {
    pub opset: i64,
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<String>,
    pub nodes: Vec<Node>,
    /// Initializers by name.
    pub tensors: HashMap<String, Data>,
}

/// Parses `bytes` as an ONNX model. Tensors kept in external files (as
/// `torch.onnx.export` writes them by default, in `model.onnx.data`) are
/// read from `dir`, the model file's folder; without one, such a tensor
/// is refused.
pub fn read(bytes: &[u8], dir: Option<&Path>) -> Result<Graph, Problem> {
    let model = ModelProto::parse_from_bytes(bytes)
        .map_err(|e| Problem::Malformed(format!("the protobuf does not parse: {e}")))?;
    let Some(graph) = model.graph.as_ref() else {
        return Err(Problem::Malformed("the file holds no graph".into()));
    };
    if graph.node.is_empty() {
        return Err(Problem::Malformed("the graph has no nodes".into()));
    }
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .ok_or_else(|| Problem::Malformed("the model imports no version of the default ONNX opset".into()))?;
    if !OPSETS.contains(&opset) {
        return Err(Problem::Opset(opset));
    }
    let mut external = External { dir, files: HashMap::new() };
    let mut tensors = HashMap::new();
    for t in &graph.initializer {
        tensors.insert(t.name.clone(), data(t, &mut external)?);
    }
    let inputs = graph
        .input
        .iter()
        .filter(|i| !tensors.contains_key(&i.name))
        .map(value_info)
        .collect::<Result<Vec<_>, _>>()?;
    // Outputs are known by name; their types follow from the nodes.
    let outputs = graph.output.iter().map(|o| o.name.clone()).collect();
    let nodes = graph
        .node
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let attrs = n
                .attribute
                .iter()
                .map(|a| Ok((a.name.clone(), attr(a, &mut external)?)))
                .collect::<Result<_, Problem>>()?;
            Ok(Node {
                op: n.op_type.clone(),
                domain: n.domain.clone(),
                name: if n.name.is_empty() { format!("{}_{i}", n.op_type) } else { n.name.clone() },
                inputs: n.input.clone(),
                outputs: n.output.clone(),
                attrs,
            })
        })
        .collect::<Result<Vec<_>, Problem>>()?;
    Ok(Graph { opset, inputs, outputs, nodes, tensors })
}

fn value_info(v: &ValueInfoProto) -> Result<ValueInfo, Problem> {
    let bad = |what: &str| Problem::Malformed(format!("graph input `{}` {what}", v.name));
    let Some(ty) = v.type_.as_ref() else { return Err(bad("has no type")) };
    if !ty.has_tensor_type() {
        return Err(bad("is not a tensor"));
    }
    let t = ty.tensor_type();
    let dtype = match t.elem_type {
        1 => DType::F32,
        6 | 7 => DType::I64,
        other => return Err(bad(&format!("has element type {} ({other}); f32 and integer ids are read", type_name(other)))),
    };
    let Some(shape) = t.shape.as_ref() else { return Err(bad("has no shape")) };
    let dims = shape
        .dim
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if d.has_dim_value() && d.dim_value() > 0 {
                Dim::known(d.dim_value())
            } else if d.has_dim_param() && !d.dim_param().is_empty() {
                Dim::named(d.dim_param())
            } else {
                // An unnamed dynamic dim gets a name of its own.
                Dim::named(format!("{}_dim{i}", v.name))
            }
        })
        .collect();
    Ok(ValueInfo { name: v.name.clone(), dtype, dims })
}

fn attr(a: &AttributeProto, external: &mut External<'_>) -> Result<Attr, Problem> {
    use onnx_ir::AttributeType as T;
    Ok(match a.type_.enum_value_or_default() {
        T::INT => Attr::Int(a.i),
        T::FLOAT => Attr::Float(a.f),
        T::INTS => Attr::Ints(a.ints.clone()),
        T::FLOATS => Attr::Floats(a.floats.clone()),
        T::STRING => Attr::Str(String::from_utf8_lossy(&a.s).into_owned()),
        T::TENSOR => Attr::Tensor(data(&a.t, external)?),
        _ => Attr::Other,
    })
}

/// ONNX's name for an element type.
fn type_name(code: i32) -> &'static str {
    match code {
        1 => "float",
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        8 => "string",
        9 => "bool",
        10 => "float16",
        11 => "double",
        12 => "uint32",
        13 => "uint64",
        16 => "bfloat16",
        _ => "unknown",
    }
}

/// The files external tensors are read from, each read once: the model's
/// folder, and the files read so far by their `location`.
struct External<'a> {
    dir: Option<&'a Path>,
    files: HashMap<String, Vec<u8>>,
}

impl External<'_> {
    /// The bytes of tensor `t` whose values live in an external file, as
    /// its `external_data` entries place them (`location`, relative to the
    /// model's folder; `offset` and `length` in bytes, by default the
    /// whole file).
    fn bytes(&mut self, t: &TensorProto) -> Result<&[u8], Problem> {
        let bad = |what: String| Problem::Malformed(format!("tensor `{}` {what}", t.name));
        let entry = |key: &str| t.external_data.iter().find(|e| e.key == key).map(|e| e.value.as_str());
        let Some(location) = entry("location") else {
            return Err(bad("is stored externally but names no `location`".into()));
        };
        let number = |key: &str| -> Result<Option<usize>, Problem> {
            entry(key)
                .map(|v| v.parse().map_err(|_| bad(format!("has external `{key}` {v:?}, not a byte count"))))
                .transpose()
        };
        let (offset, length) = (number("offset")?, number("length")?);
        let Some(dir) = self.dir else {
            return Err(bad(format!(
                "keeps its values in the external file `{location}`; import the model from its file \
                 (`import_file` or the command line) so that `{location}` is read beside it"
            )));
        };
        // ONNX's rule: a location is relative and stays in the model's folder.
        let relative = Path::new(location);
        if relative.as_os_str().is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(bad(format!(
                "names the external file `{location}`, which is not a path inside the model's folder"
            )));
        }
        if !self.files.contains_key(location) {
            let path: PathBuf = dir.join(relative);
            let bytes = std::fs::read(&path)
                .map_err(|e| bad(format!("keeps its values in {}, which could not be read: {e}", path.display())))?;
            self.files.insert(location.to_owned(), bytes);
        }
        let file = &self.files[location];
        let offset = offset.unwrap_or(0);
        let end = match length {
            Some(length) => offset.checked_add(length),
            None => Some(file.len()),
        };
        match end {
            Some(end) if offset <= end && end <= file.len() => Ok(&file[offset..end]),
            _ => Err(bad(format!(
                "lies at bytes {offset}..{} of `{location}`, which holds {} bytes",
                length.map_or("end".into(), |l| offset.saturating_add(l).to_string()),
                file.len()
            ))),
        }
    }
}

/// A tensor's values, from its typed field, its raw little-endian bytes,
/// or the bytes of an external file.
fn data(t: &TensorProto, external: &mut External<'_>) -> Result<Data, Problem> {
    let bad = |what: String| Problem::Malformed(format!("tensor `{}` {what}", t.name));
    let dims = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("has a negative dim {d}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let n = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| bad("is too large".into()))?;
    // `DataLocation::EXTERNAL`.
    let raw = if t.data_location.value() == 1 { external.bytes(t)? } else { &t.raw_data[..] };
    let take = |width: usize| -> Result<Option<Vec<&[u8]>>, Problem> {
        if raw.is_empty() {
            return Ok(None);
        }
        if raw.len() != n * width {
            return Err(bad(format!("has {} bytes of data for {n} values of {width} bytes", raw.len())));
        }
        Ok(Some(raw.chunks_exact(width).collect()))
    };
    let values = match t.data_type {
        1 => Values::F32(match take(4)? {
            Some(c) => c.iter().map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            None => t.float_data.clone(),
        }),
        11 => Values::F32(match take(8)? {
            Some(c) => c.iter().map(|b| f64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as f32).collect(),
            None => t.double_data.iter().map(|&x| x as f32).collect(),
        }),
        7 => Values::I64(match take(8)? {
            Some(c) => c.iter().map(|b| i64::from_le_bytes(b[..8].try_into().expect("8 bytes"))).collect(),
            None => t.int64_data.clone(),
        }),
        6 => Values::I64(match take(4)? {
            Some(c) => c.iter().map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect(),
            None => t.int32_data.iter().map(|&x| i64::from(x)).collect(),
        }),
        9 => Values::Bool(match take(1)? {
            Some(c) => c.iter().map(|b| b[0] != 0).collect(),
            None => t.int32_data.iter().map(|&x| x != 0).collect(),
        }),
        other => {
            return Err(bad(format!(
                "has element type {} ({other}); the importer reads float, double, int32, int64 and bool",
                type_name(other)
            )));
        }
    };
    let data = Data { dims, values };
    if data.len() != n {
        return Err(bad(format!("has {} values for shape {:?}", data.len(), data.dims)));
    }
    Ok(data)
}
