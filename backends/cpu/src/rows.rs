//! The CPU's [`Rows`]: [`Row`], one row of a row op, on whose slices the
//! row ops of `blaze_spec::rows` (softmax, its adjoint, the norms,
//! cross-entropy) run from their one definition. A reduction is one of
//! `reduce.rs`'s vectorised folds, a write one loop over the row while it
//! is in cache; run an op inside [`dispatch`](crate::simd::dispatch), so
//! that the loops compile for the machine's ISA.
//!
//! The handles carry their slices, so that once an op is inlined every
//! loop sees its pointers directly (handles that index arrays of slices
//! kept those arrays in memory, and the norm ran 10% slower).

use std::array;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use blaze_spec::rows::Rows;

use crate::pool;
use crate::reduce::{max_slice, sum_map, sum_map2, sum_map2_pair, sum_slice};
use crate::simd::prefetch;
use crate::storage::Float;

/// An output of a [`Row`]: slots it borrows for `'a`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Out<'a, T> {
    slots: NonNull<MaybeUninit<T>>,
    len: usize,
    /// Its bit in [`Row::written`].
    bit: u8,
    life: PhantomData<&'a mut [MaybeUninit<T>]>,
}

impl<T> PartialEq for Out<'_, T> {
    fn eq(&self, o: &Self) -> bool {
        self.slots == o.slots
    }
}

/// An input of a [`Row`]: a slice it was given, or one of its outputs once
/// written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum In<'a, T> {
    Arg(&'a [T]),
    Written(Out<'a, T>),
}

/// One row of a row op: it sees its first `seen` entries; its inputs are
/// at least that long, its row outputs as long as the row. It keeps which
/// outputs hold values, so that an op reads only those.
#[derive(Debug)]
pub(crate) struct Row<'a, T> {
    seen: usize,
    written: u8,
    outputs: u8,
    /// The next row's operands, for the first write loop to prefetch.
    ahead: Option<Ahead>,
    life: PhantomData<&'a mut [T]>,
}

/// Where the next row's input and output start, which a row's first
/// write loop prefetches as it goes, [`AHEAD_SPAN`] bytes at a time. A
/// softmax or a norm passes over its row several times (a softmax's max,
/// its exponentials, their scale), each pass too short for the hardware's
/// prefetchers to run far ahead, so without this each row's first pass
/// waited on memory. Rows of 1024 from L3, 4096 of them, on a Zen 5:
/// softmax 1.2-1.3x as fast on one core, LayerNorm 1.1x on two and as
/// fast on one. The adjoints read two rows to write one and are bound by
/// bandwidth: prefetching made them 5-10% slower, so they do not.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ahead {
    read: *const u8,
    write: *const u8,
}

/// Bytes of each of the next row's operands a write loop prefetches
/// before each stretch of that many bytes of its own row.
const AHEAD_SPAN: usize = 512;

impl Ahead {
    /// The operands of the row `n` entries of `T` after the one whose
    /// input starts at `read` and output at `write`, if there is one: the
    /// row at hand is not the last of its run (`more`).
    #[inline(always)]
    pub(crate) fn after<T>(more: bool, n: usize, read: *const T, write: *const T) -> Option<Ahead> {
        let next = |p: *const T| p.wrapping_add(n).cast::<u8>();
        more.then(|| Ahead { read: next(read), write: next(write) })
    }

    /// Runs `body` over the entries `0..len` of a row of `T` in stretches
    /// of [`AHEAD_SPAN`] bytes, prefetching the next row's before each.
    #[inline(always)]
    fn stretches<T>(next: Option<Ahead>, len: usize, mut body: impl FnMut(std::ops::Range<usize>)) {
        let Some(ahead) = next else { return body(0..len) };
        let step = AHEAD_SPAN / size_of::<T>();
        for start in (0..len).step_by(step) {
            prefetch(ahead.read.wrapping_add(start * size_of::<T>()), AHEAD_SPAN, false);
            prefetch(ahead.write.wrapping_add(start * size_of::<T>()), AHEAD_SPAN, true);
            body(start..len.min(start + step));
        }
    }
}

impl<'a, T: Float> Row<'a, T> {
    /// A row that sees `seen` entries.
    #[inline(always)]
    pub(crate) fn new(seen: usize) -> Self {
        Row { seen, written: 0, outputs: 0, ahead: None, life: PhantomData }
    }

    /// Has the row's first write loop prefetch the next row's operands,
    /// if any ([`Ahead`]).
    #[inline(always)]
    pub(crate) fn ahead(&mut self, next: Option<Ahead>) {
        self.ahead = next;
    }

    /// Input `x`, read at the entries the row sees.
    #[inline(always)]
    pub(crate) fn input(&self, x: &'a [T]) -> In<'a, T> {
        assert!(x.len() >= self.seen, "a row input of {} entries for a row that sees {}", x.len(), self.seen);
        In::Arg(x)
    }

    /// Output `o`, its slots not yet written.
    #[inline(always)]
    pub(crate) fn output(&mut self, o: &'a mut [MaybeUninit<T>]) -> Out<'a, T> {
        assert!(self.outputs < 8, "a row op of at most 8 outputs");
        let bit = 1 << self.outputs;
        self.outputs += 1;
        Out { slots: NonNull::from(&mut *o).cast(), len: o.len(), bit, life: PhantomData }
    }

    /// Output `o`, whose values the op reads: a row computed in place, or
    /// sums it adds to.
    #[inline(always)]
    pub(crate) fn output_written(&mut self, o: &'a mut [T]) -> Out<'a, T> {
        // SAFETY: the ops write only values through the slots.
        let out = self.output(unsafe { pool::slots(o) });
        self.written |= out.bit;
        out
    }

    /// All of `out`'s slots.
    #[inline(always)]
    fn slots(&mut self, out: Out<'a, T>) -> &mut [MaybeUninit<T>] {
        // SAFETY: `out` borrows these slots for `'a`, and `&mut self`
        // keeps any other view of them from being used meanwhile.
        unsafe { std::slice::from_raw_parts_mut(out.slots.as_ptr(), out.len) }
    }

    /// The written entries of `out` the row sees.
    #[inline(always)]
    fn values(&mut self, out: Out<'a, T>) -> &mut [T] {
        assert!(self.written & out.bit != 0, "a row op read an output before writing it");
        let seen = self.seen;
        // SAFETY: written, as checked.
        unsafe { pool::written(&mut self.slots(out)[..seen]) }
    }

    /// The entries of `x` the row sees.
    #[inline(always)]
    fn read(&self, x: In<'a, T>) -> &[T] {
        match x {
            In::Arg(s) => &s[..self.seen],
            In::Written(o) => {
                assert!(self.written & o.bit != 0, "a row op read an output before writing it");
                assert!(o.len >= self.seen, "an output shorter than its row");
                // SAFETY: written, as checked, and borrowed for `'a`; `&self`
                // keeps it from being written meanwhile.
                unsafe { std::slice::from_raw_parts(o.slots.as_ptr().cast::<T>(), self.seen) }
            }
        }
    }

    /// The entries the row sees of given inputs `ins`.
    #[inline(always)]
    fn args<const N: usize>(&self, ins: [In<'a, T>; N]) -> [&'a [T]; N] {
        ins.map(|i| match i {
            In::Arg(s) => &s[..self.seen],
            In::Written(_) => panic!("a row op writes from given inputs, or in place from its output alone"),
        })
    }
}

/// `each(slot, entries)` for each of `slots` with the entries of `args` at
/// its position, as zipped slice iterators (which vectorise).
#[inline(always)]
fn zip_each<S, T: Copy, const N: usize>(
    slots: impl Iterator<Item = S>,
    args: [&[T]; N],
    mut each: impl FnMut(S, [T; N]),
) {
    match *args.as_slice() {
        [] => slots.for_each(|s| each(s, array::from_fn(|_| unreachable!()))),
        [a] => slots.zip(a).for_each(|(s, &x)| each(s, array::from_fn(|_| x))),
        [a, b] => slots.zip(a).zip(b).for_each(|((s, &x), &y)| each(s, array::from_fn(|j| [x, y][j]))),
        [a, b, c] => {
            slots.zip(a).zip(b).zip(c).for_each(|(((s, &x), &y), &z)| each(s, array::from_fn(|j| [x, y, z][j])))
        }
        _ => panic!("a row op reads at most three rows at once"),
    }
}

impl<'a, T: Float> Rows for Row<'a, T> {
    type V = T;
    type B = bool;
    type In = In<'a, T>;
    type Out = Out<'a, T>;
    type Idx = usize;

    #[inline(always)]
    fn lit(v: f64) -> T {
        T::from_f64(v)
    }

    #[inline(always)]
    fn exp(v: T) -> T {
        v.fast_exp()
    }

    #[inline(always)]
    fn ln(v: T) -> T {
        num_traits::Float::ln(v)
    }

    #[inline(always)]
    fn sqrt(v: T) -> T {
        num_traits::Float::sqrt(v)
    }

    #[inline(always)]
    fn count(&self) -> T {
        T::from_f64(self.seen as f64)
    }

    #[inline(always)]
    fn is_neg_inf(&mut self, v: T) -> bool {
        v == T::neg_infinity()
    }

    #[inline(always)]
    fn has_nan(&mut self, _x: In<'a, T>, top: T) -> bool {
        // The max is NaN exactly when the row holds one.
        top.is_nan()
    }

    #[inline(always)]
    fn written(&self, out: Out<'a, T>) -> In<'a, T> {
        In::Written(out)
    }

    #[inline(always)]
    fn sum<const N: usize>(&mut self, ins: [In<'a, T>; N], f: impl Fn([T; N]) -> T) -> T {
        match *ins.as_slice() {
            [a] => sum_map(self.read(a), |v| f(array::from_fn(|_| v))),
            [a, b] => sum_map2(self.read(a), self.read(b), |x, y| f(array::from_fn(|j| [x, y][j]))),
            _ => panic!("a row sum reads one or two rows, not {N}"),
        }
    }

    #[inline(always)]
    fn sum2<const N: usize>(&mut self, ins: [In<'a, T>; N], f: impl Fn([T; N]) -> [T; 2]) -> [T; 2] {
        match *ins.as_slice() {
            [a, b] => sum_map2_pair(self.read(a), self.read(b), |x, y| f(array::from_fn(|j| [x, y][j]))),
            _ => panic!("a row op's two sums read two rows, not {N}"),
        }
    }

    #[inline(always)]
    fn max(&mut self, x: In<'a, T>) -> T {
        max_slice(self.read(x))
    }

    #[inline(always)]
    fn write<const N: usize>(&mut self, out: Out<'a, T>, ins: [In<'a, T>; N], f: impl Fn([T; N]) -> T) {
        if ins.iter().any(|i| matches!(i, In::Written(o) if *o == out)) {
            assert!(N == 1, "a row op writes in place from its output alone");
            for v in self.values(out) {
                let x = *v;
                *v = f(array::from_fn(|_| x));
            }
            return;
        }
        let (args, seen, next) = (self.args(ins), self.seen, self.ahead.take());
        let slots = &mut self.slots(out)[..seen];
        Ahead::stretches::<T>(
            next,
            seen,
            #[inline(always)]
            |at| {
                zip_each(
                    slots[at.clone()].iter_mut(),
                    args.map(
                        #[inline(always)]
                        |a| &a[at.clone()],
                    ),
                    #[inline(always)]
                    |slot, e| {
                        slot.write(f(e));
                    },
                );
            },
        );
        self.written |= out.bit;
    }

    #[inline(always)]
    fn write_sum<const N: usize>(&mut self, out: Out<'a, T>, ins: [In<'a, T>; N], f: impl Fn([T; N]) -> T) -> T {
        self.write(out, ins, f);
        sum_slice(self.values(out))
    }

    #[inline(always)]
    fn update<const N: usize>(&mut self, out: Out<'a, T>, ins: [In<'a, T>; N], f: impl Fn(T, [T; N]) -> T) {
        let args = self.args(ins);
        zip_each(self.values(out).iter_mut(), args, |v, e| *v = f(*v, e));
    }

    #[inline(always)]
    fn fill_hidden(&mut self, out: Out<'a, T>, v: T) {
        let seen = self.seen;
        for slot in &mut self.slots(out)[seen..] {
            slot.write(v);
        }
    }

    #[inline(always)]
    fn read_at(&mut self, x: In<'a, T>, at: usize) -> T {
        self.read(x)[at]
    }

    #[inline(always)]
    fn poke(&mut self, out: Out<'a, T>, at: usize, f: impl Fn(T) -> T) {
        let v = &mut self.values(out)[at];
        *v = f(*v);
    }

    #[inline(always)]
    fn put(&mut self, out: Out<'a, T>, slot: usize, v: T) {
        self.slots(out)[slot].write(v);
    }

    #[inline(always)]
    fn update_summing<const M: usize, const N: usize>(
        &mut self,
        out: Out<'a, T>,
        sums: [Out<'a, T>; M],
        ins: [In<'a, T>; N],
        f: impl Fn(T, [T; N]) -> (T, [T; M]),
    ) {
        let [a, b] = *sums.as_slice() else { panic!("a row op's update sums into two outputs, not {M}") };
        assert!(a != b && a != out && b != out, "a row op updates and sums into distinct outputs");
        let args = self.args(ins);
        // Each view is of another of the caller's borrows, so none overlap.
        let mut view = |o: Out<'a, T>| {
            let v = self.values(o);
            // SAFETY: as above; each lives while the row does.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr(), v.len()) }
        };
        let (vo, va, vb) = (view(out), view(a), view(b));
        zip_each(vo.iter_mut().zip(va.iter_mut().zip(vb.iter_mut())), args, |(v, (sa, sb)), e| {
            let (value, terms) = f(*v, e);
            *v = value;
            *sa += terms[0];
            *sb += terms[1];
        });
    }

    #[inline(always)]
    fn branch(&mut self, c: bool, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        if c { then(self) } else { otherwise(self) }
    }

    #[inline(always)]
    fn choose(&mut self, c: bool, then: impl FnOnce(&mut Self) -> T, otherwise: T) -> T {
        if c { then(self) } else { otherwise }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetching_write_covers_its_row_once_in_order() {
        let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        for len in [0, 1, 127, 128, 129, 300, 1000] {
            let mut ranges = Vec::new();
            let next = Ahead::after(true, len, x.as_ptr(), x.as_ptr());
            Ahead::stretches::<f32>(next, len, |at| ranges.push(at));
            let covered: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(covered, (0..len).collect::<Vec<_>>(), "rows of {len}");
            assert!(ranges.iter().all(|r| r.len() <= AHEAD_SPAN / 4), "stretches of at most {AHEAD_SPAN} bytes");
            // Through a row op: the values are those of a plain loop.
            let mut out = vec![MaybeUninit::new(0.0f32); len];
            let mut row = Row::new(len);
            row.ahead(next);
            let (xi, o) = (row.input(&x[..len]), row.output(&mut out));
            row.write(o, [xi], |[v]| v * 2.0 + 1.0);
            // SAFETY: the write filled every slot.
            let got: Vec<f32> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
            assert_eq!(got, x[..len].iter().map(|v| v * 2.0 + 1.0).collect::<Vec<_>>(), "rows of {len}");
        }
    }
}
