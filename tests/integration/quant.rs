//! Post-training int8 quantization (`blaze::quant`) of trained models:
//! the digits classifiers `examples/mnist.rs` trains (an MLP quantized
//! dynamically, a CNN calibrated statically) keep their test accuracy
//! within half a point, the character GPT `examples/gpt.rs` trains keeps
//! its held-out loss within 0.05 nats, and each int8 file is under 30%
//! of the f32 one. Saving and loading give back the same outputs bit for
//! bit; a wrong file is refused, naming the file and the tensor.
//!
//! The weights in `tests/fixtures/quant` are the examples' own, trained
//! with their defaults on the data shipped in `data/`:
//! `cargo run --release --example mnist -- --out DIR` (then `--model mlp`)
//! keeps `DIR/best.safetensors`, and
//! `cargo run --release --example gpt -- --save gpt_small.safetensors`.

use std::path::{Path, PathBuf};

use blaze::data::mnist::read_mnist;
use blaze::data::{Dataset, InMemoryDataset, TextDataset};
use blaze::prelude::*;
use blaze::quant::{InputQuant, calibrated, quantize_dynamic, quantize_static};
use blaze::record::{RecordError, load_model, save_model};

use crate::gpt_model::Gpt;

use crate::digits;

use digits::{DigitsCnn, DigitsMlp};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/quant").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-quant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// The digits' training and test splits, normalised as the example
/// normalises them (by the training part of its validation split, with
/// its default fraction and seed).
fn digits() -> (InMemoryDataset, InMemoryDataset) {
    let data = read_mnist(&root().join("data/digits-8x8")).unwrap();
    let (mut train, _) = data.train.into_dataset().split_validation(0.1, 0).unwrap();
    let mut test = data.test.into_dataset();
    let stats = train.stats();
    train.normalize(stats);
    test.normalize(stats);
    (train, test)
}

/// The share of `test` that `classify` gets right, batch by batch.
fn accuracy(test: &InMemoryDataset, classify: impl Fn(&Tensor<Cpu, 4>) -> Tensor<Cpu, 2>) -> f64 {
    let (mut right, mut all) = (0, 0);
    let indices: Vec<usize> = (0..test.len()).collect();
    for chunk in indices.chunks(128) {
        let batch = test.batch(chunk);
        let x = Tensor::<Cpu, 4>::from_data(batch.inputs, &CpuDevice).unwrap();
        let labels = batch.targets.values.to_f64_vec();
        let pred: Tensor<Cpu, 1> = classify(&x).argmax(1).squeeze(1);
        let pred: Vec<i64> = pred.to_vec();
        right += pred.iter().zip(&labels).filter(|(p, l)| **p as f64 == **l).count();
        all += labels.len();
    }
    right as f64 / all as f64
}

#[test]
fn a_dynamic_int8_mlp_keeps_the_digits_accuracy_in_under_30_percent_of_the_file() {
    let mut model = DigitsMlp::<Cpu>::new_seeded(0, &CpuDevice);
    load_model(&mut model, &fixture("digits_mlp.safetensors")).unwrap();
    let int8 = quantize_dynamic(&model);
    let (_, test) = digits();
    let (f32_acc, int8_acc) = (accuracy(&test, |x| model.forward(x)), accuracy(&test, |x| int8.forward(x)));
    assert!(f32_acc > 0.9, "the fixture is trained: {f32_acc}");
    assert!((f32_acc - int8_acc).abs() <= 0.005, "test accuracy f32 {f32_acc:.4}, int8 {int8_acc:.4}");

    let (float_file, int8_file) = (scratch("mlp.safetensors"), scratch("mlp-int8.safetensors"));
    save_model(&model, &float_file).unwrap();
    int8.save(&int8_file).unwrap();
    let ratio = file_size(&int8_file) as f64 / file_size(&float_file) as f64;
    eprintln!("digits MLP: test accuracy f32 {f32_acc:.4}, int8 {int8_acc:.4}; file {:.1}% of f32", 100.0 * ratio);
    assert!(ratio < 0.3, "the int8 file is {:.1}% of the f32 one", 100.0 * ratio);
}

#[test]
fn a_calibrated_int8_cnn_keeps_the_digits_accuracy() {
    let mut model = DigitsCnn::<Cpu>::new_seeded(0, &CpuDevice);
    load_model(&mut model, &fixture("digits_cnn.safetensors")).unwrap();
    let (train, test) = digits();
    // A few hundred training images fix each convolution's input range.
    let int8 = quantize_static(&model, |q| {
        for start in [0, 100, 200] {
            let batch = train.batch(&(start..start + 100).collect::<Vec<_>>());
            q.forward(&Tensor::from_data(batch.inputs, &CpuDevice).unwrap());
        }
    });
    let ranges = calibrated(&int8);
    let names: Vec<&str> = ranges.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["conv1", "conv2"], "the convolutions are calibrated");
    // conv2 reads ReLU's output: its range starts at 0, its zero point too.
    assert!(matches!(ranges[1].1, InputQuant::Static { zero_point: 0, .. }), "{:?}", ranges[1]);
    let dynamic = quantize_dynamic(&model);
    let f32_acc = accuracy(&test, |x| model.forward(x));
    assert!(f32_acc > 0.9, "the fixture is trained: {f32_acc}");
    for (how, acc) in
        [("static", accuracy(&test, |x| int8.forward(x))), ("dynamic", accuracy(&test, |x| dynamic.forward(x)))]
    {
        eprintln!("digits CNN: test accuracy f32 {f32_acc:.4}, int8 {how} {acc:.4}");
        assert!((f32_acc - acc).abs() <= 0.005, "test accuracy f32 {f32_acc:.4}, int8 {how} {acc:.4}");
    }

    // The calibrated ranges travel with the file.
    let path = scratch("cnn-int8.safetensors");
    int8.save(&path).unwrap();
    let back = digits::DigitsCnnInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(calibrated(&back), ranges);
    let x = Tensor::<Cpu, 4>::from_data(test.batch(&[0, 1, 2, 3]).inputs, &CpuDevice).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), int8.forward(&x).to_vec::<f32>());
}

/// The mean loss (nats per character) of `logits` over windows `ids`.
fn loss(logits: &Tensor<Cpu, 3>, targets: &[i64]) -> f64 {
    let [_, _, v] = logits.shape();
    let values: Vec<f32> = logits.to_vec();
    let mut total = 0.0;
    for (row, &t) in values.chunks_exact(v).zip(targets) {
        let max = row.iter().fold(f32::MIN, |m, &x| m.max(x)) as f64;
        let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
        total += max + sum.ln() - row[t as usize] as f64;
    }
    total / targets.len() as f64
}

#[test]
fn an_int8_gpt_keeps_its_held_out_loss_in_under_30_percent_of_the_file() {
    let mut model = Gpt::<Cpu>::new_seeded(0, &CpuDevice);
    load_model(&mut model, &fixture("gpt_small.safetensors")).unwrap();
    let int8 = quantize_dynamic(&model);
    // The example holds out the text's last tenth; 32 of its windows.
    let (text, _) = TextDataset::from_file(&root().join("data/text/kjv-1mb.txt.gz"), 64).unwrap();
    let (_, held) = text.split(0.9);
    let step = held.len() / 32;
    let batch = held.batch(&(0..32).map(|i| i * step).collect::<Vec<_>>());
    let ids = Tensor::<Cpu, 2>::from_data(batch.inputs, &CpuDevice).unwrap();
    let targets: Vec<i64> = batch.targets.values.to_f64_vec().into_iter().map(|t| t as i64).collect();
    let (f32_loss, int8_loss) = (loss(&model.forward(&ids), &targets), loss(&int8.forward(&ids), &targets));
    assert!(f32_loss < 1.6, "the fixture is trained: {f32_loss} nats");
    assert!((f32_loss - int8_loss).abs() <= 0.05, "held-out loss f32 {f32_loss:.4}, int8 {int8_loss:.4}");

    let path = scratch("gpt-int8.safetensors");
    int8.save(&path).unwrap();
    let ratio = file_size(&path) as f64 / file_size(&fixture("gpt_small.safetensors")) as f64;
    eprintln!("GPT: held-out loss f32 {f32_loss:.4}, int8 {int8_loss:.4} nats; file {:.1}% of f32", 100.0 * ratio);
    assert!(ratio < 0.3, "the int8 file is {:.1}% of the f32 one", 100.0 * ratio);
    let back = crate::gpt_model::GptInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(back.forward(&ids).to_vec::<f32>(), int8.forward(&ids).to_vec::<f32>());
    let summary = back.summary();
    for line in ["tok ", "Embedding<64, 64> (int8)", "LayerNorm<64>", "of the f32 model's"] {
        assert!(summary.contains(line), "`{line}` missing from\n{summary}");
    }
}

#[test]
fn int8_layers_stay_close_to_their_float_layers() {
    let model = Gpt::<Cpu>::new_seeded(3, &CpuDevice);
    let int8 = quantize_dynamic(&model);
    let ids = Tensor::<Cpu, 2>::from_vec((0..2 * 40).map(|i| (i * 7 % 64) as i64).collect(), [2, 40], &CpuDevice);
    let (want, got) = (model.forward(&ids), int8.forward(&ids));
    let worst = (got - &want).abs().max().item();
    let scale = want.abs().max().item();
    assert!(worst < 0.05 * scale, "int8 logits differ by {worst} (largest {scale})");
}

#[test]
fn a_wrong_file_is_refused_naming_it_and_the_tensor() {
    let model = DigitsMlp::<Cpu>::new_seeded(0, &CpuDevice);
    // A float checkpoint is not an int8 one.
    let float_file = scratch("float.safetensors");
    save_model(&model, &float_file).unwrap();
    let err = digits::DigitsMlpInt8::<Cpu>::load(&float_file, &CpuDevice).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, RecordError::DType { .. }), "{msg}");
    assert!(msg.contains("float.safetensors") && msg.contains("fc1.weight") && msg.contains("I8"), "{msg}");
    // Another model's int8 file.
    let cnn = scratch("cnn.safetensors");
    quantize_dynamic(&DigitsCnn::<Cpu>::new_seeded(0, &CpuDevice)).save(&cnn).unwrap();
    let msg = digits::DigitsMlpInt8::<Cpu>::load(&cnn, &CpuDevice).unwrap_err().to_string();
    assert!(msg.contains("cnn.safetensors") && msg.contains("missing"), "{msg}");
    // No file at all.
    let msg = digits::DigitsMlpInt8::<Cpu>::load(scratch("none.safetensors"), &CpuDevice).unwrap_err().to_string();
    assert!(msg.contains("none.safetensors"), "{msg}");
}

#[test]
fn an_int8_gpt_decodes_one_position_at_a_time_as_its_forward_runs() {
    use blaze::nn::{Decode, GenerateConfig, generate};
    let mut model = Gpt::<Cpu>::new_seeded(0, &CpuDevice);
    load_model(&mut model, &fixture("gpt_small.safetensors")).unwrap();
    let int8 = quantize_dynamic(&model);
    let ids: Vec<i64> = (0..24).map(|i| (i * 11 % 63) as i64).collect();
    let x = Tensor::<Cpu, 2>::from_vec(ids.clone(), [1, 24], &CpuDevice);
    let full = int8.forward(&x);
    // Each row quantizes on its own: a position's logits do not depend on
    // how many positions run with it.
    let mut state = int8.decode_state();
    let mut steps = vec![int8.decode_step(&x.narrow(1, 0, 5), &mut state)];
    for t in 5..24 {
        steps.push(int8.decode_step(&x.narrow(1, t, 1), &mut state));
    }
    let stepped = Tensor::cat(&steps, 1);
    let worst = (stepped - &full).abs().max().item();
    assert!(worst < 1e-4 * full.abs().max().item(), "decoded logits differ from the forward's by {worst}");
    // Greedy generation picks each step's most likely next character.
    let drawn = generate(&int8, &ids[..4], &GenerateConfig::greedy(6), |_| {});
    let mut seq = ids[..4].to_vec();
    for &t in &drawn {
        let x = Tensor::<Cpu, 2>::from_vec(seq.clone(), [1, seq.len()], &CpuDevice);
        let last: Tensor<Cpu, 1> = int8.forward(&x).narrow(1, seq.len() - 1, 1).reshape([-1]);
        assert_eq!(last.argmax(0).to_vec::<i64>()[0], t, "after {seq:?}");
        seq.push(t);
    }
}

#[test]
fn int8_lstm_and_gru_readers_stay_close_and_save_under_the_float_names() {
    use crate::readers::{GruReader, GruReaderInt8, LstmReader, LstmReaderInt8};
    let ids = Tensor::<Cpu, 2>::from_vec((0..3 * 20).map(|i| (i * 13 % 64) as i64).collect(), [3, 20], &CpuDevice);
    let close = |what: &str, want: Tensor<Cpu, 2>, got: Tensor<Cpu, 2>| {
        let worst = (got - &want).abs().max().item();
        let scale = want.abs().max().item();
        assert!(worst <= 0.05 * scale + 1e-3, "{what}: int8 logits differ by {worst} (largest {scale})");
    };
    let lstm = LstmReader::<Cpu>::new_seeded(1, &CpuDevice);
    let int8 = quantize_dynamic(&lstm);
    close("LSTM", lstm.forward(&ids), int8.forward(&ids));
    let path = scratch("lstm-int8.safetensors");
    int8.save(&path).unwrap();
    let back = LstmReaderInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(back.forward(&ids).to_vec::<f32>(), int8.forward(&ids).to_vec::<f32>());
    assert!(back.summary().contains("Lstm<32, 64> (int8)"), "{}", back.summary());

    let gru = GruReader::<Cpu>::new_seeded(2, &CpuDevice);
    let int8 = quantize_dynamic(&gru);
    close("GRU", gru.forward(&ids), int8.forward(&ids));
    let path = scratch("gru-int8.safetensors");
    int8.save(&path).unwrap();
    let back = GruReaderInt8::<Cpu>::load(&path, &CpuDevice).unwrap();
    assert_eq!(back.forward(&ids).to_vec::<f32>(), int8.forward(&ids).to_vec::<f32>());
    // The file names each tensor as the float layer does.
    let float = scratch("gru.safetensors");
    save_model(&gru, &float).unwrap();
    let err = GruReaderInt8::<Cpu>::load(&float, &CpuDevice).unwrap_err().to_string();
    assert!(err.contains("gru.weight_ih_l0") || err.contains("chars.weight"), "{err}");
}
