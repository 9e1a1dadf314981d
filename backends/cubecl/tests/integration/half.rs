//! 16-bit floats: f16 tensors live on an adapter with `SHADER_F16` (as
//! lavapipe has), bf16 ones (which WGSL lacks) on the host, and the tuned
//! f16 matmul agrees with the CPU's. Without an adapter the test prints a
//! notice and passes, unless `BLAZE_REQUIRE_CUBECL=1`.

use blaze::cubecl::{CubeCl, CubeDevice, CubeOptions};
use blaze::f16;
use blaze::prelude::*;
use blaze_fallback::Placed;

#[test]
fn f16_on_the_device_bf16_on_the_host() {
    let dir = std::env::temp_dir().join(format!("blaze-cubecl-half-{}", std::process::id()));
    let options =
        CubeOptions { autotune: Some(true), autotune_cache: Some(dir.join("autotune.tsv")), ..CubeOptions::default() };
    let dev = match CubeDevice::open(options) {
        Ok(d) => d,
        Err(e) if std::env::var("BLAZE_REQUIRE_CUBECL").is_ok_and(|v| v == "1") => {
            panic!("BLAZE_REQUIRE_CUBECL=1 but {e}")
        }
        Err(e) => return println!("skipping: {e}"),
    };
    let on_device = |t: &Tensor<CubeCl, 2>| matches!(t.storage(), Placed::Device(_));
    let (m, k, n) = (64, 96, 48);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 17) as f32 - 8.0) / 16.0).collect();
    let bf = Tensor::<CubeCl, 2>::from_vec(a.clone(), [m, k], &dev).to_dtype(DType::BF16);
    assert!(!on_device(&bf), "bf16 has no WGSL type: its tensors live on the host");
    if !dev.holds(DType::F16) {
        return println!("skipping the f16 checks: {} has no SHADER_F16", dev.adapter_name());
    }
    let x = Tensor::<CubeCl, 2>::from_vec(a.clone(), [m, k], &dev).to_dtype(DType::F16);
    let w = Tensor::<CubeCl, 2>::from_vec(b.clone(), [k, n], &dev).to_dtype(DType::F16);
    assert!(on_device(&x) && on_device(&w), "f16 tensors live on {}", dev.adapter_name());
    let y = x.matmul(&w);
    assert!(on_device(&y) && y.dtype() == DType::F16);
    // Every product and partial sum here is exact in f32, so the only
    // rounding is the result's: the CPU's f16 product must match exactly.
    let want = Tensor::<Cpu, 2>::from_vec(a, [m, k], &CpuDevice)
        .to_dtype(DType::F16)
        .matmul(&Tensor::from_vec(b, [k, n], &CpuDevice).to_dtype(DType::F16));
    assert_eq!(y.to_vec::<f16>(), want.to_vec::<f16>(), "the tuned f16 matmul");
    let choices = dev.autotune_choices();
    assert!(choices.iter().any(|(key, _)| key.starts_with("matmul:f16:")), "f16 tuned apart: {choices:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
