//! Byte mutations of a valid file for the seeded fuzz tests (the files
//! Blaze reads, and ONNX models for blaze-onnx): bit flips, special bytes,
//! truncation, a spliced copy of a range, random bytes appended, and any
//! edits a format adds.

use blaze::Rng;

/// Bytes that often mean something to a parser.
const SPECIAL: [u8; 6] = [0x00, 0xff, 0x7f, 0x80, b'9', b'"'];

/// A uniform choice among `n`.
pub trait Pick {
    fn pick(&mut self, n: usize) -> usize;
}

impl Pick for Rng {
    fn pick(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// An edit that knows a format (a header's length, its fields).
pub type FormatEdit<'a> = &'a mut dyn FnMut(&mut Vec<u8>, &mut Rng);

/// `seed` with one to three edits: the generic ones above, and, when given,
/// `format`'s (which then takes four of every nine edits).
pub fn mutate(seed: &[u8], rng: &mut Rng, mut format: Option<FormatEdit<'_>>) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.pick(3) {
        let n = b.len().max(1);
        match rng.pick(if format.is_some() { 9 } else { 5 }) {
            0 => {
                let i = rng.pick(n * 8);
                if let Some(x) = b.get_mut(i / 8) {
                    *x ^= 1 << (i % 8);
                }
            }
            1 => {
                let i = rng.pick(n);
                if let Some(x) = b.get_mut(i) {
                    *x = SPECIAL[rng.pick(SPECIAL.len())];
                }
            }
            2 => b.truncate(rng.pick(n)),
            3 => {
                let (from, len) = (rng.pick(n), 1 + rng.pick(64));
                let chunk: Vec<u8> = b.iter().skip(from).take(len).copied().collect();
                let at = rng.pick(n);
                b.splice(at..at, chunk);
            }
            4 => b.extend((0..1 + rng.pick(32)).map(|_| rng.pick(256) as u8)),
            _ => {
                if let Some(edit) = format.as_mut() {
                    edit(&mut b, rng);
                }
            }
        }
    }
    b
}
