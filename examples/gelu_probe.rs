use blaze::UnaryOp;
use blaze::prelude::*;
use blaze::runtime::adjoint;
fn main() {
    let dev = CpuDevice;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let m = Tensor::<Cpu, 2>::normal_with([4096, 1024], 0.0, 1.0, &mut blaze::Rng::seed_from_u64(3), &dev);
    let g = Tensor::<Cpu, 2>::normal_with([4096, 1024], 0.0, 1.0, &mut blaze::Rng::seed_from_u64(5), &dev);
    let which = std::env::args().nth(1).unwrap_or_default();
    pool.install(|| dev.run(|| {
        let t = std::time::Instant::now();
        for _ in 0..200 {
            if which != "bwd" { drop(m.gelu()); }
            if which != "fwd" { drop(adjoint::unary::<Cpu>(UnaryOp::Gelu, m.storage(), m.storage(), g.storage())); }
        }
        println!("{:.2} ms per call", t.elapsed().as_secs_f64() * 1e3 / 200.0);
    }));
}
