use blaze::kernel;

kernel! {
    // Elementwise kernels compute in f32: no bit operations.
    fn halve(x: f32) -> f32 {
        x >> 1.0
    }
}

kernel! {
    #[workgroup(32)]
    fn bits(out: &mut [f32], k: i32, n: u32) {
        let i = global_id();
        let f = out[i];
        let a = f << 2;
        let b = k & n;
        let mut c = k;
        c <<= 1.5;
        out[i] %= 2.0;
        out[i] ^= 1.0;
    }
}

fn main() {}
