//! The register-blocked kernels (`Micro`): the explicit-vector tiles of
//! each ISA (`Simd` over `Lanes`), the scalar one, and the packers that lay
//! panels out for them.

#[cfg(target_arch = "x86_64")]
use super::x86;
use super::*;

/// A register-blocked kernel: `a x b` over `kc` steps of an `MR`-row
/// panel of `A` and an `NR`-column panel of `B`, stored to a tile.
pub(super) trait Micro<T: Real> {
    /// Rows of a tile.
    const MR: usize;
    /// Columns of a tile.
    const NR: usize;
    /// Whether the ISA fuses multiply-adds.
    const FMA: bool;

    /// # Safety
    /// `a` addresses `MR x kc` values, `b` `kc` steps of `NR` values `b_rs`
    /// apart, the tile lies in the
    /// destination, and the CPU runs the kernel's ISA.
    unsafe fn tile(kc: usize, a: Strided<T>, b: *const T, b_rs: usize, tile: Tile<T>);

    /// [`Micro::tile`] for a tile of any number of rows up to `MR`: the
    /// bottom edge of a product whose rows are not a multiple of `MR`.
    ///
    /// # Safety
    /// As for [`Micro::tile`].
    #[inline(always)]
    unsafe fn tile_rows(kc: usize, a: Strided<T>, b: *const T, b_rs: usize, tile: Tile<T>) {
        // SAFETY: forwarded from the caller.
        unsafe { Self::tile(kc, a, b, b_rs, tile) }
    }

    /// The dot products of `n` contiguous values at `x` with `n` at each
    /// of `ys` (four columns at once, so each load of `x` serves four).
    ///
    /// # Safety
    /// All hold `n` values, and the CPU runs the kernel's ISA.
    unsafe fn dot4(n: usize, x: *const T, ys: [*const T; 4]) -> [T; 4];

    /// [`pack`] with this kernel's ISA: vector kernels transpose blocks
    /// of f32 whose rows run along the depth (`B` stored transposed, as
    /// `x W^T` reads a weight, or a row-major `A`) eight by eight in
    /// registers, where the portable packing gathers them one value at a
    /// time.
    ///
    /// # Safety
    /// As for [`pack`], and the CPU runs the kernel's ISA.
    #[inline(always)]
    unsafe fn pack(width: usize, rows: usize, depth: usize, a: Strided<T>, out: *mut T) {
        // SAFETY: forwarded from the caller.
        unsafe { pack(width, rows, depth, a, out) }
    }
}

/// Steps from which a tile prefetches its destination rows (where its
/// plan does, [`GemmPlan::prefetch`](super::GemmPlan::prefetch)).
pub(crate) const PREFETCH_DEPTH: usize = 128;

/// Starts loading the destination rows of `tile` into the L1 cache, so
/// the sums that are added to them at the end of the tile (and the stores
/// that replace them) find their lines there rather than stall on them.
#[inline(always)]
pub(super) fn prefetch_tile<T>(tile: &Tile<T>) {
    for i in 0..tile.rows {
        // The tile's rows lie in the destination.
        let row = tile.dst.wrapping_offset(i as isize * tile.dst_rs);
        crate::simd::prefetch(row.cast(), tile.cols * size_of::<T>(), false);
    }
}

/// Writes an `MR x NR` block of sums to `tile` (its `rows x cols` corner).
#[inline(always)]
fn store<T: Real, const NR: usize>(c: &[[T; NR]], tile: Tile<T>) {
    let Tile { dst, dst_rs, rows, cols, add, .. } = tile;
    for (i, ci) in c.iter().enumerate().take(rows) {
        // SAFETY: row i of the tile, `cols` long, lies in the destination.
        let row = unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), cols) };
        if add {
            row.iter_mut().zip(ci).for_each(|(d, &v)| *d += v);
        } else {
            row.copy_from_slice(&ci[..cols]);
        }
    }
}

/// Explicit vector registers of `V` lanes: `NV` of them per row (one or
/// two), `MR` rows. (Plain arrays leave the choice of what to vectorise to
/// LLVM, which vectorises the depth loop with gathers instead.)
pub(super) struct Simd<V, const MR: usize, const NV: usize>(std::marker::PhantomData<V>);

impl<V: Lanes, const MR: usize, const NV: usize> Micro<V::T> for Simd<V, MR, NV> {
    const MR: usize = MR;
    const NR: usize = NV * V::W;
    const FMA: bool = true;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: Strided<V::T>, b: *const V::T, b_rs: usize, tile: Tile<V::T>) {
        // SAFETY (whole body): the panels hold kc steps of MR and NR values
        // and the CPU runs `V`'s ISA, as the caller vouches.
        unsafe {
            // The destination's lines arrive while the steps run: a
            // product too large for L2 (squares of 1024 and 2048) adds
            // each depth block's sums to rows that dropped out of it
            // (1.04x on both squares, one and two threads of a Zen 3;
            // 512 unchanged). A shallow tile (attention's depth of 16)
            // belongs to a product whose rows are still cached, and its
            // few steps would not hide the wait anyway.
            if tile.prefetch {
                prefetch_tile(&tile);
            }
            // Plain indexing with constant bounds, no closures
            // (`array::from_fn` and iterator adapters need not inline into
            // the ISA's function, and the intrinsics in them then become
            // calls).
            let mut c = [[V::zero(); NV]; MR];
            let mut bp = b;
            if a.rs == 1 {
                // Each step's rows adjacent: a packed panel, or a
                // column-major `A` read in place.
                let mut ap = a.ptr;
                for _ in 0..kc {
                    let mut bv = [V::zero(); NV];
                    for (v, r) in bv.iter_mut().enumerate() {
                        *r = V::load(bp.add(v * V::W));
                    }
                    for (i, ci) in c.iter_mut().enumerate() {
                        let ai = V::splat(*ap.add(i));
                        for v in 0..NV {
                            ci[v] = V::fma(ai, bv[v], ci[v]);
                        }
                    }
                    bp = bp.add(b_rs);
                    ap = ap.offset(a.cs);
                }
            } else {
                // `A` read in place, its rows `rs` apart: row 4g + j at
                // `base[g] + {0, 1, 2, 3} rs`. Left to itself, LLVM
                // reached the rows by adding `rs` to one register row
                // after row, a chain of MR dependent adds every step
                // that held the 16-row tile to one FMA a cycle. With
                // opaque group bases and `3 rs` it cannot derive a row
                // from the one before, and gives each row an address of
                // its own (on a Xeon: 1.17x on 128 products of 64x64x16,
                // 1.19x on 64x800x10; the wider tiles unchanged).
                const { assert!(MR <= 16, "four groups of four rows") };
                #[cfg(target_arch = "x86_64")]
                if V::F32 && V::W == 16 && MR == 16 && NV == 1 && kc > 0 {
                    // `V::T` is f32 and the ISA AVX-512 (16 f32 lanes).
                    let a = Strided { ptr: a.ptr.cast::<f32>(), rs: a.rs, cs: a.cs };
                    let Tile { dst, dst_rs, rows, cols, add, prefetch } = tile;
                    let tile = Tile { dst: dst.cast::<f32>(), dst_rs, rows, cols, add, prefetch };
                    x86::narrow_in_place(kc, a, b.cast::<f32>(), b_rs, tile);
                    return;
                }
                let rs = a.rs;
                let rs3 = std::hint::black_box(3 * rs);
                let mut base = [a.ptr; 4];
                for (g, b) in base.iter_mut().enumerate().take(MR.div_ceil(4)) {
                    *b = std::hint::black_box(a.ptr.offset(4 * g as isize * rs));
                }
                for _ in 0..kc {
                    let mut bv = [V::zero(); NV];
                    for (v, r) in bv.iter_mut().enumerate() {
                        *r = V::load(bp.add(v * V::W));
                    }
                    for (i, ci) in c.iter_mut().enumerate() {
                        let row = base[i / 4];
                        let at = match i % 4 {
                            0 => row,
                            1 => row.offset(rs),
                            2 => row.offset(2 * rs),
                            _ => row.offset(rs3),
                        };
                        let ai = V::splat(*at);
                        for v in 0..NV {
                            ci[v] = V::fma(ai, bv[v], ci[v]);
                        }
                    }
                    bp = bp.add(b_rs);
                    for b in base.iter_mut().take(MR.div_ceil(4)) {
                        *b = b.offset(a.cs);
                    }
                }
            }
            let Tile { dst, dst_rs, rows, cols, add, .. } = tile;
            if rows == MR && cols == NV * V::W {
                // A whole tile goes straight from the registers.
                for (i, ci) in c.iter().enumerate() {
                    let d = dst.offset(i as isize * dst_rs);
                    for (v, &cv) in ci.iter().enumerate() {
                        let e = d.add(v * V::W);
                        if add {
                            V::add(V::load(e), cv).store(e);
                        } else {
                            cv.store(e);
                        }
                    }
                }
                return;
            }
            // A partial one is spilled to memory first.
            let mut out = [[<V::T as num_traits::Zero>::zero(); MAX_NR]; MR];
            for (o, ci) in out.iter_mut().zip(&c) {
                for (v, &cv) in ci.iter().enumerate() {
                    cv.store(o.as_mut_ptr().add(v * V::W));
                }
            }
            store(&out, Tile { dst, dst_rs, rows, cols, add, prefetch: false });
        }
    }

    /// An f32 tile of fewer rows than `MR` runs on the kernel of 4 or 8
    /// rows that holds them, reading the same panel of `A` (its steps
    /// `a.cs` apart, whatever the rows): a 6-row tile with 4 rows live
    /// spent a whole tile's steps on them (on a Zen 3, 1.04x on 64x64 by
    /// 64x16, 1.07x on 64x16 by 16x64, 1.05x on 64x784 by 784x256). Each
    /// value is summed in the same order on either kernel, so the bits do
    /// not change. (Each kernel is another copy of the tile in the
    /// release build: these two cost 2.6 s of compiler time; a 2-row one
    /// and f64's would have cost 3 s more.)
    #[inline(always)]
    unsafe fn tile_rows(kc: usize, a: Strided<V::T>, b: *const V::T, b_rs: usize, tile: Tile<V::T>) {
        // SAFETY (every arm): forwarded from the caller; the smaller kernel
        // reads the first rows of the same panel.
        unsafe {
            match tile.rows {
                r if r >= MR || !V::F32 => Self::tile(kc, a, b, b_rs, tile),
                1..=4 if MR > 4 => Simd::<V, 4, NV>::tile(kc, a, b, b_rs, tile),
                5..=8 if MR > 8 => Simd::<V, 8, NV>::tile(kc, a, b, b_rs, tile),
                _ => Self::tile(kc, a, b, b_rs, tile),
            }
        }
    }

    #[inline(always)]
    unsafe fn pack(width: usize, rows: usize, depth: usize, a: Strided<V::T>, out: *mut V::T) {
        // SAFETY (whole body): forwarded from the caller; `V::F32` says
        // that `V::T` is f32 and that the ISA has AVX2.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            if V::F32 && a.cs == 1 && a.rs != 1 {
                let a = Strided { ptr: a.ptr.cast::<f32>(), rs: a.rs, cs: 1 };
                return pack_transposing_f32(width, rows, depth, a, out.cast::<f32>());
            }
            pack(width, rows, depth, a, out)
        }
    }

    #[inline(always)]
    unsafe fn dot4(n: usize, x: *const V::T, ys: [*const V::T; 4]) -> [V::T; 4] {
        // SAFETY (whole body): all hold n values, as the caller vouches.
        unsafe {
            let mut acc = [V::zero(); 4];
            let mut p = 0;
            while p + V::W <= n {
                let xv = V::load(x.add(p));
                for (s, y) in acc.iter_mut().zip(ys) {
                    *s = V::fma(xv, V::load(y.add(p)), *s);
                }
                p += V::W;
            }
            let mut out = [<V::T as num_traits::Zero>::zero(); 4];
            for (o, v) in out.iter_mut().zip(acc) {
                *o = v.sum();
            }
            for q in p..n {
                for (o, y) in out.iter_mut().zip(ys) {
                    *o += *x.add(q) * *y.add(q);
                }
            }
            out
        }
    }
}

/// The portable kernel for CPUs without AVX2: a 4 x 4 tile of scalars.
pub(super) struct Scalar<T>(std::marker::PhantomData<T>);

impl<T: Real> Micro<T> for Scalar<T> {
    const MR: usize = 4;
    const NR: usize = 4;
    const FMA: bool = false;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: Strided<T>, b: *const T, b_rs: usize, tile: Tile<T>) {
        let mut c = [[T::zero(); 4]; 4];
        for p in 0..kc {
            // SAFETY: step p of each panel, as the caller vouches.
            let (av, bv): ([T; 4], [T; 4]) =
                unsafe { (std::array::from_fn(|i| a.get(i, p)), *b.add(p * b_rs).cast::<[T; 4]>()) };
            for i in 0..4 {
                for j in 0..4 {
                    c[i][j] += av[i] * bv[j];
                }
            }
        }
        store(&c, tile);
    }

    #[inline(always)]
    unsafe fn dot4(n: usize, x: *const T, ys: [*const T; 4]) -> [T; 4] {
        // SAFETY: all hold n values, as the caller vouches.
        ys.map(|y| (0..n).fold(T::zero(), |t, p| unsafe { t + *x.add(p) * *y.add(p) }))
    }
}

/// One vector register of floats.
pub(super) trait Lanes: Copy {
    /// The lane type.
    type T: Real;
    /// Lanes per register.
    const W: usize;
    /// Whether the lanes are f32 (then the ISA has AVX2, and with it
    /// [`x86::transpose8`]).
    const F32: bool;
    /// All lanes zero.
    unsafe fn zero() -> Self;
    /// All lanes `x`.
    unsafe fn splat(x: Self::T) -> Self;
    /// `W` values from `p`, unaligned.
    unsafe fn load(p: *const Self::T) -> Self;
    /// `a * b + c`, fused.
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    /// `a + b`.
    unsafe fn add(a: Self, b: Self) -> Self;
    /// The lanes to `p`, unaligned.
    unsafe fn store(self, p: *mut Self::T);
    /// The sum of the lanes.
    unsafe fn sum(self) -> Self::T;
}

/// Packs the `rows x depth` block at `a` into panels of `width` rows, each
/// `depth` steps of `width` values, the rows past `rows` zero: `A`'s
/// `MR`-row panels, or (through [`Strided::t`]) `B`'s `NR`-column ones.
///
/// # Safety
/// The block lies in the operand and `out` holds `rows` rounded up to
/// `width` times `depth` values.
#[inline(always)]
pub(super) unsafe fn pack<T: Real>(width: usize, rows: usize, depth: usize, a: Strided<T>, out: *mut T) {
    for (panel, i0) in (0..rows).step_by(width).enumerate() {
        let live = width.min(rows - i0);
        // SAFETY: panel `panel` of `out`.
        let o = unsafe { std::slice::from_raw_parts_mut(out.add(panel * depth * width), depth * width) };
        for (p, step) in o.chunks_exact_mut(width).enumerate() {
            if a.rs == 1 && live == width {
                // SAFETY: step p of the panel is `width` contiguous values.
                step.copy_from_slice(unsafe { std::slice::from_raw_parts(a.at(i0, p).ptr, width) });
                continue;
            }
            for (i, v) in step.iter_mut().enumerate() {
                // SAFETY: (i0 + i, p) lies in the block for i < live.
                *v = if i < live { unsafe { a.get(i0 + i, p) } } else { T::zero() };
            }
        }
    }
}

/// [`pack`] for f32 rows that run along the depth (`a.cs == 1`): whole
/// 8 x 8 blocks are transposed in registers, the edges copied one value at
/// a time.
///
/// # Safety
/// As for [`pack`], and the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pack_transposing_f32(width: usize, rows: usize, depth: usize, a: Strided<f32>, out: *mut f32) {
    let deep = depth / 8 * 8;
    for (panel, i0) in (0..rows).step_by(width).enumerate() {
        let live = width.min(rows - i0);
        let full = live / 8 * 8;
        // SAFETY (whole loop): panel `panel` of `out` holds depth x width
        // values; (i0 + i, p) lies in the block for i < live, p < depth.
        unsafe {
            let o = out.add(panel * depth * width);
            for p in (0..deep).step_by(8) {
                for i in (0..full).step_by(8) {
                    x86::transpose8(a.at(i0 + i, p).ptr, a.rs, o.add(p * width + i), width);
                }
            }
            for p in 0..depth {
                for i in if p < deep { full } else { 0 }..width {
                    *o.add(p * width + i) = if i < live { a.get(i0 + i, p) } else { 0.0 };
                }
            }
        }
    }
}
