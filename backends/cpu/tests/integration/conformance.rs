//! The runtime's conformance suite on the CPU backend.

blaze_conformance::conformance_suite!(blaze_cpu::Cpu, blaze_cpu::CpuDevice);

/// `Device::run` moves the work onto a thread of the pool, where parallel
/// ops share it with the caller, and stays put when already there.
#[test]
fn run_puts_work_on_a_pool_thread() {
    use blaze_runtime::Device;
    assert_eq!(rayon::current_thread_index(), None);
    let cpu = blaze_cpu::CpuDevice;
    let outer = cpu.run(|| {
        let here = rayon::current_thread_index();
        (here, cpu.run(rayon::current_thread_index))
    });
    assert!(outer.0.is_some());
    assert_eq!(outer.0, outer.1);
}
