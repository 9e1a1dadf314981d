// conv2d exists only on rank-4 tensors `[n, c, h, w]`.
use blaze::prelude::*;

fn main() {
    let x = Tensor::<Cpu, 2>::zeros([28, 28], &CpuDevice);
    let w = Tensor::<Cpu, 4>::zeros([6, 1, 5, 5], &CpuDevice);
    let _ = x.conv2d(&w, None, Conv2dOptions::default());
}
