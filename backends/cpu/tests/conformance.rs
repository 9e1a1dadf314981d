//! The runtime's conformance suite on the CPU backend.

blaze_runtime::conformance_suite!(blaze_cpu::Cpu, blaze_cpu::CpuDevice);
