//! What the lowering's operators share: value kinds for messages, the
//! options and output of a spec layer, dims and axes, and the pieces of
//! source it writes (dims, float literals, identifiers).

use super::*;

/// What a value is, in words.
pub(super) fn kind(v: &Val) -> String {
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
pub(super) fn mentions(expr: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    expr.match_indices(name).any(|(i, _)| {
        !expr[..i].ends_with(word) && !expr[i + name.len()..].starts_with(word) && !expr[..i].ends_with('.')
    })
}

pub(super) fn tensorless(
    layer: Layer,
    generics: Vec<usize>,
    keys: &[(&'static str, Value<'static>)],
    base: &str,
) -> R<Field> {
    let options = options(layer, &generics, keys)?;
    Ok(Field { name: ident(base), layer, generics, keys: render(keys), options, tensors: vec![] })
}

/// `layer`'s options: its defaults with `keys` set, each checked by the spec.
pub(super) fn options(layer: Layer, generics: &[usize], keys: &[(&'static str, Value<'static>)]) -> R<Options> {
    let mut options = layer.defaults();
    for (k, v) in keys {
        options.set(layer, k, *v).map_err(|e| format!("{}: {e}", layer.display(generics, "")))?;
    }
    Ok(options)
}

/// Renders option values as `#[layer(..)]` writes them.
pub(super) fn render(keys: &[(&'static str, Value<'static>)]) -> Vec<(&'static str, String)> {
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
pub(super) fn spec_output(
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
pub(super) fn check_dims(dims: &[Dim]) -> R<()> {
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
pub(super) fn norm_axis(a: i64, rank: usize) -> R<usize> {
    rules::dim::<Dim>(a, rank).map_err(|_| format!("has axis {a} for a rank-{rank} tensor"))
}

/// A full-rank axis as a per-sample one, counted from the end.
pub(super) fn sample_axis(axis: usize, rank: usize) -> i64 {
    axis as i64 - rank as i64
}

/// NumPy broadcasting of two full shapes: the shorter gets leading ones
/// (ONNX promotes ranks, Blaze's tensors do not), then the shared rule
/// (`blaze_spec::rules::broadcast`).
pub(super) fn broadcast(a: &[Dim], b: &[Dim]) -> R<Vec<Dim>> {
    let r = a.len().max(b.len());
    let padded =
        |s: &[Dim]| -> Vec<Dim> { std::iter::repeat_n(Dim::known(1), r - s.len()).chain(s.iter().cloned()).collect() };
    let (pa, pb) = (padded(a), padded(b));
    match rules::broadcast(&pa, &pb) {
        Ok(dims) => Ok(dims.cloned().collect()),
        Err(_) => Err(format!("broadcasts {} with {}", show(a), show(b))),
    }
}

pub(super) fn transpose2(w: &Data) -> R<Data> {
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
pub(super) fn symbol_name(onnx: &str, taken: &[(String, String)]) -> String {
    let mut s = ident(onnx).to_ascii_uppercase();
    while taken.iter().any(|(_, b)| *b == s) || s == "BATCH" {
        s.push('_');
    }
    s
}
