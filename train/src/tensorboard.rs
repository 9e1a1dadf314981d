//! TensorBoard event files, so `tensorboard --logdir DIR` shows a run as
//! it trains: scalars and text written as TensorFlow's `Event` protocol
//! buffers in TFRecord framing (length, masked CRC-32C of the length, the
//! record, its masked CRC-32C), as PyTorch's
//! `torch.utils.tensorboard.SummaryWriter` writes them. No dependency: the
//! few protobuf fields are encoded here, and [`read_events`] reads them
//! back, checking every checksum.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Writes one run's events to a new file in a log folder.
#[derive(Debug)]
pub struct SummaryWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl SummaryWriter {
    /// Creates `dir` if needed and a new event file in it, named as
    /// TensorBoard expects (`events.out.tfevents.<seconds>.<host>.<pid>`),
    /// starting with the file-version event.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
        let host = if host.is_empty() { "localhost".to_owned() } else { host };
        let name = format!("events.out.tfevents.{}.{host}.{}.blaze", now() as u64, std::process::id());
        let path = dir.join(name);
        let mut w = SummaryWriter { out: BufWriter::new(File::create(&path)?), path };
        let mut event = event_header(0);
        field_bytes(&mut event, 3, b"brain.Event:2");
        w.record(&event)?;
        w.flush()?;
        Ok(w)
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A scalar under `tag` (a `/` groups tags in TensorBoard) at `step`.
    pub fn add_scalar(&mut self, tag: &str, value: f64, step: u64) -> std::io::Result<()> {
        let mut v = Vec::new();
        field_bytes(&mut v, 1, tag.as_bytes());
        // simple_value: a float, wire type 5.
        v.push((2 << 3) | 5);
        v.extend((value as f32).to_le_bytes());
        self.summary(&v, step)
    }

    /// Text under `tag` at `step`, shown by TensorBoard's text plugin
    /// (Markdown; indent by four spaces for a table as it is).
    pub fn add_text(&mut self, tag: &str, text: &str, step: u64) -> std::io::Result<()> {
        // A scalar string tensor: dtype DT_STRING (7), an empty shape, the text.
        let mut tensor = Vec::new();
        field_varint(&mut tensor, 1, 7);
        field_bytes(&mut tensor, 2, &[]);
        field_bytes(&mut tensor, 8, text.as_bytes());
        let mut plugin = Vec::new();
        field_bytes(&mut plugin, 1, b"text");
        let mut metadata = Vec::new();
        field_bytes(&mut metadata, 1, &plugin);
        let mut v = Vec::new();
        field_bytes(&mut v, 1, tag.as_bytes());
        field_bytes(&mut v, 8, &tensor);
        field_bytes(&mut v, 9, &metadata);
        self.summary(&v, step)
    }

    /// Writes what is buffered, so TensorBoard sees it.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// An event holding one summary value.
    fn summary(&mut self, value: &[u8], step: u64) -> std::io::Result<()> {
        let mut summary = Vec::new();
        field_bytes(&mut summary, 1, value);
        let mut event = event_header(step);
        field_bytes(&mut event, 5, &summary);
        self.record(&event)
    }

    /// One TFRecord.
    fn record(&mut self, data: &[u8]) -> std::io::Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        self.out.write_all(&len)?;
        self.out.write_all(&masked_crc(&len).to_le_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(&masked_crc(data).to_le_bytes())
    }
}

/// Seconds since the Unix epoch.
fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// An event's wall time (field 1, a double) and step (field 2).
fn event_header(step: u64) -> Vec<u8> {
    let mut e = vec![(1 << 3) | 1];
    e.extend(now().to_le_bytes());
    field_varint(&mut e, 2, step);
    e
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_varint(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field << 3));
    varint(out, v);
}

fn field_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, u64::from((field << 3) | 2));
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// CRC-32C (Castagnoli), bit by bit over a table of 256.
fn crc32c(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0x82f6_3b78 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u32, |c, &b| TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8))
}

/// TFRecord's masked checksum.
fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c(data);
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// What one event held.
#[derive(Clone, Debug, PartialEq)]
pub enum EventValue {
    /// The first event of a file.
    FileVersion(String),
    /// A scalar.
    Scalar {
        /// Its tag.
        tag: String,
        /// Its value.
        value: f32,
    },
    /// Text.
    Text {
        /// Its tag.
        tag: String,
        /// The text.
        text: String,
    },
}

/// One event read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
    /// The step.
    pub step: u64,
    /// What it held.
    pub value: EventValue,
}

/// Reads an event file as [`SummaryWriter`] writes it, checking each
/// record's length, checksums and fields; the error says which record and
/// what is wrong.
pub fn read_events(path: &Path) -> Result<Vec<Event>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut events = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = events.len();
        let bad = |what: &str| format!("{}: record {n}: {what}", path.display());
        let head = bytes.get(at..at + 12).ok_or_else(|| bad("cut short in its header"))?;
        let len_bytes: [u8; 8] = head[..8].try_into().expect("8 bytes");
        if u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) != masked_crc(&len_bytes) {
            return Err(bad("the length's checksum does not match"));
        }
        let len = usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| bad("an impossible length"))?;
        let data = bytes.get(at + 12..at + 12 + len).ok_or_else(|| bad("cut short in its data"))?;
        let crc = bytes.get(at + 12 + len..at + 16 + len).ok_or_else(|| bad("cut short in its checksum"))?;
        if u32::from_le_bytes(crc.try_into().expect("4 bytes")) != masked_crc(data) {
            return Err(bad("the data's checksum does not match"));
        }
        events.push(decode_event(data).map_err(|e| bad(&e))?);
        at += 16 + len;
    }
    Ok(events)
}

/// A protobuf field: its number and its value.
enum Field<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

/// Splits a protobuf message into its fields.
fn fields(mut data: &[u8]) -> Result<Vec<(u32, Field<'_>)>, String> {
    fn read_varint(data: &mut &[u8]) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = data.split_first().ok_or("a varint is cut short")?;
            *data = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("a varint is too long".into())
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = read_varint(&mut data)?;
        let field = (key >> 3) as u32;
        let value = match key & 7 {
            0 => Field::Varint(read_varint(&mut data)?),
            1 => {
                let (v, rest) = data.split_at_checked(8).ok_or("a double is cut short")?;
                data = rest;
                Field::Fixed64(v.try_into().expect("8 bytes"))
            }
            2 => {
                let len = usize::try_from(read_varint(&mut data)?).map_err(|_| "a length overflows")?;
                let (v, rest) = data.split_at_checked(len).ok_or("a field is cut short")?;
                data = rest;
                Field::Bytes(v)
            }
            5 => {
                let (v, rest) = data.split_at_checked(4).ok_or("a float is cut short")?;
                data = rest;
                Field::Fixed32(v.try_into().expect("4 bytes"))
            }
            w => return Err(format!("wire type {w} is not one an event uses")),
        };
        out.push((field, value));
    }
    Ok(out)
}

fn decode_event(data: &[u8]) -> Result<Event, String> {
    let (mut wall_time, mut step, mut value) = (0.0, 0, None);
    for (field, v) in fields(data)? {
        match (field, v) {
            (1, Field::Fixed64(b)) => wall_time = f64::from_le_bytes(b),
            (2, Field::Varint(s)) => step = s,
            (3, Field::Bytes(b)) => value = Some(EventValue::FileVersion(String::from_utf8_lossy(b).into_owned())),
            (5, Field::Bytes(summary)) => value = Some(decode_summary(summary)?),
            _ => {}
        }
    }
    Ok(Event { wall_time, step, value: value.ok_or("an event with neither a version nor a summary")? })
}

fn decode_summary(summary: &[u8]) -> Result<EventValue, String> {
    let Some((_, Field::Bytes(value))) = fields(summary)?.into_iter().find(|(f, _)| *f == 1) else {
        return Err("a summary without a value".into());
    };
    let (mut tag, mut scalar, mut text) = (String::new(), None, None);
    for (field, v) in fields(value)? {
        match (field, v) {
            (1, Field::Bytes(b)) => tag = String::from_utf8_lossy(b).into_owned(),
            (2, Field::Fixed32(b)) => scalar = Some(f32::from_le_bytes(b)),
            (8, Field::Bytes(tensor)) => {
                for (f, v) in fields(tensor)? {
                    if let (8, Field::Bytes(s)) = (f, v) {
                        text = Some(String::from_utf8_lossy(s).into_owned());
                    }
                }
            }
            _ => {}
        }
    }
    match (scalar, text) {
        (Some(value), _) => Ok(EventValue::Scalar { tag, value }),
        (None, Some(text)) => Ok(EventValue::Text { tag, text }),
        (None, None) => Err(format!("value `{tag}` is neither a scalar nor text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_its_published_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn events_read_back_as_written_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("blaze-tb-{}", std::process::id()));
        let mut w = SummaryWriter::create(&dir).expect("created");
        w.add_scalar("train/loss", 0.25, 3).expect("written");
        w.add_text("model/summary", "    Linear 4 -> 2", 0).expect("written");
        w.flush().expect("flushed");
        let path = w.path().to_path_buf();
        assert!(path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("events.out.tfevents.")));
        let events = read_events(&path).expect("reads");
        assert_eq!(events[0].value, EventValue::FileVersion("brain.Event:2".into()));
        assert_eq!(
            (events[1].step, &events[1].value),
            (3, &EventValue::Scalar { tag: "train/loss".into(), value: 0.25 })
        );
        assert_eq!(events[2].value, EventValue::Text { tag: "model/summary".into(), text: "    Linear 4 -> 2".into() });
        assert!(events.iter().all(|e| e.wall_time > 1.6e9));
        // A flipped bit in a value, and a file cut short.
        let mut bytes = std::fs::read(&path).expect("bytes");
        let n = bytes.len();
        bytes[n - 8] ^= 1;
        std::fs::write(&path, &bytes).expect("written");
        assert!(read_events(&path).expect_err("damaged").contains("record 2: the data's checksum does not match"));
        std::fs::write(&path, &bytes[..n - 3]).expect("written");
        assert!(read_events(&path).expect_err("cut").contains("record 2: cut short"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
