//! Quantized models on disk and in summaries. A quantized model saves as
//! safetensors: each int8 weight under the float weight's name (dtype
//! `I8`, the float weight's shape) with its per-channel scales beside it
//! (`<name>_scale`, `F16 [out]`, or `F32` past f16's range), a weight
//! equal to one stored before it stored once (metadata `tied`); a
//! calibrated input's range as
//! `<layer>.input_scale` (`F32 [1]`) and `<layer>.input_zero_point`
//! (`U8 [1]`); float parameters and buffers as the float model names
//! them. The metadata says `"format": "blaze-int8"`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use super::weight::{InputQuant, QWeight};
use super::{Phase, QuantModule};
use blaze_record::safetensors::{self, Entry};
use blaze_record::{RecordError, from_entry, to_bytes, write_atomic};
use blaze_runtime::module::{Module, map_storages, visit_storages};
use blaze_runtime::{Backend, DType, Tensor, TensorData};

/// What a tensor of a quantized model is, for the size accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Int8 weight values (a float model holds them as f32).
    Int8,
    /// Scales and zero points (a float model has none).
    Params,
    /// Float parameters and buffers, as in the float model.
    Float,
}

/// The tensors of a quantized model, collected by
/// [`QuantModule::save_state`].
#[derive(Debug, Default)]
pub struct StateWriter {
    entries: Vec<Written>,
}

/// One tensor for the file: name, safetensors dtype, shape, bytes, kind.
type Written = (String, &'static str, Vec<usize>, Vec<u8>, Kind);

impl StateWriter {
    /// An int8 weight and its scales (`<name>_scale`).
    pub fn int8(&mut self, name: &str, w: &QWeight) {
        let bytes = w.values().iter().map(|&v| v as u8).collect();
        self.entries.push((name.to_owned(), "I8", w.shape().to_vec(), bytes, Kind::Int8));
        // Scales are f16 values (`QWeight::quantize` rounds them up to
        // one) unless a weight passed f16's range.
        let halves: Option<Vec<u8>> = w
            .scales()
            .iter()
            .map(|&s| Some(half::f16::from_f32(s)).filter(|h| h.to_f32() == s).map(|h| h.to_le_bytes()))
            .collect::<Option<Vec<_>>>()
            .map(|h| h.concat());
        let (dtype, scales) = match halves {
            Some(h) => ("F16", h),
            None => ("F32", w.scales().iter().flat_map(|s| s.to_le_bytes()).collect()),
        };
        self.entries.push((format!("{name}_scale"), dtype, vec![w.rows()], scales, Kind::Params));
    }

    /// A float tensor, copied to the host.
    pub fn float<B: Backend, const D: usize>(&mut self, name: &str, t: &Tensor<B, D>) {
        self.host(name, &t.to_data());
    }

    fn host(&mut self, name: &str, data: &TensorData) {
        let (dtype, bytes) = to_bytes(&data.values);
        self.entries.push((name.to_owned(), dtype, data.shape.clone(), bytes, Kind::Float));
    }

    /// A calibrated input range of the layer at `prefix` (nothing for a
    /// dynamic one).
    pub fn input(&mut self, prefix: &str, input: InputQuant) {
        if let InputQuant::Static { scale, zero_point } = input {
            let at = |n: &str| blaze_runtime::module::join(prefix, n).to_string();
            self.entries.push((at("input_scale"), "F32", vec![1], scale.to_le_bytes().to_vec(), Kind::Params));
            self.entries.push((at("input_zero_point"), "U8", vec![1], vec![zero_point], Kind::Params));
        }
    }

    /// Bytes under the top-level name `field` (`""`: all): the quantized
    /// model's, and the float model's it stands for.
    fn sizes(&self, field: &str) -> (usize, usize) {
        let mut quantized = 0;
        let mut float = 0;
        for (name, _, _, bytes, kind) in &self.entries {
            if !field.is_empty() && name.split('.').next() != Some(field) {
                continue;
            }
            quantized += bytes.len();
            float += match kind {
                Kind::Int8 => 4 * bytes.len(),
                Kind::Params => 0,
                Kind::Float => bytes.len(),
            };
        }
        (quantized, float)
    }
}

/// Where a quantized model's tensors come from while it loads: the file's
/// tensors by name, checked against what the model expects; the first
/// problem is kept (and the load then fails, naming it).
#[allow(missing_debug_implementations)]
pub struct StateReader<'a, B: Backend> {
    path: &'a Path,
    tensors: BTreeMap<String, Entry<'a>>,
    /// Int8 weights stored once for several names: a name to the one
    /// stored (the file's `tied` metadata).
    tied: BTreeMap<String, String>,
    device: B::Device,
    used: BTreeSet<String>,
    error: Option<RecordError>,
}

impl<B: Backend> StateReader<'_, B> {
    fn fail(&mut self, e: RecordError) {
        self.error.get_or_insert(e);
    }

    /// The name the file stores `name` under: itself, or the weight it
    /// is tied to (and that weight's scales for its scales).
    fn stored(&self, name: &str) -> String {
        if self.tensors.contains_key(name) {
            return name.to_owned();
        }
        if let Some(to) = self.tied.get(name) {
            return to.clone();
        }
        match name.strip_suffix("_scale").and_then(|w| self.tied.get(w)) {
            Some(to) => format!("{to}_scale"),
            None => name.to_owned(),
        }
    }

    fn entry(&mut self, name: &str, dtype: &str, shape: &[usize]) -> Option<&[u8]> {
        let path = self.path.to_owned();
        let name = &self.stored(name);
        let Some(e) = self.tensors.get(name) else {
            self.fail(RecordError::Missing { path, name: name.to_owned(), expected: shape.to_vec() });
            return None;
        };
        if e.dtype != dtype {
            let found = format!("{} (expected {dtype})", e.dtype);
            self.fail(RecordError::DType { path, name: name.to_owned(), found });
            return None;
        }
        if e.shape != shape {
            let (found, expected) = (e.shape.clone(), shape.to_vec());
            self.fail(RecordError::Shape { path, name: name.to_owned(), found, expected });
            return None;
        }
        self.used.insert(name.to_owned());
        Some(self.tensors[name].data)
    }

    /// The int8 weight `name` (and `<name>_scale`, f16 or f32) of
    /// `like`'s shape.
    pub fn int8(&mut self, name: &str, like: &QWeight) -> Option<QWeight> {
        let values: Vec<i8> = self.entry(name, "I8", like.shape())?.iter().map(|&b| b as i8).collect();
        let scale_name = format!("{name}_scale");
        let wide = self.tensors.get(&self.stored(&scale_name)).is_some_and(|e| e.dtype == "F32");
        let scales = if wide {
            let bytes = self.entry(&scale_name, "F32", &[like.rows()])?;
            bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        } else {
            let bytes = self.entry(&scale_name, "F16", &[like.rows()])?;
            bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
        };
        match QWeight::from_parts(values, scales, like.shape().to_vec()) {
            Ok(w) => Some(w),
            Err(e) => {
                let message = format!("tensor `{name}`: {e}");
                self.fail(RecordError::Format { path: self.path.to_owned(), message });
                None
            }
        }
    }

    /// The float tensor `name`, of `like`'s shape, converted to its dtype;
    /// `like` itself when the file lacks it.
    pub fn tensor<const D: usize>(&mut self, name: &str, like: Tensor<B, D>) -> Tensor<B, D> {
        Tensor::from_storage(self.storage(name, like.into_storage()))
    }

    fn storage(&mut self, name: &str, like: B::Storage) -> B::Storage {
        let (shape, dtype) = (B::shape(&like).to_vec(), B::dtype(&like));
        let path = self.path.to_owned();
        let Some(e) = self.tensors.get(name) else {
            self.fail(RecordError::Missing { path, name: name.to_owned(), expected: shape });
            return like;
        };
        if e.shape != shape {
            let found = e.shape.clone();
            self.fail(RecordError::Shape { path, name: name.to_owned(), found, expected: shape });
            return like;
        }
        match from_entry(&path, name, e) {
            Ok(data) => {
                self.used.insert(name.to_owned());
                B::cast(&B::from_data(data, &self.device), dtype)
            }
            Err(e) => {
                self.fail(e);
                like
            }
        }
    }

    /// The calibrated input range of the layer at `prefix`, or dynamic
    /// when the file holds none.
    pub fn input(&mut self, prefix: &str) -> InputQuant {
        let at = |n: &str| blaze_runtime::module::join(prefix, n).to_string();
        let (scale_name, zero_name) = (at("input_scale"), at("input_zero_point"));
        if !self.tensors.contains_key(&scale_name) && !self.tensors.contains_key(&zero_name) {
            return InputQuant::Dynamic;
        }
        let scale = self.entry(&scale_name, "F32", &[1]).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let zero_point = self.entry(&zero_name, "U8", &[1]).map(|b| b[0]);
        match (scale, zero_point) {
            (Some(scale), Some(zero_point)) if scale.is_finite() && scale > 0.0 => {
                InputQuant::Static { scale, zero_point }
            }
            (Some(scale), Some(_)) => {
                let message = format!("tensor `{scale_name}`: a scale of {scale}: scales are positive and finite");
                self.fail(RecordError::Format { path: self.path.to_owned(), message });
                InputQuant::Dynamic
            }
            _ => InputQuant::Dynamic,
        }
    }
}

/// `prefix.name`, or the one that is not empty.
fn under(prefix: &str, name: &str) -> String {
    match (prefix.is_empty(), name.is_empty()) {
        (_, true) => prefix.to_owned(),
        (true, false) => name.to_owned(),
        (false, false) => format!("{prefix}.{name}"),
    }
}

/// A float module's parameters and buffers, under `prefix`.
pub(super) fn save_float<B: Backend, M: Module<B>>(m: &M, prefix: &str, out: &mut StateWriter) {
    visit_storages::<B, M>(m, true, &mut |name, t| out.host(&under(prefix, name), &B::to_data(t)));
}

/// A float module's parameters and buffers read back.
pub(super) fn load_float<B: Backend, M: Module<B>>(m: &mut M, prefix: &str, src: &mut StateReader<'_, B>) {
    map_storages::<B, M>(m, &mut |name, t| src.storage(&under(prefix, name), t));
}

/// Saves a quantized model to `path` (see the module's comment for the
/// layout), atomically. An int8 weight equal to one stored before it
/// (a head tied to the token embeddings, as GPT-2's) is stored once and
/// named in the metadata's `tied` (`lm_head.weight=wte.weight`).
pub fn save<B: Backend, M: QuantModule<B>>(model: &M, path: &Path) -> Result<(), RecordError> {
    let mut out = StateWriter::default();
    model.save_state("", &mut out);
    let scales = |name: &str| out.entries.iter().find(|e| e.0 == format!("{name}_scale")).map(|e| &e.3);
    let mut tied: Vec<(String, String)> = Vec::new();
    for (i, (name, _, shape, bytes, kind)) in out.entries.iter().enumerate() {
        if *kind != Kind::Int8 {
            continue;
        }
        let first = out.entries[..i].iter().find(|e| {
            e.4 == Kind::Int8
                && !tied.iter().any(|t| t.0 == e.0)
                && &e.2 == shape
                && &e.3 == bytes
                && scales(&e.0) == scales(name)
        });
        if let Some(first) = first {
            tied.push((name.clone(), first.0.clone()));
        }
    }
    let dropped = |n: &str| tied.iter().any(|(t, _)| n == t || n.strip_suffix("_scale") == Some(t.as_str()));
    let views: Vec<(&str, &str, &[usize], &[u8])> = out
        .entries
        .iter()
        .filter(|e| !dropped(&e.0))
        .map(|(n, d, s, b, _)| (n.as_str(), *d, s.as_slice(), b.as_slice()))
        .collect();
    let tied_text = tied.iter().map(|(n, to)| format!("{n}={to}")).collect::<Vec<_>>().join(",");
    let mut meta = vec![("format", "blaze-int8")];
    if !tied.is_empty() {
        meta.push(("tied", tied_text.as_str()));
    }
    write_atomic(path, &safetensors::serialize(&views, &meta))
}

/// Loads a quantized model saved by [`save`] into `model` (one of the
/// same type, from `quantize_dynamic`), on `device`. The file must hold
/// exactly its tensors; on error `model` is unchanged and the error names
/// the file and the tensor.
pub fn load<B: Backend, M: QuantModule<B> + Clone>(
    model: &mut M,
    path: &Path,
    device: &B::Device,
) -> Result<(), RecordError> {
    let bytes = std::fs::read(path).map_err(|source| RecordError::Io { path: path.to_owned(), source })?;
    let (tensors, meta) =
        safetensors::parse(&bytes).map_err(|message| RecordError::Format { path: path.to_owned(), message })?;
    let mut tied = BTreeMap::new();
    for pair in meta.get("tied").map_or("", String::as_str).split(',').filter(|p| !p.is_empty()) {
        let Some((name, to)) = pair.split_once('=') else {
            let message = format!("metadata `tied` holds `{pair}`, not `name=stored`");
            return Err(RecordError::Format { path: path.to_owned(), message });
        };
        tied.insert(name.to_owned(), to.to_owned());
    }
    let mut src = StateReader { path, tensors, tied, device: device.clone(), used: BTreeSet::new(), error: None };
    let mut fresh = model.clone();
    fresh.load_state("", &mut src);
    if let Some(e) = src.error {
        return Err(e);
    }
    if let Some(name) = src.tensors.keys().find(|n| !src.used.contains(*n)) {
        return Err(RecordError::Unexpected { path: path.to_owned(), name: name.clone() });
    }
    // A calibrated model's observers start idle.
    fresh.calibrate(Phase::Finish);
    *model = fresh;
    Ok(())
}

/// The table a quantized model's `summary()` returns: per field its
/// layer, its bytes and the float model's, then the totals.
pub fn summary<B: Backend, M: QuantModule<B>>(model: &M, name: &str, fields: &[(&str, &str)]) -> String {
    let mut out = StateWriter::default();
    model.save_state("", &mut out);
    let kb = |b: usize| format!("{:.1} KB", b as f64 / 1e3);
    let rows: Vec<[String; 4]> = fields
        .iter()
        .map(|&(field, kind)| {
            let (q, f) = out.sizes(field);
            let int8 = out.entries.iter().any(|e| e.4 == Kind::Int8 && e.0.split('.').next() == Some(field));
            [field.to_owned(), format!("{kind}{}", if int8 { " (int8)" } else { "" }), kb(q), kb(f)]
        })
        .collect();
    let mut s = format!("{name}: int8 weights per output channel, f32 activations between layers\n");
    s.extend(crate::columns(["field", "layer", "int8 model", "f32 model"], &rows, 2));
    let (q, f) = out.sizes("");
    let _ = writeln!(s, "total: {} ({:.1}% of the f32 model's {})", kb(q), 100.0 * q as f64 / f.max(1) as f64, kb(f));
    s
}

/// The calibrated inputs of a quantized model: each layer's name (`conv1`,
/// `blocks.0.conv`) and its fixed scale and zero point. Layers that
/// quantize per row at run time are not listed.
pub fn calibrated<B: Backend, M: QuantModule<B>>(model: &M) -> Vec<(String, InputQuant)> {
    let mut out = StateWriter::default();
    model.save_state("", &mut out);
    let mut found = Vec::new();
    for (name, _, _, bytes, _) in &out.entries {
        let Some(layer) = name.strip_suffix(".input_scale") else { continue };
        let zero = out.entries.iter().find(|e| e.0 == format!("{layer}.input_zero_point")).map_or(0, |e| e.3[0]);
        let scale = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        found.push((layer.to_owned(), InputQuant::Static { scale, zero_point: zero }));
    }
    found
}

/// Floats of any dtype as f32 values on the host.
pub(super) fn host_f32<B: Backend, const D: usize>(t: &Tensor<B, D>) -> Vec<f32> {
    if t.dtype() == DType::F32 { t.to_vec() } else { t.to_dtype(DType::F32).to_vec() }
}
