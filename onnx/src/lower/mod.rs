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

mod layers;
mod mask;
mod movement;
mod node;
mod ops;
mod shared;
mod view;

pub(crate) use shared::table_op_named;
use shared::*;
pub use shared::{dim_code, float_lit, ident};

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
