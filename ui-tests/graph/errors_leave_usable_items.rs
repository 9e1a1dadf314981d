// A graph model with errors in its struct or body still has its whole API,
// so the uses below add no errors of their own.
use blaze::nn::Ctx;
use blaze::prelude::*;

#[model]
pub struct Body {
    fc: Linear<16, 8>,
}

#[model(input = [T, 16])]
impl Body {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x).softmax(3)
    }
}

#[model]
pub struct Odd {
    fc: Linear<16, 8>,
    steps: usize,
}

#[model(input = [T, 16])]
impl Odd {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

#[model]
pub struct Opt {
    #[layer(bais = false)]
    fc: Linear<16, 8>,
}

#[model(input = [T, 16])]
impl Opt {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

// Two inputs; the output lowers, an unrelated statement does not.
#[model]
pub struct Two {
    fc: Linear<16, 8>,
}

#[model(input = ([T, 16], [T, 8]))]
impl Two {
    fn forward(&self, x: Tensor, y: Tensor) -> Tensor {
        let z = x.transpose(0, 9);
        self.fc(x) + y
    }
}

// `forward` takes one input where `input` gives two shapes.
#[model]
pub struct Arity {
    fc: Linear<16, 8>,
}

#[model(input = ([T, 16], [T, 16]))]
impl Arity {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc(x)
    }
}

fn main() {
    let device = CpuDevice;
    let t = Tensor::<Cpu, 3>::rand_normal([2, 5, 16], &device);
    let u = Tensor::<Cpu, 3>::rand_normal([2, 5, 8], &device);
    let _ = Body::new(&device).forward(&t).shape();
    let _ = Odd::new(&device).forward(&t).shape();
    let _ = Opt::new_seeded(1, &device).forward(&t).shape();
    let _ = Arity::new(&device).forward(&t, &t).shape();
    let mut two = Two::new(&device);
    let (y, cache) = two.forward_train(&t, &u, &mut Ctx::train(0));
    let ((gx, _gy), _grads) = two.backward(&cache, &y);
    let _ = (gx.shape(), two.summary(), Two::<Cpu>::NUM_PARAMS);
}
