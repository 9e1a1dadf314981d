use blaze::kernel;

kernel! {
    fn scale(x: f32, factor: f32) -> f32 {
        x * 2 + facter
    }
}

fn main() {}
