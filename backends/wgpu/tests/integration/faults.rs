//! Device faults come back as errors from the fallible entry points
//! (`nn::to_device`, `fit`, `launch`) instead of panics inside an op: an
//! allocation beyond the adapter's limits (tested on a device opened with
//! a deliberately small one) and a lost device. Without an adapter these
//! tests print a notice and pass, unless `BLAZE_REQUIRE_WGPU=1`.

use crate::common_kernels::row_sum;
use blaze::data::{DataLoader, InMemoryDataset};
use blaze::nn;
use blaze::optim::Sgd;
use blaze::prelude::*;
use blaze::runtime::kernel::ScalarArg;
use blaze::train::{FitConfig, TrainError, fit};
use blaze_conformance::panic_message;
use blaze_wgpu::{DeviceOptions, HostBuffer, WgpuDevice, WgpuError, launch};

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

/// 2 MiB of weights in `fc`.
#[model(input = [1024])]
pub struct Wide {
    fc: Linear<1024, 512>,
    act: Relu,
    out: Linear<512, 4>,
}

/// 16 KiB of weights, but its inputs can be large.
#[model(input = [1024])]
pub struct Narrow {
    fc: Linear<1024, 4>,
}

const MIB: u64 = 1 << 20;

/// A fresh device whose largest buffer is 1 MiB.
fn small() -> Option<WgpuDevice> {
    WgpuDevice::probe()?;
    let options = DeviceOptions { max_buffer_bytes: Some(MIB), ..DeviceOptions::default() };
    Some(WgpuDevice::open(options).expect("an adapter opens with a lower limit"))
}

fn dataset(n: usize, features: usize) -> InMemoryDataset {
    let x: Vec<f32> = (0..n * features).map(|i| (i % 7) as f32 * 0.1).collect();
    InMemoryDataset::new(x, &[features], (0..n as i64).map(|i| i % 4).collect()).expect("consistent")
}

/// Two epochs of `fit` on `n` samples in batches of `batch`, on the
/// model's device.
fn train(model: &mut Narrow<Wgpu>, n: usize, batch: usize) -> Result<(), TrainError> {
    let mut train = DataLoader::new(dataset(n, 1024), batch);
    let mut val = DataLoader::new(dataset(8, 1024), 8);
    let config = FitConfig { epochs: 2, verbose: false, ..FitConfig::default() };
    fit(model, &mut Sgd::new(0.1), &mut train, &mut val, &config).map(drop)
}

#[test]
fn moving_a_model_beyond_the_limits_is_an_error_and_leaves_it_where_it_was() {
    let Some(small) = small() else { return };
    let home = WgpuDevice::default();
    let mut model = Wide::<Wgpu>::new_seeded(0, &home);
    let x = Tensor::<Wgpu, 2>::ones([2, 1024], &home);
    let before = model.forward(&x).to_vec::<f32>();
    let err = nn::to_device(&mut model, &small).expect_err("a 2 MiB weight on a 1 MiB device");
    assert!(err.message.contains("exceeds this device's largest buffer of 1048576 bytes"), "{err}");
    assert!(err.device.contains(&small.adapter_name()), "{err}");
    assert!(model.fc.weight.device() == home, "the model stayed on its device");
    assert_eq!(model.forward(&x).to_vec::<f32>(), before, "and still works there");
    // A model built there records the same fault instead of panicking.
    let fresh = self::small().expect("an adapter");
    drop(Wide::<Wgpu>::new_seeded(1, &fresh));
    let err = fresh.synchronize().expect_err("beyond the limit");
    assert!(err.message.contains("exceeds"), "{err}");
}

#[test]
fn fit_returns_the_fault_of_a_batch_beyond_the_limits() {
    let Some(small) = small() else { return };
    let mut model = Narrow::<Wgpu>::new_seeded(0, &small);
    assert!(small.synchronize().is_ok(), "the model fits");
    // Batches of 512 x 1024 f32: 2 MiB each.
    let err = train(&mut model, 1024, 512).expect_err("the batch does not fit");
    let TrainError::Device(e) = &err else { panic!("{err}") };
    assert!(e.message.contains("2097152 bytes exceeds"), "{err}");
}

#[test]
fn a_launch_beyond_the_limits_is_an_error() {
    let Some(small) = small() else { return };
    let x = vec![1.0f32; 300_000]; // 1.2 MB
    let mut out = vec![0.0f32; 1];
    let mut bufs = [HostBuffer::Input(&x), HostBuffer::Output(&mut out)];
    let err = launch::<row_sum::Kernel>(&small, 1, &mut bufs, &[ScalarArg::U32(300_000)]).expect_err("too large");
    assert!(err.to_string().starts_with("row_sum: buffer 0 holds 1200000 bytes, more than"), "{err}");
    // Within the limit it runs.
    let x = vec![1.0f32; 1000];
    let mut bufs = [HostBuffer::Input(&x), HostBuffer::Output(&mut out)];
    launch::<row_sum::Kernel>(&small, 1, &mut bufs, &[ScalarArg::U32(1000)]).expect("fits");
    assert_eq!(out, [1000.0]);
}

#[test]
fn a_lost_device_is_an_error_not_a_panic() {
    if WgpuDevice::probe().is_none() {
        return;
    }
    let dev = WgpuDevice::new().expect("a second device");
    let mut model = Narrow::<Wgpu>::new_seeded(0, &dev);
    let x = Tensor::<Wgpu, 2>::ones([4, 1024], &dev);
    assert_eq!(model.forward(&x).to_vec::<f32>().len(), 16);
    dev.destroy();
    // Ops on the lost device record nothing and do not panic.
    let y = model.forward(&x).relu().sum();
    let err = dev.synchronize().expect_err("lost");
    assert!(err.message.contains("destroyed"), "{err}");
    let read = panic_message(|| {
        let _ = y.item();
    })
    .expect("reading a value back panics");
    assert!(read.contains("destroyed") && read.contains("synchronize"), "{read}");
    let err = train(&mut model, 16, 8).expect_err("lost");
    assert!(matches!(err, TrainError::Device(_)), "{err}");
    let out = &mut [0.0f32];
    let err = launch::<row_sum::Kernel>(
        &dev,
        1,
        &mut [HostBuffer::Input(&[1.0]), HostBuffer::Output(out)],
        &[ScalarArg::U32(1)],
    )
    .expect_err("lost");
    assert!(matches!(err, WgpuError::Fault(_)), "{err}");
}
