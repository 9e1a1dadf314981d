//! bf16 products against f64 sums, on every kernel this CPU runs.

use blaze_runtime::bf16;

use super::*;

/// f32 values with both signs and all 24 bits of mantissa random.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0
        })
        .collect()
}

/// Values from a 64-byte boundary, as tensors' are (so that AMX reads
/// a row-major bf16 `A` in place).
struct Lines<T> {
    lines: Vec<Line>,
    of: std::marker::PhantomData<T>,
}

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

impl<T: Copy> Lines<T> {
    fn of(values: impl ExactSizeIterator<Item = T>) -> Lines<T> {
        let mut lines =
            Lines { lines: vec![Line([0; 64]); (values.len() * size_of::<T>()).div_ceil(64)], of: Default::default() };
        let at = lines.lines.as_mut_ptr().cast::<T>();
        // SAFETY: the lines hold `values.len()` values of `T`.
        values.enumerate().for_each(|(i, v)| unsafe { at.add(i).write(v) });
        lines
    }

    fn as_ptr(&self) -> *const T {
        self.lines.as_ptr().cast()
    }

    fn at(&self, i: usize) -> T {
        assert!((i + 1) * size_of::<T>() <= 64 * self.lines.len());
        // SAFETY: value i lies in the lines (checked).
        unsafe { self.as_ptr().add(i).read() }
    }
}

/// Every shape class (edges of the tile, odd depths, blocks split in
/// depth, rows and columns), operands row- and column-major, with and
/// without accumulation, on each kernel this CPU runs with its own
/// blocking and with blocks small enough to split every shape:
/// `check(plan, m, n, k, a_t, b_t, add)`.
fn for_each_case(check: impl Fn(&Bf16Plan, usize, usize, usize, bool, bool, bool)) {
    let kernels: Vec<Bf16Kernel> = Bf16Kernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
    if !kernels.contains(&Bf16Kernel::Amx) {
        eprintln!("notice: this CPU (or OS) lends no AMX tiles; the AMX bf16 kernel is not tested here");
    }
    let shapes = [
        (1, 1, 1),
        (4, 9, 0),
        (1, 40, 3),
        (1, 7, 100),
        (1, 70, 32),
        (20, 16, 9),
        (33, 11, 70),
        (3, 5, 7),
        (8, 32, 2),
        (9, 33, 3),
        (17, 70, 129),
        (40, 100, 65),
        (64, 64, 64),
        (70, 65, 97),
        // Rows read in place by AMX (whole tiles of depth), with a
        // ragged last panel of rows.
        (70, 40, 64),
        (96, 33, 128),
    ];
    let plans = kernels
        .iter()
        .flat_map(|&kernel| [Bf16Plan::for_kernel(kernel, cpu_info()), Bf16Plan { kernel, kc: 16, mc: 32, nc: 64 }]);
    for plan in plans {
        for &(m, n, k) in &shapes {
            for (a_t, b_t, add) in
                [(false, false, false), (true, true, true), (false, true, false), (true, false, true)]
            {
                check(&plan, m, n, k, a_t, b_t, add);
            }
        }
    }
}

/// The strides of an `r x c` operand: row-major, or stored transposed.
fn strides(r: usize, c: usize, t: bool) -> (isize, isize) {
    if t { (1, r as isize) } else { (c as isize, 1) }
}

/// bf16 operands and result, against sums in f64 of the same bf16,
/// rounded.
#[test]
fn bf16_products_match_f64_sums() {
    if !bf16_kernel_runs_here() {
        eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 GEMM kernel is not tested here");
        return;
    }
    for_each_case(|plan, m, n, k, a_t, b_t, add| {
        let a = Lines::of(values(m * k, 1).into_iter().map(bf16::from_f32));
        let b = Lines::of(values(k * n, 2).into_iter().map(bf16::from_f32));
        let ((a_rs, a_cs), (b_rs, b_cs)) = (strides(m, k, a_t), strides(k, n, b_t));
        let at = |i: usize, p: usize| a.at(i * a_rs as usize + p * a_cs as usize).to_f64();
        let bt = |p: usize, j: usize| b.at(p * b_rs as usize + j * b_cs as usize).to_f64();
        let start: Vec<bf16> = (0..m * n).map(|i| bf16::from_f32((i % 7) as f32 - 3.0)).collect();
        let mut got = start.clone();
        // SAFETY: the blocks are m x k, k x n and m x n as addressed;
        // the CPU runs the kernel.
        unsafe {
            let lhs = Strided { ptr: a.as_ptr(), rs: a_rs, cs: a_cs };
            let rhs = Strided { ptr: b.as_ptr(), rs: b_rs, cs: b_cs };
            bf16::serial(plan, m, n, k, got.as_mut_ptr(), n as isize, lhs, rhs, add);
        }
        for i in 0..m {
            for j in 0..n {
                let base = if add { start[i * n + j].to_f64() } else { 0.0 };
                let want = base + (0..k).map(|p| at(i, p) * bt(p, j)).sum::<f64>();
                let scale = base.abs() + (0..k).map(|p| (at(i, p) * bt(p, j)).abs()).sum::<f64>();
                let err = (got[i * n + j].to_f64() - want).abs();
                // The f32 sums' error, then half a bf16 step.
                assert!(
                    err <= 1e-6 * (k as f64 + 2.0) * scale + want.abs() / 256.0,
                    "{m}x{k} by {k}x{n} (A transposed {a_t}, B {b_t}, add {add}, {plan}) at ({i}, {j}): \
                     {} against {want}",
                    got[i * n + j]
                );
            }
        }
    });
}

/// f32 operands rounded as they are packed, f32 sums and result,
/// against sums in f64 of the operands rounded by `bf16::from_f32`;
/// and far from the sums of the unrounded operands.
#[test]
fn f32_products_round_to_bf16_as_they_pack() {
    if !bf16_kernel_runs_here() {
        eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 GEMM kernel is not tested here");
        return;
    }
    let rounded_apart = std::cell::Cell::new(0);
    for_each_case(|plan, m, n, k, a_t, b_t, add| {
        let a = Lines::of(values(m * k, 3).into_iter().map(RoundsToBf16));
        let b = Lines::of(values(k * n, 4).into_iter().map(RoundsToBf16));
        let ((a_rs, a_cs), (b_rs, b_cs)) = (strides(m, k, a_t), strides(k, n, b_t));
        let at = |i: usize, p: usize| a.at(i * a_rs as usize + p * a_cs as usize).0;
        let bt = |p: usize, j: usize| b.at(p * b_rs as usize + j * b_cs as usize).0;
        let round = |x: f32| f64::from(bf16::from_f32(x).to_f32());
        let start: Vec<f32> = (0..m * n).map(|i| (i % 7) as f32 - 3.0).collect();
        let mut got = start.clone();
        // SAFETY: as in `bf16_products_match_f64_sums`.
        unsafe {
            let lhs = Strided { ptr: a.as_ptr(), rs: a_rs, cs: a_cs };
            let rhs = Strided { ptr: b.as_ptr(), rs: b_rs, cs: b_cs };
            RoundsToBf16::serial(plan, m, n, k, got.as_mut_ptr(), n as isize, lhs, rhs, add);
        }
        for i in 0..m {
            for j in 0..n {
                let base = if add { f64::from(start[i * n + j]) } else { 0.0 };
                let product = |p: usize| round(at(i, p)) * round(bt(p, j));
                let want = base + (0..k).map(product).sum::<f64>();
                let scale = base.abs() + (0..k).map(|p| product(p).abs()).sum::<f64>();
                let err = (f64::from(got[i * n + j]) - want).abs();
                assert!(
                    err <= 1e-6 * (k as f64 + 2.0) * scale,
                    "{m}x{k} by {k}x{n} (A transposed {a_t}, B {b_t}, add {add}, {plan}) at ({i}, {j}): \
                     {} against {want}",
                    got[i * n + j]
                );
                let exact = base + (0..k).map(|p| f64::from(at(i, p)) * f64::from(bt(p, j))).sum::<f64>();
                if (f64::from(got[i * n + j]) - exact).abs() > 1e-4 * scale {
                    rounded_apart.set(rounded_apart.get() + 1);
                }
            }
        }
    });
    assert!(rounded_apart.get() > 1000, "the operands were not rounded: {} sums moved", rounded_apart.get());
}

/// `RoundsToBf16` packs a value to the same word on the scalar path (edges,
/// odd depths) as on the vector one, f32 subnormals included: the
/// hardware reads them as zero, and so must the scalar rounding, or a
/// product's bits would depend on where a value falls in its panel.
#[test]
fn f32_operands_round_alike_on_every_path() {
    if !bf16_kernel_runs_here() {
        eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 packers are not tested here");
        return;
    }
    use super::pack::Source;
    let mut state = 0x9e37_79b9_u32;
    let mut bits: Vec<u32> = vec![
        0x007f_8000,
        0x007f_ffff,
        0x0000_0001,
        0x8040_0000,
        0x0080_0000,
        0x8080_0000,
        0x3f80_8000,
        0x3f81_8000,
        0x7f7f_8000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x0000_0000,
        0x8000_0000,
    ];
    bits.extend((0..3000).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        // Every exponent, subnormals and NaNs among them.
        state
    }));
    bits.resize(bits.len().next_multiple_of(32), 0x3f80_0000);
    let values: Vec<RoundsToBf16> = bits.iter().map(|&b| RoundsToBf16(f32::from_bits(b))).collect();
    for chunk in values.chunks_exact(32) {
        let mut vector = [0u16; 32];
        // SAFETY: the chunk holds 32 values; the CPU has AVX512-BF16.
        unsafe {
            let v = <RoundsToBf16 as Source>::load32(chunk.as_ptr());
            std::arch::x86_64::_mm512_storeu_si512(vector.as_mut_ptr().cast(), v);
        }
        for (x, &got) in chunk.iter().zip(&vector) {
            let want = x.bf16();
            let same = want.to_bits() == got || (want.is_nan() && bf16::from_bits(got).is_nan());
            assert!(same, "{:#010x}: scalar {:#06x}, vector {got:#06x}", x.0.to_bits(), want.to_bits());
        }
    }
}
