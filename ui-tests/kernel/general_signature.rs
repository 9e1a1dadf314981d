use blaze::kernel;

kernel! {
    #[workgroup(0)]
    fn bad(data: &mut [f32], flag: bool) -> f32 {
        data[0] = 1.0;
    }
}

fn main() {}
