//! The layers' own elementwise kernels (dropout's mask) on one tensor of any rank, as one function of the backend: it sits in
//! the backend's [`Table`](crate::Table), so a backend crate
//! compiles these kernels' loops once instead of every user crate that
//! uses the layers.

use blaze_runtime::kernel::DropoutMask;
use blaze_runtime::kernel::{self, Arg, KernelFn};
use blaze_runtime::{Backend, Tensor};

/// One of the layers' kernels with its numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OwnKernel {
    /// Zero where the element's draw from `seed` is below `threshold`,
    /// else times `scale`.
    Dropout { threshold: f64, scale: f64, seed: u64 },
}

impl OwnKernel {
    /// `f` of the kernel at `x` (a partial names the argument, `x` being
    /// 0), with `x`'s shape.
    pub(crate) fn run<B: Backend, const D: usize>(self, f: KernelFn, x: &Tensor<B, D>) -> Tensor<B, D> {
        Tensor::wrap((crate::Table::<B>::of().own_kernel)(self, f, x.storage()))
    }
}

/// [`OwnKernel::run`] on storages: the kernel over `x`'s values in order,
/// reshaped back (an elementwise kernel, and the draws index the
/// elements in that order).
pub(crate) fn own_kernel<B: Backend>(kernel: OwnKernel, f: KernelFn, x: &B::Storage) -> B::Storage {
    let flat = Tensor::<B, 1>::flat(x);
    let x1 = Arg::Tensor(&flat);
    let out = match kernel {
        OwnKernel::Dropout { threshold, scale, seed } => {
            kernel::eval::<DropoutMask, B, 1>(f, &[x1, Arg::Number(threshold), Arg::Number(scale), Arg::Uniform(seed)])
        }
    };
    B::reshape(out.storage(), B::shape(x))
}
