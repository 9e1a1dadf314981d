//! The tuner: the first matmul, sum, convolution (and its gradients) and
//! average pooling of a shape class measure their candidate kernels, keep
//! the fastest in the cache file, and a device opened later starts from
//! it; clearing forgets it. Without an adapter
//! the test prints a notice and passes, unless `BLAZE_REQUIRE_CUBECL=1`.

use blaze::Backend;
use blaze::cubecl::{CubeCl, CubeDevice, CubeOptions};
use blaze::prelude::*;

fn open(cache: &std::path::Path) -> Option<CubeDevice> {
    let options =
        CubeOptions { autotune: Some(true), autotune_cache: Some(cache.to_owned()), ..CubeOptions::default() };
    CubeDevice::probe_with(options)
}

/// A convolution, its two gradients, an average pooling and its gradient.
fn convs<B: Backend>(x: Vec<f32>, w: Vec<f32>, g: Vec<f32>, dev: &B::Device) -> Vec<Vec<f32>> {
    let o = Conv2dOptions { stride: [1, 1], padding: [1, 1], dilation: [1, 1], groups: 1 };
    let p = Pool2dOptions::new(2);
    let x = Tensor::<B, 4>::from_vec(x, [2, 3, 10, 10], dev);
    let w = Tensor::<B, 4>::from_vec(w, [8, 3, 3, 3], dev);
    let g = Tensor::<B, 4>::from_vec(g, [2, 8, 10, 10], dev);
    vec![
        x.conv2d(&w, None, o).to_vec::<f32>(),
        g.conv2d_input_grad(&w, [2, 3, 10, 10], o).to_vec::<f32>(),
        x.conv2d_weight_grad(&g, [8, 3, 3, 3], o).to_vec::<f32>(),
        g.avg_pool2d(p).to_vec::<f32>(),
        g.avg_pool2d(p).avg_pool2d_input_grad([2, 8, 10, 10], p).to_vec::<f32>(),
    ]
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

    // A convolution, its two gradients and an average pooling, each
    // tuned among its kernels and equal to the CPU's.
    let xs: Vec<f32> = (0..2 * 3 * 10 * 10).map(|i| ((i * 37) % 11) as f32 * 0.25 - 1.0).collect();
    let ws: Vec<f32> = (0..8 * 3 * 3 * 3).map(|i| ((i * 13) % 7) as f32 * 0.125 - 0.375).collect();
    let gs: Vec<f32> = (0..2 * 8 * 10 * 10).map(|i| ((i * 29) % 5) as f32 * 0.5 - 1.0).collect();
    let got = convs::<CubeCl>(xs.clone(), ws.clone(), gs.clone(), &dev);
    let want = convs::<Cpu>(xs, ws, gs, &CpuDevice);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g.iter().zip(w).all(|(a, b)| (a - b).abs() <= 1e-4 * (1.0 + b.abs())), "tuned op #{i}");
    }

    let choices = dev.autotune_choices();
    for op in ["conv2d:", "conv2d_input_grad:", "conv2d_weight_grad:", "avg_pool2d:", "avg_pool2d_input_grad:"] {
        assert!(choices.iter().any(|(key, _)| key.starts_with(op)), "no {op} choice in {choices:?}");
    }
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
