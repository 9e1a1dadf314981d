use blaze::kernel;

kernel! {
    fn looping(x: f32) -> f32 {
        let mut acc = 0.0;
        for _ in 0..3 {
            acc = acc + x;
        }
        x.exp() + acc
    }
}

fn main() {}
