//! From ONNX nodes to Blaze: layer fields with their weights, and the steps
//! of a forward pass.
//!
//! The nodes are walked in the file's (topological) order, each value
//! interpreted as one of a few kinds ([`Val`]): a tensor computed from the
//! input, which becomes a binding of the forward body, or something known
//! while converting: a weight, a shape computed by `Shape` and its
//! arithmetic, a `[T, T]` triangle (the causal mask an exporter builds with
//! `Trilu`), or `arange(T)`. Only tensors reach the generated code; the
//! rest folds into literals, layer sizes and `causal_mask(T)`.
//!
//! Patterns that an exporter spreads over several nodes are recognised
//! where they start: `MatMul` by a weight and `Add` of a bias is a
//! `Linear`; the erf form of GELU is `gelu`.
//!
//! Reshapes and transposes that move the batch (sequence-first attention,
//! the batch merged with the heads) only change how the graph sees a
//! tensor's data ([`Tensor`]'s view); when an op computes, the data is
//! permuted once so that the batch is first again, so the body stays per
//! sample.

mod mask;
mod ops;
mod view;

use mask::{Fill, Region, Tri};
use view::Tensor;

use std::collections::{HashMap, HashSet};

use blaze_spec::ops::UNARY;
use blaze_spec::rules;
use blaze_spec::{Layer, Options, StaticShape, Value, symbol, symbol_index};

use crate::Problem;
use crate::dim::{Dim, show};
use crate::proto::{DType, Data, Graph, Node, Values};

/// A layer field of the generated model.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub layer: Layer,
    pub generics: Vec<usize>,
    /// `#[layer(..)]` keys that differ from the layer's defaults, as written.
    pub keys: Vec<(&'static str, String)>,
    /// The options those keys give, checked by the spec.
    pub options: Options,
    /// Its tensors under the layer's parameter names, in the spec's order.
    pub tensors: Vec<(&'static str, Data)>,
}

/// One step of the forward pass.
#[derive(Clone, Debug)]
pub enum Step {
    /// `output = self.field(input)`.
    Layer { field: usize, input: String, output: String, shape: Vec<Dim> },
    /// A layer without tensors (an activation, a pool, a flatten): a field
    /// in a model of fields in sequence, the expression `body` (with `{x}`
    /// for the input) in a forward body where one exists.
    Act { field: Box<Field>, body: Option<String>, input: String, output: String, shape: Vec<Dim> },
    /// `let outputs = expr;` in a forward body.
    Expr { outputs: Vec<String>, expr: String, shapes: Vec<Vec<Dim>> },
}

/// A converted graph.
#[derive(Debug)]
pub struct Program {
    pub fields: Vec<Field>,
    pub steps: Vec<Step>,
    /// The input's binding, per-sample dims and type.
    pub input: (String, Vec<Dim>, DType),
    pub output: String,
    /// Symbolic dims besides the batch, as Blaze names them.
    pub symbols: Vec<String>,
}

/// What a value is, as far as conversion knows.
#[derive(Clone, Debug)]
enum Val {
    Tensor(Tensor),
    Const(Data),
    /// A 1-D integer tensor computed from shapes.
    Shape(Vec<Dim>),
    /// A 0-D integer computed from shapes.
    Scalar(Dim),
    /// One value over a shape computed from shapes (`Expand`).
    Filled(Fill, Vec<Dim>),
    /// A table of two values split along a diagonal: masks.
    Triangle(Tri),
    /// `arange(0, len)` between `lead` and `trail` unit dims (a registered
    /// `position_ids` buffer of `[1, n]` cut to the sequence; a mask's
    /// query index `[1, 1, T, 1]`).
    Positions {
        lead: usize,
        len: Dim,
        trail: usize,
    },
    /// Where the softmax `Tensor` is NaN (`IsNaN`): the guard an exporter
    /// writes after attention's softmax, for rows whose keys are all masked.
    SoftmaxNan(Tensor),
    /// Computed from the data in a way a forward body cannot write; the
    /// words say how.
    Opaque(String),
}

impl Val {
    /// The values of a constant, or of sizes that are all known (a size
    /// 0-D, a shape 1-D), as integers.
    fn known(&self) -> Option<Data> {
        match self {
            Val::Const(c) => Some(c.clone()),
            Val::Scalar(d) => d.value().map(|k| Data { dims: vec![], values: Values::I64(vec![k]) }),
            Val::Shape(s) => {
                let values = s.iter().map(Dim::value).collect::<Option<Vec<_>>>()?;
                Some(Data { dims: vec![s.len()], values: Values::I64(values) })
            }
            _ => None,
        }
    }

    /// The one value every element holds: a fill, or a constant of equal
    /// elements (a registered buffer of zeros).
    fn one_value(&self) -> Option<Fill> {
        match self {
            Val::Filled(f, _) => Some(f.clone()),
            Val::Const(d) if d.len() > 0 => {
                let v = d.as_f64();
                v.iter().all(|&x| x == v[0]).then(|| match d.values {
                    Values::Bool(_) => Fill::Bool(v[0] != 0.0),
                    _ => Fill::Num(v[0]),
                })
            }
            _ => None,
        }
    }

    /// The shape of a value whose elements a node may read one by one.
    fn dims(&self) -> Option<Vec<Dim>> {
        match self {
            Val::Tensor(t) => Some(t.shape()),
            Val::Const(d) => Some(d.dims.iter().map(|&x| Dim::known(x as i64)).collect()),
            Val::Filled(_, s) => Some(s.clone()),
            Val::Positions { lead, len, trail } => {
                let mut s = vec![Dim::known(1); *lead];
                s.push(len.clone());
                s.extend(vec![Dim::known(1); *trail]);
                Some(s)
            }
            _ => None,
        }
    }

    /// The table split along a diagonal that this value is: a triangle, or
    /// a constant laid out as one (a registered `tril`, or a causal mask
    /// an export at a fixed length folded).
    fn triangle(&self) -> Option<Tri> {
        match self {
            Val::Triangle(t) => Some(t.clone()),
            Val::Const(c) => Tri::of_constant(c),
            _ => None,
        }
    }
}

const BATCH: &str = "batch";

/// The functions a forward body calls by name, but the op table's
/// ([`reserved`] adds those).
const RESERVED: &[&str] = &["self", "matmul", "softmax", "log_softmax", "cat", "positions", "causal_mask"];

/// The op table's ops a forward body calls as functions (those without
/// parameters).
fn body_functions() -> impl Iterator<Item = &'static str> {
    UNARY.iter().filter(|op| op.params.is_empty()).map(|op| op.name)
}

/// Whether a binding named `name` would shadow a function a forward body
/// calls: [`RESERVED`] and the op table's.
fn reserved(name: &str) -> bool {
    RESERVED.contains(&name) || body_functions().any(|f| f == name)
}

pub fn lower(g: &Graph) -> Result<Program, Problem> {
    let mut low = Lower::new(g)?;
    let mut unsupported: Vec<(String, Vec<String>)> = Vec::new();
    for n in &g.nodes {
        if !SUPPORTED.contains(&n.op.as_str()) || !(n.domain.is_empty() || n.domain == "ai.onnx") {
            let op = if n.domain.is_empty() { n.op.clone() } else { format!("{}::{}", n.domain, n.op) };
            match unsupported.iter_mut().find(|(o, _)| *o == op) {
                Some((_, names)) => names.push(n.name.clone()),
                None => unsupported.push((op, vec![n.name.clone()])),
            }
        }
    }
    if !unsupported.is_empty() {
        return Err(Problem::Unsupported(unsupported));
    }
    if let Some(n) = g.nodes.iter().find(|n| n.outputs.first().is_none_or(String::is_empty)) {
        return Err(Problem::Malformed(format!("node `{}` ({}) has no output", n.name, n.op)));
    }
    let fail = |n: &Node| {
        let (node, op) = (n.name.clone(), n.op.clone());
        move |reason| Problem::Node { node, op, reason }
    };
    // Constants first: they read nothing, and the patterns that look
    // ahead from a node (GELU's erf form) need the numbers of constants
    // that the legacy exporter places after it.
    for (i, n) in g.nodes.iter().enumerate().filter(|(_, n)| n.op == "Constant") {
        low.node(n).map_err(fail(n))?;
        low.skip.insert(i);
    }
    for (i, n) in g.nodes.iter().enumerate() {
        if low.skip.contains(&i) {
            continue;
        }
        low.node(n).map_err(fail(n))?;
    }
    low.finish()
}

/// The operators the importer converts.
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Ceil",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvTranspose",
    "Cos",
    "Div",
    "Dropout",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "GRU",
    "Gather",
    "GatherElements",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "IsNaN",
    "LSTM",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "MatMul",
    "MaxPool",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "Pow",
    "Range",
    "Reciprocal",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Resize",
    "Shape",
    "Sigmoid",
    "Sign",
    "Sin",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Tanh",
    "Transpose",
    "Trilu",
    "Unsqueeze",
    "Where",
];

type R<T> = Result<T, String>;

struct Lower<'g> {
    g: &'g Graph,
    vals: HashMap<String, Val>,
    /// Nodes reading each value (graph outputs count as a reader each).
    readers: HashMap<String, Vec<usize>>,
    producer: HashMap<String, usize>,
    skip: HashSet<usize>,
    /// The batch size of an export at a fixed batch (above 1): where the
    /// graph's reshapes write that number for the batch dim, it is read as
    /// the free batch dim.
    fixed_batch: Option<Dim>,
    fields: Vec<Field>,
    steps: Vec<Step>,
    /// Field and binding names in use.
    names: HashSet<String>,
    /// Symbolic dims besides the batch: ONNX name, Blaze name.
    symbols: Vec<(String, String)>,
    input: (String, Vec<Dim>, DType),
    /// Bindings that only split an axis of another (a bidirectional
    /// layer's features into directions), by name: the binding split and
    /// its full shape. Read back whole, they are the original.
    splits: HashMap<String, (String, Vec<Dim>)>,
}

impl<'g> Lower<'g> {
    fn new(g: &'g Graph) -> Result<Self, Problem> {
        let [input] = g.inputs.as_slice() else {
            return Err(Problem::Malformed(format!(
                "the graph has {} inputs; the importer converts models of one input",
                g.inputs.len()
            )));
        };
        if g.outputs.len() != 1 {
            return Err(Problem::Malformed(format!(
                "the graph has {} outputs; the importer converts models of one output",
                g.outputs.len()
            )));
        }
        if input.dims.len() < 2 {
            return Err(Problem::Malformed(format!(
                "input `{}` has shape {}; it needs a batch dim and a per-sample shape",
                input.name,
                show(&input.dims)
            )));
        }
        let mut readers: HashMap<String, Vec<usize>> = HashMap::new();
        let mut producer = HashMap::new();
        for (i, n) in g.nodes.iter().enumerate() {
            for x in n.inputs.iter().filter(|x| !x.is_empty()) {
                readers.entry(x.clone()).or_default().push(i);
            }
            for y in &n.outputs {
                producer.insert(y.clone(), i);
            }
        }
        for o in &g.outputs {
            readers.entry(o.clone()).or_default().push(usize::MAX);
        }
        let mut low = Lower {
            g,
            vals: HashMap::new(),
            readers,
            producer,
            skip: HashSet::new(),
            fixed_batch: input.dims.first().filter(|d| d.value().is_some_and(|k| k > 1)).cloned(),
            fields: Vec::new(),
            steps: Vec::new(),
            // Names a forward body calls, which a binding must not shadow.
            names: RESERVED.iter().copied().chain(body_functions()).map(str::to_owned).collect(),
            splits: HashMap::new(),
            symbols: Vec::new(),
            input: (String::new(), Vec::new(), input.dtype),
        };
        // The batch dim keeps its name in shape arithmetic; a fixed one (an
        // export at batch 1) becomes the free batch dim too.
        let mut under = vec![Dim::named(BATCH)];
        for d in &input.dims[1..] {
            under.push(match d.name() {
                Some(n) => {
                    let blaze = symbol_name(n, &low.symbols);
                    low.symbols.push((n.to_owned(), blaze.clone()));
                    Dim::named(&blaze)
                }
                None => d.clone(),
            });
        }
        let name = low.binding(&input.name);
        low.input = (name.clone(), under[1..].to_vec(), input.dtype);
        low.vals.insert(input.name.clone(), Val::Tensor(Tensor::plain(name, under, input.dtype)));
        for (k, v) in &g.tensors {
            low.vals.insert(k.clone(), Val::Const(v.clone()));
        }
        Ok(low)
    }

    fn finish(mut self) -> Result<Program, Problem> {
        let out = self.g.outputs[0].clone();
        let t = match self.vals.get(&out) {
            Some(Val::Tensor(t)) => t.clone(),
            _ => return Err(Problem::Malformed(format!("output `{out}` is not computed from the input"))),
        };
        let t = self.canonical(&out, &t).map_err(Problem::Malformed)?;
        if t.view.is_some() {
            return Err(Problem::Malformed(format!(
                "output `{out}` of shape {} does not have the batch first",
                show(&t.shape())
            )));
        }
        // A split that every reader read back whole is not written.
        let unread = |name: &String| {
            name != &t.name
                && !self.steps.iter().any(|s| match s {
                    Step::Layer { input, .. } | Step::Act { input, .. } => input == name,
                    Step::Expr { outputs, expr, .. } => !outputs.contains(name) && mentions(expr, name),
                })
        };
        let dropped: Vec<String> = self.splits.keys().filter(|name| unread(name)).cloned().collect();
        self.steps.retain(|s| !matches!(s, Step::Expr { outputs, .. } if dropped.contains(&outputs[0])));
        Ok(Program {
            fields: self.fields,
            steps: self.steps,
            input: self.input,
            output: t.name.clone(),
            symbols: self.symbols.into_iter().map(|(_, b)| b).collect(),
        })
    }

    /// A fresh Rust name for the value or field called `onnx` in the file.
    fn binding(&mut self, onnx: &str) -> String {
        let mut base = ident(onnx);
        if reserved(&base) {
            base.push_str("_out");
        }
        let mut name = base.clone();
        let mut k = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }

    fn val(&self, name: &str) -> R<&Val> {
        self.vals.get(name).ok_or_else(|| format!("reads `{name}`, which no earlier node computes"))
    }

    /// Whether the value `name` is the output of an `op` node.
    fn produced_by(&self, name: &str, op: &str) -> bool {
        self.producer.get(name).is_some_and(|&i| self.g.nodes[i].op == op)
    }

    /// `Greater`, `GreaterOrEqual`, `Less`, `LessOrEqual` of positions
    /// `0..T` and a number that every position is on one side of (an
    /// exporter's `arange(T) >= 0`): one value, true or false. Of the
    /// positions as a column (`[.., T, 1]`, the query `i`) and as a row
    /// (`[.., 1, T]`, the key `j`), as `transformers` builds its causal
    /// mask (`j <= i`): a triangle.
    fn order(&mut self, n: &Node) -> R<()> {
        let positions = self.input_val(n, 0)?.clone();
        if let (Val::Positions { .. }, Val::Positions { .. }) = (&positions, self.input_val(n, 1)?) {
            let tri = mask::compare_positions(&n.op, &positions, self.input_val(n, 1)?)?;
            self.set(n, 0, Val::Triangle(tri));
            return Ok(());
        }
        let c = mask::number(self.input_val(n, 1)?);
        let (Some(shape), Val::Positions { .. }, Some(c)) = (positions.dims(), &positions, c) else {
            return Err(
                "compares values other than positions with a number; only a comparison that holds for every position \
                        or none is computed"
                    .into(),
            );
        };
        // Every position p is at least 0; unknown past that.
        let all = match n.op.as_str() {
            "GreaterOrEqual" if c <= 0.0 => Some(true),
            "Greater" if c < 0.0 => Some(true),
            "LessOrEqual" if c < 0.0 => Some(false),
            "Less" if c <= 0.0 => Some(false),
            _ => None,
        };
        let all = all.ok_or_else(|| format!("compares the positions with {c}, which splits them"))?;
        self.set(n, 0, Val::Filled(Fill::Bool(all), shape));
        Ok(())
    }

    fn input_val(&self, n: &Node, i: usize) -> R<&Val> {
        let name = n.input(i).ok_or_else(|| format!("input {i} is missing"))?;
        self.val(name)
    }

    fn tensor(&self, n: &Node, i: usize) -> R<Tensor> {
        match self.input_val(n, i)? {
            Val::Tensor(t) => Ok(t.clone()),
            Val::Opaque(why) => Err(format!("reads `{}`, which a forward body cannot compute: {why}", n.inputs[i])),
            _ => Err(format!(
                "input {i} (`{}`) is a constant where a tensor computed from the input is expected",
                n.inputs[i]
            )),
        }
    }

    fn konst(&self, n: &Node, i: usize) -> R<Data> {
        match self.input_val(n, i)? {
            Val::Const(d) => Ok(d.clone()),
            Val::Tensor(_) => Err(format!(
                "input {i} (`{}`) is computed from the data; Blaze needs it known when compiling (a data-dependent shape or weight)",
                n.inputs[i]
            )),
            _ => Err(format!("input {i} (`{}`) is not a constant", n.inputs[i])),
        }
    }

    /// Integers known while converting: a shape or an integer constant.
    fn ints(&self, n: &Node, i: usize) -> R<Vec<Dim>> {
        match self.input_val(n, i)? {
            Val::Shape(s) => Ok(s.clone()),
            Val::Scalar(d) => Ok(vec![d.clone()]),
            Val::Const(d) => match d.as_i64() {
                Some(v) => Ok(v.into_iter().map(Dim::known).collect()),
                None => Err(format!("input {i} (`{}`) holds floats where integers are expected", n.inputs[i])),
            },
            Val::Tensor(_) => Err(format!(
                "input {i} (`{}`) is computed from the data: a data-dependent shape; Blaze needs shapes known when compiling",
                n.inputs[i]
            )),
            Val::Opaque(why) => Err(format!(
                "input {i} (`{}`) is computed from the data ({why}): a data-dependent shape; Blaze needs shapes known when compiling",
                n.inputs[i]
            )),
            _ => Err(format!("input {i} (`{}`) is not a list of integers", n.inputs[i])),
        }
    }

    /// Integers that must be plain numbers (axes, starts, sizes).
    fn known_ints(&self, n: &Node, i: usize) -> R<Vec<i64>> {
        self.ints(n, i)?
            .iter()
            .map(|d| d.value().ok_or_else(|| format!("input {i} holds `{d}`, which must be a number")))
            .collect()
    }

    /// Axes from the attribute (older opsets) or input `i`.
    fn axes(&self, n: &Node, i: usize) -> R<Option<Vec<i64>>> {
        if let Some(a) = n.ints("axes") {
            return Ok(Some(a.to_vec()));
        }
        match n.input(i) {
            Some(_) => Ok(Some(self.known_ints(n, i)?)),
            None => Ok(None),
        }
    }

    fn set(&mut self, n: &Node, k: usize, v: Val) {
        self.vals.insert(n.outputs[k].clone(), v);
    }

    /// The single node reading `value`, if exactly one does (and the value
    /// is not a graph output).
    fn only_reader(&self, value: &str) -> Option<(usize, &'g Node)> {
        match self.readers.get(value).map(Vec::as_slice) {
            Some([i]) if *i != usize::MAX => Some((*i, &self.g.nodes[*i])),
            _ => None,
        }
    }

    /// Emits `let out = expr;` for data of full shape `under`, which the
    /// graph sees through `view`.
    fn emit(
        &mut self,
        n: &Node,
        k: usize,
        expr: String,
        under: Vec<Dim>,
        view: Option<Vec<Vec<usize>>>,
        dtype: DType,
    ) -> R<()> {
        check_dims(&under[1..])?;
        let name = self.binding(&n.outputs[k]);
        self.steps.push(Step::Expr { outputs: vec![name.clone()], expr, shapes: vec![under[1..].to_vec()] });
        self.set(n, k, Val::Tensor(Tensor { name, under, view, dtype }));
        Ok(())
    }

    /// Aliases output `k` to an existing tensor (a no-op node).
    fn alias(&mut self, n: &Node, k: usize, t: Tensor) {
        self.set(n, k, Val::Tensor(t));
    }

    fn node(&mut self, n: &'g Node) -> R<()> {
        let op = n.op.as_str();
        match op {
            "Identity" => {
                let v = self.input_val(n, 0)?.clone();
                self.set(n, 0, v);
            }
            "Constant" => {
                let d = if let Some(crate::proto::Attr::Tensor(d)) = n.attrs.get("value") {
                    d.clone()
                } else if let Some(v) = n.float("value_float") {
                    Data { dims: vec![], values: Values::F32(vec![v]) }
                } else if let Some(v) = n.int("value_int") {
                    Data { dims: vec![], values: Values::I64(vec![v]) }
                } else if let Some(v) = n.ints("value_ints") {
                    Data { dims: vec![v.len()], values: Values::I64(v.to_vec()) }
                } else if let Some(crate::proto::Attr::Floats(v)) = n.attrs.get("value_floats") {
                    Data { dims: vec![v.len()], values: Values::F32(v.clone()) }
                } else {
                    return Err("holds no value the importer reads (value, value_float(s), value_int(s))".into());
                };
                self.set(n, 0, Val::Const(d));
            }
            "Cast" => {
                // Integer shape arithmetic and float scalars pass through;
                // casting a computed tensor changes nothing Blaze computes in f32.
                let v = self.input_val(n, 0)?.clone();
                let v = match (v, n.int("to")) {
                    (Val::Tensor(t), Some(1)) if t.dtype == DType::F32 => Val::Tensor(t),
                    // Integers from the data: a body cannot compute them, and
                    // whatever reads them says why.
                    (Val::Tensor(_) | Val::Opaque(_), to) => Val::Opaque(format!(
                        "`{}` casts a tensor computed from the data to ONNX type {}",
                        n.name,
                        to.unwrap_or(0)
                    )),
                    // A mask's values as bools (`Cast(to = BOOL)` of a
                    // triangle of ones and zeros).
                    (Val::Triangle(t), Some(9)) => Val::Triangle(t.map(|f| match f {
                        mask::Fill::Num(x) => mask::Fill::Bool(*x != 0.0),
                        b => b.clone(),
                    })),
                    // Constants and known sizes turn to floats (float, double) here.
                    (v, Some(1 | 11)) if v.known().is_some() => {
                        let c = v.known().expect("known");
                        Val::Const(Data {
                            values: Values::F32(c.as_f64().iter().map(|&x| x as f32).collect()),
                            dims: c.dims,
                        })
                    }
                    (v, _) => v,
                };
                self.set(n, 0, v);
            }
            "Shape" => {
                let v = self.input_val(n, 0)?;
                let s = match v {
                    _ if v.dims().is_some() => v.dims().expect("dims"),
                    Val::Shape(s) => vec![Dim::known(s.len() as i64)],
                    Val::Triangle(t) => {
                        let mut s = vec![Dim::known(1); t.lead];
                        s.extend([t.rows.clone(), t.cols.clone()]);
                        s
                    }
                    other => {
                        return Err(format!("reads the shape of {}, which the importer cannot follow", kind(other)));
                    }
                };
                let r = s.len() as i64;
                let clamp = |x: i64| (if x < 0 { x + r } else { x }).clamp(0, r) as usize;
                let start = clamp(n.int("start").unwrap_or(0));
                let end = clamp(n.int("end").unwrap_or(r));
                self.set(n, 0, Val::Shape(s[start..end.max(start)].to_vec()));
            }
            "Squeeze" | "Unsqueeze" => self.squeeze(n)?,
            "Concat" => self.concat(n)?,
            "Gather" => self.gather(n)?,
            "Slice" => self.slice(n)?,
            "Range" => {
                let start = self.ints(n, 0)?;
                let limit = self.ints(n, 1)?;
                let delta = self.ints(n, 2)?;
                match (start.as_slice(), limit.as_slice(), delta.as_slice()) {
                    ([s], [l], [d]) if s.value() == Some(0) && d.value() == Some(1) => {
                        self.set(n, 0, Val::Positions { lead: 0, len: l.clone(), trail: 0 });
                    }
                    _ => return Err("is not `arange(0, n)`, the positions of a sequence".into()),
                }
            }
            "Expand" => {
                let shape = self.ints(n, 1)?;
                let v = self.input_val(n, 0)?;
                if let Val::Triangle(tri) = v {
                    // A mask broadcast over the batch and heads: masking
                    // broadcasts it anyway.
                    let tri = mask::expanded(tri, &shape)?;
                    self.set(n, 0, Val::Triangle(tri));
                    return Ok(());
                }
                match (v.one_value(), v.dims()) {
                    // One value, broadcast to the shape (ONNX's Expand
                    // broadcasts both ways).
                    (Some(fill), Some(dims)) => {
                        let shape = broadcast(&dims, &shape)?;
                        self.set(n, 0, Val::Filled(fill, shape));
                    }
                    _ => return Err("expands something other than a constant of one value".into()),
                }
            }
            "GatherElements" => {
                // `buffer.gather(1, position_ids)` of a buffer of one value
                // (BERT's token types): that value, in the indices' shape.
                let (data, index) = (self.input_val(n, 0)?, self.input_val(n, 1)?);
                match (data.one_value(), index.dims()) {
                    (Some(fill), Some(shape)) => self.set(n, 0, Val::Filled(fill, shape)),
                    _ => {
                        return Err(format!(
                            "gathers elements of {}; only a constant of one value (a buffer of zeros) is read",
                            kind(data)
                        ));
                    }
                }
            }
            "Greater" | "GreaterOrEqual" | "Less" | "LessOrEqual" => self.order(n)?,
            "IsNaN" => {
                // The guard around attention's softmax (NaN to 0 where every
                // key is masked) is read by `Where`; nothing else is.
                match self.input_val(n, 0)? {
                    Val::Tensor(t) if self.produced_by(&n.inputs[0], "Softmax") => {
                        let v = Val::SoftmaxNan(t.clone());
                        self.set(n, 0, v);
                    }
                    other => {
                        let v = Val::Opaque(format!("`{}` tests {} for NaN", n.name, kind(other)));
                        self.set(n, 0, v);
                    }
                }
            }
            "ConstantOfShape" => {
                let shape = self.ints(n, 0)?;
                let value = match n.attrs.get("value") {
                    Some(crate::proto::Attr::Tensor(d)) if d.len() == 1 => d.clone(),
                    Some(_) => return Err("has a `value` of more than one element".into()),
                    None => Data { dims: vec![], values: Values::F32(vec![0.0]) },
                };
                let sizes = shape.iter().map(Dim::value).collect::<Option<Vec<i64>>>();
                match sizes.as_deref() {
                    // A vector of known length (an exporter's shape
                    // arithmetic, `where(shape == -1, 1, shape)`): a constant
                    // of the value's type.
                    Some(&[k]) if (0..=64).contains(&k) => {
                        let k = k as usize;
                        let values = match &value.values {
                            Values::I64(v) => Values::I64(vec![v[0]; k]),
                            Values::F32(v) => Values::F32(vec![v[0]; k]),
                            Values::Bool(v) => Values::Bool(vec![v[0]; k]),
                        };
                        self.set(n, 0, Val::Const(Data { dims: vec![k], values }));
                    }
                    _ => {
                        let fill = match &value.values {
                            Values::Bool(b) => Fill::Bool(b[0]),
                            _ => Fill::Num(value.as_f64()[0]),
                        };
                        self.set(n, 0, Val::Filled(fill, shape));
                    }
                }
            }
            "LSTM" | "GRU" => self.recurrent(n)?,
            "Trilu" => {
                let lower = n.int("upper").unwrap_or(1) == 0;
                let diagonal = match n.input(1) {
                    Some(_) => *self.known_ints(n, 1)?.first().ok_or("has an empty diagonal")?,
                    None => 0,
                };
                match self.input_val(n, 0)? {
                    Val::Filled(f, s) if s.len() == 2 => {
                        let off = match f {
                            Fill::Num(_) => Fill::Num(0.0),
                            Fill::Bool(_) => Fill::Bool(false),
                        };
                        let (rows, cols) = (s[0].clone(), s[1].clone());
                        let v = Val::Triangle(Tri { lead: 0, rows, cols, lower, diagonal, on: f.clone(), off });
                        self.set(n, 0, v);
                    }
                    _ => return Err("keeps a triangle of something other than a square of one value".into()),
                }
            }
            "Equal" if self.input_val(n, 0)?.known().is_some() && self.input_val(n, 1)?.known().is_some() => {
                // Shape arithmetic (`where(shape == -1, 1, shape)`) done here.
                let known = |k| self.input_val(n, k).map(|v| v.known().expect("known"));
                let v = ops::fold_equal(&known(0)?, &known(1)?)?;
                self.set(n, 0, Val::Const(v));
            }
            "Equal" if matches!(self.input_val(n, 0)?, Val::Shape(_)) && self.input_val(n, 1)?.known().is_some() => {
                // A shape with named sizes against numbers: a size is never
                // negative (`shape == -1` is false there).
                let s = self.ints(n, 0)?;
                let c = self.input_val(n, 1)?.known().expect("known").as_f64();
                if c.len() != s.len() && c.len() != 1 {
                    return Err(format!("compares a shape of {} sizes with {} numbers", s.len(), c.len()));
                }
                let values = s
                    .iter()
                    .enumerate()
                    .map(|(k, d)| {
                        let c = c[if c.len() == 1 { 0 } else { k }];
                        match d.value() {
                            Some(v) => Ok(v as f64 == c),
                            None if c < 0.0 => Ok(false),
                            None => Err(format!("compares the size {d} with {c}, which it may equal")),
                        }
                    })
                    .collect::<R<Vec<bool>>>()?;
                self.set(n, 0, Val::Const(Data { dims: vec![s.len()], values: Values::Bool(values) }));
            }
            "Equal" => {
                let tri = self.input_val(n, 0)?.clone();
                let c = self.konst(n, 1)?.scalar().ok_or("compares with more than one value")?;
                match tri {
                    Val::Triangle(t) => {
                        let v = Val::Triangle(t.map(|f| match f {
                            Fill::Num(x) => Fill::Bool(*x == c),
                            Fill::Bool(b) => Fill::Bool(f64::from(u8::from(*b)) == c),
                        }));
                        self.set(n, 0, v);
                    }
                    _ => return Err("compares values computed from the data; only a mask's triangle is read".into()),
                }
            }
            "Where" => self.select(n)?,
            "Add" | "Sub" | "Mul" | "Div" | "Mod" => self.arith(n)?,
            "Pow" => self.pow(n)?,
            "MatMul" => self.matmul(n)?,
            "Gemm" => self.gemm(n)?,
            "Conv" | "ConvTranspose" => self.conv(n)?,
            "BatchNormalization" => self.batch_norm(n)?,
            "LayerNormalization" => self.layer_norm(n)?,
            "LeakyRelu" | "Gelu" | "Dropout" | "Softmax" | "LogSoftmax" | "Flatten" | "Clip" | "HardSigmoid"
            | "Softplus" => self.unary(n)?,
            op if table_op_named(op).is_some() => self.unary(n)?,
            "MaxPool" | "AveragePool" => self.pool(n)?,
            "Resize" => self.resize(n)?,
            "GlobalAveragePool" => {
                let t = self.plain(n, 0)?;
                self.act(n, Layer::AdaptiveAvgPool2d, vec![1, 1], vec![], None, &t, "global_avg_pool")?;
            }
            "ReduceMean" | "ReduceSum" => self.reduce(n)?,
            "Reshape" => self.reshape(n)?,
            "Transpose" => self.transpose(n)?,
            "Split" => self.split(n)?,
            other => return Err(format!("`{other}` has no conversion")),
        }
        Ok(())
    }

    /// A field name from the file's names for a layer's tensors: the first
    /// that names the layer (`conv1.weight` gives `conv1`), else the node's.
    fn field_base(&self, n: &Node, tensor_names: &[&str]) -> String {
        for t in tensor_names {
            let stem = t
                .trim_end_matches("_bias")
                .trim_end_matches(".weight")
                .trim_end_matches(".bias")
                .trim_end_matches(".scale")
                .trim_end_matches(".running_mean")
                .trim_end_matches(".running_var");
            let generated = stem.is_empty()
                || stem.starts_with("val_")
                || stem.starts_with("onnx::")
                || stem.chars().all(|c| c.is_ascii_digit() || c == '_');
            if !generated {
                return stem.to_owned();
            }
        }
        n.name.trim_start_matches("node_").trim_start_matches('/').to_owned()
    }

    /// Adds a field, checking its options and tensors against the spec.
    fn field(
        &mut self,
        base: &str,
        layer: Layer,
        generics: Vec<usize>,
        keys: Vec<(&'static str, Value<'static>)>,
        tensors: Vec<Data>,
    ) -> R<usize> {
        let options = options(layer, &generics, &keys)?;
        let params = layer.params(&generics, &options);
        if params.len() != tensors.len() {
            return Err(format!(
                "gives {} tensors for `{}`, which holds {}",
                tensors.len(),
                layer.display(&generics, ""),
                params.len()
            ));
        }
        let mut named = Vec::new();
        for (p, mut d) in params.iter().zip(tensors) {
            let numel: usize = p.shape.iter().product();
            if d.len() != numel {
                return Err(format!(
                    "has a {} of shape {:?}; `{}` needs {:?}",
                    p.name,
                    d.dims,
                    layer.display(&generics, ""),
                    p.shape
                ));
            }
            d.dims = p.shape.clone();
            if d.f32s().is_none() {
                d.values = Values::F32(d.as_f64().iter().map(|&x| x as f32).collect());
            }
            named.push((p.name, d));
        }
        let name = self.binding(base);
        self.fields.push(Field { name, layer, generics, keys: render(&keys), options, tensors: named });
        Ok(self.fields.len() - 1)
    }

    /// A layer's per-sample output shape, by the spec's rule.
    fn layer_out(&self, f: usize, x: &Tensor) -> R<Vec<Dim>> {
        let field = &self.fields[f];
        spec_output(field.layer, &field.generics, &field.options, x, &self.symbols)
    }

    fn layer_step(&mut self, n: &Node, f: usize, x: &Tensor, shape: Vec<Dim>) {
        let out = &n.outputs[0];
        let name = self.binding(out);
        self.steps.push(Step::Layer { field: f, input: x.name.clone(), output: name.clone(), shape: shape.clone() });
        let mut under = vec![Dim::named(BATCH)];
        under.extend(shape);
        // A Linear keeps its input's view: it acts on the data's last axis.
        self.vals.insert(out.clone(), Val::Tensor(Tensor { name, under, view: x.view.clone(), dtype: DType::F32 }));
    }

    /// A layer without tensors.
    fn act(
        &mut self,
        n: &Node,
        layer: Layer,
        generics: Vec<usize>,
        keys: Vec<(&'static str, Value<'static>)>,
        body: Option<&str>,
        x: &Tensor,
        base: &str,
    ) -> R<()> {
        if x.view.is_some() && !layer.is_elementwise() {
            return Err("reads a tensor whose batch dim is not first on its own".into());
        }
        let field = tensorless(layer, generics, &keys, base)?;
        let shape = if layer.is_elementwise() {
            x.per_sample().to_vec()
        } else {
            spec_output(layer, &field.generics, &field.options, x, &self.symbols)?
        };
        let name = self.binding(&n.outputs[0]);
        self.steps.push(Step::Act {
            field: Box::new(field),
            body: body.map(str::to_owned),
            input: x.name.clone(),
            output: name.clone(),
            shape: shape.clone(),
        });
        let (under, view) = if layer.is_elementwise() {
            (x.under.clone(), x.view.clone())
        } else {
            let mut under = vec![Dim::named(BATCH)];
            under.extend(shape);
            (under, None)
        };
        self.set(n, 0, Val::Tensor(Tensor { name, under, view, dtype: x.dtype }));
        Ok(())
    }
}

/// What a value is, in words.
fn kind(v: &Val) -> String {
    match v {
        Val::Tensor(t) => format!("a tensor of shape {}", show(&t.shape())),
        Val::Const(d) => format!("a constant of shape {:?}", d.dims),
        Val::Shape(s) => format!("the shape {}", show(s)),
        Val::Scalar(d) => format!("the size {d}"),
        Val::Filled(f, s) => format!("{f:?} over {}", show(s)),
        Val::Triangle(t) => format!(
            "a {} x {} triangle ({} on and {} the diagonal {}, {:?} elsewhere)",
            t.rows,
            t.cols,
            match t.on {
                Fill::Num(x) => float_lit(x),
                Fill::Bool(b) => b.to_string(),
            },
            if t.lower { "below" } else { "above" },
            t.diagonal,
            t.off
        ),
        Val::Positions { len, .. } => format!("the positions 0..{len}"),
        Val::SoftmaxNan(t) => format!("where the softmax `{}` is NaN", t.name),
        Val::Opaque(why) => format!("a value computed from the data ({why})"),
    }
}

/// A field for a layer without tensors.
/// The op of the op table that ONNX operator `op` is as it stands (the
/// entry's `onnx`), by the table's name: a layer where the table has one,
/// else a tensor method. Bool ops are not read so: masks have their own
/// conversions.
pub(crate) fn table_op_named(op: &str) -> Option<&'static str> {
    blaze_spec::ops::UNARY.iter().find(|u| u.onnx == op && u.domain != blaze_spec::ops::Domain::Bool).map(|u| u.name)
}

/// Whether Rust expression `expr` names the binding `name`.
fn mentions(expr: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    expr.match_indices(name).any(|(i, _)| {
        !expr[..i].ends_with(word) && !expr[i + name.len()..].starts_with(word) && !expr[..i].ends_with('.')
    })
}

fn tensorless(layer: Layer, generics: Vec<usize>, keys: &[(&'static str, Value<'static>)], base: &str) -> R<Field> {
    let options = options(layer, &generics, keys)?;
    Ok(Field { name: ident(base), layer, generics, keys: render(keys), options, tensors: vec![] })
}

/// `layer`'s options: its defaults with `keys` set, each checked by the spec.
fn options(layer: Layer, generics: &[usize], keys: &[(&'static str, Value<'static>)]) -> R<Options> {
    let mut options = layer.defaults();
    for (k, v) in keys {
        options.set(layer, k, *v).map_err(|e| format!("{}: {e}", layer.display(generics, "")))?;
    }
    Ok(options)
}

/// Renders option values as `#[layer(..)]` writes them.
fn render(keys: &[(&'static str, Value<'static>)]) -> Vec<(&'static str, String)> {
    keys.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::Int(i) => i.to_string(),
                Value::Float(f) => float_lit(*f),
                Value::Bool(b) => b.to_string(),
                Value::Str(s) => format!("{s:?}"),
            };
            (*k, s)
        })
        .collect()
}

/// The spec's output rule on a per-sample shape with named dims.
fn spec_output(
    layer: Layer,
    generics: &[usize],
    options: &Options,
    x: &Tensor,
    symbols: &[(String, String)],
) -> R<Vec<Dim>> {
    let code = |d: &Dim| -> R<usize> {
        if let Some(v) = d.value() {
            return Ok(v as usize);
        }
        let name = d.name().ok_or_else(|| format!("dim `{d}` is a product of named dims"))?;
        let k = symbols.iter().position(|(_, b)| b == name).ok_or_else(|| format!("dim `{d}` is not an input dim"))?;
        Ok(symbol(k))
    };
    let dims: Vec<usize> = x.per_sample().iter().map(code).collect::<R<_>>()?;
    if dims.len() > 8 {
        return Err("has more than 8 dims per sample".into());
    }
    let out = blaze_spec::output(layer, generics, options, StaticShape::new(&dims)).map_err(|e| {
        e.message(&layer.display(generics, ""), &StaticShape::new(&dims), &show(x.per_sample()), None, "")
    })?;
    Ok(out
        .as_slice()
        .iter()
        .map(|&d| match symbol_index(d) {
            Some(k) => Dim::named(&symbols[k].1),
            None => Dim::known(d as i64),
        })
        .collect())
}

/// Per-sample dims must be numbers or single names.
fn check_dims(dims: &[Dim]) -> R<()> {
    for d in dims {
        dim_code(d)?;
    }
    Ok(())
}

/// A dim as the generated code writes it.
pub fn dim_code(d: &Dim) -> R<String> {
    if let Some(v) = d.value() {
        return Ok(v.to_string());
    }
    if d.mentions(BATCH) {
        return Err(format!("a per-sample dim would be `{d}`, which involves the batch size"));
    }
    d.name().cloned().ok_or_else(|| format!("a per-sample dim would be `{d}`, a product of named dims"))
}

/// A full-rank axis (negative counts from the end) as an index, by the
/// shared rule (`blaze_spec::rules::dim`).
fn norm_axis(a: i64, rank: usize) -> R<usize> {
    rules::dim::<Dim>(a, rank).map_err(|_| format!("has axis {a} for a rank-{rank} tensor"))
}

/// A full-rank axis as a per-sample one, counted from the end.
fn sample_axis(axis: usize, rank: usize) -> i64 {
    axis as i64 - rank as i64
}

/// NumPy broadcasting of two full shapes: the shorter gets leading ones
/// (ONNX promotes ranks, Blaze's tensors do not), then the shared rule
/// (`blaze_spec::rules::broadcast`).
fn broadcast(a: &[Dim], b: &[Dim]) -> R<Vec<Dim>> {
    let r = a.len().max(b.len());
    let padded =
        |s: &[Dim]| -> Vec<Dim> { std::iter::repeat_n(Dim::known(1), r - s.len()).chain(s.iter().cloned()).collect() };
    let (pa, pb) = (padded(a), padded(b));
    match rules::broadcast(&pa, &pb) {
        Ok(dims) => Ok(dims.cloned().collect()),
        Err(_) => Err(format!("broadcasts {} with {}", show(a), show(b))),
    }
}

fn transpose2(w: &Data) -> R<Data> {
    let v = w.f32s().ok_or("has a weight that is not floats")?;
    let [r, c] = [w.dims[0], w.dims[1]];
    let mut out = vec![0.0; v.len()];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = v[i * c + j];
        }
    }
    Ok(Data { dims: vec![c, r], values: Values::F32(out) })
}

/// A float as the shortest literal that reads back to the same f32.
pub fn float_lit(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "f64::INFINITY".into() } else { "f64::NEG_INFINITY".into() };
    }
    let s = format!("{:?}", x as f32);
    if s.contains('.') || s.contains('e') { s } else { format!("{s}.0") }
}

/// A Rust identifier from a name in the file: lowercase, `_` for anything
/// else, never a keyword or starting with a digit.
pub fn ident(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    if out.is_empty() {
        out = "v".into();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out = format!("v{out}");
    }
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl",
        "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static", "struct",
        "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract",
        "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
        "gen", "cache", "grads", "ctx",
    ];
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// A Blaze name for a symbolic dim: upper case, distinct from the others.
fn symbol_name(onnx: &str, taken: &[(String, String)]) -> String {
    let mut s = ident(onnx).to_ascii_uppercase();
    while taken.iter().any(|(_, b)| *b == s) || s == "BATCH" {
        s.push('_');
    }
    s
}
