//! The GEMM against naive products, across every block edge and layout.

use super::*;

/// `lhs * rhs (+ dst)` in f64, the naive way.
fn reference(
    m: usize,
    n: usize,
    k: usize,
    lhs: &dyn Fn(usize, usize) -> f64,
    rhs: &dyn Fn(usize, usize) -> f64,
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| lhs(i, p) * rhs(p, j)).sum();
        }
    }
    out
}

/// Checks one product of `T` on every layout: `lhs` row- or
/// column-major, `rhs` too, with and without accumulation.
fn check<T: GemmFloat>(m: usize, n: usize, k: usize, tol: f64) {
    let value = |s: usize, i: usize, j: usize| ((s * 7919 + i * 31 + j * 17) % 23) as f64 / 11.0 - 1.0;
    let a: Vec<T> = (0..m * k).map(|x| num_traits::cast::<f64, T>(value(1, x / k, x % k)).expect("a float")).collect();
    let b: Vec<T> = (0..k * n).map(|x| num_traits::cast::<f64, T>(value(2, x / n, x % n)).expect("a float")).collect();
    let want = reference(m, n, k, &|i, p| value(1, i, p), &|p, j| value(2, p, j));
    // The same values stored transposed.
    let at: Vec<T> = (0..m * k).map(|x| a[(x % m) * k + x / m]).collect();
    let bt: Vec<T> = (0..k * n).map(|x| b[(x % k) * n + x / k]).collect();
    for (lhs, rhs) in [
        (Strided { ptr: a.as_ptr(), rs: k as isize, cs: 1 }, Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 }),
        (Strided { ptr: at.as_ptr(), rs: 1, cs: m as isize }, Strided { ptr: bt.as_ptr(), rs: 1, cs: k as isize }),
    ] {
        for (accumulate, plan) in [false, true].into_iter().flat_map(|a| plans().into_iter().map(move |p| (a, p))) {
            let mut dst = vec![num_traits::cast::<f64, T>(0.5).expect("a float"); m * n];
            // SAFETY: the operands are m x k and k x n, `dst` m x n,
            // and `plans` holds only kernels this CPU runs.
            unsafe { T::serial(&plan, m, n, k, dst.as_mut_ptr(), n as isize, lhs, rhs, accumulate) };
            for (x, (&got, &w)) in dst.iter().zip(&want).enumerate() {
                let w = if accumulate { w + 0.5 } else { w };
                let got: f64 = num_traits::cast(got).unwrap();
                assert!((got - w).abs() <= tol * (1.0 + w.abs()), "{plan} {m}x{k}x{n} at {x}: {got} vs {w}");
            }
        }
    }
}

/// Every kernel this CPU runs, each with the blocking of this CPU and
/// with the smallest blocking, whose block edges small products cross.
fn plans() -> Vec<GemmPlan> {
    let tiny = CpuInfo { l1d: 1, l2: 1, l3: 1, ..*cpu_info() };
    GemmKernel::ALL
        .into_iter()
        .filter(|k| k.runs_here())
        .flat_map(|k| [GemmPlan::for_kernel(k, cpu_info(), "test"), GemmPlan::for_kernel(k, &tiny, "test")])
        .collect()
}

#[test]
fn every_kernel_this_cpu_runs_is_checked() {
    let kernels: Vec<GemmKernel> = GemmKernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
    assert!(kernels.contains(&gemm_plan().kernel), "the kernel in use is among them");
    assert_eq!(kernels.last(), Some(&GemmKernel::Scalar), "the portable kernel runs everywhere");
    if Isa::V4.runs_here() {
        assert_eq!(kernels.len(), 4, "an AVX-512 CPU runs every kernel");
    }
}

#[test]
fn every_plan_fits_its_kernels() {
    let zen4 = CpuInfo {
        vendor: Vendor::Amd,
        family: 0x19,
        model: 0x11,
        l1d: 32 << 10,
        l2: 1 << 20,
        l3: 32 << 20,
        caches_reported: true,
    };
    let tiny = CpuInfo { l1d: 1, l2: 1, l3: 1, ..zen4 };
    let huge = CpuInfo { l1d: 1 << 20, l2: 1 << 30, l3: 1 << 34, ..zen4 };
    for kernel in GemmKernel::ALL {
        for info in [*cpu_info(), zen4, tiny, huge] {
            let plan = GemmPlan::for_kernel(kernel, &info, "test");
            let (wide, narrow) = kernel.rows();
            assert!(plan.mc.is_multiple_of(wide) && plan.mc.is_multiple_of(narrow), "{plan}");
            assert!(plan.nc.is_multiple_of(MAX_NR) && (128..=512).contains(&plan.kc), "{plan}");
        }
    }
    // Zen 4's caches give the blocking measured best there.
    let plan = GemmPlan::for_kernel(GemmKernel::Avx512x8, &zen4, "test");
    assert_eq!((plan.kc, plan.nc), (256, 2048), "{plan}");
    if Isa::V4.runs_here() {
        assert_eq!(choose_kernel(&zen4).0, GemmKernel::Avx512x8);
        let zen5 = CpuInfo { family: 0x1A, ..zen4 };
        assert_eq!(choose_kernel(&zen5).0, GemmKernel::Avx512x12);
    }
}

#[test]
fn kernels_are_named_for_blaze_gemm_kernel() {
    for kernel in GemmKernel::ALL {
        assert_eq!(kernel.name().parse::<GemmKernel>(), Ok(kernel));
    }
    let err = "avx1024".parse::<GemmKernel>().unwrap_err();
    assert!(err.contains("avx1024") && err.contains("avx512-8x32"), "{err}");
}

#[test]
fn matches_the_naive_product_across_block_edges() {
    for (m, n, k) in [
        (1, 1, 1),
        (1, 37, 300),
        (2, 3, 0),
        (7, 33, 5),
        (97, 70, 257),
        (200, 2100, 30),
        (13, 17, 600),
        (50, 10, 130),
        (64, 16, 64),
        (33, 8, 9),
        (37, 70, 1),
        // 12-row tiles, the last one part-filled.
        (45, 50, 300),
        // `A`'s rows (row-major) or steps (column-major) 4 KiB apart
        // in f32, 8 KiB in f64: packed, not read in place.
        (1024, 2, 40),
        (40, 2, 1024),
    ] {
        check::<f32>(m, n, k, 1e-4);
        check::<f64>(m, n, k, 1e-12);
    }
}

#[test]
fn a_row_has_the_same_bits_however_many_rows_the_product_has() {
    // The last tile of every row count up to 48 (a multiple of every
    // tile's rows) runs on a kernel of fewer rows, or on a part-filled
    // one: each row must come out as in the 48-row product, on every
    // kernel, layout and blocking. (A single row is a vector times a
    // matrix, summed another way.)
    let (n, k) = (40, 300);
    let value = |s: usize, x: usize| ((s * 7919 + x * 31) % 23) as f32 / 11.0 - 1.0;
    let a: Vec<f32> = (0..48 * k).map(|x| value(1, x)).collect();
    let b: Vec<f32> = (0..k * n).map(|x| value(2, x)).collect();
    // The same `A` stored column-major, so its panels are read in place.
    let at: Vec<f32> = (0..48 * k).map(|x| a[(x % 48) * k + x / 48]).collect();
    let rhs = Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 };
    for plan in plans() {
        for lhs in [Strided { ptr: a.as_ptr(), rs: k as isize, cs: 1 }, Strided { ptr: at.as_ptr(), rs: 1, cs: 48 }] {
            let product = |m: usize| {
                let mut dst = vec![0.0f32; m * n];
                // SAFETY: the first m rows of the 48 x k `A`, k x n `B`,
                // m x n `dst`; `plans` holds kernels this CPU runs.
                unsafe { f32::serial(&plan, m, n, k, dst.as_mut_ptr(), n as isize, lhs, rhs, false) };
                dst
            };
            let all = product(48);
            for m in 2..48 {
                assert!(product(m) == all[..m * n], "{plan}: {m} rows, A strides {} {}", lhs.rs, lhs.cs);
            }
        }
    }
}

#[test]
fn few_row_tiles_take_the_tile_that_fills_them() {
    // Attention's rows, and a small square: 8-row tiles fill them.
    assert!([64, 128, 256, 40].into_iter().all(prefers_8_rows));
    // Whole 12-row tiles, or one part-filled among many.
    assert!(![12, 36, 45, 96, 192, 1024, 2048].into_iter().any(prefers_8_rows));
}

#[test]
fn an_outer_product_rounds_as_the_tiles_do() {
    // k = 1 with contiguous rows of `B` takes the outer-product loop;
    // the same `B` spread out (every other value), the tiles: the same
    // bits, with and without accumulation, under every plan.
    let (m, n) = (29, 45);
    let a: Vec<f32> = (0..m).map(|i| (i as f32 * 0.37).sin()).collect();
    let b: Vec<f32> = (0..n).map(|j| (j as f32 * 0.71).cos() / 3.0).collect();
    let spread: Vec<f32> = b.iter().flat_map(|&v| [v, f32::NAN]).collect();
    let start: Vec<f32> = (0..m * n).map(|x| (x as f32 * 0.13).sin()).collect();
    let lhs = Strided { ptr: a.as_ptr(), rs: 1, cs: 1 };
    for plan in plans() {
        for accumulate in [false, true] {
            let run = |rhs: Strided<f32>| {
                let mut d = start.clone();
                // SAFETY: `a` is m x 1, `rhs` 1 x n, `d` m x n, apart;
                // `plans` lists kernels this CPU runs.
                unsafe { f32::serial(&plan, m, n, 1, d.as_mut_ptr(), n as isize, lhs, rhs, accumulate) };
                d
            };
            let rows = run(Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 });
            let tiles = run(Strided { ptr: spread.as_ptr(), rs: 2 * n as isize, cs: 2 });
            assert_eq!(rows, tiles, "{plan}, accumulate {accumulate}");
        }
    }
}

#[test]
fn an_a_whose_rows_lie_4_kib_apart_is_copied_and_gives_the_same_bits() {
    // A row-major `A` of depth 1024 (rows 4 KiB apart) takes the copied
    // path, one of depth 1040 is read in place: the same values give the
    // same bits, whole panels and the edge panel alike (50 rows), over
    // several depth and row blocks, on every kernel and blocking.
    let (m, n, k, ld) = (50, 70, 1024, 1040);
    let value = |s: usize, x: usize| ((s * 7919 + x * 31) % 23) as f32 / 11.0 - 1.0;
    let a: Vec<f32> = (0..m * k).map(|x| value(1, x)).collect();
    let padded: Vec<f32> = (0..m * ld).map(|x| if x % ld < k { a[x / ld * k + x % ld] } else { f32::NAN }).collect();
    let b: Vec<f32> = (0..k * n).map(|x| value(2, x)).collect();
    let rhs = Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 };
    for plan in plans() {
        let product = |lhs: Strided<f32>| {
            let mut dst = vec![0.0f32; m * n];
            // SAFETY: m x k `A` (its rows `lhs.rs` apart), k x n `B`,
            // m x n `dst`; `plans` holds kernels this CPU runs.
            unsafe { f32::serial(&plan, m, n, k, dst.as_mut_ptr(), n as isize, lhs, rhs, false) };
            dst
        };
        let copied = product(Strided { ptr: a.as_ptr(), rs: k as isize, cs: 1 });
        let in_place = product(Strided { ptr: padded.as_ptr(), rs: ld as isize, cs: 1 });
        assert!(copied == in_place, "{plan}");
        let want: f32 = (0..k).map(|q| a[(m - 1) * k + q] * b[q * n + n - 1]).sum();
        assert!((copied[m * n - 1] - want).abs() < 1e-3, "{plan}: {} against {want}", copied[m * n - 1]);
    }
}
