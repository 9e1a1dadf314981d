//! `blaze-onnx export`: a model's source file and weights become the same
//! ONNX file `blaze::export` writes in process, and bad requests are
//! refused saying what is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use blaze::prelude::*;

use crate::digits;

/// A folder for this test's files, and the build cache every export here
/// shares (the first export compiles Blaze into it).
fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    (dir, tmp.join("onnx-export-cache"))
}

fn digits_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/common/digits.rs")
}

fn export(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blaze-onnx")).arg("export").args(args).output().expect("runs")
}

#[test]
fn a_model_file_and_its_weights_export_as_blaze_export_writes_them() {
    let (dir, cache) = scratch("export_digits");
    let model = digits::DigitsMlp::<Cpu>::new_seeded(42, &CpuDevice);
    let weights = dir.join("best.safetensors");
    blaze::record::save_model(&model, &weights).expect("weights");
    let out = dir.join("nested/folder/digits.onnx");
    let source = digits_source();
    let done = export(&[
        source.as_os_str(),
        "--model".as_ref(),
        "DigitsMlp".as_ref(),
        "--weights".as_ref(),
        weights.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--cache".as_ref(),
        cache.as_os_str(),
    ]);
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{said}{}", String::from_utf8_lossy(&done.stderr));
    assert!(said.starts_with("wrote `DigitsMlp` to ") && said.contains("operators"), "{said}");
    let written = std::fs::read(&out).expect("the ONNX file");
    assert_eq!(written, blaze::export::to_onnx(&model), "the CLI's file differs from the library's");
}

#[test]
fn bad_requests_are_refused_saying_why() {
    let (dir, cache) = scratch("export_refusals");
    let out = dir.join("m.onnx");
    let source = digits_source();
    let refused = |args: &[&std::ffi::OsStr], want: &str| {
        let mut all: Vec<&std::ffi::OsStr> = args.to_vec();
        all.extend(["--out".as_ref(), out.as_os_str(), "--cache".as_ref(), cache.as_os_str()]);
        let done = export(&all);
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(!done.status.success() && err.starts_with("error: export: ") && err.contains(want), "{err}");
        assert!(!out.exists(), "a refused export wrote {}", out.display());
    };
    refused(&[source.as_os_str(), "--model".as_ref(), "Digits Mlp".as_ref()], "is not a Rust type name");
    let missing = dir.join("missing.rs");
    refused(&[missing.as_os_str(), "--model".as_ref(), "Net".as_ref()], "no such source file");
    let no_weights = dir.join("none.safetensors");
    let args =
        [source.as_os_str(), "--model".as_ref(), "DigitsMlp".as_ref(), "--weights".as_ref(), no_weights.as_os_str()];
    refused(&args, "no such weights file");
    refused(&[source.as_os_str(), "--model".as_ref(), "NoSuchModel".as_ref()], "could not build the exporting program");
    // Weights of another model: the program runs and says what is wrong.
    let other = dir.join("other.safetensors");
    blaze::record::save_model(&digits::DigitsCnn::<Cpu>::new_seeded(1, &CpuDevice), &other).expect("weights");
    let args = [source.as_os_str(), "--model".as_ref(), "DigitsMlp".as_ref(), "--weights".as_ref(), other.as_os_str()];
    refused(&args, "other.safetensors");
}
