//! A general kernel the CPU tests and the wgpu tests both run.

use blaze::kernel;

kernel! {
    /// Sums each row of a `[rows, cols]` matrix: one workgroup per row, a
    /// strided pass into shared memory, then a tree reduction.
    #[workgroup(64)]
    pub fn row_sum(input: &[f32], out: &mut [f32], cols: u32) {
        let row = workgroup_id();
        let lane = local_id();
        #[shared]
        let partial: [f32; 64];
        let mut acc = 0.0;
        let mut c = lane;
        while c < cols {
            acc += input[row * cols + c];
            c += 64;
        }
        partial[lane] = acc;
        barrier();
        let mut stride = 32;
        while stride > 0 {
            if lane < stride {
                partial[lane] += partial[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        if lane == 0 {
            out[row] = partial[0];
        }
    }
}
