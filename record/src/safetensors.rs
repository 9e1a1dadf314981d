//! The safetensors file format, read and written here rather than through
//! the `safetensors` crate, whose serde, serde_json and tempfile would sit
//! on every Blaze build's critical path for a header of a few lines of
//! JSON.
//!
//! A file is a little-endian `u64` header length `n`, `n` bytes of JSON
//! (padded with spaces), then the tensors' bytes. The header maps each
//! tensor's name to `{"dtype", "shape", "data_offsets": [begin, end]}`
//! (offsets into the data, which the tensors cover contiguously) and may
//! hold `"__metadata__"`, a map of strings. Parsing checks what the
//! reference implementation checks: the header's size and start, its
//! JSON, each tensor's byte count against its dtype and shape, and
//! offsets that tile the data without gaps or overlaps.

use std::collections::{BTreeMap, HashMap};

/// The largest header accepted (as the reference implementation's).
const MAX_HEADER: usize = 100_000_000;

/// Nesting depth the JSON parser accepts: the header needs three.
const MAX_DEPTH: usize = 16;

/// One tensor of a parsed file.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The dtype as the file names it (`"F32"`, `"BOOL"`...).
    pub dtype: String,
    /// The dims.
    pub shape: Vec<usize>,
    /// The tensor's bytes, little-endian.
    pub data: &'a [u8],
}

/// A parsed file: tensors by name and the metadata.
pub type Parsed<'a> = (BTreeMap<String, Entry<'a>>, HashMap<String, String>);

/// Bits per element of each dtype the format defines.
fn dtype_bits(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        _ => return None,
    })
}

/// Parses `bytes` as a safetensors file; the error says what is wrong.
pub fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    let Some((len, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(format!("{} bytes, shorter than the 8-byte header length", bytes.len()));
    };
    let n = u64::from_le_bytes(*len);
    let n = usize::try_from(n).ok().filter(|&n| n <= MAX_HEADER).ok_or_else(|| format!("header of {n} bytes"))?;
    if n > rest.len() {
        return Err(format!("header of {n} bytes in a file of {}", bytes.len()));
    }
    let (header, data) = rest.split_at(n);
    let header = std::str::from_utf8(header).map_err(|e| format!("header is not UTF-8: {e}"))?;
    if !header.starts_with('{') {
        return Err("header does not start with `{`".into());
    }
    let Json::Object(fields) = Parser::new(header).document()? else { unreachable!("starts with `{{`") };
    let mut metadata = HashMap::new();
    let mut spans = Vec::new();
    for (name, value) in fields {
        if name == "__metadata__" {
            let Json::Object(pairs) = value else { return Err("`__metadata__` is not an object".into()) };
            for (k, v) in pairs {
                let Json::String(v) = v else { return Err(format!("metadata `{k}` is not a string")) };
                metadata.insert(k, v);
            }
            continue;
        }
        let tensor = |what: &str| format!("tensor `{name}`: {what}");
        let Json::Object(info) = value else { return Err(tensor("not an object")) };
        let (mut dtype, mut shape, mut offsets) = (None, None, None);
        for (k, v) in info {
            match (k.as_str(), v) {
                ("dtype", Json::String(s)) => dtype = Some(s),
                ("shape", Json::Array(dims)) => shape = Some(integers(&dims).ok_or_else(|| tensor("bad shape"))?),
                ("data_offsets", Json::Array(o)) => {
                    offsets = Some(integers(&o).filter(|o| o.len() == 2).ok_or_else(|| tensor("bad data_offsets"))?)
                }
                (k, _) => return Err(tensor(&format!("unexpected or malformed field `{k}`"))),
            }
        }
        let (Some(dtype), Some(shape), Some(offsets)) = (dtype, shape, offsets) else {
            return Err(tensor("needs dtype, shape and data_offsets"));
        };
        let bits = dtype_bits(&dtype).ok_or_else(|| tensor(&format!("unknown dtype `{dtype}`")))?;
        let (begin, end) = (offsets[0], offsets[1]);
        let bytes_needed = shape
            .iter()
            .try_fold(bits, |acc, &d| acc.checked_mul(d))
            .map(|b| b.div_ceil(8))
            .ok_or_else(|| tensor("shape overflows"))?;
        if end < begin || end - begin != bytes_needed {
            return Err(tensor(&format!("offsets {begin}..{end} for {bytes_needed} bytes of {dtype} {shape:?}")));
        }
        spans.push((begin, end, name, dtype, shape));
    }
    // The tensors must tile the data: sorted by offset, each starts where
    // the one before ends, the last ends where the file does.
    spans.sort_by_key(|s| (s.0, s.1));
    let mut at = 0;
    let mut tensors = BTreeMap::new();
    for (begin, end, name, dtype, shape) in spans {
        if begin != at {
            return Err(format!("tensor `{name}` starts at byte {begin} of the data, expected {at}"));
        }
        let data = data.get(begin..end).ok_or_else(|| format!("tensor `{name}` ends past the file"))?;
        at = end;
        tensors.insert(name, Entry { dtype, shape, data });
    }
    if at != data.len() {
        return Err(format!("tensors cover {at} of the {} data bytes", data.len()));
    }
    Ok((tensors, metadata))
}

/// The non-negative integers of a JSON array, or `None`.
fn integers(values: &[Json]) -> Option<Vec<usize>> {
    values.iter().map(|v| if let Json::Integer(i) = v { Some(*i) } else { None }).collect()
}

/// A safetensors file of `tensors` (name, dtype, shape, little-endian
/// bytes: the caller keeps them consistent) and string `metadata`. The
/// header is padded so the data starts 8-byte aligned.
pub fn serialize(tensors: &[(&str, &str, &[usize], &[u8])], metadata: &[(&str, &str)]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut field = |key: &str, value: &str| {
        if header.len() > 1 {
            header.push(',');
        }
        quote(&mut header, key);
        header.push(':');
        header.push_str(value);
    };
    if !metadata.is_empty() {
        let mut sorted = metadata.to_vec();
        sorted.sort();
        let mut map = String::from("{");
        for (i, (k, v)) in sorted.iter().enumerate() {
            if i > 0 {
                map.push(',');
            }
            quote(&mut map, k);
            map.push(':');
            quote(&mut map, v);
        }
        map.push('}');
        field("__metadata__", &map);
    }
    let mut offset = 0;
    for (name, dtype, shape, bytes) in tensors {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let end = offset + bytes.len();
        field(
            name,
            &format!("{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}", dims.join(",")),
        );
        offset = end;
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (_, _, _, bytes) in tensors {
        out.extend_from_slice(bytes);
    }
    out
}

/// `s` as a JSON string literal, appended to `out`.
fn quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON values a header holds. Numbers other than non-negative
/// integers parse (as `Other`) but no field accepts them.
#[derive(Debug)]
enum Json {
    Object(Vec<(String, Json)>),
    Array(Vec<Json>),
    String(String),
    Integer(usize),
    Other,
}

/// A strict JSON parser over the header text.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser { s: s.as_bytes(), at: 0 }
    }

    fn error(&self, what: &str) -> String {
        format!("header JSON: {what} at byte {}", self.at)
    }

    /// One value, then only whitespace.
    fn document(&mut self) -> Result<Json, String> {
        let v = self.value(0)?;
        self.space();
        if self.at != self.s.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(v)
    }

    fn space(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        let hit = self.s.get(self.at) == Some(&c);
        self.at += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) { Ok(()) } else { Err(self.error(&format!("expected `{}`", c as char))) }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deep"));
        }
        self.space();
        match self.s.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                let mut fields: Vec<(String, Json)> = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Object(fields));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    if fields.iter().any(|(k, _)| *k == key) {
                        return Err(self.error(&format!("duplicate key `{key}`")));
                    }
                    self.expect(b':')?;
                    fields.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Ok(Json::Object(fields));
                    }
                    self.expect(b',')?;
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Ok(Json::Array(items));
                    }
                    self.expect(b',')?;
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => {
                for word in ["true", "false", "null"] {
                    if self.s[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(Json::Other);
                    }
                }
                Err(self.error("unexpected character"))
            }
            None => Err(self.error("unexpected end")),
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.s.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        let negative = self.s[self.at] == b'-';
        self.at += usize::from(negative);
        let int_digits = digits(self);
        if int_digits == 0 || (int_digits > 1 && self.s[self.at - int_digits] == b'0') {
            return Err(self.error("malformed number"));
        }
        let mut integer = !negative;
        if self.s.get(self.at) == Some(&b'.') {
            self.at += 1;
            integer = false;
            if digits(self) == 0 {
                return Err(self.error("malformed number"));
            }
        }
        if matches!(self.s.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            integer = false;
            if matches!(self.s.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("malformed number"));
            }
        }
        if !integer {
            return Ok(Json::Other);
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).expect("ASCII digits");
        text.parse().map(Json::Integer).map_err(|_| self.error("integer out of range"))
    }

    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.at) != Some(&b'"') {
            return Err(self.error("expected a string"));
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.at) else { return Err(self.error("unterminated string")) };
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.at) else { return Err(self.error("unterminated escape")) };
                    self.at += 1;
                    let simple = match e {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode_escape()?;
                            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            continue;
                        }
                        _ => return Err(self.error("unknown escape")),
                    };
                    out.push(simple);
                }
                c if c < 0x20 => return Err(self.error("control character in a string")),
                c => out.push(c),
            }
        }
        // The header is UTF-8 and escapes encode whole characters.
        Ok(String::from_utf8(out).expect("UTF-8 in, UTF-8 out"))
    }

    /// The character of a `\uXXXX` escape (the `\u` read), joining a
    /// surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hex = |p: &mut Self| -> Result<u32, String> {
            let digits = p.s.get(p.at..p.at + 4).ok_or_else(|| p.error("short \\u escape"))?;
            let v = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| u32::from_str_radix(d, 16).ok())
                .ok_or_else(|| p.error("bad \\u escape"))?;
            p.at += 4;
            Ok(v)
        };
        let hi = hex(self)?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if !self.s[self.at..].starts_with(b"\\u") {
                return Err(self.error("unpaired surrogate"));
            }
            self.at += 2;
            let lo = hex(self)?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(self.error("unpaired surrogate"));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(code).ok_or_else(|| self.error("unpaired surrogate"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn round_trips_tensors_and_metadata() {
        let a: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b = [1u8, 0, 1];
        let bytes = serialize(
            &[("layer.weight", "F32", &[2], &a), ("mask \"q\"\n", "BOOL", &[1, 3], &b)],
            &[("epoch", "3"), ("note", "tab\there")],
        );
        assert_eq!((8 + u64::from_le_bytes(bytes[..8].try_into().unwrap())) % 8, 0, "data starts aligned");
        let (tensors, metadata) = parse(&bytes).unwrap();
        assert_eq!(metadata["epoch"], "3");
        assert_eq!(metadata["note"], "tab\there");
        let w = &tensors["layer.weight"];
        assert_eq!((w.dtype.as_str(), w.shape.as_slice(), w.data), ("F32", &[2][..], &a[..]));
        let m = &tensors["mask \"q\"\n"];
        assert_eq!((m.dtype.as_str(), m.shape.as_slice(), m.data), ("BOOL", &[1, 3][..], &b[..]));
    }

    #[test]
    fn reads_what_other_writers_write() {
        // Spaces, another key order, escapes, a scalar and an empty tensor.
        let header = r#"{ "b" : {"shape": [], "dtype": "I64", "data_offsets": [4, 12]},
            "__metadata__": {"format": "pt", "k\u00e9y": "\ud83d\ude00"},
            "a": {"data_offsets": [0, 4], "dtype": "F32", "shape": [1]},
            "e": {"dtype": "F64", "shape": [0, 3], "data_offsets": [12, 12]}}   "#;
        let data: Vec<u8> = 2.5f32.to_le_bytes().into_iter().chain(7i64.to_le_bytes()).collect();
        let bytes = file(header, &data);
        let (t, meta) = parse(&bytes).unwrap();
        assert_eq!(meta["kéy"], "😀");
        assert_eq!(t["a"].data, 2.5f32.to_le_bytes());
        assert_eq!(t["b"].data, 7i64.to_le_bytes());
        assert_eq!((t["e"].shape.as_slice(), t["e"].data.len()), (&[0, 3][..], 0));
    }

    #[test]
    fn refuses_malformed_files() {
        let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let data = [0u8; 8];
        assert!(parse(&file(ok, &data)).is_ok());
        let cases: &[(&[u8], &str)] = &[
            (&[1, 2, 3], "shorter than"),
            (&file(ok, &data)[..20], "header of"),
            (&file(ok, &data[..4]), "ends past"),
            (&file(ok, &[0; 12]), "cover 8 of the 12"),
            (&file(r#"["a"]"#, &[]), "start with"),
            (&file(r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, &data), "offsets 0..8 for 12"),
            (&file(r#"{"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}}"#, &data), "unknown dtype"),
            (&file(r#"{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#, &data), "bad shape"),
            (&file(r#"{"a":{"dtype":"F32","shape":[2]}}"#, &data), "needs dtype"),
            (&file(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},}"#, &data), "expected a string"),
            (&file(r#"{"a":1,"a":2}"#, &data), "duplicate key"),
            (&file(r#"{"__metadata__":{"k":1}}"#, &[]), "not a string"),
            (
                &file(
                    r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}"#,
                    &data,
                ),
                "starts at byte 2",
            ),
            (
                &file(r#"{"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,8]}}"#, &data),
                "overflows",
            ),
            (&file(r#"{"k":"\ud800"}"#, &[]), "surrogate"),
            (&file(&format!("{}{}", "[".repeat(100), "]".repeat(100)), &[]), "start with"),
            (&file(&format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100)), &[]), "too deep"),
        ];
        for (bytes, want) in cases {
            let err = parse(bytes).expect_err(want);
            assert!(err.contains(want), "{err:?} should say {want:?}");
        }
        let mut huge = file(ok, &data);
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&huge).unwrap_err().contains("header of"));
    }
    #[test]
    fn agrees_with_the_reference_implementation() {
        use ::safetensors::{Dtype, SafeTensors, serialize as reference, tensor::TensorView};
        let a: Vec<u8> = (0..6).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
        let b: Vec<u8> = (0..3).flat_map(|i| (i as i64 - 1).to_le_bytes()).collect();
        // Ours, read by the reference.
        let ours = serialize(&[("w", "F32", &[2, 3], &a), ("i", "I64", &[3], &b)], &[("format", "pt")]);
        let st = SafeTensors::deserialize(&ours).unwrap();
        assert_eq!(st.tensor("w").unwrap().data(), &a[..]);
        assert_eq!(st.tensor("w").unwrap().shape(), &[2, 3]);
        assert_eq!(st.tensor("i").unwrap().dtype(), Dtype::I64);
        let (_, meta) = SafeTensors::read_metadata(&ours).unwrap();
        assert_eq!(meta.metadata().as_ref().unwrap()["format"], "pt");
        // The reference's, read by ours.
        let views = [
            ("w", TensorView::new(Dtype::F32, vec![2, 3], &a).unwrap()),
            ("i", TensorView::new(Dtype::I64, vec![3], &b).unwrap()),
        ];
        let info = HashMap::from([("epoch".to_owned(), "7".to_owned())]);
        let theirs = reference(views, Some(info)).unwrap();
        let (t, meta) = parse(&theirs).unwrap();
        assert_eq!((t["w"].data, t["w"].shape.as_slice(), t["w"].dtype.as_str()), (&a[..], &[2, 3][..], "F32"));
        assert_eq!((t["i"].data, t["i"].dtype.as_str()), (&b[..], "I64"));
        assert_eq!(meta["epoch"], "7");
    }
}
