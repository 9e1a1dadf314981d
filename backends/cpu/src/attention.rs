//! Attention for inference, tiled: each query row walks the keys in blocks
//! with an online softmax (a running maximum and sum, the output
//! accumulated and rescaled when the maximum grows), so no thread holds
//! more than one block of one query's scores and the `[.., T, S]` weights
//! never exist. The keys of a batch entry are transposed once per piece of
//! rows into thread-local scratch, so a block's scores vectorise over the
//! keys and the output accumulates as a vector over the value's width.

use crate::parallel::{COSTLY_OP_MIN, fill, should_fork};
use crate::pool;
use crate::reduce::sum_slice;
use crate::simd::dispatch;
use crate::storage::{Array, Float};
use blaze_runtime::SoftmaxOptions;
use blaze_runtime::shape::Dims;

/// Keys per block of one query's scores.
const BLOCK: usize = 256;

/// Keys whose scores one vector holds.
const LANES: usize = 16;

/// [`blaze_runtime::Composites::attention`]; strided operands (heads
/// split by a permute) are copied to row-major first. `None` when a dim is
/// empty (the caller then composes).
pub(crate) fn attention<T: Float>(q: &Array<T>, k: &Array<T>, v: &Array<T>, o: SoftmaxOptions) -> Option<Array<T>> {
    let [q, k, v] = [q, k, v].map(pool::standard);
    let (qs, ks, vs) = (q.as_slice()?, k.as_slice()?, v.as_slice()?);
    let r = q.ndim();
    let (t, d, s, e) = (q.shape()[r - 2], q.shape()[r - 1], k.shape()[r - 2], v.shape()[r - 1]);
    if [t, d, s, e].contains(&0) {
        return None;
    }
    let mut shape = Dims::from(q.shape());
    shape[r - 1] = e;
    let scale = T::from_f64(o.scale);
    let work = qs.len() / d * s * (d + e);
    let out = fill(&shape, e, should_fork(work, COSTLY_OP_MIN), |start, out| {
        pool::with_scratch(d * s, |kt: &mut [T]| {
            let mut loaded = usize::MAX;
            for (row, acc) in out.chunks_mut(e).enumerate() {
                let global = start / e + row;
                let (b, i) = (global / t, global % t);
                if b != loaded {
                    // This entry's keys as [d, s]: a block's scores then run
                    // along contiguous keys.
                    for (j, key) in ks[b * s * d..][..s * d].chunks_exact(d).enumerate() {
                        for (dd, &kv) in key.iter().enumerate() {
                            kt[dd * s + j] = kv;
                        }
                    }
                    loaded = b;
                }
                let query = &qs[(b * t + i) * d..][..d];
                let values = &vs[b * s * e..][..s * e];
                let seen = if o.causal { (i + 1).min(s) } else { s };
                let kt = &*kt;
                dispatch(
                    #[inline(always)]
                    || {
                        for a in acc.iter_mut() {
                            a.write(T::ZERO);
                        }
                        // SAFETY: every slot of `acc` was written just above.
                        let acc = unsafe { crate::pool::written(acc) };
                        let (mut max, mut sum) = (T::from_f64(f64::NEG_INFINITY), T::ZERO);
                        let mut scores = [T::ZERO; BLOCK];
                        for j0 in (0..seen).step_by(BLOCK) {
                            let n = BLOCK.min(seen - j0);
                            let scores = &mut scores[..n];
                            // The block's scores, one query value at a
                            // time across its contiguous keys: an axpy
                            // into the block, which stays in L1. (Sixteen
                            // keys' scores held as one array were split
                            // by LLVM into scalars it shuffled out of the
                            // vector every step: on a Xeon, a fifth of a
                            // base GPT run's samples.) The block's
                            // maximum is kept per lane: one serial max
                            // over the keys would wait on each compare.
                            scores.fill(T::ZERO);
                            for (dd, &qv) in query.iter().enumerate() {
                                for (sc, &kv) in scores.iter_mut().zip(&kt[dd * s + j0..][..n]) {
                                    *sc = qv.mul_add(kv, *sc);
                                }
                            }
                            let neg_inf = T::from_f64(f64::NEG_INFINITY);
                            let mut maxes = [neg_inf; LANES];
                            for chunk in scores.chunks_mut(LANES) {
                                for (sc, m) in chunk.iter_mut().zip(maxes.iter_mut()) {
                                    *sc = *sc * scale;
                                    *m = if *sc > *m { *sc } else { *m };
                                }
                            }
                            let block_max = maxes.iter().fold(neg_inf, |m, &x| if x > m { x } else { m });
                            let new_max = max.max(block_max);
                            // The running sum and output were weighted by
                            // exp(-max); reweight them by exp(-new_max).
                            let fix = (max - new_max).fast_exp();
                            for sc in scores.iter_mut() {
                                *sc = (*sc - new_max).fast_exp();
                            }
                            sum = sum * fix + sum_slice(scores);
                            // 16 of the output's values at a time, held in
                            // one vector across the block's keys (through
                            // memory, each key would wait on the last).
                            for (c, out) in acc.chunks_mut(LANES).enumerate() {
                                let mut lanes = [T::ZERO; LANES];
                                for (l, &a) in lanes.iter_mut().zip(out.iter()) {
                                    *l = a * fix;
                                }
                                if out.len() == LANES {
                                    for (j, &p) in scores.iter().enumerate() {
                                        let row = &values[(j0 + j) * e + c * LANES..][..LANES];
                                        for l in 0..LANES {
                                            lanes[l] = p.mul_add(row[l], lanes[l]);
                                        }
                                    }
                                } else {
                                    for (j, &p) in scores.iter().enumerate() {
                                        let row = &values[(j0 + j) * e + c * LANES..][..out.len()];
                                        for (l, &vv) in lanes.iter_mut().zip(row) {
                                            *l = p.mul_add(vv, *l);
                                        }
                                    }
                                }
                                out.copy_from_slice(&lanes[..out.len()]);
                            }
                            max = new_max;
                        }
                        let inv = T::ONE / sum;
                        for a in acc.iter_mut() {
                            *a = *a * inv;
                        }
                    },
                );
            }
        })
    });
    Some(out)
}
