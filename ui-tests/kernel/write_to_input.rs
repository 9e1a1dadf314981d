use blaze::kernel;

kernel! {
    #[workgroup(64)]
    fn scale(input: &[f32], out: &mut [f32], factor: f32) {
        let i = global_id();
        input[i] = input[i] * factor;
        out[i] = input[i];
    }
}

fn main() {}
