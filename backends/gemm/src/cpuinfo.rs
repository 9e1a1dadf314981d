//! What the CPU says about itself through CPUID (vendor, family and model,
//! cache sizes), and how many 512-bit FMAs it starts per cycle, which CPUID
//! does not say: the GEMM picks its register tile and blocking from these.

use std::sync::OnceLock;

/// The CPU's maker, from CPUID leaf 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// `AuthenticAMD`.
    Amd,
    /// `GenuineIntel`.
    Intel,
    /// Anything else, or not x86.
    Other,
}

/// The facts the GEMM plans with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// The maker.
    pub vendor: Vendor,
    /// The display family (base plus extended, as the vendors number them:
    /// 0x19 is AMD Zen 3 and 4, 0x1A Zen 5, 6 most Intel cores).
    pub family: u32,
    /// The display model.
    pub model: u32,
    /// Level-1 data cache of one core, bytes.
    pub l1d: usize,
    /// Level-2 cache of one core, bytes.
    pub l2: usize,
    /// Last-level cache, bytes (shared by the cores that report it).
    pub l3: usize,
    /// Whether the cache sizes came from CPUID (otherwise they are the
    /// defaults below: some hypervisors hide the cache leaves).
    pub caches_reported: bool,
}

/// Cache sizes assumed when CPUID does not give them: those of the smallest
/// x86 server cores of the last decade.
const DEFAULT_CACHES: (usize, usize, usize) = (32 << 10, 1 << 20, 8 << 20);

/// This CPU's facts, read once.
pub fn cpu_info() -> &'static CpuInfo {
    static INFO: OnceLock<CpuInfo> = OnceLock::new();
    INFO.get_or_init(read)
}

#[cfg(target_arch = "x86_64")]
fn read() -> CpuInfo {
    use std::arch::x86_64::{__cpuid, __cpuid_count};

    let leaf0 = __cpuid(0);
    let vendor = match [leaf0.ebx, leaf0.edx, leaf0.ecx].map(u32::to_le_bytes) {
        [[b'A', b'u', b't', b'h'], [b'e', b'n', b't', b'i'], [b'c', b'A', b'M', b'D']] => Vendor::Amd,
        [[b'G', b'e', b'n', b'u'], [b'i', b'n', b'e', b'I'], [b'n', b't', b'e', b'l']] => Vendor::Intel,
        _ => Vendor::Other,
    };
    let eax = __cpuid(1).eax;
    let base_family = (eax >> 8) & 0xF;
    let family = if base_family == 0xF { base_family + ((eax >> 20) & 0xFF) } else { base_family };
    let base_model = (eax >> 4) & 0xF;
    let model =
        if base_family == 0x6 || base_family == 0xF { base_model | (((eax >> 16) & 0xF) << 4) } else { base_model };

    // Both vendors describe each cache in one sub-leaf of the same layout:
    // Intel in leaf 4, AMD in 0x8000001D (with topology extensions).
    let leaf = match vendor {
        Vendor::Intel if leaf0.eax >= 4 => Some(4),
        Vendor::Amd if __cpuid(0x8000_0000).eax >= 0x8000_001D && __cpuid(0x8000_0001).ecx & (1 << 22) != 0 => {
            Some(0x8000_001D)
        }
        _ => None,
    };
    let (mut l1d, mut l2, mut l3) = (0, 0, 0);
    if let Some(leaf) = leaf {
        for sub in 0..16 {
            // An unknown sub-leaf reads as a null cache.
            let r = __cpuid_count(leaf, sub);
            let kind = r.eax & 0x1F;
            if kind == 0 {
                break;
            }
            let level = (r.eax >> 5) & 0x7;
            let ways = ((r.ebx >> 22) & 0x3FF) as usize + 1;
            let partitions = ((r.ebx >> 12) & 0x3FF) as usize + 1;
            let line = (r.ebx & 0xFFF) as usize + 1;
            let sets = r.ecx as usize + 1;
            let size = ways * partitions * line * sets;
            // Kind 1 is data, 2 instructions, 3 unified.
            match (level, kind) {
                (1, 1 | 3) => l1d = size,
                (2, 1 | 3) => l2 = size,
                (3, 1 | 3) => l3 = size,
                _ => {}
            }
        }
    }
    let caches_reported = l1d > 0 && l2 > 0;
    let (d1, d2, d3) = DEFAULT_CACHES;
    CpuInfo {
        vendor,
        family,
        model,
        l1d: if caches_reported { l1d } else { d1 },
        l2: if caches_reported { l2 } else { d2 },
        l3: if l3 > 0 { l3 } else { d3 },
        caches_reported,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn read() -> CpuInfo {
    let (l1d, l2, l3) = DEFAULT_CACHES;
    CpuInfo { vendor: Vendor::Other, family: 0, model: 0, l1d, l2, l3, caches_reported: false }
}

/// 512-bit FMAs the core starts per cycle, 1 or 2, measured: [`fma_chains`]
/// run once in 512-bit and once in 256-bit registers. Cores with two
/// 512-bit ports (Intel Xeon Gold 6000 and Platinum, Ice Lake and later
/// servers) finish both in the same time; cores with one (client Intel
/// cores, Xeon Silver and Bronze) or that split a 512-bit FMA into two
/// 256-bit halves (AMD Zen 4) take twice as long for the 512-bit form.
/// About 0.2 ms, run once; 0 on CPUs without AVX-512.
pub fn fma_ports_512() -> u32 {
    static PORTS: OnceLock<u32> = OnceLock::new();
    *PORTS.get_or_init(|| {
        /// Loop trips per timed call.
        const ITERS: usize = 2048;
        let time = |wide: bool| {
            let start = std::time::Instant::now();
            std::hint::black_box(fma_chains(wide, ITERS));
            start.elapsed()
        };
        if fma_chains(true, 0).is_none() {
            return 0;
        }
        // The first 512-bit instructions may run slowly while the core
        // powers its upper lanes: warm up, then keep each form's fastest
        // of several alternating runs.
        time(true);
        let (mut wide, mut narrow) = (std::time::Duration::MAX, std::time::Duration::MAX);
        for _ in 0..8 {
            wide = wide.min(time(true));
            narrow = narrow.min(time(false));
        }
        if wide.as_secs_f64() < 1.4 * narrow.as_secs_f64() { 2 } else { 1 }
    })
}

/// Independent chains in [`fma_chains`]: a chain waits 4 cycles for its
/// last result, and a core issues up to two FMAs a cycle, so 8 keep it
/// busy; 12 leave room and still fit the 16 registers of AVX2 with the two
/// operands.
pub const FMA_CHAINS: usize = 12;

/// [`FMA_CHAINS`] independent chains of `iters` fused multiply-adds each,
/// in 512-bit registers (`wide`) or 256-bit ones, and nothing else: the
/// loop the port probe times, and the `fma_peak` benchmarks' ceiling.
/// Returns the chains' sum, or `None` when the CPU lacks that form.
pub fn fma_chains(wide: bool, iters: usize) -> Option<f32> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (both): the CPU has the features each loop is compiled
        // for (the facts here sit below `simd`'s levels, which read them).
        if wide && std::arch::is_x86_feature_detected!("avx512f") {
            return Some(unsafe { fma_chains_512(iters) });
        }
        if !wide && std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Some(unsafe { fma_chains_256(iters) });
        }
    }
    let _ = (wide, iters);
    None
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_chains_512(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
    let mut acc = [_mm512_set1_ps(1.0); FMA_CHAINS];
    for _ in 0..iters {
        for v in acc.iter_mut() {
            *v = _mm512_fmadd_ps(*v, a, b);
        }
    }
    acc.iter().fold(0.0, |s, &v| s + _mm512_reduce_add_ps(v))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains_256(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
    let mut acc = [_mm256_set1_ps(1.0); FMA_CHAINS];
    for _ in 0..iters {
        for v in acc.iter_mut() {
            *v = _mm256_fmadd_ps(*v, a, b);
        }
    }
    let sum = acc.iter().fold(_mm256_setzero_ps(), |s, &v| _mm256_add_ps(s, v));
    // SAFETY: __m256 is eight f32 lanes.
    let lanes: [f32; 8] = unsafe { std::mem::transmute(sum) };
    lanes.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caches_are_plausible_and_nested() {
        let info = cpu_info();
        assert!(info.l1d >= 8 << 10 && info.l1d <= 1 << 20, "{info:?}");
        assert!(info.l2 > info.l1d && info.l3 >= info.l2 / 4, "{info:?}");
    }

    #[test]
    fn the_fma_probe_says_one_or_two_ports_where_there_is_avx512() {
        let ports = fma_ports_512();
        if fma_chains(true, 0).is_some() {
            assert!(ports == 1 || ports == 2, "{ports}");
        } else {
            assert_eq!(ports, 0);
        }
    }
}
