// The README's tensor example compiles as written.
use blaze::prelude::*;

fn main() {
    let dev = CpuDevice;
    let x = Tensor::<Cpu, 2>::rand_normal([4, 3], &dev);
    let w = Tensor::<Cpu, 2>::rand_normal([5, 3], &dev);
    let b = Tensor::<Cpu, 1>::zeros([5], &dev);
    let logits = x.matmul(&w.t()) + b.unsqueeze::<2>(0);
    let probs = logits.softmax(-1);
    let total: f64 = probs.sum().item();
    assert!((total - 4.0).abs() < 1e-4);
    let h = (x * 0.5 + 1.0).relu() - 2;
    let _flat: Tensor<Cpu, 1> = h.reshape([-1]);
}
