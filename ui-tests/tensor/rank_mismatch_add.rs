// The rank is part of a tensor's type: adding a matrix to a 3-D tensor is a
// compile error, not a run-time shape panic.
use blaze::prelude::*;

fn main() {
    let a = Tensor::<Cpu, 2>::zeros([2, 3], &CpuDevice);
    let b = Tensor::<Cpu, 3>::zeros([1, 2, 3], &CpuDevice);
    let _ = a + b;
}
