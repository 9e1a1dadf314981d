use blaze::kernel;

kernel! {
    #[workgroup(64)]
    fn bad(data: &mut [f32], n: u32) {
        let x = data[1.5];
        let y = n + 1.0;
        let frozen = 2.0;
        frozen = 3.0;
        data[0] = n;
        if n { data[1] = x; }
    }
}

fn main() {}
