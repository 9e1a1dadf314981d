//! Runs a loop compiled for the widest vector ISA the CPU has. The crate is
//! built for baseline x86-64 (SSE2), so hot loops are wrapped in
//! [`dispatch`]: the closure is inlined into a copy compiled with AVX-512 or
//! AVX2+FMA enabled, chosen at run time.

/// Calls `f` inside a function compiled for the best available ISA.
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
            return unsafe { x86::v4(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { x86::v3(f) };
        }
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
