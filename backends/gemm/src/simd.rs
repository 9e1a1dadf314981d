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

/// The widest ISA this CPU runs (detection is cached by std): every
/// feature the code compiled for that level enables must be present.
#[inline(always)]
pub fn isa() -> Isa {
    if Isa::V4.runs_here() {
        Isa::V4
    } else if Isa::V3.runs_here() {
        Isa::V3
    } else {
        Isa::Base
    }
}

impl Isa {
    /// Whether this CPU has every feature `self`'s code is compiled with
    /// (the `target_feature` lists below and in the GEMM kernels).
    #[inline]
    pub fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let v3 = has!("avx2") && has!("fma") && has!("bmi1") && has!("bmi2");
            match self {
                Isa::V4 => v3 && has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw"),
                Isa::V3 => v3,
                Isa::Base => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Isa::Base
        }
    }
}

/// Calls `f` inside a function compiled for the best available ISA.
///
/// Only code inlined into `f` gets the ISA: a call `f` makes to a function
/// that is not inlined runs baseline code (so explicit intrinsics need
/// their own `#[target_feature]` function, as the GEMM kernels have).
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    run_at(isa(), f)
}

/// Calls `f` inside the copy compiled for `isa`, a level `runs_here`
/// checked.
#[inline(always)]
fn run_at<R>(isa: Isa, f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: the caller's level, every feature of which `runs_here` checked.
        Isa::V4 => return unsafe { x86::v4(f) },
        // SAFETY: as above.
        Isa::V3 => return unsafe { x86::v3(f) },
        Isa::Base => {}
    }
    f()
}

/// [`dispatch`] for loops that memory bandwidth bounds (an add, a bias,
/// an optimizer update over arrays larger than the caches): on AMD cores
/// the 256-bit (AVX2) copy, since there a streaming add ran about 20%
/// slower with 512-bit loads and stores (2.1-2.4 ms against 1.65-1.95 ms
/// over 4M floats, one core); elsewhere the widest.
#[inline(always)]
pub fn dispatch_stream<R>(f: impl FnOnce() -> R) -> R {
    run_at(stream_isa(), f)
}

/// [`dispatch_stream`] for a loop bound by memory, else [`dispatch`].
#[inline(always)]
pub fn dispatch_bound<R>(memory_bound: bool, f: impl FnOnce() -> R) -> R {
    run_at(if memory_bound { stream_isa() } else { isa() }, f)
}

/// The ISA [`dispatch_stream`] uses, decided once.
fn stream_isa() -> Isa {
    use std::sync::OnceLock;
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| match isa() {
        Isa::V4 if crate::cpuinfo::cpu_info().vendor == crate::cpuinfo::Vendor::Amd => Isa::V3,
        other => other,
    })
}

/// Starts loading the cache lines of `bytes` bytes from `at` into L1, for
/// a loop to read soon; `for_write` asks for them owned, as a store
/// needs them (`prefetchw`), so that the store does not wait on a read
/// for ownership. Any address will do: a prefetch never faults, and it
/// changes nothing a program can see. A no-op off x86.
#[inline(always)]
pub fn prefetch(at: *const u8, bytes: usize, for_write: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_ET0, _MM_HINT_T0, _mm_prefetch};
        let line = |p: *const u8| {
            // SAFETY: a prefetch reads and writes nothing a program can see.
            unsafe {
                if for_write {
                    _mm_prefetch::<_MM_HINT_ET0>(p.cast());
                } else {
                    _mm_prefetch::<_MM_HINT_T0>(p.cast());
                }
            }
        };
        let mut off = 0;
        while off < bytes {
            line(at.wrapping_add(off));
            off += 64;
        }
        // The last byte's line, which a run that starts inside a line
        // reaches past the steps above.
        if bytes > 0 {
            line(at.wrapping_add(bytes - 1));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, bytes, for_write);
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
