//! The tuner: the first matmul and sum of a shape class measure their
//! candidate kernels, keep the fastest in the cache file, and a device
//! opened later starts from it; clearing forgets it. Without an adapter
//! the test prints a notice and passes, unless `BLAZE_REQUIRE_CUBECL=1`.

use blaze::cubecl::{CubeCl, CubeDevice, CubeOptions};
use blaze::prelude::*;

fn open(cache: &std::path::Path) -> Option<CubeDevice> {
    let options =
        CubeOptions { autotune: Some(true), autotune_cache: Some(cache.to_owned()), ..CubeOptions::default() };
    match CubeDevice::open(options) {
        Ok(d) => Some(d),
        Err(e) if std::env::var("BLAZE_REQUIRE_CUBECL").is_ok_and(|v| v == "1") => {
            panic!("BLAZE_REQUIRE_CUBECL=1 but {e}")
        }
        Err(e) => {
            println!("skipping: {e}");
            None
        }
    }
}

#[test]
fn choices_are_measured_cached_and_cleared() {
    let dir = std::env::temp_dir().join(format!("blaze-cubecl-autotune-{}", std::process::id()));
    let cache = dir.join("autotune.tsv");
    let _ = std::fs::remove_file(&cache);
    let Some(dev) = open(&cache) else { return };
    let (m, k, n) = (48, 40, 24);
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5).collect();
    let got = Tensor::<CubeCl, 2>::from_vec(a.clone(), [m, k], &dev)
        .matmul(&Tensor::from_vec(b.clone(), [k, n], &dev))
        .to_vec::<f32>();
    let want = Tensor::<Cpu, 2>::from_vec(a, [m, k], &CpuDevice)
        .matmul(&Tensor::from_vec(b, [k, n], &CpuDevice))
        .to_vec::<f32>();
    assert_eq!(got, want, "the tuned matmul");
    let rows = Tensor::<CubeCl, 2>::from_vec((0..600).map(|i| i as f32).collect(), [3, 200], &dev);
    assert_eq!(rows.sum_dim(1).to_vec::<f32>(), [19900.0, 59900.0, 99900.0], "the tuned sum");

    let choices = dev.autotune_choices();
    let matmul = choices.iter().find(|(key, _)| key == "matmul:b1:m64:k64:n32").expect("the matmul's shape class");
    let sum = choices.iter().find(|(key, _)| key == "sum:o4:n256:i1").expect("the sum's shape class");
    let text = std::fs::read_to_string(&cache).expect("the cache file");
    for (key, name) in [matmul, sum] {
        assert!(text.lines().any(|l| l.ends_with(&format!("\t{key}\t{name}"))), "{key} -> {name} in:\n{text}");
    }

    // A device opened later starts from the file.
    let again = open(&cache).expect("the adapter is still there");
    let loaded = again.autotune_choices();
    assert!(loaded.contains(matmul) && loaded.contains(sum), "{loaded:?}");

    again.clear_autotune_cache().expect("clearing");
    assert!(again.autotune_choices().is_empty());
    let text = std::fs::read_to_string(&cache).expect("the cache file");
    assert!(!text.contains(&matmul.0), "cleared, yet:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
