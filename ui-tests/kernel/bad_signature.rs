use blaze::kernel;

kernel! {
    fn wrong<T>(x: i32, y: f32) {
        y
    }
}

kernel! {
    fn arity(x: f32) -> f32 {
        pow(x) + clamp(x, 0.0)
    }
}

fn main() {}
