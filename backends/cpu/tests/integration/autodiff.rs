//! The conformance suite on `Autodiff<Cpu>`: every op computes the same
//! values through the autodiff decorator (and the tape checks run on a
//! doubly wrapped backend).

use blaze_runtime::autodiff::Autodiff;

blaze_conformance::conformance_suite!(Autodiff<blaze_cpu::Cpu>, blaze_cpu::CpuDevice);
