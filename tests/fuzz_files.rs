//! Seeded mutation fuzzing of everything Blaze reads from disk: model
//! weights and training checkpoints (safetensors, with their optimizer
//! state and `history` metadata, also through `fit`'s resume), MNIST
//! IDX files, raw and gzipped, and CSV tables.
//!
//! Each case mutates a valid file (bit flips, special bytes, truncation,
//! splices, a rewritten header length, numbers and dtypes edited inside
//! the safetensors JSON header, IDX dims) and loads it. Every load must
//! return `Ok` or `Err`, never panic; an `Err` must leave the model as it
//! was; an `Ok` checkpoint must train a step; and the most memory live
//! during a load must stay within a few times the file's size (a gzip
//! file's within what it can expand to). `BLAZE_FUZZ_CASES` and
//! `BLAZE_FUZZ_SEED` run a longer or another search.
//!
//! Its own binary without the libtest harness, so that nothing else
//! allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use blaze::Rng;
use blaze::data::mnist::read_idx;
use blaze::data::{CsvOptions, DataLoader, InMemoryDataset, read_csv};
use blaze::loss::cross_entropy;
use blaze::nn::{Ctx, state_dict};
use blaze::optim::{Adam, Optimizer};
use blaze::prelude::*;
use blaze::record::{load_checkpoint, load_model, save_model};
use blaze::train::{FitConfig, fit};

#[path = "common/mutate.rs"]
mod mutate;

use mutate::{Pick, mutate};

/// The system allocator, keeping the bytes live now and the most since
/// the last reset.
struct Tracking;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

/// The most bytes that were live at once while `f` ran, beyond those live
/// before it.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

#[model(input = [8])]
pub struct Small {
    fc1: Linear<8, 16>,
    norm: LayerNorm<16>,
    act: Relu,
    fc2: Linear<16, 4>,
}

// ---- mutations ---------------------------------------------------------

fn mutate_as(seed: &[u8], rng: &mut Rng, kind: Format) -> Vec<u8> {
    let mut edit = |b: &mut Vec<u8>, rng: &mut Rng| match kind {
        Format::Safetensors => safetensors_header(b, rng),
        Format::Idx => idx_header(b, rng),
        Format::Csv => {}
    };
    mutate(seed, rng, Some(&mut edit))
}

/// Edits inside the JSON header, then makes the length prefix match, so
/// the parser gets past the length check and reads the edit.
fn safetensors_header(b: &mut Vec<u8>, rng: &mut Rng) {
    if b.len() < 8 {
        return;
    }
    let len = u64::from_le_bytes(b[..8].try_into().unwrap_or_default()) as usize;
    if rng.pick(4) == 0 || len > b.len() - 8 {
        // A header length that lies.
        let v = [0u64, 1, (len as u64).wrapping_add(1), (len as u64).wrapping_sub(1), u64::MAX, 1 << 40][rng.pick(6)];
        b[..8].copy_from_slice(&v.to_le_bytes());
        return;
    }
    let Ok(mut header) = String::from_utf8(b[8..8 + len].to_vec()) else { return };
    let replacements = [
        "18446744073709551615",
        "4294967296",
        "0",
        "-1",
        "1e9",
        "\"F16\"",
        "\"I64\"",
        "\"BOOL\"",
        "\"F64\"",
        "\"U8\"",
        "[]",
        "[4294967296,4294967296]",
        "null",
        "\"fc1.weight\"",
        "\"optimizer.fc1.weight.exp_avg\"",
        "\"1 nan 0.5 1 0.6 1 10 0;2 0.5\"",
    ];
    // Replace a run of digits, or a quoted string, at a random place.
    let at = rng.pick(header.len().max(1));
    let bytes = header.as_bytes();
    let (start, end) = if bytes.get(at).is_some_and(u8::is_ascii_digit) {
        let s = (0..=at).rev().take_while(|&i| bytes[i].is_ascii_digit()).last().unwrap_or(at);
        let e = (at..bytes.len()).take_while(|&i| bytes[i].is_ascii_digit()).last().unwrap_or(at) + 1;
        (s, e)
    } else {
        match (header[..at].rfind('"'), header[at..].find('"')) {
            (Some(s), Some(e)) if s < at + e => (s, at + e + 1),
            _ => return,
        }
    };
    if !header.is_char_boundary(start) || !header.is_char_boundary(end) {
        return;
    }
    header.replace_range(start..end, replacements[rng.pick(replacements.len())]);
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(&b[8 + len..]);
    *b = out;
}

/// Rewrites the rank byte or a dim of an IDX header.
fn idx_header(b: &mut [u8], rng: &mut Rng) {
    if rng.pick(3) == 0 {
        if let Some(r) = b.get_mut(3) {
            *r = [0, 1, 2, 3, 4, 255][rng.pick(6)];
        }
        return;
    }
    let rank = b.get(3).copied().unwrap_or(0) as usize;
    let d = 4 + 4 * rng.pick(rank.max(1));
    let v: u32 = [0, 1, 2, 5, 255, 65536, u32::MAX, 1 << 31][rng.pick(8)];
    if let Some(dim) = b.get_mut(d..d + 4) {
        dim.copy_from_slice(&v.to_be_bytes());
    }
}

#[derive(Clone, Copy)]
enum Format {
    Safetensors,
    Idx,
    /// Text: the generic mutations alone.
    Csv,
}

// ---- the targets --------------------------------------------------------

/// What a load returned, or its panic message.
type Outcome = Result<Result<(), String>, String>;

struct Target<'a> {
    name: &'static str,
    format: Format,
    seed_file: &'a Path,
    /// The file name the mutant is written to (the extension matters).
    file: &'a str,
    /// Bytes the load may have live at once, given the file's length.
    budget: fn(usize) -> usize,
    /// Loads the file at the path; `Err` for an error the loader returned.
    load: &'a dyn Fn(&Path) -> Result<(), String>,
}

const MIB: usize = 1 << 20;

fn run(t: &Target<'_>, dir: &Path, cases: usize, seed: u64, failures: &mut Vec<String>) {
    let original = std::fs::read(t.seed_file).expect("seed file");
    let path = dir.join(t.file);
    let mut rng = Rng::seed_from_u64(seed ^ t.name.len() as u64);
    let (mut ok, mut errors, mut worst) = (0, 0, 0.0f64);
    let start = Instant::now();
    for case in 0..=cases {
        if start.elapsed() > Duration::from_secs(60) {
            break;
        }
        let bytes = if case == 0 { original.clone() } else { mutate_as(&original, &mut rng, t.format) };
        std::fs::write(&path, &bytes).expect("temp file");
        let (outcome, peak): (Outcome, usize) = peak_during(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| (t.load)(&path))).map_err(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default()
            })
        });
        let budget = (t.budget)(bytes.len());
        worst = worst.max(peak as f64 / bytes.len().max(1) as f64);
        let keep = || {
            let kept = dir.join(format!("failure-{}-{case}.bin", t.name));
            std::fs::write(&kept, &bytes).ok();
            kept.display().to_string()
        };
        match outcome {
            Ok(Ok(())) => ok += 1,
            Ok(Err(_)) => errors += 1,
            Err(panic) => {
                failures.push(format!("{}: case {case} panicked: {panic} (input kept in {})", t.name, keep()))
            }
        }
        if peak > budget {
            failures.push(format!(
                "{}: case {case}: {peak} bytes live for a file of {} bytes (budget {budget}; input kept in {})",
                t.name,
                bytes.len(),
                keep()
            ));
        }
    }
    println!(
        "{}: {ok} loaded, {errors} refused, none panicked ({:.1} s; at most {worst:.1}x the file's size live)",
        t.name,
        start.elapsed().as_secs_f64()
    );
    if ok == 0 || errors < cases / 4 {
        failures.push(format!("{}: {ok} loads and {errors} errors: the mutations did not exercise both", t.name));
    }
}

fn dataset(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let x: Vec<f32> = (0..n * 8).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    InMemoryDataset::new(x, &[8], (0..n as i64).map(|i| i % 4).collect()).expect("consistent")
}

fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 8, dims.len() as u8];
    for d in dims {
        b.extend(d.to_be_bytes());
    }
    b.extend(data);
    b
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("in memory");
    e.finish().expect("in memory")
}

fn main() {
    let cases: usize = std::env::var("BLAZE_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(5000);
    let seed: u64 = std::env::var("BLAZE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("blaze-fuzz-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");

    // Seed files: weights, and a checkpoint written by two epochs of fit.
    let train_dir = dir.join("train");
    let mut model = Small::<Cpu>::new_seeded(0, &CpuDevice);
    let config = FitConfig { epochs: 2, out_dir: Some(train_dir.clone()), verbose: false, ..FitConfig::default() };
    let (mut tl, mut vl) = (DataLoader::new(dataset(32, 1), 8), DataLoader::new(dataset(8, 2), 8));
    fit(&mut model, &mut Adam::new(1e-2), &mut tl, &mut vl, &config).expect("trains");
    let weights = dir.join("seed-weights.safetensors");
    save_model(&model, &weights).expect("saves");
    let checkpoint = train_dir.join("last.safetensors");
    let images = dir.join("seed-images");
    std::fs::write(&images, idx(&[5, 4, 4], &(0..80).map(|i| (i * 3) as u8).collect::<Vec<u8>>())).expect("write");
    let images_gz = dir.join("seed-images.gz");
    std::fs::write(&images_gz, gzip(&std::fs::read(&images).expect("read"))).expect("write");

    let before = state_dict::<Cpu, _>(&model);
    let unchanged = |m: &Small<Cpu>| state_dict::<Cpu, _>(m) == before;
    let x = Tensor::<Cpu, 2>::ones([2, 8], &CpuDevice);
    let y = Tensor::<Cpu, 1>::from_vec(vec![0i64, 3], [2], &CpuDevice);

    let load_weights = |p: &Path| {
        let mut m = model.clone();
        match load_model(&mut m, p) {
            Ok(()) => Ok(()),
            Err(e) if unchanged(&m) => Err(e.to_string()),
            Err(e) => panic!("the model changed although loading failed: {e}"),
        }
    };
    let load_ckpt = |p: &Path| {
        let (mut m, mut opt) = (model.clone(), Adam::new(1e-2));
        match load_checkpoint(p, &mut m, &mut opt, &CpuDevice) {
            Ok(_) => {
                // The state it accepted must drive an update.
                let (logits, cache) = m.forward_train(&x, &mut Ctx::train(0));
                let grads = m.backward_params(&cache, &cross_entropy(&logits, &y, 0.0).grad);
                opt.step(&mut m, &grads);
                Ok(())
            }
            Err(e) if unchanged(&m) => Err(e.to_string()),
            Err(e) => panic!("the model changed although loading failed: {e}"),
        }
    };
    let resume = |p: &Path| {
        // fit's resume reads the history metadata; a two-epoch history
        // leaves nothing to train, a shorter one trains what is missing.
        let out = p.parent().unwrap_or(Path::new(".")).join("resume");
        std::fs::create_dir_all(&out).ok();
        std::fs::copy(p, out.join("last.safetensors")).ok();
        let config = FitConfig { epochs: 2, out_dir: Some(out), resume: true, verbose: false, ..FitConfig::default() };
        let (mut tl, mut vl) = (DataLoader::new(dataset(16, 1), 8), DataLoader::new(dataset(8, 2), 8));
        let mut m = model.clone();
        fit(&mut m, &mut Adam::new(1e-2), &mut tl, &mut vl, &config).map(drop).map_err(|e| e.to_string())
    };
    let read = |p: &Path| read_idx(p).map(drop).map_err(|e| e.to_string());
    // A table in the shipped wine file's columns, the classes quoted, with
    // a categorical column.
    let table = dir.join("seed-table.csv");
    let wine = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tabular/wine.csv"))
        .expect("the shipped wine table");
    let rows: Vec<&str> = wine.lines().take(12).collect();
    let quoted: Vec<String> = rows
        .iter()
        .map(|r| r.rsplit_once(',').map_or_else(|| r.to_string(), |(head, class)| format!("{head},\"{class}\"")))
        .collect();
    std::fs::write(&table, quoted.join("\r\n")).expect("write");
    let table_options = CsvOptions::classes("cultivar").categorical(&["magnesium"]);
    let read_table = |p: &Path| read_csv(p, &table_options).map(drop).map_err(|e| e.to_string());

    let targets = [
        Target {
            name: "weights",
            format: Format::Safetensors,
            seed_file: &weights,
            file: "w.safetensors",
            budget: |n| 8 * n + MIB,
            load: &load_weights,
        },
        Target {
            name: "checkpoint",
            format: Format::Safetensors,
            seed_file: &checkpoint,
            file: "c.safetensors",
            budget: |n| 8 * n + MIB,
            load: &load_ckpt,
        },
        Target {
            name: "resume",
            format: Format::Safetensors,
            seed_file: &checkpoint,
            file: "r.safetensors",
            // Training a missing epoch allocates its own working memory.
            budget: |n| 8 * n + 16 * MIB,
            load: &resume,
        },
        Target {
            name: "idx",
            format: Format::Idx,
            seed_file: &images,
            file: "i",
            budget: |n| 8 * n + MIB,
            load: &read,
        },
        Target {
            name: "idx.gz",
            format: Format::Idx,
            seed_file: &images_gz,
            file: "i.gz",
            // Decompressed data is bounded by the deflate ratio.
            budget: |n| 2 * 1032 * n + MIB,
            load: &read,
        },
        Target {
            name: "csv",
            format: Format::Csv,
            seed_file: &table,
            file: "t.csv",
            // Cells are read as f32 or as category codes, never held as
            // text; one-hot columns may still outgrow a short cell.
            budget: |n| 64 * n + MIB,
            load: &read_table,
        },
    ];
    let mut failures = Vec::new();
    for t in &targets {
        run(t, &dir, if t.name == "resume" { cases / 5 } else { cases }, seed, &mut failures);
    }
    if !failures.is_empty() {
        eprintln!("{} failures:\n{}", failures.len(), failures.join("\n"));
        std::process::exit(1);
    }
    // A header that announces far more than the file holds is refused
    // before anything is allocated for it.
    let bomb = dir.join("bomb.gz");
    std::fs::write(&bomb, gzip(&idx(&[60000, 28, 28], &[0; 10]))).expect("write");
    let (r, peak) = peak_during(|| read_idx(&bomb));
    let err = r.expect_err("47 MB announced in a few bytes").to_string();
    assert!(err.contains("more than a gzip file of"), "{err}");
    assert!(peak < MIB, "{peak} bytes live for a refused file");
    std::fs::remove_dir_all(&dir).ok();
    println!("fuzz_files: ok");
}
