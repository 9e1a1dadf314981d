use blaze::kernel;

kernel! {
    #[workgroup(64)]
    fn half_sync(data: &mut [f32]) {
        let lane = local_id();
        #[shared]
        let tile: [f32; 64];
        tile[lane] = data[lane];
        if lane < 32 {
            barrier();
            data[lane] = tile[lane + 32];
        }
        let mut n = data[0] as u32;
        while n > 0 {
            barrier();
            n = n - 1;
        }
    }
}

fn main() {}
