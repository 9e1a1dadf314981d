//! The MNIST IDX format: big-endian headers and `u8` values, raw or gzip.
//!
//! Every read validates the magic number, the element type, the dims and
//! the length against the header, and reports the file and the problem.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::MAX_DEFLATE_RATIO;

/// What can go wrong reading an IDX file or a dataset folder.
pub use super::DataError as IdxError;

/// The values and dims of one IDX file.
#[derive(Clone, Debug, PartialEq)]
pub struct Idx {
    /// Dims from the header, outermost first.
    pub dims: Vec<usize>,
    /// The values, row-major.
    pub data: Vec<u8>,
}

/// Reads an IDX file of unsigned bytes (type code `0x08`); a path ending in
/// `.gz` is decompressed. Memory stays proportional to the file: a
/// compressed file is read only as far as its header says, and a header
/// that claims more data than the file can hold is an error before
/// anything is allocated for it.
pub fn read_idx(path: &Path) -> Result<Idx, IdxError> {
    let io = |source| IdxError::Io { path: path.to_owned(), source };
    let format = |problem: String| IdxError::Format { path: path.to_owned(), problem };
    let file = File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        let compressed = file.metadata().map_err(io)?.len();
        let mut gz = flate2::read::GzDecoder::new(BufReader::new(file));
        // The magic number and rank, then the dims, then the data they
        // announce (and one byte more, to notice trailing data).
        (&mut gz).take(4).read_to_end(&mut bytes).map_err(io)?;
        let rank = if bytes.len() == 4 { u64::from(bytes[3]) } else { 0 };
        (&mut gz).take(4 * rank).read_to_end(&mut bytes).map_err(io)?;
        let claimed = header_data_len(&bytes).unwrap_or(0);
        if claimed > compressed.saturating_mul(MAX_DEFLATE_RATIO) {
            return Err(format(format!(
                "the header announces {claimed} bytes of data, more than a gzip file of {compressed} bytes can hold"
            )));
        }
        gz.take(claimed + 1).read_to_end(&mut bytes).map_err(io)?;
    } else {
        BufReader::new(file).read_to_end(&mut bytes).map_err(io)?;
    }
    parse_idx_owned(bytes).map_err(format)
}

/// The data length the dims of a (complete) header announce.
fn header_data_len(bytes: &[u8]) -> Option<u64> {
    let rank = *bytes.get(3)? as usize;
    let dims = bytes.get(4..4 + 4 * rank)?;
    dims.chunks_exact(4).try_fold(1u64, |n, c| n.checked_mul(u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]))))
}

/// Parses IDX bytes; the error says what is wrong.
pub fn parse_idx(bytes: &[u8]) -> Result<Idx, String> {
    parse_idx_owned(bytes.to_vec())
}

/// [`parse_idx`] of bytes it may keep: the data is the file's own buffer.
fn parse_idx_owned(mut bytes: Vec<u8>) -> Result<Idx, String> {
    if bytes.len() < 4 {
        return Err(format!("truncated: {} bytes, too short for the 4-byte magic number", bytes.len()));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(format!("bad magic number {:02x?}: IDX files start with two zero bytes", &bytes[..4]));
    }
    if bytes[2] != 0x08 {
        return Err(format!("element type 0x{:02x} is not supported (only unsigned bytes, 0x08)", bytes[2]));
    }
    let rank = bytes[3] as usize;
    if rank == 0 {
        return Err("the header declares zero dims".into());
    }
    let header = 4 + 4 * rank;
    if bytes.len() < header {
        return Err(format!("truncated header: {rank} dims need {header} bytes, the file has {}", bytes.len()));
    }
    let dims: Vec<usize> =
        bytes[4..header].chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
    let expected = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or("dims overflow")?;
    let actual = bytes.len() - header;
    if actual != expected {
        let what = if actual < expected { "truncated" } else { "trailing bytes" };
        return Err(format!("{what}: dims {dims:?} need {expected} bytes of data, the file has {actual}"));
    }
    bytes.drain(..header);
    Ok(Idx { dims, data: bytes })
}

/// One split of an MNIST-style dataset: `n` images of `rows x cols` pixels
/// scaled to `[0, 1]`, and their labels.
#[derive(Clone, Debug)]
pub struct MnistSplit {
    /// Pixels, `n * rows * cols`, row-major, in `[0, 1]`.
    pub images: Vec<f32>,
    /// Class labels.
    pub labels: Vec<i64>,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
}

impl MnistSplit {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when the split holds no samples.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// A train and a test split.
#[derive(Clone, Debug)]
pub struct Mnist {
    /// `train-*` files.
    pub train: MnistSplit,
    /// `t10k-*` files.
    pub test: MnistSplit,
}

fn find(dir: &Path, stem: &str) -> Result<PathBuf, IdxError> {
    for name in [format!("{stem}.gz"), stem.to_owned()] {
        let p = dir.join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(IdxError::Io {
        path: dir.join(stem),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file (nor with .gz)"),
    })
}

fn read_split(dir: &Path, prefix: &str) -> Result<MnistSplit, IdxError> {
    let ipath = find(dir, &format!("{prefix}-images-idx3-ubyte"))?;
    let lpath = find(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
    let images = read_idx(&ipath)?;
    let labels = read_idx(&lpath)?;
    let format = |path: &Path, problem: String| IdxError::Format { path: path.to_owned(), problem };
    if images.dims.len() != 3 {
        return Err(format(&ipath, format!("images need 3 dims [n, rows, cols], the header has {:?}", images.dims)));
    }
    if labels.dims.len() != 1 {
        return Err(format(&lpath, format!("labels need 1 dim [n], the header has {:?}", labels.dims)));
    }
    if images.dims[0] != labels.dims[0] {
        return Err(format(
            &lpath,
            format!("{} labels for {} images in {}", labels.dims[0], images.dims[0], ipath.display()),
        ));
    }
    if let Some(bad) = labels.data.iter().find(|&&l| l > 9) {
        return Err(format(&lpath, format!("label {bad} is not a digit 0-9")));
    }
    let peak = images.data.iter().copied().max().unwrap_or(0).max(1) as f32;
    // MNIST pixels span 0..=255, the UCI 8x8 digits 0..=16: scale by the
    // format's range so both land in [0, 1].
    let scale = if peak <= 16.0 { 16.0 } else { 255.0 };
    Ok(MnistSplit {
        images: images.data.iter().map(|&p| p as f32 / scale).collect(),
        labels: labels.data.iter().map(|&l| l as i64).collect(),
        rows: images.dims[1],
        cols: images.dims[2],
    })
}

/// Reads the four standard files (`train-images-idx3-ubyte[.gz]`, ...) of
/// an MNIST-format folder.
pub fn read_mnist(dir: &Path) -> Result<Mnist, IdxError> {
    Ok(Mnist { train: read_split(dir, "train")?, test: read_split(dir, "t10k")? })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 8, dims.len() as u8];
        for d in dims {
            b.extend(d.to_be_bytes());
        }
        b.extend(data);
        b
    }

    #[test]
    fn parses_a_valid_file() {
        let got = parse_idx(&idx(&[2, 3], &[1, 2, 3, 4, 5, 6])).expect("valid");
        assert_eq!(got, Idx { dims: vec![2, 3], data: vec![1, 2, 3, 4, 5, 6] });
    }

    #[test]
    fn rejects_bad_magic_types_and_lengths() {
        let err = |b: &[u8]| parse_idx(b).expect_err("invalid");
        assert!(err(&[0, 0]).contains("too short"));
        assert!(err(&[1, 0, 8, 1]).contains("bad magic number"));
        assert!(err(&[0, 0, 0x0d, 1]).contains("element type 0x0d"));
        assert!(err(&[0, 0, 8, 2, 0, 0]).contains("truncated header"));
        assert!(err(&idx(&[2, 3], &[1, 2, 3])).contains("truncated: dims [2, 3] need 6 bytes of data, the file has 3"));
        assert!(err(&idx(&[1], &[1, 2])).contains("trailing bytes"));
    }

    fn shared_digits() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/digits-8x8")
    }

    #[test]
    fn reads_the_shipped_digits() {
        let m = read_mnist(&shared_digits()).expect("the repo ships digits-8x8");
        assert_eq!((m.train.len(), m.test.len()), (1437, 360));
        assert_eq!((m.train.rows, m.train.cols), (8, 8));
        assert_eq!(m.train.images.len(), 1437 * 64);
        assert!(m.train.images.iter().all(|p| (0.0..=1.0).contains(p)));
        // Every class is present in the train split.
        for c in 0..10 {
            assert!(m.train.labels.contains(&c));
        }
    }

    #[test]
    fn errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("blaze-idx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("train-images-idx3-ubyte"), idx(&[2, 2, 2], &[0; 7])).expect("write");
        std::fs::write(dir.join("train-labels-idx1-ubyte"), idx(&[2], &[0, 1])).expect("write");
        let e = read_mnist(&dir).expect_err("truncated images").to_string();
        assert!(e.contains("train-images-idx3-ubyte") && e.contains("truncated"), "{e}");
        std::fs::write(dir.join("train-images-idx3-ubyte"), idx(&[2, 2, 2], &[0; 8])).expect("write");
        std::fs::write(dir.join("train-labels-idx1-ubyte"), idx(&[3], &[0, 1, 2])).expect("write");
        let e = read_mnist(&dir).expect_err("count mismatch").to_string();
        assert!(e.contains("3 labels for 2 images"), "{e}");
        std::fs::write(dir.join("train-labels-idx1-ubyte.gz"), b"not gzip").expect("write");
        let e = read_mnist(&dir).expect_err("corrupt gzip").to_string();
        assert!(e.contains("train-labels-idx1-ubyte.gz"), "{e}");
        let e = read_mnist(&dir.join("missing")).expect_err("missing folder").to_string();
        assert!(e.contains("train-images-idx3-ubyte") && e.contains("no such file"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
