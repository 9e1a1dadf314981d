use blaze::kernel;

kernel! {
    fn soft(x: f32) -> f32 {
        1.0 / (1.0 + exq(-x))
    }
}

fn main() {}
