//! Models that fusion changes the memory of, shared by the fusion tests
//! (which check they agree with their unfused twins) and the memory test
//! (which measures what their training forwards keep).

use blaze::prelude::*;

/// One body, compiled twice: fused and with `fuse = false`.
macro_rules! twice {
    ($fused:ident, $unfused:ident, [$($input:tt)*], { $($field:ident: $ty:ty),* $(,)? }, $body:block) => {
        #[model]
        pub struct $fused {
            $($field: $ty),*
        }

        #[model(input = [$($input)*])]
        impl $fused {
            fn forward(&self, x: Tensor) -> Tensor $body
        }

        #[model]
        pub struct $unfused {
            $($field: $ty),*
        }

        #[model(input = [$($input)*], fuse = false)]
        impl $unfused {
            fn forward(&self, x: Tensor) -> Tensor $body
        }
    };
}
pub(crate) use twice;

// A pre-norm MLP block: the backward recomputes the second layer's input
// from the GELU's cache and the first's from the LayerNorm's, so the
// training forward keeps neither.
// The residual adds run in the bias pass of `fc2` and of `skip` (whose
// output is added to a value made before it); `head`'s output is added to
// one made after it, which its call cannot take.
twice!(Mlp, MlpUnfused, [T, 8], {
    ln: LayerNorm<8>, fc1: Linear<8, 32>, fc2: Linear<32, 8>, rms: RMSNorm<8>, head: Linear<8, 4>, skip: Linear<8, 4>
}, {
    let x = x + self.fc2(gelu(self.fc1(self.ln(x))));
    let h = self.head(self.rms(x));
    let r = self.skip(x);
    h + r
});

// A sequential model recomputes the same inputs (`fc1`'s from `ln`, `fc2`'s
// from `act`); its twin, a forward body with fusion off, keeps them.
#[model(input = [8])]
pub struct SeqMlp {
    ln: LayerNorm<8>,
    fc1: Linear<8, 16>,
    act: Gelu,
    fc2: Linear<16, 4>,
}

#[model]
pub struct SeqTwin {
    ln: LayerNorm<8>,
    fc1: Linear<8, 16>,
    act: Gelu,
    fc2: Linear<16, 4>,
}

#[model(input = [8], fuse = false)]
impl SeqTwin {
    fn forward(&self, x: Tensor) -> Tensor {
        self.fc2(self.act(self.fc1(self.ln(x))))
    }
}

// Dropouts inside groups draw their masks in the group's pass, from a seed
// each; one read twice runs as its layer. The draws keep the body's order,
// so both twins drop the same elements.
twice!(Dropped, DroppedUnfused, [T, 8], { fc: Linear<8, 8>, drop: Dropout, other: Dropout, drop2: Dropout }, {
    let h = self.fc(x);
    let a = self.drop(gelu(h) * 2.0) + x;
    let b = self.other(h);
    let c = self.drop2(tanh(b)) * b;
    a * 0.5 + c
});
