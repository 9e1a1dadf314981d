//! Seeded mutation fuzzing of the importer: each case mutates a valid ONNX
//! file (bit flips, special bytes, truncation, a spliced copy of a range,
//! bytes appended) and converts it. A conversion must return `Ok` or `Err`, never panic.
//! Most mutations break the protobuf; those that do not change dims,
//! attributes, names and opsets, which is what reaches the converter.
//! `BLAZE_FUZZ_CASES` and `BLAZE_FUZZ_SEED` run a longer or another search.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use blaze::Rng;
use blaze_onnx::import_bytes;

// The byte mutations the runtime's file fuzzing uses.
#[path = "../../../tests/common/mutate.rs"]
mod mutate;

thread_local! {
    static WHERE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[test]
fn mutated_models_are_converted_or_refused_never_a_panic() {
    let cases: usize = std::env::var("BLAZE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let seed: u64 = std::env::var("BLAZE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x0b1a_2e0f);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let names =
        ["mlp", "attention_triu", "text_classifier", "ops", "opset13", "multihead", "zoo", "decoder", "tabular"];
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
        let mut rng = Rng::seed_from_u64(seed ^ name.len() as u64 ^ (bytes.len() as u64) << 20);
        for case in 0..cases {
            let mutated = mutate::mutate(&bytes, &mut rng, None);
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
