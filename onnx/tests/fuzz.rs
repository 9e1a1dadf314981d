//! Seeded mutation fuzzing of the importer: each case mutates a valid ONNX
//! file (bit flips, special bytes, truncation, a spliced copy of a range)
//! and converts it. A conversion must return `Ok` or `Err`, never panic.
//! Most mutations break the protobuf; those that do not change dims,
//! attributes, names and opsets, which is what reaches the converter.
//! `BLAZE_FUZZ_CASES` and `BLAZE_FUZZ_SEED` run a longer or another search.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use blaze_onnx::import_bytes;

/// xorshift64*: enough to pick mutations reproducibly.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn mutate(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut b = bytes.to_vec();
        for _ in 0..1 + self.below(4) {
            let i = self.below(b.len());
            match self.below(5) {
                0 => b[i] ^= 1 << self.below(8),
                1 => b[i] = [0x00, 0xff, 0x7f, 0x80, 0x01][self.below(5)],
                2 => b.truncate(i.max(1)),
                3 => {
                    // Copy a short range over another: repeated fields, odd lengths.
                    let len = 1 + self.below(16);
                    let from = self.below(b.len().saturating_sub(len).max(1));
                    let chunk: Vec<u8> = b[from..(from + len).min(b.len())].to_vec();
                    let to = self.below(b.len());
                    for (k, &x) in chunk.iter().enumerate() {
                        if let Some(slot) = b.get_mut(to + k) {
                            *slot = x;
                        }
                    }
                }
                _ => b[i] = b[i].wrapping_add(1 + self.below(3) as u8),
            }
            if b.is_empty() {
                break;
            }
        }
        b
    }
}

thread_local! {
    static WHERE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[test]
fn mutated_models_are_converted_or_refused_never_a_panic() {
    let cases: usize = std::env::var("BLAZE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let seed: u64 = std::env::var("BLAZE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x0b1a_2e0f);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let names = ["mlp", "attention_triu", "text_classifier", "ops", "opset13", "multihead", "zoo", "decoder", "tabular"];
    // Panics are caught and counted with where they happened; keep their
    // messages off the output.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        WHERE.with(|w| *w.borrow_mut() = at);
    }));
    let mut failures = Vec::new();
    let (mut converted, mut refused) = (0, 0);
    for name in names {
        let bytes = std::fs::read(dir.join(format!("{name}.onnx"))).unwrap();
        let mut m = Mutator(seed ^ name.len() as u64 ^ (bytes.len() as u64) << 20);
        for case in 0..cases {
            let mutated = m.mutate(&bytes);
            match std::panic::catch_unwind(AssertUnwindSafe(|| import_bytes(&mutated, "fuzz.onnx", "Fuzz"))) {
                Ok(Ok(_)) => converted += 1,
                Ok(Err(_)) => refused += 1,
                Err(p) => {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    let at = WHERE.with(|w| w.borrow().clone());
                    failures.push(format!("{name} case {case}: {msg} (at {at})"));
                }
            }
        }
    }
    let _ = std::panic::take_hook();
    println!("{converted} converted, {refused} refused, {} panicked", failures.len());
    assert!(failures.is_empty(), "{} panics:\n{}", failures.len(), failures.join("\n"));
}
