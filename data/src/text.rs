//! Text for language models: a [`Vocab`] of characters or bytes, and a
//! [`TextDataset`] of fixed windows over the encoded text, each paired
//! with the same window shifted by one (the next token at every position).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::{Batch, DataError, Dataset, MAX_DEFLATE_RATIO};
use blaze_runtime::{DataVec, TensorData};

/// Reads a UTF-8 text file; a path ending in `.gz` is decompressed.
pub fn read_text(path: &Path) -> Result<String, DataError> {
    let raw = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        let limit = (raw.len() as u64).saturating_mul(MAX_DEFLATE_RATIO);
        flate2::read::GzDecoder::new(&raw[..])
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|e| DataError::format(path, format!("not a valid gzip file ({e})")))?;
        out
    } else {
        raw
    };
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        DataError::format(path, format!("not UTF-8 text (an invalid byte at offset {at})"))
    })
}

/// The tokens of a character- or byte-level model and their ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vocab {
    /// The distinct characters of a text, in code point order: id `i` is
    /// the `i`-th.
    Chars(Vec<char>),
    /// The 256 byte values: id `b` is byte `b` (any text, no unknowns).
    Bytes,
}

impl Vocab {
    /// The distinct characters of `text`.
    pub fn chars(text: &str) -> Self {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        Vocab::Chars(chars)
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        match self {
            Vocab::Chars(c) => c.len(),
            Vocab::Bytes => 256,
        }
    }

    /// True for a vocabulary without tokens.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of `text`; a character the vocabulary lacks is an error
    /// naming it and its position (in characters).
    pub fn encode(&self, text: &str) -> Result<Vec<i64>, String> {
        match self {
            Vocab::Bytes => Ok(text.bytes().map(i64::from).collect()),
            Vocab::Chars(chars) => text
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    chars.binary_search(&c).map(|id| id as i64).map_err(|_| {
                        format!(
                            "character {c:?} at position {i} is not in the vocabulary of {} characters",
                            chars.len()
                        )
                    })
                })
                .collect(),
        }
    }

    /// The text of `ids` (ids outside the vocabulary become U+FFFD, as do
    /// byte sequences that are not UTF-8).
    pub fn decode(&self, ids: &[i64]) -> String {
        match self {
            Vocab::Chars(chars) => ids
                .iter()
                .map(|&i| usize::try_from(i).ok().and_then(|i| chars.get(i)).copied().unwrap_or('\u{fffd}'))
                .collect(),
            Vocab::Bytes => {
                let bytes: Vec<u8> = ids.iter().map(|&i| u8::try_from(i).unwrap_or(b'?')).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
        }
    }
}

/// Windows of `context` token ids over one text, for next-token
/// prediction: sample `i` is the window starting at `i * stride` as input
/// `[context]` and the window one token later as targets `[context]`
/// (i64 both). Windows do not overlap unless a stride below `context` is
/// asked for.
#[derive(Clone, Debug)]
pub struct TextDataset {
    ids: Arc<[i64]>,
    context: usize,
    stride: usize,
}

impl TextDataset {
    /// Windows of `context` tokens over `ids`, one every `context` tokens.
    /// Panics for a `context` of 0.
    pub fn new(ids: Vec<i64>, context: usize) -> Self {
        assert!(context > 0, "TextDataset: the context must hold at least one token");
        TextDataset { ids: ids.into(), context, stride: context }
    }

    /// Reads `path` (UTF-8 text, or `.gz`) and encodes it with a vocabulary
    /// of its characters: the dataset and the vocabulary.
    pub fn from_file(path: &Path, context: usize) -> Result<(Self, Vocab), DataError> {
        let text = read_text(path)?;
        let vocab = Vocab::chars(&text);
        let ids = vocab.encode(&text).map_err(|e| DataError::format(path, e))?;
        Ok((TextDataset::new(ids, context), vocab))
    }

    /// One window every `stride` tokens (a stride below the context gives
    /// overlapping windows: more samples from the same text). Panics for 0.
    pub fn stride(mut self, stride: usize) -> Self {
        assert!(stride > 0, "TextDataset::stride: the stride must be at least 1");
        self.stride = stride;
        self
    }

    /// Tokens per window.
    pub fn context(&self) -> usize {
        self.context
    }

    /// The token ids.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// The text cut in two at `fraction` of its tokens: the first part (for
    /// training) and the rest (held out), with the same context and
    /// stride. Cutting a text keeps the held-out windows out of every
    /// training window, which a random split of windows would not.
    pub fn split(&self, fraction: f64) -> (Self, Self) {
        assert!((0.0..=1.0).contains(&fraction), "TextDataset::split: fraction {fraction} is outside [0, 1]");
        let at = (self.ids.len() as f64 * fraction).round() as usize;
        let part = |ids: &[i64]| TextDataset { ids: ids.into(), context: self.context, stride: self.stride };
        (part(&self.ids[..at]), part(&self.ids[at..]))
    }
}

impl Dataset for TextDataset {
    fn len(&self) -> usize {
        // A window needs context + 1 tokens (its targets reach one further).
        match self.ids.len().checked_sub(self.context + 1) {
            Some(room) => room / self.stride + 1,
            None => 0,
        }
    }

    fn batch(&self, indices: &[usize]) -> Batch {
        let t = self.context;
        let (mut x, mut y) = (Vec::with_capacity(indices.len() * t), Vec::with_capacity(indices.len() * t));
        for &i in indices {
            let start = i * self.stride;
            x.extend_from_slice(&self.ids[start..start + t]);
            y.extend_from_slice(&self.ids[start + 1..start + t + 1]);
        }
        let shape = vec![indices.len(), t];
        Batch {
            inputs: TensorData { shape: shape.clone(), values: DataVec::I64(x) },
            targets: TensorData { shape, values: DataVec::I64(y) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_pair_each_token_with_the_next() {
        let vocab = Vocab::chars("abcab");
        assert_eq!(vocab.len(), 3);
        let ids = vocab.encode("abcabca").expect("known characters");
        assert_eq!(vocab.decode(&ids), "abcabca");
        let data = TextDataset::new(ids, 3);
        // 7 tokens, windows of 3 plus one: starts 0 and 3.
        assert_eq!(data.len(), 2);
        let b = data.batch(&[1, 0]);
        assert_eq!(b.inputs.shape, [2, 3]);
        assert_eq!(b.inputs.values, DataVec::I64(vec![0, 1, 2, 0, 1, 2]));
        assert_eq!(b.targets.values, DataVec::I64(vec![1, 2, 0, 1, 2, 0]));
        assert_eq!(data.clone().stride(1).len(), 4);
        let (train, held) = data.split(4.0 / 7.0);
        assert_eq!((train.ids().len(), held.ids().len()), (4, 3));
        assert_eq!((train.len(), held.len()), (1, 0));
        let err = vocab.encode("abd").expect_err("no d");
        assert!(err.contains("'d' at position 2"), "{err}");
        assert_eq!(Vocab::Bytes.decode(&Vocab::Bytes.encode("é!").expect("any text")), "é!");
    }

    #[test]
    fn unreadable_text_names_the_file() {
        let dir = std::env::temp_dir().join(format!("blaze-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let bad = dir.join("latin1.txt");
        std::fs::write(&bad, b"caf\xe9").expect("written");
        let err = read_text(&bad).expect_err("not UTF-8").to_string();
        assert!(err.contains("latin1.txt") && err.contains("offset 3"), "{err}");
        let gz = dir.join("broken.txt.gz");
        std::fs::write(&gz, b"not gzip").expect("written");
        assert!(read_text(&gz).expect_err("not gzip").to_string().contains("gzip"));
        assert!(read_text(&dir.join("missing.txt")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
