//! Checkpoints: PyTorch state_dicts load into the generated model and give
//! PyTorch's outputs, Blaze writes the same names, shapes and dtypes, bad
//! files are errors naming the tensor, and saves are atomic.

use crate::common;

use std::path::{Path, PathBuf};

use blaze::nn::{self, Ctx};
use blaze::optim::{Adam, Optimizer};
use blaze::prelude::*;
use blaze::record::{self, RecordError};
use common::LeNet;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blaze-record-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn a_pytorch_state_dict_loads_and_gives_pytorch_outputs() {
    let mut model = LeNet::new_seeded(0, &CpuDevice);
    record::load_model(&mut model, &fixture("lenet_state_dict.safetensors")).expect("loads");
    let (io, _) = record::load_tensors(&fixture("lenet_io.safetensors")).expect("io fixture");
    let get = |n: &str| io.iter().find(|(k, _)| k == n).map(|(_, t)| t.clone()).expect("tensor");
    let x = Tensor::<Cpu, 4>::from_data(get("input"), &CpuDevice).expect("rank 4");
    let want = get("output").to_vec::<f32>().expect("f32");
    let got = model.forward(&x).to_vec::<f32>();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn blaze_writes_what_pytorch_writes() {
    let dir = temp_dir("layout");
    let path = dir.join("lenet.safetensors");
    record::save_model(&LeNet::new_seeded(1, &CpuDevice), &path).expect("saves");
    let layout = |p: &Path| {
        let (t, _) = record::load_tensors(p).expect("reads");
        t.into_iter().map(|(n, d)| (n, d.shape, d.values.dtype())).collect::<Vec<_>>()
    };
    assert_eq!(layout(&path), layout(&fixture("lenet_state_dict.safetensors")));
    // And the saved weights load back unchanged.
    let original = LeNet::new_seeded(1, &CpuDevice);
    let mut loaded = LeNet::new_seeded(2, &CpuDevice);
    record::load_model(&mut loaded, &path).expect("loads");
    assert_eq!(nn::state_dict::<Cpu, _>(&loaded), nn::state_dict::<Cpu, _>(&original));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn missing_extra_and_misshapen_tensors_are_named() {
    let dir = temp_dir("bad");
    let (good, _) = record::load_tensors(&fixture("lenet_state_dict.safetensors")).expect("reads");
    let write = |name: &str, tensors: Vec<(String, blaze::TensorData)>| {
        let p = dir.join(name);
        record::save_tensors(&p, &tensors, &[]).expect("writes");
        p
    };
    let mut model = LeNet::new_seeded(0, &CpuDevice);
    let before = nn::state_dict::<Cpu, _>(&model);

    let missing = write("missing.safetensors", good.iter().filter(|(n, _)| n != "fc1.bias").cloned().collect());
    let e = record::load_model(&mut model, &missing).expect_err("missing");
    assert!(matches!(&e, RecordError::Missing { name, .. } if name == "fc1.bias"), "{e}");
    assert!(e.to_string().contains("missing.safetensors") && e.to_string().contains("[120]"), "{e}");

    let mut extra = good.clone();
    extra.push(("fc3.weight".into(), blaze::TensorData::new(vec![0f32; 2], [2]).expect("data")));
    let e = record::load_model(&mut model, &write("extra.safetensors", extra)).expect_err("extra");
    assert!(e.to_string().contains("tensor `fc3.weight` is not part of the model"), "{e}");

    let misshapen: Vec<_> = good
        .iter()
        .map(|(n, t)| {
            if n == "conv2.weight" {
                (n.clone(), blaze::TensorData::new(vec![0f32; 16 * 6 * 3 * 3], [16, 6, 3, 3]).expect("data"))
            } else {
                (n.clone(), t.clone())
            }
        })
        .collect();
    let e = record::load_model(&mut model, &write("shape.safetensors", misshapen)).expect_err("shape");
    assert!(
        e.to_string().contains("tensor `conv2.weight` has shape [16, 6, 3, 3], the model expects [16, 6, 5, 5]"),
        "{e}"
    );

    let garbage = dir.join("garbage.safetensors");
    std::fs::write(&garbage, b"\x08\x00\x00\x00\x00\x00\x00\x00{notjson").expect("write");
    let e = record::load_model(&mut model, &garbage).expect_err("garbage");
    assert!(e.to_string().starts_with(&format!("{}: not a valid safetensors file", garbage.display())), "{e}");
    let e = record::load_model(&mut model, &dir.join("absent.safetensors")).expect_err("absent");
    assert!(e.to_string().contains("absent.safetensors"), "{e}");

    assert_eq!(nn::state_dict::<Cpu, _>(&model), before, "a failed load leaves the model as it was");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn saves_replace_the_file_atomically() {
    let dir = temp_dir("atomic");
    let path = dir.join("weights.safetensors");
    record::save_model(&LeNet::new_seeded(1, &CpuDevice), &path).expect("first save");
    let first = std::fs::read(&path).expect("read");
    record::save_model(&LeNet::new_seeded(2, &CpuDevice), &path).expect("second save");
    assert_ne!(std::fs::read(&path).expect("read"), first, "the file was replaced");
    // A save that cannot complete (the target is a non-empty folder) fails,
    // leaves the folder as it was, and leaves no temporary file behind.
    let blocked = dir.join("blocked");
    std::fs::create_dir_all(blocked.join("inside")).expect("dir");
    assert!(record::save_model(&LeNet::new_seeded(3, &CpuDevice), &blocked).is_err());
    assert!(blocked.join("inside").is_dir());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn checkpoints_resume_model_and_optimizer() {
    let dir = temp_dir("ckpt");
    let path = dir.join("ckpt.safetensors");
    let x = Tensor::<Cpu, 4>::rand_normal([4, 1, 28, 28], &CpuDevice);
    let step = |m: &mut LeNet, o: &mut Adam<Cpu>| {
        let (y, cache) = m.forward_train(&x, &mut Ctx::eval());
        let (_, g) = m.backward(&cache, &y.ones_like());
        o.step(m, &g);
    };
    let (mut m1, mut o1) = (LeNet::new_seeded(4, &CpuDevice), Adam::new(1e-3));
    step(&mut m1, &mut o1);
    record::save_checkpoint(&path, &m1, &o1, &[("epoch", "1".into())]).expect("save");
    let (mut m2, mut o2) = (LeNet::new_seeded(5, &CpuDevice), Adam::new(1e-3));
    let meta = record::load_checkpoint(&path, &mut m2, &mut o2, &CpuDevice).expect("load");
    assert_eq!(meta.get("epoch").map(String::as_str), Some("1"));
    step(&mut m1, &mut o1);
    step(&mut m2, &mut o2);
    assert_eq!(nn::state_dict::<Cpu, _>(&m1), nn::state_dict::<Cpu, _>(&m2), "resumed training matches");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn half_precision_tensors_are_stored_as_they_are() {
    let dir = temp_dir("half");
    let path = dir.join("half.safetensors");
    let h = blaze::TensorData::new(vec![blaze::f16::from_f32(1.5), blaze::f16::NEG_INFINITY], [2]).expect("data");
    let b =
        blaze::TensorData::new(vec![blaze::bf16::from_f32(1.5), blaze::bf16::from_f32(-3.0e38)], [1, 2]).expect("data");
    record::save_tensors(&path, &[("h".into(), h.clone()), ("b".into(), b.clone())], &[]).expect("writes");
    let bytes = std::fs::read(&path).expect("reads");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains(r#""dtype":"F16""#) && text.contains(r#""dtype":"BF16""#), "{text}");
    // Little-endian halves: 1.5 is 0x3e00 in f16 and 0x3fc0 in bf16.
    let words: Vec<&[u8]> = bytes[bytes.len() - 8..].chunks(2).collect();
    assert!(words.contains(&&[0x00, 0x3e][..]) && words.contains(&&[0xc0, 0x3f][..]), "{words:?}");
    let (back, _) = record::load_tensors(&path).expect("loads");
    let get = |n: &str| back.iter().find(|(k, _)| k == n).map(|(_, t)| t.clone()).expect("tensor");
    assert_eq!((get("h"), get("b")), (h, b));
    std::fs::remove_dir_all(&dir).ok();
}
