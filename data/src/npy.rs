//! NumPy's `.npy` arrays and `.npz` archives of them (stored or
//! deflated, as `np.savez` and `np.savez_compressed` write them), read
//! into [`TensorData`], and datasets built from arrays named for inputs
//! and targets.
//!
//! Every read checks the magic string, the header, the dtype and the
//! length against the shape, and reports the file (and the array) with
//! the problem.

use std::io::Read;
use std::path::Path;

use super::{DataError, InMemoryDataset, MAX_DEFLATE_RATIO};
use blaze_runtime::{DType, DataVec, TensorData};

/// Reads one `.npy` file: little-endian (or byte-sized) floats, integers
/// and booleans in C order. f32 and f64 stay as they are, integers become
/// i64, booleans bool.
pub fn read_npy(path: &Path) -> Result<TensorData, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    parse_npy(&bytes).map_err(|problem| DataError::format(path, problem))
}

/// Reads every array of a `.npz` archive, in the archive's order, named
/// as `np.savez` names them (without `.npy`).
pub fn read_npz(path: &Path) -> Result<Vec<(String, TensorData)>, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let entries = zip_entries(&bytes).map_err(|p| DataError::format(path, p))?;
    let mut arrays = Vec::with_capacity(entries.len());
    for entry in entries {
        let name = entry.name.strip_suffix(".npy").unwrap_or(&entry.name).to_owned();
        let at = |problem: String| DataError::format(path, format!("array `{name}`: {problem}"));
        let raw = entry_data(&bytes, &entry).map_err(at)?;
        arrays.push((name.clone(), parse_npy(&raw).map_err(at)?));
    }
    Ok(arrays)
}

impl InMemoryDataset {
    /// The samples of a `.npz` archive: array `inputs` `[n, ...]` (any
    /// float or integer dtype, read as f32) and array `targets` `[n]` or
    /// `[n, ...]` (integers as class indices, floats as real values).
    /// A missing array, a dtype that is neither, or arrays of different
    /// lengths are errors naming the file and the array; a NaN or infinite
    /// input or float target is one naming the file, the sample and the
    /// feature (as [`read_csv`](super::read_csv) refuses them).
    pub fn from_npz(path: &Path, inputs: &str, targets: &str) -> Result<Self, DataError> {
        let mut arrays = read_npz(path)?;
        let names: Vec<String> = arrays.iter().map(|(n, _)| n.clone()).collect();
        let mut take = |name: &str| {
            let at = arrays.iter().position(|(n, _)| n == name).ok_or_else(|| {
                DataError::format(path, format!("no array named `{name}` (the archive has: {})", names.join(", ")))
            })?;
            Ok::<_, DataError>(arrays.swap_remove(at).1)
        };
        let (x, y) = (take(inputs)?, take(targets)?);
        let bad = |problem: String| DataError::format(path, problem);
        let n = *x.shape.first().ok_or_else(|| bad(format!("array `{inputs}` is a scalar, not samples")))?;
        if y.shape.first() != Some(&n) {
            return Err(bad(format!(
                "array `{inputs}` holds {n} samples ({:?}) but `{targets}` has shape {:?}",
                x.shape, y.shape
            )));
        }
        let values = match x.values {
            DataVec::Bool(_) => return Err(bad(format!("array `{inputs}` holds booleans, not numbers"))),
            DataVec::F32(v) => v,
            other => match other.convert(DType::F32) {
                DataVec::F32(v) => v,
                _ => unreachable!("converted to f32"),
            },
        };
        let targets = match y.values {
            DataVec::Bool(_) => {
                return Err(bad(format!("array `{targets}` holds booleans: store 0/1 as integers or floats")));
            }
            v @ (DataVec::F64(_) | DataVec::F16(_) | DataVec::BF16(_)) => v.convert(DType::F32),
            other => other,
        };
        InMemoryDataset::read_from(path, values, &x.shape[1..], targets, &y.shape[1..])
    }
}

/// The array in an `.npy` file's bytes, or what is wrong with them.
fn parse_npy(bytes: &[u8]) -> Result<TensorData, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        _ => return Err(format!("format version {major}.{minor} is not one Blaze reads (1.0, 2.0, 3.0)")),
    };
    let header = bytes.get(start..start + header_len).ok_or("the header is cut short")?;
    let header = std::str::from_utf8(header).map_err(|_| "the header is not text")?;
    let descr = dict_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    if dict_value(header, "fortran_order")? != "False" {
        return Err("the array is in Fortran order; save it with np.ascontiguousarray".into());
    }
    let shape = parse_shape(dict_value(header, "shape")?)?;
    let data = &bytes[start + header_len..];
    let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or("the shape overflows")?;
    let (order, kind, size) = split_descr(descr)?;
    if !matches!((kind, size), ('f', 2 | 4 | 8) | ('i', 1 | 2 | 4 | 8) | ('u', 1 | 2 | 4) | ('b', 1)) {
        return Err(format!(
            "dtype `{descr}` is not one Blaze reads (float16/32/64, signed integers, unsigned up to 32 bits, bool)"
        ));
    }
    if order == '>' && size > 1 {
        return Err(format!("dtype `{descr}` is big-endian; save it as little-endian (`<`)"));
    }
    let need = count.checked_mul(size).ok_or("the shape overflows")?;
    if data.len() != need {
        return Err(format!("shape {shape:?} of `{descr}` needs {need} bytes of data, the file has {}", data.len()));
    }
    let chunks = data.chunks_exact(size.max(1));
    let int = |c: &[u8], signed: bool| -> i64 {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        let raw = u64::from_le_bytes(b);
        if signed && c.len() < 8 && c[c.len() - 1] & 0x80 != 0 {
            (raw | (u64::MAX << (8 * c.len()))) as i64
        } else {
            raw as i64
        }
    };
    let values = match (kind, size) {
        ('f', 2) => DataVec::F16(chunks.map(|c| half::f16::from_le_bytes([c[0], c[1]])).collect()),
        ('f', 4) => DataVec::F32(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        ('f', 8) => DataVec::F64(chunks.map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()),
        ('i', 1 | 2 | 4 | 8) => DataVec::I64(chunks.map(|c| int(c, true)).collect()),
        ('u', 1 | 2 | 4) => DataVec::I64(chunks.map(|c| int(c, false)).collect()),
        _ => DataVec::Bool(data.iter().map(|&b| b != 0).collect()),
    };
    Ok(TensorData { shape, values })
}

/// The byte order, kind and item size of a dtype string such as `<f4`.
fn split_descr(descr: &str) -> Result<(char, char, usize), String> {
    let mut chars = descr.chars();
    let order = chars.next().ok_or("an empty dtype")?;
    let kind = chars.next().ok_or_else(|| format!("dtype `{descr}` has no kind"))?;
    let size = chars.as_str().parse().map_err(|_| format!("dtype `{descr}` is not one Blaze reads"))?;
    if !matches!(order, '<' | '>' | '|' | '=') {
        return Err(format!("dtype `{descr}` has no byte order"));
    }
    Ok((order, kind, size))
}

/// The text of `key`'s value in the header's Python dict literal.
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let missing = || format!("the header has no `{key}`");
    let at = header.find(&format!("'{key}'")).ok_or_else(missing)?;
    let rest = header[at + key.len() + 2..].trim_start().strip_prefix(':').ok_or_else(missing)?.trim_start();
    let end = if rest.starts_with('(') { rest.find(')').map(|i| i + 1) } else { rest.find([',', '}']) };
    Ok(rest[..end.ok_or_else(missing)?].trim())
}

/// `(2, 3)`, `(5,)` or `()` as dims.
fn parse_shape(text: &str) -> Result<Vec<usize>, String> {
    let inner = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')).ok_or_else(|| format!("shape `{text}`"))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse().map_err(|_| format!("shape `{text}` is not a tuple of sizes")))
        .collect()
}

/// An archive member from the central directory.
struct ZipEntry {
    name: String,
    method: u16,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// Reads a little-endian integer of `N` bytes at `at`.
fn le<const N: usize>(bytes: &[u8], at: usize) -> Result<u64, String> {
    let b = bytes.get(at..at + N).ok_or("the archive is cut short")?;
    Ok(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

/// The members listed in a zip archive's central directory (ZIP64 sizes
/// and offsets included, as `np.savez` writes them).
fn zip_entries(bytes: &[u8]) -> Result<Vec<ZipEntry>, String> {
    // The end-of-central-directory record: 22 bytes plus a comment of at
    // most 65535, at the end.
    let floor = bytes.len().saturating_sub(22 + 65535);
    let eocd = (floor..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| bytes[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or("not a zip archive (no end of central directory)")?;
    let mut count = le::<2>(bytes, eocd + 10)?;
    let mut dir = le::<4>(bytes, eocd + 16)?;
    // A ZIP64 archive points to its own end record just before.
    if (count == 0xffff || dir == 0xffff_ffff) && eocd >= 20 && bytes[eocd - 20..eocd - 16] == [0x50, 0x4b, 0x06, 0x07]
    {
        let record = le::<8>(bytes, eocd - 12)? as usize;
        if bytes.get(record..record + 4) != Some(&[0x50, 0x4b, 0x06, 0x06]) {
            return Err("a broken ZIP64 end record".into());
        }
        count = le::<8>(bytes, record + 32)?;
        dir = le::<8>(bytes, record + 48)?;
    }
    let mut at = usize::try_from(dir).map_err(|_| "the central directory is out of range")?;
    let mut entries = Vec::new();
    for _ in 0..count {
        if le::<4>(bytes, at)? != 0x0201_4b50 {
            return Err("a broken central directory entry".into());
        }
        let method = le::<2>(bytes, at + 10)? as u16;
        let (mut compressed, mut size) = (le::<4>(bytes, at + 20)?, le::<4>(bytes, at + 24)?);
        let (name_len, extra_len, comment_len) =
            (le::<2>(bytes, at + 28)? as usize, le::<2>(bytes, at + 30)? as usize, le::<2>(bytes, at + 32)? as usize);
        let mut offset = le::<4>(bytes, at + 42)?;
        let name = bytes.get(at + 46..at + 46 + name_len).ok_or("the archive is cut short")?;
        let name = String::from_utf8_lossy(name).into_owned();
        // ZIP64 extra field: the 8-byte values of those set to all ones.
        let mut x = at + 46 + name_len;
        let extra_end = x + extra_len;
        while x + 4 <= extra_end {
            let (id, len) = (le::<2>(bytes, x)?, le::<2>(bytes, x + 2)? as usize);
            if id == 1 {
                let mut v = x + 4;
                for field in [&mut size, &mut compressed, &mut offset] {
                    if *field == 0xffff_ffff {
                        *field = le::<8>(bytes, v)?;
                        v += 8;
                    }
                }
            }
            x += 4 + len;
        }
        entries.push(ZipEntry { name, method, compressed, size, offset });
        at = extra_end + comment_len;
    }
    Ok(entries)
}

/// A member's bytes: stored as they are, or inflated.
fn entry_data(bytes: &[u8], e: &ZipEntry) -> Result<Vec<u8>, String> {
    let at = usize::try_from(e.offset).map_err(|_| "the member's offset is out of range")?;
    if le::<4>(bytes, at)? != 0x0403_4b50 {
        return Err("a broken local header".into());
    }
    let start = at + 30 + le::<2>(bytes, at + 26)? as usize + le::<2>(bytes, at + 28)? as usize;
    let end = usize::try_from(e.compressed).ok().and_then(|c| start.checked_add(c)).ok_or("the member is too large")?;
    let raw = bytes.get(start..end).ok_or("the archive is cut short")?;
    match e.method {
        0 => Ok(raw.to_vec()),
        8 => {
            if e.size > (raw.len() as u64).saturating_mul(MAX_DEFLATE_RATIO) {
                return Err(format!("claims {} bytes, more than {} deflated bytes can hold", e.size, raw.len()));
            }
            let mut out = Vec::with_capacity(e.size as usize);
            flate2::read::DeflateDecoder::new(raw)
                .take(e.size)
                .read_to_end(&mut out)
                .map_err(|err| format!("cannot inflate: {err}"))?;
            Ok(out)
        }
        m => Err(format!("compression method {m} is not one Blaze reads (stored, deflate)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An .npy file of `descr` and `shape` holding `data`.
    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn arrays_of_every_dtype_read_as_written() {
        let f: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = parse_npy(&npy("<f4", "(2, 3)", &f)).expect("f32");
        assert_eq!((t.shape, t.values), (vec![2, 3], DataVec::F32(vec![1.5, -2.0, 3.25, 0.0, 7.0, 8.0])));
        let i: Vec<u8> = [-3i16, 4, 300].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(parse_npy(&npy("<i2", "(3,)", &i)).expect("i16").values, DataVec::I64(vec![-3, 4, 300]));
        assert_eq!(parse_npy(&npy("|u1", "(2,)", &[255, 1])).expect("u8").values, DataVec::I64(vec![255, 1]));
        assert_eq!(parse_npy(&npy("|b1", "(2,)", &[1, 0])).expect("bool").values, DataVec::Bool(vec![true, false]));
        let s = parse_npy(&npy("<f8", "()", &2.5f64.to_le_bytes())).expect("a scalar");
        assert_eq!((s.shape, s.values), (vec![], DataVec::F64(vec![2.5])));
    }

    #[test]
    fn bad_arrays_say_what_is_wrong() {
        let cases: [(Vec<u8>, &str); 6] = [
            (b"PK\x03\x04 not npy".to_vec(), "no \\x93NUMPY magic"),
            (npy("<U3", "(1,)", &[0; 12]), "dtype `<U3` is not one Blaze reads"),
            (npy("|O", "(1,)", &[0; 8]), "dtype `|O` is not one Blaze reads"),
            (npy(">f4", "(1,)", &[0; 4]), "big-endian"),
            (npy("<f4", "(2, 3)", &[0; 20]), "needs 24 bytes of data, the file has 20"),
            (npy("<u8", "(1,)", &[0; 8]), "dtype `<u8` is not one Blaze reads"),
        ];
        for (bytes, want) in cases {
            let err = parse_npy(&bytes).expect_err(want);
            assert!(err.contains(want), "{want}: {err}");
        }
        let mut fortran = npy("<f4", "(1,)", &[0; 4]);
        let at = fortran.windows(5).position(|w| w == b"False").expect("the flag");
        fortran[at..at + 5].copy_from_slice(b"True ");
        assert!(parse_npy(&fortran).expect_err("Fortran").contains("Fortran order"));
    }

    /// A stored `.npz` archive of `.npy` members, as `np.savez` writes one
    /// (the reader checks no CRC, so it is left 0).
    fn npz(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let (mut out, mut dir) = (Vec::new(), Vec::new());
        for (name, data) in members {
            let name = format!("{name}.npy");
            let (offset, size, name_len) = (out.len() as u32, data.len() as u32, name.len() as u16);
            // Signature, version, flags, method 0 (stored), time, date, CRC.
            out.extend(0x0403_4b50u32.to_le_bytes());
            out.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend([size.to_le_bytes(), size.to_le_bytes()].concat());
            out.extend([name_len.to_le_bytes(), [0, 0]].concat());
            out.extend(name.as_bytes());
            out.extend(data);
            // Signature, versions, flags, method, time, date, CRC.
            dir.extend(0x0201_4b50u32.to_le_bytes());
            dir.extend([20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            dir.extend([size.to_le_bytes(), size.to_le_bytes()].concat());
            // Name, extra and comment lengths, disk, attributes.
            dir.extend([name_len.to_le_bytes(), [0; 2], [0; 2], [0; 2], [0; 2]].concat());
            dir.extend([0u32.to_le_bytes(), offset.to_le_bytes()].concat());
            dir.extend(name.as_bytes());
        }
        let (count, dir_at, dir_len) = (members.len() as u16, out.len() as u32, dir.len() as u32);
        out.extend(dir);
        out.extend(0x0605_4b50u32.to_le_bytes());
        out.extend([[0; 2], [0; 2], count.to_le_bytes(), count.to_le_bytes()].concat());
        out.extend([dir_len.to_le_bytes(), dir_at.to_le_bytes()].concat());
        out.extend([0, 0]);
        out
    }

    #[test]
    fn an_archive_with_a_non_finite_value_names_its_sample_and_feature() {
        let dir = std::env::temp_dir().join(format!("blaze-npz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let f4 = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let f8 = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let classes = npy("<i8", "(2,)", &[0i64, 1].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
        let cases = [
            ("finite.npz", npy("<f4", "(2, 3)", &f4(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])), classes.clone(), None),
            (
                "nan.npz",
                npy("<f4", "(2, 3)", &f4(&[1.0, 2.0, 3.0, 4.0, 5.0, f32::NAN])),
                classes.clone(),
                Some("nan.npz: sample 1, feature 2: NaN is not a finite number"),
            ),
            (
                "inf.npz",
                npy("<f8", "(2, 2)", &f8(&[1.0, f64::NEG_INFINITY, 3.0, 4.0])),
                classes,
                Some("inf.npz: sample 0, feature 1: -inf is not a finite number"),
            ),
            (
                "target.npz",
                npy("<f4", "(2, 1)", &f4(&[1.0, 2.0])),
                npy("<f8", "(2,)", &f8(&[0.5, f64::NAN])),
                Some("target.npz: sample 1, target 0: NaN is not a finite number"),
            ),
        ];
        for (name, x, y, want) in cases {
            let path = dir.join(name);
            std::fs::write(&path, npz(&[("x", x), ("y", y)])).expect("written");
            match (InMemoryDataset::from_npz(&path, "x", "y"), want) {
                (Ok(_), None) => {}
                (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{name}: {e}"),
                (result, _) => panic!("{name}: {result:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
