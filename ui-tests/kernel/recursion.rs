use blaze::kernel;

kernel! {
    fn again(x: f32) -> f32 {
        again(x * 0.5)
    }
}

fn main() {}
