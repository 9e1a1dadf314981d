use blaze::kernel;

kernel! {
    #[workgroup(64)]
    fn in_an_expression(data: &mut [f32]) {
        let lane = local_id();
        data[lane] = 2.0 * workgroup_sum(data[lane]);
    }
}

kernel! {
    #[workgroup(64)]
    fn divergent(data: &mut [f32]) {
        let lane = local_id();
        if lane < 32 {
            let t = workgroup_max(data[lane]);
            data[lane] = t;
        }
    }
}

kernel! {
    #[workgroup(48)]
    fn not_a_power_of_two(data: &mut [f32]) {
        let t = workgroup_sum(data[local_id()]);
        data[local_id()] = t;
    }
}

fn main() {}
