//! Broken and unsupported ONNX files are refused with errors that say
//! why, and nothing is written; weights in an external file and the
//! command line.

use std::path::Path;

use blaze_onnx::{Error, Problem, import_bytes, import_file};

use super::import::fixture;

pub(crate) fn refusal(path: &Path) -> String {
    match import_file(path, None) {
        Ok(_) => panic!("{} converted", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unsupported_operators_are_listed_with_their_nodes() {
    let msg = refusal(&fixture("unknown_ops.onnx"));
    assert!(msg.starts_with("unknown_ops.onnx: 2 operator(s) without a conversion to Blaze:"), "{msg}");
    assert!(msg.contains("\n  Hardmax: pick, pick_again\n  Det: det\n"), "{msg}");
    assert!(!msg.contains("relu"), "{msg}");
}

#[test]
fn activations_blaze_has_no_layer_for_are_refused_with_what_they_compute() {
    let msg = refusal(&fixture("clip_bounds.onnx"));
    assert!(msg.contains("node `clamp` (Clip)") && msg.contains("clamps to [-1, 1]"), "{msg}");
    let msg = refusal(&fixture("hardsigmoid_onnx.onnx"));
    assert!(msg.contains("node `gate` (HardSigmoid)") && msg.contains("0.2 x + 0.5"), "{msg}");
}

#[test]
fn a_shape_computed_from_the_data_is_refused_at_its_node() {
    let msg = refusal(&fixture("data_dependent.onnx"));
    assert!(msg.contains("node `reshape_by_data` (Reshape)"), "{msg}");
    assert!(msg.contains("a data-dependent shape"), "{msg}");
    assert!(msg.contains("`to_ints` casts a tensor computed from the data"), "{msg}");
}

#[test]
fn broken_files_are_refused_and_nothing_is_written() {
    let bytes = std::fs::read(fixture("lenet.onnx")).unwrap();
    for cut in [10, 1000, bytes.len() / 2, bytes.len() - 1] {
        match import_bytes(&bytes[..cut], "cut.onnx", "Cut") {
            Err(Error::Model { file, problem: Problem::Malformed(_) }) => assert_eq!(file, "cut.onnx"),
            other => panic!("{cut} bytes: {other:?}"),
        }
    }
    let msg = import_bytes(b"not a model at all", "text.onnx", "Text").unwrap_err().to_string();
    assert!(msg.starts_with("text.onnx: not a valid ONNX model"), "{msg}");
    let msg = refusal(Path::new("/nonexistent/model.onnx"));
    assert!(msg.starts_with("/nonexistent/model.onnx: "), "{msg}");
    // A bad struct name is the caller's mistake, not the model's.
    match import_bytes(&bytes, "lenet.onnx", "lenet") {
        Err(e @ Error::Name { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with("`lenet` is not a Rust type name") && msg.contains("`Lenet` would do"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    // Nor can it be a name the generated source uses for a layer.
    match import_bytes(&bytes, "lenet.onnx", "Linear") {
        Err(e @ Error::Name { .. }) => assert!(e.to_string().contains("`LinearModel` would do"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn weights_in_an_external_file_are_read_beside_the_model() {
    // torch.onnx.export's default: the large tensors in `NAME.onnx.data`.
    let external = import_file(&fixture("external_data.onnx"), Some("Mlp")).unwrap();
    let inline = import_file(&fixture("external_data_inline.onnx"), Some("Mlp")).unwrap();
    assert!(!external.weights.is_empty());
    assert_eq!(external.weights, inline.weights);
    assert_eq!(external.source.replace("external_data.onnx", "external_data_inline.onnx"), inline.source);

    // In memory there is no folder to read the file from.
    let bytes = std::fs::read(fixture("external_data.onnx")).unwrap();
    let msg = import_bytes(&bytes, "external_data.onnx", "Mlp").unwrap_err().to_string();
    assert!(msg.contains("the external file `external_data.onnx.data`") && msg.contains("import_file"), "{msg}");

    // The model copied without its data file: the error names the file.
    let dir = std::env::temp_dir().join(format!("blaze-onnx-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let alone = dir.join("external_data.onnx");
    std::fs::write(&alone, &bytes).unwrap();
    let msg = refusal(&alone);
    let missing = dir.join("external_data.onnx.data").display().to_string();
    assert!(msg.contains(&missing) && msg.contains("could not be read"), "{msg}");

    // A cut data file: the tensor's bytes are past its end.
    let data = std::fs::read(fixture("external_data.onnx.data")).unwrap();
    std::fs::write(dir.join("external_data.onnx.data"), &data[..data.len() / 2]).unwrap();
    let msg = refusal(&alone);
    assert!(msg.contains(&format!("which holds {} bytes", data.len() / 2)), "{msg}");

    // A location that leaves the model's folder is refused, not read (the
    // same length, so the protobuf stays well formed).
    let location = b"external_data.onnx.data";
    let escaping = b"../ernal_data.onnx.data";
    let at = bytes.windows(location.len()).position(|w| w == location).expect("the location is in the model");
    let mut edited = bytes.clone();
    for start in (at..edited.len() - location.len()).filter(|&i| &bytes[i..i + location.len()] == location) {
        edited[start..start + location.len()].copy_from_slice(escaping);
    }
    std::fs::write(&alone, &edited).unwrap();
    let msg = refusal(&alone);
    assert!(msg.contains("`../ernal_data.onnx.data`, which is not a path inside the model's folder"), "{msg}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_command_line_writes_source_and_weights() {
    let dir = std::env::temp_dir().join(format!("blaze-onnx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("model.rs");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_blaze-onnx"))
        .arg(fixture("lenet.onnx"))
        .args(["--out".as_ref(), out.as_os_str(), "--name".as_ref(), "LeNet".as_ref()])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let source = std::fs::read_to_string(&out).unwrap();
    assert!(source.contains("pub struct LeNet {"), "{source}");
    assert!(dir.join("model.safetensors").exists());
    let failed = std::process::Command::new(env!("CARGO_BIN_EXE_blaze-onnx"))
        .arg(fixture("unknown_ops.onnx"))
        .args(["--out".as_ref(), dir.join("bad.rs").as_os_str()])
        .output()
        .unwrap();
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("Hardmax: pick, pick_again"));
    assert!(!dir.join("bad.rs").exists(), "a refused model writes nothing");
    // `--out` into folders that do not exist yet creates them.
    let nested = dir.join("src/models/lenet.rs");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_blaze-onnx"))
        .arg(fixture("lenet.onnx"))
        .args(["--out".as_ref(), nested.as_os_str()])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(nested.exists() && nested.with_extension("safetensors").exists());
    // A bad `--name` is reported as such.
    let named = std::process::Command::new(env!("CARGO_BIN_EXE_blaze-onnx"))
        .arg(fixture("lenet.onnx"))
        .args(["--out".as_ref(), dir.join("named.rs").as_os_str(), "--name".as_ref(), "le net".as_ref()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&named.stderr);
    assert!(!named.status.success() && stderr.contains("`le net` is not a Rust type name"), "{stderr}");
    assert!(!stderr.contains("not a valid ONNX model"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
