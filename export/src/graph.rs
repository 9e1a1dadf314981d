//! The ONNX graph a model is exported into: values, operators, weights,
//! and the inputs and outputs with their named dims; written out as a
//! `ModelProto` by [`OnnxGraph::to_bytes`].

use std::collections::HashMap;

use blaze_runtime::kernel::{OnnxExpr, OnnxType};
use blaze_runtime::{DataVec, TensorData};

use crate::proto::{self, Message};

/// The opset the exporter writes (`LayerNormalization` is 17's, `Mish`
/// and reductions with their axes as an input are 18's).
pub const OPSET: i64 = 18;
/// The IR version of opset 18's files.
pub const IR_VERSION: i64 = 8;

/// `TensorProto.DataType` codes of the element types a graph holds.
pub mod elem {
    pub const FLOAT: i32 = 1;
    pub const INT64: i32 = 7;
    pub const BOOL: i32 = 9;
}

/// A value of the graph: its name and what is known of its shape, batch
/// dim first (`None` where a size is known only when the model runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    name: String,
    shape: Vec<Option<usize>>,
}

impl Value {
    /// The value's name in the graph.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The size of dim `axis`, if known while exporting.
    pub fn size(&self, axis: usize) -> Option<usize> {
        self.shape.get(axis).copied().flatten()
    }

    /// The same value with per-sample dims `dims` known (the batch dim
    /// stays unknown).
    pub fn with_sample_dims(mut self, dims: &[Option<usize>]) -> Value {
        self.shape = std::iter::once(None).chain(dims.iter().copied()).collect();
        self
    }
}

/// A dim of a graph input or output: a size, or a name ONNX Runtime binds
/// when the model runs (`batch`, `T`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    Size(usize),
    Named(String),
}

/// An operator's attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Ints(Vec<i64>),
    Float(f32),
    Str(String),
    /// A tensor (`ConstantOfShape`'s value): its element type, dims and
    /// little-endian bytes.
    Tensor(i32, Vec<i64>, Vec<u8>),
}

struct Node {
    op: &'static str,
    name: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    attrs: Vec<(&'static str, Attr)>,
}

struct Initializer {
    name: String,
    elem: i32,
    dims: Vec<i64>,
    raw: Vec<u8>,
}

struct Io {
    name: String,
    elem: i32,
    dims: Vec<Dim>,
}

/// A graph being built.
pub struct OnnxGraph {
    name: String,
    nodes: Vec<Node>,
    initializers: Vec<Initializer>,
    inputs: Vec<Io>,
    outputs: Vec<Io>,
    /// How many values each name stem has given.
    taken: HashMap<String, usize>,
    /// Initializers by name: a weight read twice (tied) is stored once.
    weights: HashMap<String, Value>,
    /// Scalar constants by type and bits, each stored once.
    scalars: HashMap<(i32, u64), Value>,
    /// Where the layer being exported sits (`blocks.0.attn`): node names
    /// start with it.
    scope: String,
}

impl std::fmt::Debug for OnnxGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxGraph")
            .field("name", &self.name)
            .field("nodes", &self.nodes.len())
            .field("initializers", &self.initializers.len())
            .finish()
    }
}

impl OnnxGraph {
    /// An empty graph named `name`.
    pub fn new(name: &str) -> OnnxGraph {
        OnnxGraph {
            name: name.to_string(),
            nodes: Vec::new(),
            initializers: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            taken: HashMap::new(),
            weights: HashMap::new(),
            scalars: HashMap::new(),
            scope: String::new(),
        }
    }

    /// The scope node names start with; [`OnnxGraph::leave`] restores the one
    /// this returns.
    pub fn enter(&mut self, scope: &str) -> String {
        std::mem::replace(&mut self.scope, scope.to_string())
    }

    /// Back to `scope`, as [`OnnxGraph::enter`] returned it.
    pub fn leave(&mut self, scope: String) {
        self.scope = scope;
    }

    /// A name no value has yet, from `stem`.
    fn fresh(&mut self, stem: &str) -> String {
        let n = self.taken.entry(stem.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 { stem.to_string() } else { format!("{stem}_{}", *n - 1) }
    }

    /// A graph input of element type `elem` (an [`elem`] code).
    pub fn input(&mut self, name: &str, elem: i32, dims: Vec<Dim>) -> Value {
        let name = self.fresh(name);
        let shape = dims
            .iter()
            .map(|d| match d {
                Dim::Size(n) => Some(*n),
                Dim::Named(_) => None,
            })
            .collect();
        self.inputs.push(Io { name: name.clone(), elem, dims });
        Value { name, shape }
    }

    /// Makes `v` the graph output named `name`, of f32 elements.
    pub fn output(&mut self, v: &Value, name: &str, dims: Vec<Dim>) {
        let name = self.fresh(name);
        let node = self.fresh("Identity");
        self.nodes.push(Node {
            op: "Identity",
            name: node,
            inputs: vec![v.name.clone()],
            outputs: vec![name.clone()],
            attrs: Vec::new(),
        });
        self.outputs.push(Io { name, elem: elem::FLOAT, dims });
    }

    /// Operator `op` of `inputs` (`None`: an optional input left out),
    /// with `attrs`; one output per rank in `ranks`.
    pub fn nodes(
        &mut self,
        op: &'static str,
        inputs: &[Option<&Value>],
        attrs: Vec<(&'static str, Attr)>,
        ranks: &[usize],
    ) -> Vec<Value> {
        let stem = if self.scope.is_empty() { op.to_string() } else { format!("{}/{op}", self.scope) };
        let name = self.fresh(&stem);
        let outputs: Vec<Value> = (0..ranks.len())
            .map(|k| Value {
                name: if ranks.len() == 1 { name.clone() } else { format!("{name}:{k}") },
                shape: vec![None; ranks[k]],
            })
            .collect();
        self.nodes.push(Node {
            op,
            name,
            inputs: inputs.iter().map(|v| v.map_or(String::new(), |v| v.name.clone())).collect(),
            outputs: outputs.iter().map(|v| v.name.clone()).collect(),
            attrs,
        });
        outputs
    }

    /// Operator `op` of `inputs` with `attrs`, its one output of `rank`.
    pub fn node(
        &mut self,
        op: &'static str,
        inputs: &[&Value],
        attrs: Vec<(&'static str, Attr)>,
        rank: usize,
    ) -> Value {
        let inputs: Vec<Option<&Value>> = inputs.iter().map(|&v| Some(v)).collect();
        self.nodes(op, &inputs, attrs, &[rank]).remove(0)
    }

    /// An elementwise operator: its output has the largest rank of its
    /// inputs (ONNX broadcasts as numpy does).
    pub fn map(&mut self, op: &'static str, inputs: &[&Value]) -> Value {
        let rank = inputs.iter().map(|v| v.rank()).max().unwrap_or(0);
        self.node(op, inputs, vec![], rank)
    }

    /// A weight named `name` (its module path, as the model's safetensors
    /// file names it), stored as f32 if it is a float (f16 and bf16
    /// weights widened, as the graph computes in f32). The same name
    /// again is the same value.
    pub fn weight(&mut self, name: &str, data: &TensorData) -> Value {
        if let Some(v) = self.weights.get(name) {
            return v.clone();
        }
        let (elem, raw) = match &data.values {
            DataVec::F32(v) => (elem::FLOAT, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            DataVec::F64(v) => (elem::FLOAT, v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect()),
            DataVec::F16(v) => (elem::FLOAT, v.iter().flat_map(|x| x.to_f32().to_le_bytes()).collect()),
            DataVec::BF16(v) => (elem::FLOAT, v.iter().flat_map(|x| x.to_f32().to_le_bytes()).collect()),
            DataVec::I64(v) => (elem::INT64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            DataVec::Bool(v) => (elem::BOOL, v.iter().map(|&b| u8::from(b)).collect()),
        };
        let v = self.initializer(name, elem, &data.shape, raw);
        self.weights.insert(name.to_string(), v.clone());
        v
    }

    /// f32 values of shape `dims`, named from `name`.
    pub fn floats(&mut self, name: &str, dims: &[usize], values: &[f32]) -> Value {
        assert_eq!(
            dims.iter().product::<usize>(),
            values.len(),
            "export: {name} holds {} values for {dims:?}",
            values.len()
        );
        let raw = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.initializer(name, elem::FLOAT, dims, raw)
    }

    /// An int64 vector (shapes, axes, indices).
    pub fn ints(&mut self, values: &[i64]) -> Value {
        let raw = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.initializer("ints", elem::INT64, &[values.len()], raw)
    }

    /// A scalar (rank 0) of element type `elem`, stored once per value.
    pub fn scalar(&mut self, value: f64, elem: i32) -> Value {
        let key = (elem, value.to_bits());
        if let Some(v) = self.scalars.get(&key) {
            return v.clone();
        }
        let raw = match elem {
            elem::INT64 => (value as i64).to_le_bytes().to_vec(),
            elem::BOOL => vec![u8::from(value != 0.0)],
            e if e == OnnxType::Int32 as i32 => (value as i32).to_le_bytes().to_vec(),
            e if e == OnnxType::Uint32 as i32 => (value as u32).to_le_bytes().to_vec(),
            _ => (value as f32).to_le_bytes().to_vec(),
        };
        let v = self.initializer("scalar", elem, &[], raw);
        self.scalars.insert(key, v.clone());
        v
    }

    fn initializer(&mut self, name: &str, elem: i32, dims: &[usize], raw: Vec<u8>) -> Value {
        let name = self.fresh(name);
        self.initializers.push(Initializer {
            name: name.clone(),
            elem,
            dims: dims.iter().map(|&d| d as i64).collect(),
            raw,
        });
        Value { name, shape: dims.iter().map(|&d| Some(d)).collect() }
    }

    /// The size of `x`'s dim `axis` as the model runs: an int64 vector of
    /// one entry (a constant when the size is known now).
    pub fn size(&mut self, x: &Value, axis: usize) -> Value {
        if let Some(n) = x.size(axis) {
            return self.ints(&[n as i64]);
        }
        let attrs = vec![("start", Attr::Int(axis as i64)), ("end", Attr::Int(axis as i64 + 1))];
        self.node("Shape", &[x], attrs, 1)
    }

    /// The int64 vectors `parts` end to end (a shape built of sizes).
    pub fn concat_ints(&mut self, parts: &[Value]) -> Value {
        let refs: Vec<&Value> = parts.iter().collect();
        self.node("Concat", &refs, vec![("axis", Attr::Int(0))], 1)
    }

    /// `x` as f32.
    pub fn to_float(&mut self, x: &Value) -> Value {
        self.node("Cast", &[x], vec![("to", Attr::Int(i64::from(elem::FLOAT)))], x.rank())
    }

    /// The `ModelProto` bytes: opset [`OPSET`], the graph, its weights.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut g = Message::new();
        for n in &self.nodes {
            g.message(proto::graph::NODE, node_proto(n));
        }
        g.string(proto::graph::NAME, &self.name);
        for t in &self.initializers {
            let mut m = Message::new();
            m.packed_ints(proto::tensor::DIMS, &t.dims);
            m.int(proto::tensor::DATA_TYPE, i64::from(t.elem));
            m.string(proto::tensor::NAME, &t.name);
            m.bytes(proto::tensor::RAW_DATA, &t.raw);
            g.message(proto::graph::INITIALIZER, m);
        }
        for io in &self.inputs {
            g.message(proto::graph::INPUT, value_info(io));
        }
        for io in &self.outputs {
            g.message(proto::graph::OUTPUT, value_info(io));
        }
        let mut m = Message::new();
        m.int(proto::model::IR_VERSION, IR_VERSION);
        m.string(proto::model::PRODUCER_NAME, "blaze");
        m.string(proto::model::PRODUCER_VERSION, env!("CARGO_PKG_VERSION"));
        m.message(proto::model::GRAPH, g);
        let mut opset = Message::new();
        opset.string(proto::opset::DOMAIN, "");
        opset.int(proto::opset::VERSION, OPSET);
        m.message(proto::model::OPSET_IMPORT, opset);
        m.into_bytes()
    }

    /// How many operators the graph holds, by type, sorted by name.
    pub fn op_counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        for n in &self.nodes {
            match counts.iter_mut().find(|(op, _)| *op == n.op) {
                Some((_, c)) => *c += 1,
                None => counts.push((n.op, 1)),
            }
        }
        counts.sort_unstable();
        counts
    }
}

fn node_proto(n: &Node) -> Message {
    let mut m = Message::new();
    for i in &n.inputs {
        m.string(proto::node::INPUT, i);
    }
    for o in &n.outputs {
        m.string(proto::node::OUTPUT, o);
    }
    m.string(proto::node::NAME, &n.name);
    m.string(proto::node::OP_TYPE, n.op);
    for (name, attr) in &n.attrs {
        use proto::attribute as a;
        let mut am = Message::new();
        am.string(a::NAME, name);
        match attr {
            Attr::Int(v) => {
                am.int(a::I, *v);
                am.int(a::TYPE, a::TYPE_INT);
            }
            Attr::Ints(vs) => {
                am.packed_ints(a::INTS, vs);
                am.int(a::TYPE, a::TYPE_INTS);
            }
            Attr::Float(v) => {
                am.float(a::F, *v);
                am.int(a::TYPE, a::TYPE_FLOAT);
            }
            Attr::Str(s) => {
                am.string(a::S, s);
                am.int(a::TYPE, a::TYPE_STRING);
            }
            Attr::Tensor(elem, dims, raw) => {
                let mut t = Message::new();
                t.packed_ints(proto::tensor::DIMS, dims);
                t.int(proto::tensor::DATA_TYPE, i64::from(*elem));
                t.bytes(proto::tensor::RAW_DATA, raw);
                am.message(a::T, t);
                am.int(a::TYPE, a::TYPE_TENSOR);
            }
        }
        m.message(proto::node::ATTRIBUTE, am);
    }
    m
}

fn value_info(io: &Io) -> Message {
    use proto::value_info as v;
    let mut shape = Message::new();
    for d in &io.dims {
        let mut dm = Message::new();
        match d {
            Dim::Size(n) => dm.int(v::DIM_VALUE, *n as i64),
            Dim::Named(s) => dm.string(v::DIM_PARAM, s),
        }
        shape.message(v::SHAPE_DIM, dm);
    }
    let mut tensor = Message::new();
    tensor.int(v::TENSOR_ELEM_TYPE, i64::from(io.elem));
    tensor.message(v::TENSOR_SHAPE, shape);
    let mut ty = Message::new();
    ty.message(v::TYPE_TENSOR, tensor);
    let mut m = Message::new();
    m.string(v::NAME, &io.name);
    m.message(v::TYPE, ty);
    m
}

/// Kernels (`kernel!` functions, the op table's bodies) print themselves
/// into the graph through this.
impl OnnxExpr for OnnxGraph {
    type Value = Value;

    fn op_with(&mut self, op: &'static str, args: &[&Value], attrs: &[(&'static str, i64)]) -> Value {
        let rank = args.iter().map(|v| v.rank()).max().unwrap_or(0);
        let attrs = attrs.iter().map(|&(k, v)| (k, Attr::Int(v))).collect();
        self.node(op, args, attrs, rank)
    }

    fn constant(&mut self, value: f64, ty: OnnxType) -> Value {
        self.scalar(value, ty as i32)
    }

    fn cast(&mut self, x: &Value, ty: OnnxType) -> Value {
        self.node("Cast", &[x], vec![("to", Attr::Int(ty as i64))], x.rank())
    }
}
