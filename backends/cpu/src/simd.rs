//! Runs a loop compiled for the widest vector ISA the CPU has. The crate is
//! built for baseline x86-64 (SSE2), so hot loops are wrapped in
//! [`dispatch`]: the closure is inlined into a copy compiled with AVX-512 or
//! AVX2+FMA enabled, chosen at run time.

/// The vector ISA levels the crate compiles hot loops for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512 (x86-64-v4).
    V4,
    /// AVX2 and FMA (x86-64-v3).
    V3,
    /// Whatever the target baseline has.
    Base,
}

/// The widest ISA this CPU runs (detection is cached by std).
#[inline(always)]
pub fn isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::V4;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Isa::V3;
        }
    }
    Isa::Base
}

/// Calls `f` inside a function compiled for the best available ISA.
///
/// Only code inlined into `f` gets the ISA: a call `f` makes to a function
/// that is not inlined runs baseline code (so explicit intrinsics need
/// their own `#[target_feature]` function, as the GEMM kernels have).
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
        Isa::V4 => return unsafe { x86::v4(f) },
        // SAFETY: the CPU has AVX2 and FMA.
        Isa::V3 => return unsafe { x86::v3(f) },
        Isa::Base => {}
    }
    f()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,bmi1,bmi2")]
    pub unsafe fn v4<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx2,fma,bmi1,bmi2")]
    pub unsafe fn v3<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}
