//! Convolution and pooling against their definitions, and their gradients
//! as the adjoints of the forward maps.

use super::reference as r;
use super::{FLOATS, assert_close, noise, tensor, tolerance, values};
use blaze_runtime::{Backend, Conv2dOptions, DType, Pool2dOptions};

fn check_conv<B: Backend>(xs: [usize; 4], ws: [usize; 4], bias: bool, o: Conv2dOptions, dtype: DType, dev: &B::Device) {
    let x = noise(xs.iter().product(), 31);
    let w = noise(ws.iter().product(), 32);
    let b = noise(ws[0], 33);
    let tx = tensor::<B, 4>(&x, xs, dtype, dev);
    let tw = tensor::<B, 4>(&w, ws, dtype, dev);
    let tb = tensor::<B, 1>(&b, [ws[0]], dtype, dev);
    let (want, shape) = r::conv2d(&x, xs, &w, ws, bias.then_some(&b[..]), &o);
    let got = tx.conv2d(&tw, bias.then_some(&tb), o);
    assert_close(
        &format!("conv2d x{xs:?} w{ws:?} {o:?} bias={bias} ({dtype})"),
        &got,
        &want,
        &shape,
        tolerance(dtype, true),
    );
}

/// conv2d against the direct definition: stride, padding, dilation,
/// groups, bias, the 1x1 fast path and batches that go parallel.
pub fn conv2d<B: Backend>(dev: &B::Device) {
    let base = Conv2dOptions::default();
    for dtype in FLOATS {
        check_conv::<B>([1, 1, 5, 5], [1, 1, 3, 3], false, base, dtype, dev);
        check_conv::<B>([2, 3, 7, 6], [4, 3, 3, 2], true, base, dtype, dev);
        check_conv::<B>([2, 3, 7, 6], [4, 3, 3, 3], true, base.padding(1), dtype, dev);
        check_conv::<B>([1, 2, 9, 9], [3, 2, 3, 3], true, base.stride(2).padding(2), dtype, dev);
        check_conv::<B>([1, 2, 9, 8], [2, 2, 3, 3], false, base.dilation(2).padding(1), dtype, dev);
        check_conv::<B>([2, 4, 5, 5], [6, 2, 3, 3], true, base.groups(2).padding(1), dtype, dev);
        check_conv::<B>([2, 4, 5, 5], [4, 1, 3, 3], true, base.groups(4), dtype, dev);
        check_conv::<B>([2, 3, 4, 4], [5, 3, 1, 1], true, base, dtype, dev);
        check_conv::<B>([1, 3, 4, 4], [2, 3, 1, 1], false, base.stride(2), dtype, dev);
        let asym = Conv2dOptions { stride: [1, 2], padding: [2, 0], dilation: [1, 1], groups: 1 };
        check_conv::<B>([1, 2, 5, 7], [2, 2, 5, 3], true, asym, dtype, dev);
    }
    check_conv::<B>([16, 8, 12, 12], [16, 8, 3, 3], true, base.padding(1), DType::F32, dev);
}

/// The conv and pooling gradients are the adjoints of the forward maps:
/// `<conv(x, w), g> = <x, input_grad(g, w)> = <w, weight_grad(x, g)>`.
pub fn conv_and_pool_gradients<B: Backend>(dev: &B::Device) {
    let base = Conv2dOptions::default();
    let convs = [
        ([2, 3, 7, 6], [4, 3, 3, 2], base),
        ([1, 2, 9, 9], [3, 2, 3, 3], base.stride(2).padding(2)),
        ([2, 2, 9, 8], [2, 2, 3, 3], base.dilation(2).padding(1)),
        ([2, 4, 5, 5], [6, 2, 3, 3], base.groups(2).padding(1)),
        ([3, 3, 4, 4], [5, 3, 1, 1], base),
        ([8, 8, 12, 12], [16, 8, 3, 3], base.padding(1)),
    ];
    for (xs, ws, o) in convs {
        let x = tensor::<B, 4>(&noise(xs.iter().product(), 51), xs, DType::F64, dev);
        let w = tensor::<B, 4>(&noise(ws.iter().product(), 52), ws, DType::F64, dev);
        let y = x.conv2d(&w, None, o);
        let g = tensor::<B, 4>(&noise(y.numel(), 53), y.shape(), DType::F64, dev);
        let lhs = (&y * &g).sum().item();
        let via_x = (&x * &g.conv2d_input_grad(&w, xs, o)).sum().item();
        let via_w = (&w * &x.conv2d_weight_grad(&g, ws, o)).sum().item();
        let tol = 1e-10 * lhs.abs().max(1.0);
        assert!((lhs - via_x).abs() < tol, "conv2d_input_grad {xs:?} {ws:?} {o:?}: {lhs} vs {via_x}");
        assert!((lhs - via_w).abs() < tol, "conv2d_weight_grad {xs:?} {ws:?} {o:?}: {lhs} vs {via_w}");
        // f32 agrees with f64.
        let g32 = g.to_dtype(DType::F32);
        let w32 = w.to_dtype(DType::F32);
        let dx64 = values(&g.conv2d_input_grad(&w, xs, o));
        assert_close(
            "conv2d_input_grad f32",
            &g32.conv2d_input_grad(&w32, xs, o),
            &dx64,
            &xs,
            tolerance(DType::F32, true),
        );
        let dw64 = values(&x.conv2d_weight_grad(&g, ws, o));
        let got = x.to_dtype(DType::F32).conv2d_weight_grad(&g32, ws, o);
        assert_close("conv2d_weight_grad f32", &got, &dw64, &ws, (1e-4, 1e-4));
    }
    for (xs, o) in [
        ([2, 3, 6, 6], Pool2dOptions::new(2)),
        ([1, 2, 7, 7], Pool2dOptions::new(3).stride(2).padding(1)),
        ([2, 2, 5, 5], Pool2dOptions::new(3).stride(1)),
        ([1, 2, 14, 8], Pool2dOptions::new(3).stride(2).ceil_mode(true)),
        ([2, 1, 5, 9], Pool2dOptions::new(2).padding(1).ceil_mode(true)),
    ] {
        let x = tensor::<B, 4>(&noise(xs.iter().product(), 54), xs, DType::F64, dev);
        let y = x.avg_pool2d(o);
        let g = tensor::<B, 4>(&noise(y.numel(), 55), y.shape(), DType::F64, dev);
        let lhs = (&y * &g).sum().item();
        let rhs = (&x * &g.avg_pool2d_input_grad(xs, o)).sum().item();
        assert!((lhs - rhs).abs() < 1e-12, "avg_pool2d_input_grad {xs:?} {o:?}: {lhs} vs {rhs}");
    }
}

/// max_pool2d (with indices) and avg_pool2d against the definition.
pub fn pooling<B: Backend>(dev: &B::Device) {
    for dtype in FLOATS {
        for (shape, o) in [
            ([1, 1, 4, 4], Pool2dOptions::new(2)),
            ([2, 3, 7, 5], Pool2dOptions::new(2)),
            ([1, 2, 5, 6], Pool2dOptions::new(2).stride(1)),
            ([1, 2, 7, 7], Pool2dOptions::new(3).stride(2).padding(1)),
            ([2, 2, 6, 6], Pool2dOptions::new(3).stride(1)),
            ([1, 1, 5, 9], Pool2dOptions { kernel: [1, 3], stride: [1, 2], padding: [0, 1], ceil_mode: false }),
        ] {
            let x = noise(shape.iter().product(), 41);
            let t = tensor::<B, 4>(&x, shape, dtype, dev);
            let (want, want_idx, out) = r::pool2d(&x, shape, &o, true);
            let tol = tolerance(dtype, false);
            assert_close(&format!("max_pool2d {shape:?} {o:?}"), &t.max_pool2d(o), &want, &out, tol);
            let (v, i) = t.max_pool2d_with_indices(o);
            assert_close("max_pool2d values", &v, &want, &out, tol);
            assert_eq!(i.to_vec::<i64>(), want_idx, "max_pool2d indices {shape:?} {o:?}");
            let (want, _, out) = r::pool2d(&x, shape, &o, false);
            assert_close(&format!("avg_pool2d {shape:?} {o:?}"), &t.avg_pool2d(o), &want, &out, tol);
        }
        // Sizes rounded up: a last window past the input (14 and 8 wide),
        // one dropped for starting in the right padding; average pooling
        // divides a window past the padded input by its part inside.
        for (shape, o) in [
            ([1, 2, 14, 8], Pool2dOptions::new(3).stride(2).ceil_mode(true)),
            ([2, 1, 5, 9], Pool2dOptions::new(2).padding(1).ceil_mode(true)),
            ([1, 1, 7, 6], Pool2dOptions::new(2).ceil_mode(true)),
        ] {
            let x = noise(shape.iter().product(), 43);
            let t = tensor::<B, 4>(&x, shape, dtype, dev);
            let (want, want_idx, out) = r::pool2d(&x, shape, &o, true);
            let (v, i) = t.max_pool2d_with_indices(o);
            assert_close(&format!("max_pool2d {shape:?} {o:?}"), &v, &want, &out, tolerance(dtype, false));
            assert_eq!(i.to_vec::<i64>(), want_idx, "max_pool2d indices {shape:?} {o:?}");
            let (want, _, out) = r::pool2d(&x, shape, &o, false);
            assert_close(
                &format!("avg_pool2d {shape:?} {o:?}"),
                &t.avg_pool2d(o),
                &want,
                &out,
                tolerance(dtype, false),
            );
        }
    }
}
