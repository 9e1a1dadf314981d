use blaze::kernel;

kernel! {
    fn gate(x: f32, y: f32) -> f32 {
        let on = x > y;
        let bad = on + 1.0;
        select(x, bad, y)
    }
}

fn main() {}
