//! NumPy files as NumPy writes them (`tests/fixtures/make_npy_fixtures.py`):
//! `.npz` archives, stored and deflated, become datasets; arrays of every
//! dtype read as written; what cannot be read is an error naming the file
//! and the array.

use std::path::PathBuf;

use blaze::DataVec;
use blaze::data::{Dataset, InMemoryDataset, read_npy, read_npz};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npy").join(name)
}

#[test]
fn an_archive_becomes_a_dataset_of_its_named_arrays() {
    let data = InMemoryDataset::from_npz(&fixture("classes.npz"), "x", "y").expect("reads");
    assert_eq!((data.len(), data.sample_shape()), (10, &[2usize, 3][..]));
    let want: Vec<f32> = std::fs::read_to_string(fixture("classes_x.txt"))
        .expect("the values NumPy wrote")
        .lines()
        .map(|l| l.parse().expect("a number"))
        .collect();
    let all = data.batch(&(0..10).collect::<Vec<_>>());
    assert_eq!(all.inputs.to_vec::<f32>().expect("f32"), want);
    assert_eq!(all.targets.values, DataVec::I64((0..10).map(|i| i % 3).collect()));

    // Deflated (np.savez_compressed), f64 inputs read as f32, real targets.
    let reg = InMemoryDataset::from_npz(&fixture("regression.npz"), "inputs", "targets").expect("reads");
    let b = reg.batch(&[5]);
    assert_eq!((b.inputs.shape, b.targets.shape), (vec![1, 4], vec![1, 2]));
    assert!(matches!(b.targets.values, DataVec::F32(_)));
    let arrays = read_npz(&fixture("regression.npz")).expect("reads");
    assert_eq!(arrays.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["inputs", "targets"]);
}

#[test]
fn every_dtype_the_reader_takes_reads_as_written() {
    let i = read_npy(&fixture("int16.npy")).expect("int16");
    assert_eq!((i.shape, i.values), (vec![2, 2], DataVec::I64(vec![-3, 4, 300, -32768])));
    assert_eq!(read_npy(&fixture("uint8.npy")).expect("uint8").values, DataVec::I64(vec![0, 255, 7]));
    assert_eq!(read_npy(&fixture("bool.npy")).expect("bool").values, DataVec::Bool(vec![true, false, true]));
    assert_eq!(read_npy(&fixture("float64.npy")).expect("f64").values, DataVec::F64(vec![1.5, -2.25]));
}

#[test]
fn what_cannot_be_read_names_the_file_and_the_array() {
    let err = read_npy(&fixture("strings.npy")).expect_err("text").to_string();
    assert!(err.contains("strings.npy") && err.contains("dtype `<U2` is not one Blaze reads"), "{err}");
    let err = InMemoryDataset::from_npz(&fixture("mismatch.npz"), "x", "y").expect_err("4 and 3").to_string();
    assert!(err.contains("mismatch.npz") && err.contains("`x` holds 4 samples") && err.contains("[3]"), "{err}");
    let err = InMemoryDataset::from_npz(&fixture("classes.npz"), "x", "labels").expect_err("no labels").to_string();
    assert!(err.contains("no array named `labels` (the archive has: x, y)"), "{err}");
    // A truncated archive, and a .npy where an archive belongs.
    let dir = std::env::temp_dir().join(format!("blaze-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bytes = std::fs::read(fixture("classes.npz")).expect("fixture");
    let cut = dir.join("cut.npz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("written");
    let err = read_npz(&cut).expect_err("truncated").to_string();
    assert!(err.contains("cut.npz") && err.contains("not a zip archive"), "{err}");
    let err = read_npz(&fixture("uint8.npy")).expect_err("not an archive").to_string();
    assert!(err.contains("uint8.npy: not a zip archive"), "{err}");
    // An archive whose member is cut short inside.
    let mut broken = bytes.clone();
    let at = broken.windows(6).position(|w| w == b"\x93NUMPY").expect("a member");
    broken[at] = b'X';
    let bad = dir.join("bad.npz");
    std::fs::write(&bad, &broken).expect("written");
    let err = read_npz(&bad).expect_err("bad member").to_string();
    assert!(err.contains("bad.npz: array `x`: not a .npy file"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn float16_arrays_read_as_f16() {
    let h = read_npy(&fixture("float16.npy")).expect("f16");
    let want = [1.5, -0.1, 65504.0, f32::INFINITY].map(blaze::f16::from_f32).to_vec();
    assert_eq!((h.shape, h.values), (vec![4], DataVec::F16(want)));
}
