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

use std::collections::{HashMap, HashSet};

use blaze_spec::{Layer, MAX_SIZE, Options, StaticShape, Value};

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
    Act { field: Field, body: Option<String>, input: String, output: String, shape: Vec<Dim> },
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

/// A tensor computed from the input. Its binding holds data of the full
/// shape `under`, the batch first, as a forward body computes per sample.
/// The graph may see it differently (`view`): its dims in another order,
/// some merged, the batch among them (sequence-first attention, heads
/// folded into the batch); each of the graph's dims is a group of `under`'s
/// axes, multiplied, an empty group a dim of 1. Reshapes and transposes
/// only change the view; an op that computes reads the data once the
/// batch is first again, permuted by one `permute` (see `Lower::canonical`).
#[derive(Clone, Debug)]
struct Tensor {
    name: String,
    under: Vec<Dim>,
    /// `None`: the graph sees `under` itself.
    view: Option<Vec<Vec<usize>>>,
    dtype: DType,
}

impl Tensor {
    fn plain(name: String, under: Vec<Dim>, dtype: DType) -> Tensor {
        Tensor { name, under, view: None, dtype }
    }

    /// The graph's dims as groups of `under`'s axes.
    fn groups(&self) -> Vec<Vec<usize>> {
        self.view.clone().unwrap_or_else(|| (0..self.under.len()).map(|k| vec![k]).collect())
    }

    /// The shape the graph sees.
    fn shape(&self) -> Vec<Dim> {
        self.groups().iter().map(|g| Dim::product(g.iter().map(|&k| &self.under[k]))).collect()
    }

    fn per_sample(&self) -> &[Dim] {
        &self.under[1..]
    }

    /// The same data seen through `groups`; no view if that is `under`.
    fn seen(mut self, groups: Vec<Vec<usize>>) -> Tensor {
        let identity = groups.len() == self.under.len() && groups.iter().enumerate().all(|(k, g)| *g == [k]);
        self.view = (!identity).then_some(groups);
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Fill {
    Num(f64),
    Bool(bool),
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
    /// `arange(0, n)`.
    Positions(Dim),
    /// Computed from the data in a way a forward body cannot write; the
    /// words say how.
    Opaque(String),
}

/// `[rows, cols]`: `on` where `j - i <= diagonal` (lower) or
/// `j - i >= diagonal` (upper), `off` elsewhere; `i` the row, `j` the column.
#[derive(Clone, Debug, PartialEq)]
struct Tri {
    /// Unit dims in front (a registered `[1, 1, n, n]` mask).
    lead: usize,
    rows: Dim,
    cols: Dim,
    lower: bool,
    diagonal: i64,
    on: Fill,
    off: Fill,
}

/// A set of positions `(i, j)` of a triangle, by `j - i`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Region {
    Everywhere,
    Nowhere,
    AtLeast(i64),
    AtMost(i64),
}

impl Tri {
    fn map(&self, f: impl Fn(&Fill) -> Fill) -> Tri {
        Tri { on: f(&self.on), off: f(&self.off), ..self.clone() }
    }

    /// Where the value satisfies `pred`.
    fn region(&self, pred: impl Fn(&Fill) -> bool) -> Region {
        match (pred(&self.on), pred(&self.off), self.lower) {
            (true, true, _) => Region::Everywhere,
            (false, false, _) => Region::Nowhere,
            (true, false, true) => Region::AtMost(self.diagonal),
            (true, false, false) => Region::AtLeast(self.diagonal),
            (false, true, true) => Region::AtLeast(self.diagonal + 1),
            (false, true, false) => Region::AtMost(self.diagonal - 1),
        }
    }

    /// The size of a causal mask whose masked positions (each query's
    /// later keys, `j > i`) are exactly those where `pred` holds.
    fn causal(&self, pred: impl Fn(&Fill) -> bool) -> Option<&Dim> {
        (self.rows == self.cols && self.region(pred) == Region::AtLeast(1)).then_some(&self.rows)
    }

    /// The table a constant holds, if it is `tril(ones(n, n))` (of floats
    /// or bools) behind unit dims, as a model registers its causal mask.
    fn of_constant(d: &Data) -> Option<Tri> {
        let r = d.dims.len();
        if r < 2 || d.dims[..r - 2].iter().any(|&x| x != 1) || d.dims[r - 1] != d.dims[r - 2] {
            return None;
        }
        let n = d.dims[r - 1];
        let v = d.as_f64();
        let tril = (0..n).all(|i| (0..n).all(|j| v[i * n + j] == f64::from(u8::from(j <= i))));
        let (on, off) = match d.values {
            Values::Bool(_) => (Fill::Bool(true), Fill::Bool(false)),
            _ => (Fill::Num(1.0), Fill::Num(0.0)),
        };
        let n = Dim::known(n as i64);
        tril.then(|| Tri { lead: r - 2, rows: n.clone(), cols: n, lower: true, diagonal: 0, on, off })
    }
}

/// A number, from a one-element constant or one value expanded.
fn number(v: &Val) -> Option<f64> {
    match v {
        Val::Const(d) => d.scalar(),
        Val::Filled(Fill::Num(x), _) => Some(*x),
        _ => None,
    }
}

const BATCH: &str = "batch";

/// The functions a forward body calls by name.
const RESERVED: &[&str] = &[
    "self", "relu", "gelu", "tanh", "sigmoid", "exp", "log", "sqrt", "matmul", "softmax", "log_softmax", "cat",
    "positions", "causal_mask",
];

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
    for (i, n) in g.nodes.iter().enumerate() {
        if low.skip.contains(&i) {
            continue;
        }
        low.node(n).map_err(|reason| Problem::Node { node: n.name.clone(), op: n.op.clone(), reason })?;
    }
    low.finish()
}

/// The operators the importer converts.
pub const SUPPORTED: &[&str] = &[
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Concat",
    "Constant",
    "Conv",
    "ConvTranspose",
    "Div",
    "Dropout",
    "Equal",
    "Erf",
    "Expand",
    "Flatten",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "Identity",
    "LayerNormalization",
    "LeakyRelu",
    "LogSoftmax",
    "MatMul",
    "MaxPool",
    "Mul",
    "Range",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Resize",
    "Shape",
    "Sigmoid",
    "Slice",
    "Softmax",
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
    fields: Vec<Field>,
    steps: Vec<Step>,
    /// Field and binding names in use.
    names: HashSet<String>,
    /// Symbolic dims besides the batch: ONNX name, Blaze name.
    symbols: Vec<(String, String)>,
    input: (String, Vec<Dim>, DType),
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
            fields: Vec::new(),
            steps: Vec::new(),
            // Names a forward body calls, which a binding must not shadow.
            names: RESERVED.iter().map(|s| (*s).to_owned()).collect(),
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
            return Err(Problem::Malformed(format!("output `{out}` of shape {} does not have the batch first", show(&t.shape()))));
        }
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
        if RESERVED.contains(&base.as_str()) {
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

    fn input_val(&self, n: &Node, i: usize) -> R<&Val> {
        let name = n.input(i).ok_or_else(|| format!("input {i} is missing"))?;
        self.val(name)
    }

    fn tensor(&self, n: &Node, i: usize) -> R<Tensor> {
        match self.input_val(n, i)? {
            Val::Tensor(t) => Ok(t.clone()),
            Val::Opaque(why) => Err(format!("reads `{}`, which a forward body cannot compute: {why}", n.inputs[i])),
            _ => Err(format!("input {i} (`{}`) is a constant where a tensor computed from the input is expected", n.inputs[i])),
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

    /// Input `i` as data the graph sees as it is, batch first: a viewed
    /// tensor is permuted and reshaped into its view.
    fn plain(&mut self, n: &Node, i: usize) -> R<Tensor> {
        let t = self.tensor(n, i)?;
        let c = self.canonical(&n.inputs[i], &t)?;
        if c.view.is_some() {
            return Err(format!(
                "reads `{}` of shape {}, where the batch is not the first dim on its own; Blaze computes per sample",
                n.inputs[i],
                show(&t.shape())
            ));
        }
        Ok(c)
    }

    /// `t`'s data rearranged so that each of the view's groups but the
    /// batch's is one axis, in the view's order, after the batch: one
    /// `permute` and one `reshape` at most. The view that remains only
    /// places the batch (alone, or merged with the dims it was merged with).
    fn canonical(&mut self, onnx: &str, t: &Tensor) -> R<Tensor> {
        let Some(groups) = &t.view else { return Ok(t.clone()) };
        let batch = groups.iter().position(|g| g.contains(&0)).ok_or("a view without the batch dim")?;
        // The axes in the view's order, the batch first.
        let mut order = vec![0];
        order.extend(groups.iter().flatten().copied().filter(|&k| k != 0));
        let mut expr = t.name.clone();
        let moved: Vec<usize> = (1..order.len()).filter(|&k| order[k] != k).collect();
        let rank = order.len();
        expr = match moved.as_slice() {
            [] => expr,
            [a, b] if order[*a] == *b && order[*b] == *a => {
                format!("{expr}.transpose({}, {})", sample_axis(*a, rank), sample_axis(*b, rank))
            }
            _ => {
                let axes: Vec<String> = order[1..].iter().map(|&k| (k - 1).to_string()).collect();
                format!("{expr}.permute([{}])", axes.join(", "))
            }
        };
        let permuted: Vec<Dim> = order.iter().map(|&k| t.under[k].clone()).collect();
        // One axis per group; the batch's group keeps its axes apart.
        let mut under = vec![Dim::named(BATCH)];
        let mut view = Vec::new();
        for (g, members) in groups.iter().enumerate() {
            if g == batch {
                let mut v = Vec::new();
                for &k in members {
                    if k == 0 {
                        v.push(0);
                    } else {
                        v.push(under.len());
                        under.push(t.under[k].clone());
                    }
                }
                view.push(v);
            } else {
                view.push(vec![under.len()]);
                under.push(Dim::product(members.iter().map(|&k| &t.under[k])));
            }
        }
        if under != permuted {
            check_dims(&under[1..])?;
            let dims: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
            expr = format!("{expr}.reshape([{}])", dims.join(", "));
        }
        let out = Tensor::plain(String::new(), under, t.dtype).seen(view);
        if expr == t.name {
            return Ok(Tensor { name: t.name.clone(), ..out });
        }
        let name = self.binding(&format!("{onnx}_data"));
        check_dims(&out.under[1..])?;
        self.steps.push(Step::Expr { outputs: vec![name.clone()], expr, shapes: vec![out.under[1..].to_vec()] });
        let out = Tensor { name, ..out };
        self.vals.insert(onnx.to_owned(), Val::Tensor(out.clone()));
        Ok(out)
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
    fn emit(&mut self, n: &Node, k: usize, expr: String, under: Vec<Dim>, view: Option<Vec<Vec<usize>>>, dtype: DType) -> R<()> {
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
                    (Val::Tensor(_) | Val::Opaque(_), to) => {
                        Val::Opaque(format!("`{}` casts a tensor computed from the data to ONNX type {}", n.name, to.unwrap_or(0)))
                    }
                    (v, _) => v,
                };
                self.set(n, 0, v);
            }
            "Shape" => {
                let s = match self.input_val(n, 0)? {
                    Val::Tensor(t) => t.shape(),
                    Val::Const(d) => d.dims.iter().map(|&x| Dim::known(x as i64)).collect(),
                    Val::Filled(_, s) => s.clone(),
                    Val::Triangle(t) => {
                        let mut s = vec![Dim::known(1); t.lead];
                        s.extend([t.rows.clone(), t.cols.clone()]);
                        s
                    }
                    other => return Err(format!("reads the shape of {}, which the importer cannot follow", kind(other))),
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
                        self.set(n, 0, Val::Positions(l.clone()));
                    }
                    _ => return Err("is not `arange(0, n)`, the positions of a sequence".into()),
                }
            }
            "Expand" => {
                let shape = self.ints(n, 1)?;
                match self.input_val(n, 0)? {
                    Val::Const(d) if d.len() == 1 => {
                        let fill = match &d.values {
                            Values::Bool(b) => Fill::Bool(b[0]),
                            _ => Fill::Num(d.as_f64()[0]),
                        };
                        self.set(n, 0, Val::Filled(fill, shape));
                    }
                    _ => return Err("expands something other than a constant scalar".into()),
                }
            }
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
            "Add" | "Sub" | "Mul" | "Div" => self.arith(n)?,
            "MatMul" => self.matmul(n)?,
            "Gemm" => self.gemm(n)?,
            "Conv" | "ConvTranspose" => self.conv(n)?,
            "BatchNormalization" => self.batch_norm(n)?,
            "LayerNormalization" => self.layer_norm(n)?,
            "Relu" | "Sigmoid" | "Tanh" | "LeakyRelu" | "Gelu" | "Dropout" | "Softmax" | "LogSoftmax" | "Flatten"
            | "Erf" | "Sqrt" => self.unary(n)?,
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

    fn squeeze(&mut self, n: &Node) -> R<()> {
        let axes = self.axes(n, 1)?;
        let v = self.input_val(n, 0)?.clone();
        let out = match (n.op.as_str(), v) {
            ("Squeeze", Val::Shape(s)) if s.len() == 1 && axes.as_deref().is_none_or(|a| a == [0] || a == [-1]) => {
                Val::Scalar(s[0].clone())
            }
            ("Unsqueeze", Val::Scalar(d)) if axes.as_deref().is_some_and(|a| a == [0] || a == [-1]) => Val::Shape(vec![d]),
            ("Unsqueeze", Val::Const(d)) if d.dims.is_empty() && axes.as_deref().is_some_and(|a| a == [0]) => {
                Val::Const(Data { dims: vec![1], values: d.values })
            }
            (op, Val::Tensor(t)) => {
                // A reshape by another name.
                let shape = t.shape();
                let rank = shape.len();
                let target: Vec<Dim> = if op == "Squeeze" {
                    let axes: Vec<usize> = match &axes {
                        Some(a) => a.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
                        None => (0..rank).filter(|&k| shape[k] == Dim::known(1)).collect(),
                    };
                    if axes.iter().any(|&k| shape[k] != Dim::known(1)) {
                        return Err(format!("squeezes axes {axes:?} of {}, not all of size 1", show(&shape)));
                    }
                    shape.iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d.clone()).collect()
                } else {
                    let axes = axes.ok_or("has no axes")?;
                    let out = rank + axes.len();
                    let mut axes: Vec<usize> = axes.iter().map(|&x| norm_axis(x, out)).collect::<R<_>>()?;
                    axes.sort_unstable();
                    let mut dims = shape.into_iter();
                    (0..out).map(|k| if axes.contains(&k) { Dim::known(1) } else { dims.next().expect("rank") }).collect()
                };
                let v = self.regroup(n, &t, &target)?;
                Val::Tensor(v)
            }
            ("Unsqueeze", Val::Triangle(mut tri)) if axes.as_deref().is_some_and(|a| a.iter().all(|&x| x >= 0 && (x as usize) < a.len())) => {
                // `[T, T]` to `[1, 1, T, T]`: unit dims in front.
                tri.lead += axes.as_deref().map_or(0, <[i64]>::len);
                Val::Triangle(tri)
            }
            _ => return Err("is applied to a value the importer cannot follow".into()),
        };
        self.set(n, 0, out);
        Ok(())
    }

    fn concat(&mut self, n: &Node) -> R<()> {
        let vals: Vec<Val> = (0..n.inputs.len()).map(|k| self.input_val(n, k).cloned()).collect::<R<_>>()?;
        if vals.iter().all(|v| matches!(v, Val::Tensor(_))) {
            let ts: Vec<Tensor> = (0..vals.len()).map(|k| self.plain(n, k)).collect::<R<_>>()?;
            let rank = ts[0].under.len();
            let axis = norm_axis(n.int("axis").ok_or("has no axis")?, rank)?;
            if axis == 0 {
                return Err("concatenates along the batch dim".into());
            }
            let mut under = ts[0].under.clone();
            for t in &ts[1..] {
                if t.under.len() != rank {
                    return Err("concatenates tensors of different ranks".into());
                }
                under[axis] = under[axis].add(&t.under[axis]).ok_or("concatenates dims that do not add up to one named dim")?;
            }
            let parts: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
            let expr = format!("cat([{}], {})", parts.join(", "), sample_axis(axis, rank));
            return self.emit(n, 0, expr, under, None, ts[0].dtype);
        }
        let mut out = Vec::new();
        for k in 0..vals.len() {
            out.extend(self.ints(n, k)?);
        }
        self.set(n, 0, Val::Shape(out));
        Ok(())
    }

    fn gather(&mut self, n: &Node) -> R<()> {
        let axis = n.int("axis").unwrap_or(0);
        let indices = self.input_val(n, 1)?.clone();
        match (self.input_val(n, 0)?.clone(), indices) {
            (Val::Tensor(t), Val::Const(ix)) if ix.dims.is_empty() => {
                // One index along a dim: `qkv[0]`. In the data, a narrow
                // along that axis and a reshape without it.
                let shape = t.shape();
                let rank = shape.len();
                let axis = norm_axis(axis, rank)?;
                let mut groups = t.groups();
                let [u] = groups[axis][..] else {
                    return Err(format!("picks one index of dim {axis} of {}, which is several dims merged", show(&shape)));
                };
                if u == 0 {
                    return Err("picks one sample of the batch".into());
                }
                let size = t.under[u].value().ok_or("picks one index of a dim that is named, not known")?;
                let k = ix.as_i64().ok_or("gathers with float indices")?[0];
                let k = if k < 0 { k + size } else { k };
                if !(0..size).contains(&k) {
                    return Err(format!("picks index {k} of a dim of {size}"));
                }
                let mut under = t.under.clone();
                under.remove(u);
                check_dims(&under[1..])?;
                let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
                let expr = format!("{}.narrow({}, {k}, 1).reshape([{}])", t.name, sample_axis(u, t.under.len()), code.join(", "));
                groups.remove(axis);
                for g in &mut groups {
                    for a in g.iter_mut() {
                        if *a > u {
                            *a -= 1;
                        }
                    }
                }
                let view = Tensor::plain(String::new(), under.clone(), t.dtype).seen(groups).view;
                self.emit(n, 0, expr, under, view, t.dtype)?;
            }
            (Val::Shape(s), Val::Const(ix)) => {
                let r = s.len() as i64;
                let pick = |k: i64| s.get(if k < 0 { k + r } else { k } as usize).cloned();
                let ix = ix.as_i64().ok_or("gathers with float indices")?;
                let picked: Vec<Dim> = ix.iter().map(|&k| pick(k).ok_or_else(|| "gathers past the shape".to_string())).collect::<R<_>>()?;
                let d = self.konst(n, 1)?;
                self.set(n, 0, if d.dims.is_empty() { Val::Scalar(picked[0].clone()) } else { Val::Shape(picked) });
            }
            (Val::Const(table), ids) if axis == 0 && table.dims.len() == 2 => {
                let (input, call) = match ids {
                    Val::Tensor(t) if t.dtype == DType::I64 && t.view.is_none() => (t.clone(), None),
                    Val::Positions(len) => (
                        Tensor::plain(String::new(), vec![Dim::named(BATCH), len.clone()], DType::I64),
                        Some(format!("positions({})", dim_code(&len)?)),
                    ),
                    _ => return Err("looks up rows of a table by something other than token ids or positions".into()),
                };
                let [v, d] = [table.dims[0], table.dims[1]];
                let base = self.field_base(n, &[n.input(0).unwrap_or("")]);
                let f = self.field(&base, Layer::Embedding, vec![v, d], vec![], vec![table])?;
                let out = self.layer_out(f, &input)?;
                match call {
                    None => self.layer_step(n, f, &input, out),
                    Some(call) => {
                        // `self.pos(positions(T))`: per-sample [T, D], the same for each sample.
                        let expr = format!("self.{}({call})", self.fields[f].name);
                        let mut under = vec![Dim::named(BATCH)];
                        under.extend(out);
                        self.emit(n, 0, expr, under, None, DType::F32)?;
                    }
                }
            }
            _ => return Err("gathers something other than rows of a weight table or dims of a shape".into()),
        }
        Ok(())
    }

    fn slice(&mut self, n: &Node) -> R<()> {
        let starts = self.known_ints(n, 1)?;
        let input = self.input_val(n, 0)?.clone();
        let table = match &input {
            Val::Triangle(t) => Some(t.clone()),
            Val::Const(d) => Tri::of_constant(d),
            _ => None,
        };
        if let Some(mut tri) = table {
            let rank = tri.lead + 2;
            // A causal mask cut to the sequence: `bias[:, :, :T, :T]`.
            let ends = self.ints(n, 2)?;
            let axes = match n.input(3) {
                Some(_) => self.known_ints(n, 3)?,
                None => (0..starts.len() as i64).collect(),
            };
            for ((&s, e), &a) in starts.iter().zip(&ends).zip(&axes) {
                let axis = norm_axis(a, rank)?;
                let full = e.value().is_some_and(|v| v >= i64::from(i32::MAX));
                if s != 0 || (axis + 2 < rank && !full) || e.value().is_some_and(|v| v < 0) {
                    return Err(format!("cuts a mask other than from its top-left corner (axis {a}, {s}..{e})"));
                }
                if !full {
                    if axis + 2 == rank { tri.rows = e.clone() } else if axis + 1 == rank { tri.cols = e.clone() }
                }
            }
            self.set(n, 0, Val::Triangle(tri));
            return Ok(());
        }
        let ends = self.known_ints(n, 2)?;
        let axes = match n.input(3) {
            Some(_) => self.known_ints(n, 3)?,
            None => (0..starts.len() as i64).collect(),
        };
        let steps = match n.input(4) {
            Some(_) => self.known_ints(n, 4)?,
            None => vec![1; starts.len()],
        };
        if steps.iter().any(|&s| s != 1) {
            return Err("slices with a step other than 1".into());
        }
        match input {
            Val::Shape(s) => {
                let r = s.len() as i64;
                let clamp = |x: i64| (if x < 0 { x + r } else { x }).clamp(0, r) as usize;
                let (a, b) = (clamp(starts[0]), clamp(ends[0]));
                self.set(n, 0, Val::Shape(s[a..b.max(a)].to_vec()));
            }
            Val::Tensor(_) => {
                let t = self.plain(n, 0)?;
                let rank = t.under.len();
                let mut expr = t.name.clone();
                let mut under = t.under.clone();
                for ((&s, &e), &a) in starts.iter().zip(&ends).zip(&axes) {
                    let axis = norm_axis(a, rank)?;
                    if axis == 0 {
                        return Err("slices the batch dim".into());
                    }
                    let size = under[axis].value().ok_or_else(|| format!("slices dim {axis}, which is named, not known"))?;
                    let clamp = |x: i64| (if x < 0 { x + size } else { x }).clamp(0, size);
                    let (a0, b0) = (clamp(s), clamp(e));
                    let len = (b0 - a0).max(0);
                    expr = format!("{expr}.narrow({}, {a0}, {len})", sample_axis(axis, rank));
                    under[axis] = Dim::known(len);
                }
                self.emit(n, 0, expr, under, None, t.dtype)?;
            }
            _ => return Err("slices a value the importer cannot follow".into()),
        }
        Ok(())
    }

    /// Input `i` of a `Linear`, which acts on the last dim: it may stay a
    /// view when that dim is the data's last axis.
    fn linear_input(&mut self, n: &Node, i: usize) -> R<Tensor> {
        let t = self.tensor(n, i)?;
        let c = self.canonical(&n.inputs[i], &t)?;
        let last = c.under.len() - 1;
        match &c.view {
            None => Ok(c),
            Some(g) if last > 0 && g.last().is_some_and(|l| *l == [last]) => Ok(c),
            Some(_) => Err(format!("applies a weight to {}, whose last dim holds the batch", show(&t.shape()))),
        }
    }

    /// `x.masked_fill(causal_mask(T), v)` for the tensor input `ti`.
    fn mask(&mut self, n: &Node, ti: usize, tri: &Tri, v: f64) -> R<()> {
        let t = self.plain(n, ti)?;
        let r = t.under.len();
        if r < 3 || t.under[r - 1] != tri.cols || t.under[r - 2] != tri.rows {
            return Err(format!(
                "masks scores of shape {} with a causal mask of {} positions",
                show(&t.shape()),
                tri.rows
            ));
        }
        let expr = format!("{}.masked_fill(causal_mask({}), {})", t.name, dim_code(&tri.rows)?, float_lit(v));
        self.emit(n, 0, expr, t.under.clone(), None, t.dtype)
    }

    /// `Where(cond, a, b)`: between numbers, a new table; between a tensor
    /// and a number, by a causal mask, `masked_fill`.
    fn select(&mut self, n: &Node) -> R<()> {
        let Val::Triangle(cond) = self.input_val(n, 0)?.clone() else {
            return Err("selects by a condition computed from the data; only a causal mask is converted".into());
        };
        let (a, b) = (self.input_val(n, 1)?.clone(), self.input_val(n, 2)?.clone());
        let is_true = |f: &Fill| *f == Fill::Bool(true);
        let is_false = |f: &Fill| *f == Fill::Bool(false);
        match (number(&a), number(&b), &a, &b) {
            (Some(x), Some(y), _, _) => {
                let v = Val::Triangle(cond.map(|f| Fill::Num(if is_true(f) { x } else { y })));
                self.set(n, 0, v);
                Ok(())
            }
            // `scores.masked_fill(mask, v)`: v where the mask holds.
            (Some(x), None, _, Val::Tensor(_)) if cond.causal(is_true).is_some() => self.mask(n, 2, &cond, x),
            (None, Some(y), Val::Tensor(_), _) if cond.causal(is_false).is_some() => self.mask(n, 1, &cond, y),
            _ => Err(format!(
                "selects by {} between {} and {}; a causal mask over scores is converted",
                kind(&Val::Triangle(cond.clone())),
                kind(&a),
                kind(&b)
            )),
        }
    }

    fn arith(&mut self, n: &'g Node) -> R<()> {
        let op = n.op.as_str();
        let a = self.input_val(n, 0)?.clone();
        let b = self.input_val(n, 1)?.clone();
        let sym = match op {
            "Add" => "+",
            "Sub" => "-",
            "Mul" => "*",
            _ => "/",
        };
        match (&a, &b) {
            (Val::Tensor(_), Val::Const(c)) | (Val::Const(c), Val::Tensor(_)) if c.len() == 1 => {
                let first = matches!(a, Val::Tensor(_));
                let ti = if first { 0 } else { 1 };
                let t = self.tensor(n, ti)?;
                let x = c.scalar().expect("one value");
                let xname = n.inputs[ti].clone();
                let gelu = match op {
                    "Div" if first => (x - std::f64::consts::SQRT_2).abs() < 1e-5,
                    "Mul" => (x - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-5,
                    _ => false,
                };
                if gelu && self.gelu(n, &xname, &t)? {
                    return Ok(());
                }
                let lit = float_lit(x);
                let expr = if first { format!("{} {sym} {lit}", t.name) } else { format!("{lit} {sym} {}", t.name) };
                self.emit(n, 0, expr, t.under.clone(), t.view.clone(), t.dtype)
            }
            (Val::Tensor(_), Val::Tensor(_)) => {
                let (x, y) = (self.plain(n, 0)?, self.plain(n, 1)?);
                let under = broadcast(&x.under, &y.under)?;
                self.emit(n, 0, format!("{} {sym} {}", x.name, y.name), under, None, x.dtype)
            }
            (Val::Tensor(_), Val::Triangle(tri)) | (Val::Triangle(tri), Val::Tensor(_)) if op == "Add" => {
                // The causal mask an exporter adds to attention scores:
                // adding a huge negative and filling with it agree after the
                // softmax.
                let huge = |f: &Fill| matches!(f, Fill::Num(x) if *x <= -1e9);
                let zero = |f: &Fill| matches!(f, Fill::Num(x) if *x == 0.0);
                let fill = [&tri.on, &tri.off].into_iter().find(|f| huge(f)).cloned();
                match (tri.causal(huge), tri.region(zero), fill) {
                    (Some(_), Region::AtMost(0), Some(Fill::Num(v))) => {
                        let ti = if matches!(a, Val::Tensor(_)) { 0 } else { 1 };
                        self.mask(n, ti, tri, v)
                    }
                    _ => Err(format!("adds {} to scores; only a causal mask is converted", kind(&Val::Triangle(tri.clone())))),
                }
            }
            (Val::Scalar(x), Val::Scalar(y)) if op == "Mul" => {
                let v = Val::Scalar(x.mul(y));
                self.set(n, 0, v);
                Ok(())
            }
            (Val::Scalar(x), Val::Const(c)) | (Val::Const(c), Val::Scalar(x))
                if op == "Mul" && c.len() == 1 && c.as_i64().is_some() =>
            {
                let k = c.as_i64().expect("integers")[0];
                let v = Val::Scalar(x.mul(&Dim::known(k)));
                self.set(n, 0, v);
                Ok(())
            }
            (Val::Tensor(_), Val::Const(c)) | (Val::Const(c), Val::Tensor(_)) => Err(format!(
                "{} a constant tensor of shape {:?}; a forward body holds numbers and layers, not constant tensors",
                match op {
                    "Add" => "adds",
                    "Sub" => "subtracts",
                    "Mul" => "multiplies by",
                    _ => "divides by",
                },
                c.dims
            )),
            _ => Err(format!("combines {} with {}; the importer follows tensors, numbers and causal masks", kind(&a), kind(&b))),
        }
    }

    /// `x * 0.5 * (1 + erf(x / sqrt(2)))` from its division (or its
    /// product by `1 / sqrt(2)`): emits `gelu(x)` for the last product and
    /// skips the rest.
    fn gelu(&mut self, n: &'g Node, xname: &str, x: &Tensor) -> R<bool> {
        let Some((ei, erf)) = self.only_reader(&n.outputs[0]) else { return Ok(false) };
        if erf.op != "Erf" {
            return Ok(false);
        }
        let Some((ai, add)) = self.only_reader(&erf.outputs[0]) else { return Ok(false) };
        let one = add.inputs.iter().find(|s| **s != erf.outputs[0]).and_then(|s| match self.vals.get(s) {
            Some(Val::Const(c)) => c.scalar(),
            _ => None,
        });
        if add.op != "Add" || one != Some(1.0) {
            return Ok(false);
        }
        // Up to two products by `x` and 0.5, in either order.
        let mut cur = add.outputs[0].clone();
        let mut taken = vec![ei, ai];
        let (mut seen_x, mut seen_half) = (false, false);
        while !(seen_x && seen_half) {
            let Some((mi, mul)) = self.only_reader(&cur) else { return Ok(false) };
            if mul.op != "Mul" {
                return Ok(false);
            }
            let other = mul.inputs.iter().find(|s| **s != cur).cloned().unwrap_or_else(|| cur.clone());
            if other == xname && !seen_x {
                seen_x = true;
            } else if matches!(self.vals.get(&other), Some(Val::Const(c)) if c.scalar() == Some(0.5)) && !seen_half {
                seen_half = true;
            } else if let Some(&pi) = self.producer.get(&other) {
                // `(x * 0.5) * (1 + erf)`: the other factor is itself `x * 0.5`.
                let p = &self.g.nodes[pi];
                let half_x = p.op == "Mul"
                    && p.inputs.iter().any(|s| s == xname)
                    && p.inputs.iter().any(|s| matches!(self.vals.get(s), Some(Val::Const(c)) if c.scalar() == Some(0.5)))
                    && self.only_reader(&p.outputs[0]).is_some_and(|(r, _)| r == mi);
                if !half_x || seen_x || seen_half {
                    return Ok(false);
                }
                taken.push(pi);
                seen_x = true;
                seen_half = true;
            } else {
                return Ok(false);
            }
            taken.push(mi);
            cur = mul.outputs[0].clone();
        }
        let last = &self.g.nodes[*taken.last().expect("a product")];
        self.skip.extend(taken);
        let shape = x.under.clone();
        let name = self.binding(&last.outputs[0]);
        self.steps.push(Step::Act {
            field: tensorless(Layer::Gelu, vec![], vec![], &last.outputs[0]),
            body: Some("gelu({x})".into()),
            input: x.name.clone(),
            output: name.clone(),
            shape: shape[1..].to_vec(),
        });
        self.vals.insert(last.outputs[0].clone(), Val::Tensor(Tensor { name, under: shape, view: x.view.clone(), dtype: x.dtype }));
        Ok(true)
    }

    fn matmul(&mut self, n: &'g Node) -> R<()> {
        match self.input_val(n, 1)?.clone() {
            Val::Const(w) if w.dims.len() == 2 => {
                // x @ W (+ b): a Linear with weight W^T.
                let x = self.linear_input(n, 0)?;
                let [i, o] = [w.dims[0], w.dims[1]];
                let weight = transpose2(&w)?;
                let mut tensors = vec![weight];
                let mut names = vec![n.input(1).unwrap_or("")];
                let mut out_node = n;
                if let Some((ai, add)) = self.only_reader(&n.outputs[0])
                    && add.op == "Add"
                {
                    let other = add.inputs.iter().find(|s| **s != n.outputs[0]);
                    if let Some(other) = other
                        && let Some(Val::Const(b)) = self.vals.get(other)
                        && b.dims == [o]
                    {
                        tensors.push(b.clone());
                        names.insert(0, other);
                        self.skip.insert(ai);
                        out_node = add;
                    }
                }
                let bias = tensors.len() == 2;
                let base = self.field_base(n, &names);
                let keys = if bias { vec![] } else { vec![("bias", Value::Bool(false))] };
                let f = self.field(&base, Layer::Linear, vec![i, o], keys, tensors)?;
                let out = self.layer_out(f, &x)?;
                self.layer_step(out_node, f, &x, out);
                Ok(())
            }
            Val::Tensor(_) => {
                let (a, b) = (self.plain(n, 0)?, self.plain(n, 1)?);
                let (ra, rb) = (a.under.len(), b.under.len());
                if ra != rb || ra < 3 {
                    return Err(format!("multiplies {} by {}; per-sample matrices of the same rank are converted", show(&a.shape()), show(&b.shape())));
                }
                if a.under[ra - 1] != b.under[rb - 2] {
                    return Err(format!("multiplies {} by {}: inner dims differ", show(&a.shape()), show(&b.shape())));
                }
                let mut under = broadcast(&a.under[..ra - 2], &b.under[..rb - 2])?;
                under.push(a.under[ra - 2].clone());
                under.push(b.under[rb - 1].clone());
                self.emit(n, 0, format!("{}.matmul({})", a.name, b.name), under, None, a.dtype)
            }
            _ => Err("multiplies by a value the importer cannot follow".into()),
        }
    }

    fn gemm(&mut self, n: &Node) -> R<()> {
        let x = self.linear_input(n, 0)?;
        if n.int("transA").unwrap_or(0) != 0 {
            return Err("transposes its input (transA = 1)".into());
        }
        let (alpha, beta) = (n.float("alpha").unwrap_or(1.0), n.float("beta").unwrap_or(1.0));
        if alpha != 1.0 || (beta != 1.0 && n.input(2).is_some()) {
            return Err(format!("scales by alpha = {alpha}, beta = {beta}; a Linear computes x W^T + b"));
        }
        let w = self.konst(n, 1)?;
        if w.dims.len() != 2 {
            return Err(format!("has a weight of shape {:?}", w.dims));
        }
        let weight = if n.int("transB").unwrap_or(0) == 1 { w } else { transpose2(&w)? };
        let [o, i] = [weight.dims[0], weight.dims[1]];
        let mut tensors = vec![weight];
        let mut keys = vec![];
        let mut names = vec![n.input(1).unwrap_or("")];
        match n.input(2) {
            Some(b) => {
                let bias = self.konst(n, 2)?;
                if bias.len() != o {
                    return Err(format!("has a bias of shape {:?} for {o} outputs; a Linear's bias has one per output", bias.dims));
                }
                tensors.push(Data { dims: vec![o], values: bias.values });
                names.insert(0, b);
            }
            None => keys.push(("bias", Value::Bool(false))),
        }
        let base = self.field_base(n, &names);
        let f = self.field(&base, Layer::Linear, vec![i, o], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    fn conv(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        let w = self.konst(n, 1)?;
        let spatial = w.dims.len().saturating_sub(2);
        let groups = n.int("group").unwrap_or(1) as usize;
        let transposed = n.op == "ConvTranspose";
        let layer = match (spatial, transposed) {
            (1, false) => Layer::Conv1d,
            (2, false) => Layer::Conv2d,
            (2, true) => Layer::ConvTranspose2d,
            _ => return Err(format!("has a weight of shape {:?}; 1-D and 2-D convolutions (2-D transposed) are converted", w.dims)),
        };
        let k = w.dims[2];
        if w.dims[2..].iter().any(|&d| d != k) {
            return Err(format!("has a {:?} kernel; Blaze's convolutions are square", &w.dims[2..]));
        }
        let one = |name: &str, default: i64| -> R<i64> {
            match n.ints(name) {
                None => Ok(default),
                Some(v) if v.iter().all(|&x| x == v[0]) && !v.is_empty() => Ok(v[0]),
                Some(v) => Err(format!("has {name} {v:?}; Blaze takes one value for every side and dim")),
            }
        };
        if n.string("auto_pad").is_some_and(|a| a != "NOTSET" && a != "VALID") {
            return Err("pads automatically (auto_pad SAME); export with explicit pads".into());
        }
        let (stride, padding, dilation) = (one("strides", 1)?, one("pads", 0)?, one("dilations", 1)?);
        let (cin, cout) = if transposed { (w.dims[0], w.dims[1] * groups) } else { (w.dims[1] * groups, w.dims[0]) };
        let mut keys = vec![];
        if stride != 1 {
            keys.push(("stride", Value::Int(stride.into())));
        }
        if padding != 0 {
            keys.push(("padding", Value::Int(padding.into())));
        }
        if transposed {
            let op = one("output_padding", 0)?;
            if op != 0 {
                keys.push(("output_padding", Value::Int(op.into())));
            }
        }
        if dilation != 1 {
            keys.push(("dilation", Value::Int(dilation.into())));
        }
        if groups != 1 {
            keys.push(("groups", Value::Int(groups as i128)));
        }
        let mut tensors = vec![w];
        let mut names = vec![n.input(1).unwrap_or("")];
        match n.input(2) {
            Some(b) => {
                tensors.push(self.konst(n, 2)?);
                names.push(b);
            }
            None => keys.push(("bias", Value::Bool(false))),
        }
        let base = self.field_base(n, &names);
        let f = self.field(&base, layer, vec![cin, cout, k], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    fn batch_norm(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        if n.int("training_mode").unwrap_or(0) != 0 {
            return Err("is exported in training mode; export the model in eval mode".into());
        }
        let layer = match x.under.len() {
            4 => Layer::BatchNorm2d,
            2 | 3 => Layer::BatchNorm1d,
            r => return Err(format!("normalises a rank-{r} tensor; BatchNorm1d and BatchNorm2d take rank 2 to 4")),
        };
        let tensors: Vec<Data> = (1..5).map(|k| self.konst(n, k)).collect::<R<_>>()?;
        let c = tensors[0].len();
        let eps = f64::from(n.float("epsilon").unwrap_or(1e-5));
        let momentum = 1.0 - f64::from(n.float("momentum").unwrap_or(0.9));
        let mut keys = vec![];
        if (eps - 1e-5).abs() > 1e-12 {
            keys.push(("eps", Value::Float(eps)));
        }
        if (momentum - 0.1).abs() > 1e-6 {
            keys.push(("momentum", Value::Float(momentum)));
        }
        let names: Vec<&str> = (1..5).filter_map(|k| n.input(k)).collect();
        let base = self.field_base(n, &names);
        let f = self.field(&base, layer, vec![c], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    fn layer_norm(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        let rank = x.under.len();
        if norm_axis(n.int("axis").unwrap_or(-1), rank)? != rank - 1 {
            return Err("normalises over more than the last dim; LayerNorm<N> normalises the last".into());
        }
        let scale = self.konst(n, 1)?;
        let c = scale.len();
        let bias = match n.input(2) {
            Some(_) => self.konst(n, 2)?,
            None => Data { dims: vec![c], values: Values::F32(vec![0.0; c]) },
        };
        let eps = f64::from(n.float("epsilon").unwrap_or(1e-5));
        let keys = if (eps - 1e-5).abs() > 1e-12 { vec![("eps", Value::Float(eps))] } else { vec![] };
        let names: Vec<&str> = (1..3).filter_map(|k| n.input(k)).collect();
        let base = self.field_base(n, &names);
        let f = self.field(&base, Layer::LayerNorm, vec![c], keys, vec![scale, bias])?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    fn unary(&mut self, n: &Node) -> R<()> {
        let t = self.tensor(n, 0)?;
        let rank = t.under.len();
        let base = n.op.to_lowercase();
        match n.op.as_str() {
            "Relu" => self.act(n, Layer::Relu, vec![], vec![], Some("relu({x})"), &t, &base),
            "Sigmoid" => self.act(n, Layer::Sigmoid, vec![], vec![], Some("sigmoid({x})"), &t, &base),
            "Tanh" => self.act(n, Layer::Tanh, vec![], vec![], Some("tanh({x})"), &t, &base),
            "Sqrt" => self.emit(n, 0, format!("sqrt({})", t.name), t.under.clone(), t.view.clone(), t.dtype),
            "Gelu" => match n.string("approximate").unwrap_or("none") {
                "none" => self.act(n, Layer::Gelu, vec![], vec![], Some("gelu({x})"), &t, &base),
                a => Err(format!("uses the `{a}` approximation; Blaze's GELU is the exact (erf) one")),
            },
            "LeakyRelu" => {
                let slope = f64::from(n.float("alpha").unwrap_or(0.01));
                let keys = if (slope - 0.01).abs() > 1e-9 { vec![("negative_slope", Value::Float(slope))] } else { vec![] };
                self.act(n, Layer::LeakyRelu, vec![], keys, None, &t, "leaky_relu")
            }
            "Dropout" => {
                let p = match n.input(1) {
                    Some(_) => self.konst(n, 1)?.scalar().ok_or("has a ratio of more than one value")?,
                    None => f64::from(n.float("ratio").unwrap_or(0.5)),
                };
                let keys = if (p - 0.5).abs() > 1e-9 { vec![("p", Value::Float(p))] } else { vec![] };
                self.act(n, Layer::Dropout, vec![], keys, None, &t, "dropout")
            }
            "Softmax" | "LogSoftmax" => {
                let t = self.plain(n, 0)?;
                let axis = norm_axis(n.int("axis").unwrap_or(-1), rank)?;
                if axis == 0 {
                    return Err("normalises over the batch dim".into());
                }
                if self.g.opset < 13 && axis != rank - 1 {
                    return Err("flattens before normalising (opset < 13) over more than the last dim".into());
                }
                let d = sample_axis(axis, rank);
                let keys = if d == -1 { vec![] } else { vec![("dim", Value::Int(d.into()))] };
                let (layer, method) =
                    if n.op == "Softmax" { (Layer::Softmax, "softmax") } else { (Layer::LogSoftmax, "log_softmax") };
                let body = format!("{{x}}.{method}({d})");
                self.act(n, layer, vec![], keys, Some(&body), &t, method)
            }
            "Flatten" => {
                let t = self.plain(n, 0)?;
                if norm_axis(n.int("axis").unwrap_or(1), rank)? != 1 {
                    return Err("flattens from a dim other than 1; Flatten keeps the batch dim and flattens the rest".into());
                }
                self.act(n, Layer::Flatten, vec![], vec![], Some("{x}.flatten()"), &t, "flatten")
            }
            _ => Err(format!("`{}` on its own; erf is converted as part of GELU", n.op)),
        }
    }

    fn pool(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let k = n.ints("kernel_shape").ok_or("has no kernel_shape")?;
        if k.len() != 2 || k[0] != k[1] {
            return Err(format!("pools over a {k:?} window; Blaze pools 2-D square windows"));
        }
        let one = |name: &str, default: i64| -> R<i64> {
            match n.ints(name) {
                None => Ok(default),
                Some(v) if !v.is_empty() && v.iter().all(|&x| x == v[0]) => Ok(v[0]),
                Some(v) => Err(format!("has {name} {v:?}; Blaze takes one value for every side and dim")),
            }
        };
        let (stride, pad) = (one("strides", 1)?, one("pads", 0)?);
        if one("dilations", 1)? != 1 || n.int("ceil_mode").unwrap_or(0) != 0 {
            return Err("dilates its window or rounds its output size up; neither is converted".into());
        }
        if n.string("auto_pad").is_some_and(|a| a != "NOTSET" && a != "VALID") {
            return Err("pads automatically (auto_pad SAME); export with explicit pads".into());
        }
        let avg = n.op == "AveragePool";
        if avg && pad > 0 && n.int("count_include_pad").unwrap_or(0) == 0 {
            return Err("averages without counting the padding; Blaze's AvgPool2d counts it (PyTorch's default)".into());
        }
        let mut keys = vec![];
        if stride != k[0] {
            keys.push(("stride", Value::Int(stride.into())));
        }
        if pad != 0 {
            keys.push(("padding", Value::Int(pad.into())));
        }
        let (layer, base) = if avg { (Layer::AvgPool2d, "avg_pool") } else { (Layer::MaxPool2d, "max_pool") };
        self.act(n, layer, vec![k[0] as usize], keys, None, &t, base)
    }

    /// `Resize` of an image's height and width by one factor: `Upsample`.
    fn resize(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let shape = t.shape();
        if shape.len() != 4 {
            return Err(format!("resizes a tensor of shape {}; Upsample takes images", show(&shape)));
        }
        let factors: Vec<f64> = match (n.input(2), n.input(3)) {
            (Some(_), _) => self.konst(n, 2)?.as_f64(),
            (None, Some(_)) => {
                let sizes = self.known_ints(n, 3)?;
                let mut f = Vec::new();
                for (d, &to) in shape.iter().zip(&sizes) {
                    let from = d.value().ok_or("resizes to fixed sizes from a named dim")?;
                    f.push(to as f64 / from as f64);
                }
                f
            }
            _ => return Err("gives neither scales nor sizes".into()),
        };
        let [1.0, 1.0, fh, fw] = factors[..] else {
            return Err(format!("scales by {factors:?}; Upsample scales height and width only"));
        };
        if fh != fw {
            return Err(format!("scales height by {fh} and width by {fw}; Upsample takes one factor"));
        }
        if n.int("antialias").unwrap_or(0) != 0 {
            return Err("antialiases; Upsample does not".into());
        }
        let transform = n.string("coordinate_transformation_mode").unwrap_or("half_pixel");
        let (mode, align) = match (n.string("mode").unwrap_or("nearest"), transform) {
            ("nearest", "asymmetric") if n.string("nearest_mode").unwrap_or("round_prefer_floor") == "floor" => {
                ("nearest", false)
            }
            ("linear", "half_pixel" | "pytorch_half_pixel") => ("bilinear", false),
            ("linear", "align_corners") => ("bilinear", true),
            (mode, transform) => {
                return Err(format!(
                    "resizes in mode `{mode}` with coordinates `{transform}`; Upsample's nearest (asymmetric, floor) and bilinear (half_pixel or align_corners) are converted"
                ));
            }
        };
        let mut keys = vec![];
        if fh != 2.0 {
            keys.push(("scale_factor", Value::Float(fh)));
        }
        if mode != "nearest" {
            keys.push(("mode", Value::Str(mode)));
        }
        if align {
            keys.push(("align_corners", Value::Bool(true)));
        }
        self.act(n, Layer::Upsample, vec![], keys, None, &t, "upsample")
    }

    fn reduce(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let rank = t.under.len();
        let keep = n.int("keepdims").unwrap_or(1) == 1;
        let mut axes: Vec<usize> = match self.axes(n, 1)? {
            Some(a) => a.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
            None => (0..rank).collect(),
        };
        axes.sort_unstable();
        let mean = n.op == "ReduceMean";
        if mean && rank == 4 && axes == [2, 3] {
            return if keep {
                self.act(n, Layer::AdaptiveAvgPool2d, vec![1, 1], vec![], None, &t, "avg_pool")
            } else {
                self.act(n, Layer::GlobalAvgPool, vec![], vec![], None, &t, "global_avg_pool")
            };
        }
        if axes.contains(&0) {
            return Err(format!("reduces over the batch dim (axes {axes:?})"));
        }
        // One `mean_dim`/`sum_dim` per axis (each keeps its dim), then a
        // reshape without them unless ONNX keeps them.
        let m = if mean { "mean_dim" } else { "sum_dim" };
        let mut expr = t.name.clone();
        let mut under = t.under.clone();
        for &a in &axes {
            expr = format!("{expr}.{m}({})", sample_axis(a, rank));
            under[a] = Dim::known(1);
        }
        if !keep {
            under = under.into_iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d).collect();
            check_dims(&under[1..])?;
            let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
            expr = format!("{expr}.reshape([{}])", code.join(", "));
        }
        self.emit(n, 0, expr, under, None, t.dtype)
    }

    fn reshape(&mut self, n: &Node) -> R<()> {
        // A size computed from shapes, as a list of one (or back).
        match self.input_val(n, 0)?.clone() {
            Val::Scalar(d) => {
                self.set(n, 0, Val::Shape(vec![d]));
                return Ok(());
            }
            Val::Shape(s) if s.len() == 1 && self.ints(n, 1)?.is_empty() => {
                self.set(n, 0, Val::Scalar(s[0].clone()));
                return Ok(());
            }
            _ => {}
        }
        let t = self.tensor(n, 0)?;
        let target = self.ints(n, 1)?;
        let allowzero = n.int("allowzero").unwrap_or(0) == 1;
        let shape = t.shape();
        let numel = Dim::product(&shape);
        // 0 copies the input's dim (unless allowzero), -1 takes the rest.
        let mut dims: Vec<Option<Dim>> = target
            .iter()
            .enumerate()
            .map(|(k, d)| match d.value() {
                Some(0) if !allowzero => shape.get(k).cloned().map(Some).ok_or("copies a dim past the input's rank".to_string()),
                Some(-1) => Ok(None),
                Some(v) if v < 0 => Err(format!("has a negative size {v}")),
                _ => Ok(Some(d.clone())),
            })
            .collect::<R<_>>()?;
        if dims.iter().filter(|d| d.is_none()).count() > 1 {
            return Err("has more than one -1".into());
        }
        let known = Dim::product(dims.iter().flatten());
        if let Some(slot) = dims.iter_mut().find(|d| d.is_none()) {
            *slot = Some(numel.div(&known).ok_or_else(|| {
                format!("reshapes {} to {}: the sizes do not divide", show(&shape), show(&target))
            })?);
        }
        let mut dims: Vec<Dim> = dims.into_iter().map(|d| d.expect("filled")).collect();
        // An export at a fixed batch size writes that size where the batch goes.
        if t.view.is_none()
            && dims[0].value().is_some()
            && numel.div(&Dim::product(&dims[1..])).is_some_and(|b| b.name() == Some(BATCH))
        {
            dims[0] = Dim::named(BATCH);
        }
        if t.view.is_none() && dims[0].name() == Some(BATCH) {
            let rest = dims[1..].to_vec();
            if rest.len() == 1 && t.under.len() > 2 {
                return self.act(n, Layer::Flatten, vec![], vec![], Some("{x}.flatten()"), &t, "flatten");
            }
            check_dims(&rest)?;
            let code: Vec<String> = rest.iter().map(dim_code).collect::<R<_>>()?;
            let mut under = vec![Dim::named(BATCH)];
            under.extend(rest);
            return self.emit(n, 0, format!("{}.reshape([{}])", t.name, code.join(", ")), under, None, t.dtype);
        }
        let v = self.regroup(n, &t, &dims)?;
        self.alias(n, 0, v);
        Ok(())
    }

    /// `t` seen with shape `target`: the view's axes, in its order, grouped
    /// into the new dims. An axis that a new dim cuts is split in the data
    /// (a per-sample reshape: the batch is never split), and axes of size 1
    /// left over are dropped.
    fn regroup(&mut self, n: &Node, t: &Tensor, target: &[Dim]) -> R<Tensor> {
        let cannot = |why: String| format!("reshapes {} to {}: {why}", show(&t.shape()), show(target));
        // The data's axes as (id, size); a split replaces one by two new ids.
        let mut axes: Vec<(usize, Dim)> = t.under.iter().cloned().enumerate().collect();
        let mut next = axes.len();
        let size = |axes: &[(usize, Dim)], id: usize| axes.iter().find(|(i, _)| *i == id).map(|(_, d)| d.clone());
        let mut atoms: std::collections::VecDeque<usize> = t.groups().into_iter().flatten().collect();
        let one = Dim::known(1);
        let mut groups = Vec::new();
        for d in target {
            let mut group = Vec::new();
            let mut rest = d.clone();
            while rest != one {
                let a = *atoms.front().ok_or_else(|| cannot("the sizes do not match".into()))?;
                let s = size(&axes, a).expect("a live axis");
                if let Some(r) = rest.div(&s) {
                    group.push(a);
                    atoms.pop_front();
                    rest = r;
                    continue;
                }
                let q = s.div(&rest).ok_or_else(|| cannot(format!("dim {s} does not split into {rest}")))?;
                if a == 0 {
                    return Err(cannot("it splits the batch dim".into()));
                }
                let pos = axes.iter().position(|(i, _)| *i == a).expect("a live axis");
                axes.splice(pos..=pos, [(next, rest.clone()), (next + 1, q)]);
                group.push(next);
                atoms[0] = next + 1;
                next += 2;
                rest = one.clone();
            }
            groups.push(group);
        }
        for a in atoms {
            if size(&axes, a) != Some(one.clone()) {
                return Err(cannot("the sizes do not match".into()));
            }
            axes.retain(|(i, _)| *i != a);
        }
        let under: Vec<Dim> = axes.iter().map(|(_, d)| d.clone()).collect();
        let at = |id: usize| axes.iter().position(|(i, _)| *i == id).expect("a live axis");
        let groups: Vec<Vec<usize>> = groups.iter().map(|g| g.iter().map(|&id| at(id)).collect()).collect();
        if under == t.under {
            return Ok(Tensor { view: None, ..t.clone() }.seen(groups));
        }
        // Split or dropped axes: the data is reshaped per sample first.
        check_dims(&under[1..])?;
        let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
        let name = self.binding(&n.outputs[0]);
        self.steps.push(Step::Expr {
            outputs: vec![name.clone()],
            expr: format!("{}.reshape([{}])", t.name, code.join(", ")),
            shapes: vec![under[1..].to_vec()],
        });
        Ok(Tensor::plain(name, under, t.dtype).seen(groups))
    }

    fn transpose(&mut self, n: &Node) -> R<()> {
        let t = self.tensor(n, 0)?;
        let rank = t.shape().len();
        let perm: Vec<usize> = match n.ints("perm") {
            Some(p) => p.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
            None => (0..rank).rev().collect(),
        };
        if t.view.is_some() || perm.first() != Some(&0) {
            // Only the view changes; the data moves when an op computes.
            let groups = t.groups();
            let seen: Vec<Vec<usize>> = perm.iter().map(|&p| groups[p].clone()).collect();
            self.alias(n, 0, t.seen(seen));
            return Ok(());
        }
        let under: Vec<Dim> = perm.iter().map(|&k| t.under[k].clone()).collect();
        let moved: Vec<usize> = (1..perm.len()).filter(|&k| perm[k] != k).collect();
        let expr = match moved.as_slice() {
            [] => {
                self.alias(n, 0, t);
                return Ok(());
            }
            [a, b] if perm[*a] == *b && perm[*b] == *a => {
                format!("{}.transpose({}, {})", t.name, sample_axis(*a, rank), sample_axis(*b, rank))
            }
            _ => {
                let axes: Vec<String> = perm[1..].iter().map(|&k| (k - 1).to_string()).collect();
                format!("{}.permute([{}])", t.name, axes.join(", "))
            }
        };
        self.emit(n, 0, expr, under, None, t.dtype)
    }

    fn split(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let rank = t.under.len();
        let axis = norm_axis(n.int("axis").unwrap_or(0), rank)?;
        if axis == 0 {
            return Err("splits the batch dim".into());
        }
        let size = t.under[axis].value().ok_or("splits a dim that is named, not known")?;
        let parts = n.outputs.len() as i64;
        let sizes: Vec<i64> = if let Some(s) = n.ints("split") {
            s.to_vec()
        } else if n.input(1).is_some() {
            self.known_ints(n, 1)?
        } else {
            let chunk = (size + parts - 1) / parts;
            (0..parts).map(|k| chunk.min(size - k * chunk)).collect()
        };
        if sizes.iter().sum::<i64>() != size || sizes.len() != n.outputs.len() {
            return Err(format!("splits {size} into {sizes:?}"));
        }
        let d = sample_axis(axis, rank);
        let names: Vec<String> = n.outputs.iter().map(|o| self.binding(o)).collect();
        let shapes: Vec<Vec<Dim>> = sizes
            .iter()
            .map(|&s| {
                let mut u = t.under.clone();
                u[axis] = Dim::known(s);
                u
            })
            .collect();
        if sizes.iter().all(|&s| s == sizes[0]) {
            self.steps.push(Step::Expr {
                outputs: names.clone(),
                expr: format!("{}.split({}, {d})", t.name, sizes[0]),
                shapes: shapes.iter().map(|u| u[1..].to_vec()).collect(),
            });
        } else {
            let mut start = 0;
            for (k, name) in names.iter().enumerate() {
                self.steps.push(Step::Expr {
                    outputs: vec![name.clone()],
                    expr: format!("{}.narrow({d}, {start}, {})", t.name, sizes[k]),
                    shapes: vec![shapes[k][1..].to_vec()],
                });
                start += sizes[k];
            }
        }
        for (k, (name, under)) in names.into_iter().zip(shapes).enumerate() {
            self.set(n, k, Val::Tensor(Tensor::plain(name, under, t.dtype)));
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
        let mut options: Options = layer.defaults();
        for (k, v) in &keys {
            options.set(layer, k, *v).map_err(|e| format!("{}: {e}", layer.display(&generics, "")))?;
        }
        let params = layer.params(&generics, &options);
        if params.len() != tensors.len() {
            return Err(format!("gives {} tensors for `{}`, which holds {}", tensors.len(), layer.display(&generics, ""), params.len()));
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
        self.fields.push(Field { name, layer, generics, keys: render(&keys), tensors: named });
        Ok(self.fields.len() - 1)
    }

    /// A layer's per-sample output shape, by the spec's rule.
    fn layer_out(&self, f: usize, x: &Tensor) -> R<Vec<Dim>> {
        let field = &self.fields[f];
        let mut options = field.layer.defaults();
        for (k, v) in &field.keys {
            options.set(field.layer, k, parse_value(v)).map_err(|e| e.0)?;
        }
        spec_output(field.layer, &field.generics, &options, x, &self.symbols)
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
        let mut options = layer.defaults();
        for (k, v) in &keys {
            options.set(layer, k, *v).map_err(|e| e.0)?;
        }
        let shape = if layer.is_elementwise() {
            x.per_sample().to_vec()
        } else {
            spec_output(layer, &generics, &options, x, &self.symbols)?
        };
        let field = tensorless(layer, generics, keys, base);
        let name = self.binding(&n.outputs[0]);
        self.steps.push(Step::Act {
            field,
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
        Val::Positions(n) => format!("the positions 0..{n}"),
        Val::Opaque(why) => format!("a value computed from the data ({why})"),
    }
}

/// A field for a layer without tensors.
fn tensorless(layer: Layer, generics: Vec<usize>, keys: Vec<(&'static str, Value<'static>)>, base: &str) -> Field {
    Field { name: ident(base), layer, generics, keys: render(&keys), tensors: vec![] }
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

fn parse_value(s: &str) -> Value<'_> {
    if let Ok(i) = s.parse::<i128>() {
        Value::Int(i)
    } else if let Ok(b) = s.parse::<bool>() {
        Value::Bool(b)
    } else if let Ok(f) = s.parse::<f64>() {
        Value::Float(f)
    } else {
        Value::Str(s.trim_matches('"'))
    }
}

/// The spec's output rule on a per-sample shape with named dims.
fn spec_output(layer: Layer, generics: &[usize], options: &Options, x: &Tensor, symbols: &[(String, String)]) -> R<Vec<Dim>> {
    let code = |d: &Dim| -> R<usize> {
        if let Some(v) = d.value() {
            return Ok(v as usize);
        }
        let name = d.name().ok_or_else(|| format!("dim `{d}` is a product of named dims"))?;
        let k = symbols.iter().position(|(_, b)| b == name).ok_or_else(|| format!("dim `{d}` is not an input dim"))?;
        Ok(MAX_SIZE + 1 + k)
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
        .map(|&d| match d.checked_sub(MAX_SIZE + 1) {
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
    d.name().map(str::to_owned).ok_or_else(|| format!("a per-sample dim would be `{d}`, a product of named dims"))
}

/// A full-rank axis (negative counts from the end) as an index.
fn norm_axis(a: i64, rank: usize) -> R<usize> {
    let r = rank as i64;
    let k = if a < 0 { a + r } else { a };
    if (0..r).contains(&k) { Ok(k as usize) } else { Err(format!("has axis {a} for a rank-{rank} tensor")) }
}

/// A full-rank axis as a per-sample one, counted from the end.
fn sample_axis(axis: usize, rank: usize) -> i64 {
    axis as i64 - rank as i64
}

/// NumPy broadcasting of two full shapes.
fn broadcast(a: &[Dim], b: &[Dim]) -> R<Vec<Dim>> {
    let r = a.len().max(b.len());
    let one = Dim::known(1);
    (0..r)
        .map(|k| {
            let x = if k + a.len() >= r { &a[k + a.len() - r] } else { &one };
            let y = if k + b.len() >= r { &b[k + b.len() - r] } else { &one };
            match (x, y) {
                _ if x == y => Ok(x.clone()),
                _ if *x == one => Ok(y.clone()),
                _ if *y == one => Ok(x.clone()),
                _ => Err(format!("broadcasts {} with {}", show(a), show(b))),
            }
        })
        .collect()
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
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
        "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super",
        "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become",
        "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
        "cache", "grads", "ctx",
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

impl Dim {
    /// `self + other` where both are numbers, or one is zero.
    fn add(&self, other: &Dim) -> Option<Dim> {
        match (self.value(), other.value()) {
            (Some(a), Some(b)) => Some(Dim::known(a + b)),
            (Some(0), None) => Some(other.clone()),
            (None, Some(0)) => Some(self.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri(lower: bool, diagonal: i64, on: bool) -> Tri {
        let t = Dim::named("T");
        Tri { lead: 0, rows: t.clone(), cols: t, lower, diagonal, on: Fill::Bool(on), off: Fill::Bool(!on) }
    }

    #[test]
    fn triangles_name_the_positions_a_causal_mask_hides() {
        let masked = |t: &Tri| t.causal(|f| *f == Fill::Bool(true)).is_some();
        // triu(ones, 1): true above the diagonal, the positions to hide.
        assert!(masked(&tri(false, 1, true)));
        // tril(ones) == 0: false on and below, true above.
        assert!(masked(&tri(true, 0, false)));
        // tril(ones) itself marks the positions to keep, triu(ones) hides the diagonal too.
        assert!(!masked(&tri(true, 0, true)));
        assert!(!masked(&tri(false, 0, true)));
        assert_eq!(tri(true, -1, true).region(|f| *f == Fill::Bool(false)), Region::AtLeast(0));
        let mut cut = tri(false, 1, true);
        cut.cols = Dim::known(8);
        assert!(!masked(&cut), "a mask that is not square is not causal_mask(T)");
    }

    #[test]
    fn a_registered_tril_buffer_is_read_as_a_triangle() {
        let n = 3;
        let ones: Vec<f32> = (0..n * n).map(|k| f32::from(u8::from(k % n <= k / n))).collect();
        let d = Data { dims: vec![1, 1, n, n], values: Values::F32(ones.clone()) };
        let t = Tri::of_constant(&d).expect("tril");
        assert_eq!((t.lead, t.lower, t.diagonal), (2, true, 0));
        let mut upper = ones;
        upper[1] = 1.0;
        assert!(Tri::of_constant(&Data { dims: vec![3, 3], values: Values::F32(upper) }).is_none());
    }
}
