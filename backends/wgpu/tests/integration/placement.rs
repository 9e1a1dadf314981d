//! Where tensors live. Ops never move data between devices: an op on
//! tensors of two devices panics naming the op and both devices, and
//! `to_device` is how data moves (two devices on one adapter are two
//! devices). On one device, `HostFallback` keeps f64 and i64 on the host
//! and moves results where their dtype lives, at the documented points
//! only; operands in two places panic. Without an adapter these tests
//! print a notice and pass, unless `BLAZE_REQUIRE_WGPU=1`.

use crate::common_kernels::row_sum;
use blaze::prelude::*;
use blaze::{DataVec, TensorData};
use blaze_conformance::panic_message;
use blaze_wgpu::WgpuDevice;

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

kernel! {
    /// `a + (b - a) * t`.
    pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
        a + (b - a) * t
    }
}

/// An op to run, by the name its panic starts with.
type Case<'a> = (&'static str, Box<dyn FnOnce() + 'a>);

/// The shared device and a second one.
fn two_devices() -> Option<(WgpuDevice, WgpuDevice)> {
    let first = WgpuDevice::probe()?;
    Some((first, WgpuDevice::new().expect("a second device")))
}

#[test]
fn an_op_on_two_devices_panics_naming_the_op_and_both() {
    let Some((here, there)) = two_devices() else { return };
    let a = Tensor::<Wgpu, 2>::ones([2, 3], &here);
    let b = Tensor::<Wgpu, 2>::ones([2, 3], &there);
    let index = Tensor::<Wgpu, 2>::from_vec(vec![0i64; 6], [2, 3], &there);
    let bias = Tensor::<Wgpu, 1>::ones([3], &there);
    let mut out = Tensor::<Wgpu, 1>::zeros([2], &there);
    let cases: Vec<Case<'_>> = vec![
        ("add", Box::new(|| drop(&a + &b))),
        ("lt", Box::new(|| drop(a.lt(&b)))),
        ("where_cond", Box::new(|| drop(Tensor::where_cond(&a.lt(&a), &a, &b)))),
        ("matmul", Box::new(|| drop(a.matmul(&b.transpose(0, 1))))),
        ("bias_act", Box::new(|| drop(a.clone().bias_act(Some(&bias), 1, None)))),
        ("cat", Box::new(|| drop(Tensor::cat(&[a.clone(), b.clone()], 0)))),
        ("gather", Box::new(|| drop(a.gather(1, &index)))),
        ("lerp", Box::new(|| drop(lerp(&a, &b, 0.5)))),
        ("row_sum", Box::new(|| row_sum::launch(2, &a, &mut out, 3))),
    ];
    for (op, f) in cases {
        let message = panic_message(f).unwrap_or_else(|| panic!("{op} ran across two devices"));
        assert!(message.starts_with(&format!("{op}: tensors on different devices, ")), "{message}");
        assert!(message.contains(&format!("{here:?}")) && message.contains(&format!("{there:?}")), "{message}");
    }
    // Neither device faulted: the checks come before any work is recorded.
    here.synchronize().expect("the first device is fine");
    there.synchronize().expect("the second device is fine");
    // Moving one operand is how data crosses.
    let sum = &a + &b.to_device(&here);
    assert_eq!(sum.to_vec::<f32>(), vec![2.0; 6]);
}

#[test]
fn devices_name_their_adapter_and_the_order_they_opened() {
    let Some((here, there)) = two_devices() else { return };
    assert_ne!(here, there);
    let (a, b) = (format!("{here:?}"), format!("{there:?}"));
    assert_ne!(a, b, "two devices read differently");
    for name in [&a, &b] {
        assert!(name.starts_with("WgpuDevice(#") && name.contains(&here.adapter_name()), "{name}");
    }
}

#[test]
fn wide_dtypes_live_on_the_host_and_results_move_where_their_dtype_lives() {
    use blaze::runtime::fallback::Placed;
    let Some(dev) = WgpuDevice::probe() else { return };
    let x = Tensor::<Wgpu, 2>::from_vec(vec![1.0f32, 5.0, 3.0, 2.0, 0.0, 7.0], [2, 3], &dev);
    assert!(matches!(x.storage(), Placed::Device(_)), "f32 on the device");
    let wide = x.to_dtype(DType::F64);
    assert!(matches!(wide.storage(), Placed::Host(..)), "f64 on the host");
    assert!(wide.device() == dev, "and still of the device");
    // An i64 result of a device op is read back; its values are exact.
    let arg = x.argmax(1);
    assert!(matches!(arg.storage(), Placed::Host(..)));
    assert_eq!(arg.to_vec::<i64>(), [1, 2]);
    // Bools of a host comparison go to the device.
    let mask = wide.gt_scalar(2.5);
    assert!(matches!(mask.storage(), Placed::Device(_)));
    assert_eq!(mask.to_vec::<bool>(), [false, true, true, false, false, true]);
    // A host index drives a device gather.
    let index = Tensor::<Wgpu, 2>::from_vec(vec![2i64, 0, 1, 1], [2, 2], &dev);
    assert_eq!(x.gather(1, &index).to_vec::<f32>(), [3.0, 1.0, 0.0, 0.0]);
}

#[test]
fn operands_in_two_places_panic_naming_the_op_and_the_places() {
    use blaze::runtime::fallback::Placed;
    use blaze::{BinaryOp, Primitives};
    let Some(dev) = WgpuDevice::probe() else { return };
    let on_device = Wgpu::from_data(TensorData { shape: vec![2], values: DataVec::F32(vec![1.0, 2.0]) }, &dev);
    let on_host: Placed<_, _> = Placed::Host(
        blaze::Cpu::from_data(TensorData { shape: vec![2], values: DataVec::F32(vec![1.0, 2.0]) }, &CpuDevice),
        dev.clone(),
    );
    let message = panic_message(|| drop(Wgpu::binary(BinaryOp::Add, &on_device, &on_host))).expect("a panic");
    assert_eq!(
        message,
        "add: operands on the device and on the host (device f32, host f32); each op runs in one place"
    );
}

#[test]
fn the_native_backend_refuses_wide_dtypes_naming_the_way_to_use_it() {
    let Some(dev) = WgpuDevice::probe() else { return };
    let message = panic_message(|| {
        let _ = Tensor::<blaze_wgpu::WgpuNative, 1>::from_vec(vec![1.0f64], [1], &dev);
    })
    .expect("a panic");
    assert!(message.contains("f64 tensors live on the host") && message.contains("HostFallback"), "{message}");
}
