//! A GPT-2 written as `#[model]` forward bodies
//! (`examples/common/gpt2_model.rs`) reads the checkpoint
//! `transformers` saved (`tests/fixtures/hf_gpt2`, made by its script):
//! the names and the transposed `Conv1D` weights are declared next to the
//! fields with `#[load(..)]`, the head reads the token embeddings it is
//! tied to. Its logits match `transformers`', and greedy decoding with the
//! cache gives the tokens `model.generate(do_sample=False)` gave, from a
//! prompt the saved `tokenizer.json` encodes (read with the `tokenizers`
//! crate) to the ids and text `transformers`' tokenizer gave.

use std::path::PathBuf;

use blaze::nn::{GenerateConfig, generate};
use blaze::prelude::*;
use blaze::record::{RecordError, load_model_from, load_tensors};

#[path = "../../examples/common/gpt2_model.rs"]
mod gpt2_model;

use gpt2_model::Gpt2Tiny as Gpt2;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf_gpt2").join(name)
}

fn loaded() -> Gpt2<Cpu> {
    let mut model = Gpt2::<Cpu>::new_seeded(0, &CpuDevice);
    load_model_from(&mut model, &fixture("model.safetensors")).expect("the checkpoint loads");
    model
}

fn io(name: &str) -> blaze::TensorData {
    let (tensors, _) = load_tensors(&fixture("io.safetensors")).unwrap();
    tensors.into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no `{name}`")).1
}

#[test]
fn transformers_gpt2_checkpoint_gives_its_logits() {
    let model = loaded();
    let ids = Tensor::<Cpu, 2>::from_data(io("ids"), &CpuDevice).unwrap();
    let want = Tensor::<Cpu, 3>::from_data(io("logits"), &CpuDevice).unwrap();
    let got = model.forward(&ids);
    let worst = (got - &want).abs().max().item();
    let scale = want.abs().max().item();
    eprintln!("transformers' GPT-2 fixture: logits within {worst:e} of transformers' (largest {scale})");
    assert!(worst <= 1e-4 * scale.max(1.0), "logits differ from transformers' by {worst} (largest {scale})");
}

fn ids(name: &str) -> Vec<i64> {
    io(name).values.to_f64_vec().into_iter().map(|v| v as i64).collect()
}

#[test]
fn greedy_decoding_gives_transformers_tokens_and_text() {
    let model = loaded();
    let (_, meta) = load_tensors(&fixture("io.safetensors")).unwrap();
    let tokenizer = tokenizers::Tokenizer::from_file(fixture("tokenizer.json")).expect("tokenizer.json");
    let encoding = tokenizer.encode(meta["prompt"].as_str(), false).expect("encodes");
    let prompt: Vec<i64> = encoding.get_ids().iter().map(|&i| i64::from(i)).collect();
    assert_eq!(prompt, ids("prompt"), "the prompt's ids are transformers' tokenizer's");
    let want = ids("greedy");
    let got = generate(&model, &prompt, &GenerateConfig::greedy(want.len()), |_| {});
    assert_eq!(got, want);
    let all: Vec<u32> = prompt.iter().chain(&got).map(|&i| i as u32).collect();
    assert_eq!(tokenizer.decode(&all, false).expect("decodes"), meta["text"]);
}

#[test]
fn a_checkpoint_without_a_declared_tensor_names_it() {
    // The fixture's own weights under other names: the first source the
    // model asks for is missing, and the error says which, for what.
    let dir = std::env::temp_dir().join(format!("blaze-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("renamed.safetensors");
    let (tensors, _) = load_tensors(&fixture("model.safetensors")).unwrap();
    let renamed: Vec<(String, blaze::TensorData)> =
        tensors.into_iter().map(|(n, t)| (n.replace("transformer.", "model."), t)).collect();
    blaze::record::save_tensors(&path, &renamed, &[]).unwrap();
    let mut model = Gpt2::<Cpu>::new_seeded(0, &CpuDevice);
    let before = model.lm_head.weight.to_vec::<f32>();
    let err = load_model_from(&mut model, &path).unwrap_err();
    assert!(matches!(err, RecordError::MissingSource { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("tensor `transformer.wte.weight` is missing (the model reads it into wte.weight"), "{msg}");
    assert_eq!(model.lm_head.weight.to_vec::<f32>(), before, "a failed load leaves the model as it was");
    std::fs::remove_dir_all(&dir).ok();
}

#[model(input = [4])]
pub struct Inner {
    fc: Linear<4, 4>,
}

/// A `#[load]` entry on a nested model, checked when loading, and a
/// matrix read without `transposed`.
#[model(input = [4])]
pub struct Outer {
    #[load(nope = "x")]
    inner: Inner,
    #[load(weight = "w")]
    head: Linear<4, 3>,
}

#[test]
fn mapping_mistakes_are_errors_naming_the_file_and_the_tensors() {
    let dir = std::env::temp_dir().join(format!("blaze-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.safetensors");
    let data = |shape: Vec<usize>| {
        let n = shape.iter().product();
        blaze::TensorData::new(vec![0.5f32; n], shape).unwrap()
    };
    let tensors = [
        ("x".to_string(), data(vec![4])),
        ("inner.fc.weight".to_string(), data(vec![4, 4])),
        ("inner.fc.bias".to_string(), data(vec![4])),
        // [in, out]: the model's [3, 4] stored transposed, read as it is.
        ("w".to_string(), data(vec![4, 3])),
        ("head.bias".to_string(), data(vec![3])),
    ];
    blaze::record::save_tensors(&path, &tensors, &[]).unwrap();
    let mut model = Outer::<Cpu>::new_seeded(0, &CpuDevice);
    let err = load_model_from(&mut model, &path).unwrap_err();
    assert!(matches!(err, RecordError::Unmapped { .. }), "{err}");
    assert!(err.to_string().contains("#[load] reads `x` into inner.nope, which is no tensor of the model"), "{err}");
    // Without the bad entry's target the shape of `w` is refused, by its name in the file.
    let mut sources = Vec::new();
    blaze::nn::Module::<Cpu>::sources(&model, "", "", &mut sources);
    assert!(sources.iter().any(|s| s.name == "head.weight" && s.from == "w" && !s.transposed));
    std::fs::remove_dir_all(&dir).ok();
}

#[model(input = [4])]
pub struct Untransposed {
    #[load(weight = "w", bias = "b")]
    head: Linear<4, 3>,
}

#[test]
fn a_matrix_read_without_transposing_names_the_file_tensor() {
    let dir = std::env::temp_dir().join(format!("blaze-load-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.safetensors");
    let w = blaze::TensorData::new(vec![0.5f32; 12], vec![4, 3]).unwrap();
    let b = blaze::TensorData::new(vec![0.5f32; 3], vec![3]).unwrap();
    blaze::record::save_tensors(&path, &[("w".to_string(), w), ("b".to_string(), b)], &[]).unwrap();
    let mut model = Untransposed::<Cpu>::new_seeded(0, &CpuDevice);
    let err = load_model_from(&mut model, &path).unwrap_err().to_string();
    assert!(err.contains("tensor `w` has shape [4, 3], the model expects [3, 4]"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The mean next-token loss (nats) of `logits` `[n, T, V]` over `ids`
/// `[n, T + 1]`'s later tokens.
fn next_token_loss(logits: &Tensor<Cpu, 3>, ids: &[Vec<i64>]) -> f64 {
    let [_, t, v] = logits.shape();
    let values: Vec<f32> = logits.to_vec();
    let mut total = 0.0;
    for (n, seq) in ids.iter().enumerate() {
        for p in 0..t {
            let row = &values[(n * t + p) * v..(n * t + p + 1) * v];
            let max = row.iter().fold(f32::MIN, |m, &x| m.max(x)) as f64;
            let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
            total += max + sum.ln() - row[seq[p + 1] as usize] as f64;
        }
    }
    total / (ids.len() * t) as f64
}

#[test]
fn the_checkpoint_in_int8_keeps_its_loss_on_held_out_text() {
    let model = loaded();
    let int8 = blaze::quant::quantize_dynamic(&model);
    // Windows of the shipped text's last tenth, as the tokenizer reads them.
    let text =
        blaze::data::read_text(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/text/kjv-1mb.txt.gz")).unwrap();
    let held = &text[text.len() * 9 / 10..];
    let tokenizer = tokenizers::Tokenizer::from_file(fixture("tokenizer.json")).expect("tokenizer.json");
    let all: Vec<i64> =
        tokenizer.encode(&held[..20_000], false).unwrap().get_ids().iter().map(|&i| i64::from(i)).collect();
    let windows: Vec<Vec<i64>> = (0..8).map(|w| all[w * 200..w * 200 + 33].to_vec()).collect();
    let inputs: Vec<i64> = windows.iter().flat_map(|w| w[..32].iter().copied()).collect();
    let x = Tensor::<Cpu, 2>::from_vec(inputs, [8, 32], &CpuDevice);
    let (f32_loss, int8_loss) =
        (next_token_loss(&model.forward(&x), &windows), next_token_loss(&int8.forward(&x), &windows));
    eprintln!("transformers' GPT-2 fixture: held-out loss f32 {f32_loss:.4}, int8 {int8_loss:.4} nats");
    assert!((f32_loss - int8_loss).abs() <= 0.05, "held-out loss f32 {f32_loss:.4}, int8 {int8_loss:.4}");
    // Its file: under 30% of the f32 one Blaze saves and of the one
    // `transformers` saved (which stores the tied head once, as the int8
    // file does: `lm_head.weight` is tied to `wte.weight` in its metadata).
    let dir = std::env::temp_dir().join(format!("blaze-hf-int8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (float_file, int8_file) = (dir.join("f32.safetensors"), dir.join("int8.safetensors"));
    blaze::record::save_model(&model, &float_file).unwrap();
    int8.save(&int8_file).unwrap();
    let size = |p: &PathBuf| std::fs::metadata(p).unwrap().len() as f64;
    let (blaze_f32, hf_f32) =
        (size(&int8_file) / size(&float_file), size(&int8_file) / size(&fixture("model.safetensors")));
    eprintln!("its int8 file: {:.1}% of Blaze's f32 file, {:.1}% of transformers'", 100.0 * blaze_f32, 100.0 * hf_f32);
    assert!(blaze_f32 < 0.3 && hf_f32 < 0.3, "{blaze_f32} and {hf_f32} of the f32 files");
    let back = gpt2_model::Gpt2TinyInt8::<Cpu>::load(&int8_file, &CpuDevice).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), int8.forward(&x).to_vec::<f32>());
}
