//! The optimizers' updates in one pass each, written into the tensors'
//! own buffers when nothing else holds them (`Handle::can_mut`: a
//! parameter the model alone owns, moments the optimizer alone owns),
//! else into new ones.

use blaze_runtime::{AdamStep, DType};
use cubecl::prelude::*;

use super::{CubeStorage, grid};

/// `y = a y + b x` in `y`'s buffer.
#[cube(launch)]
fn axpby_in_place_kernel(y: &mut Tensor<f32>, x: &Tensor<f32>, a: f32, b: f32) {
    if ABSOLUTE_POS >= y.len() {
        terminate!();
    }
    y[ABSOLUTE_POS] = a * y[ABSOLUTE_POS] + b * x[ABSOLUTE_POS];
}

/// `out = a y + b x`.
#[cube(launch)]
fn axpby_kernel(y: &Tensor<f32>, x: &Tensor<f32>, out: &mut Tensor<f32>, a: f32, b: f32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = a * y[ABSOLUTE_POS] + b * x[ABSOLUTE_POS];
}

/// Adam or AdamW at one element, as the wgpu backend's shader computes it.
#[cube(launch)]
fn adam_kernel(
    p: &mut Tensor<f32>,
    m: &mut Tensor<f32>,
    v: &mut Tensor<f32>,
    g: &Tensor<f32>,
    b1: f32,
    b2: f32,
    eps: f32,
    decay: f32,
    keep: f32,
    step: f32,
    inv_c2: f32,
    coupled: u32,
) {
    if ABSOLUTE_POS >= p.len() {
        terminate!();
    }
    let i = ABSOLUTE_POS;
    let pi = p[i];
    let gi = select(coupled == 1u32, g[i] + decay * pi, g[i]);
    let mi = b1 * m[i] + (1.0 - b1) * gi;
    let vi = b2 * v[i] + (1.0 - b2) * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    p[i] = keep * pi - step * (mi / (f32::sqrt(vi * inv_c2) + eps));
}

/// `t`, or a copy of it that nothing else holds, to be written in place.
fn own(t: &CubeStorage) -> CubeStorage {
    if t.handle.can_mut() {
        return t.clone();
    }
    let copy = CubeStorage::empty(&t.device, &t.shape, t.dtype);
    super::CubeNative::copy_into(t.arg(), 0, &copy, 0, &t.shape);
    copy
}

pub(super) fn axpby(y: &mut CubeStorage, a: f64, x: &CubeStorage, b: f64) {
    let n = y.numel();
    if n == 0 {
        return;
    }
    let (count, cube) = grid(n);
    let (a, b) = (a as f32, b as f32);
    if y.handle.can_mut() {
        axpby_in_place_kernel::launch(y.client(), count, cube, y.arg(), x.arg(), a, b);
    } else {
        let out = CubeStorage::empty(&y.device, &y.shape, DType::F32);
        axpby_kernel::launch(y.client(), count, cube, y.arg(), x.arg(), out.arg(), a, b);
        *y = out;
    }
}

pub(super) fn adam(p: &mut CubeStorage, m: &mut CubeStorage, v: &mut CubeStorage, g: &CubeStorage, o: AdamStep) {
    let (po, mo, vo) = (own(p), own(m), own(v));
    let n = po.numel();
    if n > 0 {
        let (c1, c2) = o.corrections();
        let coupled = u32::from(!o.decoupled && o.weight_decay != 0.0);
        let (count, cube) = grid(n);
        // The moments are flat `[n]`; the parameter may have any shape.
        adam_kernel::launch(
            p.client(),
            count,
            cube,
            po.view(vec![1], vec![n]),
            mo.arg(),
            vo.arg(),
            g.view(vec![1], vec![n]),
            o.beta1 as f32,
            o.beta2 as f32,
            o.eps as f32,
            o.weight_decay as f32,
            o.keep() as f32,
            (o.lr / c1) as f32,
            (1.0 / c2) as f32,
            coupled,
        );
    }
    (*p, *m, *v) = (po, mo, vo);
}
