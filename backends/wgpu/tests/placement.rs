//! Ops never move data between devices: an op on tensors of two devices
//! panics naming the op and both devices, and `to_device` is how data
//! moves. Two devices on one adapter are two devices. Without an adapter
//! these tests print a notice and pass, unless `BLAZE_REQUIRE_WGPU=1`.

#[path = "../../../tests/common/kernels.rs"]
#[allow(dead_code)]
mod kernels;

use blaze::prelude::*;
use blaze::runtime::conformance::panic_message;
use blaze_wgpu::{Wgpu, WgpuDevice};
use kernels::row_sum;

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
