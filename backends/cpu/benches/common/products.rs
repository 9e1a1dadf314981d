//! The products `gemm_shapes` and `gemm_mkl` time, and `bench/torch_gemm.py`
//! repeats: those of training steps, and square ones.

/// One product: `[batch,] m x k` times `k x n`, each operand stored
/// row-major or as the transpose of a row-major matrix (`t`), as the
/// forward and backward passes of a layer read them.
pub struct Shape {
    pub name: &'static str,
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub lhs_t: bool,
    pub rhs_t: bool,
}

const fn shape(name: &'static str, batch: usize, m: usize, k: usize, n: usize, layout: &str) -> Shape {
    let l = layout.as_bytes();
    Shape { name, batch, m, k, n, lhs_t: l[0] == b't', rhs_t: l[1] == b't' }
}

/// The list `bench/torch_gemm.py` repeats.
pub const SHAPES: [Shape; 24] = [
    shape("square 256", 1, 256, 256, 256, "nn"),
    shape("square 512", 1, 512, 512, 512, "nn"),
    shape("square 1024", 1, 1024, 1024, 1024, "nn"),
    shape("square 2048", 1, 2048, 2048, 2048, "nn"),
    shape("mlp x.W^T", 1, 128, 784, 256, "nt"),
    shape("mlp g^T.x", 1, 256, 128, 784, "tn"),
    shape("mlp g.W", 1, 128, 256, 784, "nn"),
    shape("cnn fc x.W^T", 1, 64, 800, 10, "nt"),
    shape("batch-1 x.W^T", 1, 1, 784, 256, "nt"),
    shape("batch-1 g^T.x", 1, 256, 1, 784, "tn"),
    shape("gpt qkv x.W^T", 1, 2048, 64, 192, "nt"),
    shape("gpt qkv g^T.x", 1, 192, 2048, 64, "tn"),
    shape("gpt qkv g.W", 1, 2048, 192, 64, "nn"),
    shape("gpt fc1 x.W^T", 1, 2048, 64, 256, "nt"),
    shape("gpt fc2 x.W^T", 1, 2048, 256, 64, "nt"),
    shape("gpt q.k^T", 128, 64, 16, 64, "nt"),
    shape("gpt p.v", 128, 64, 64, 16, "nn"),
    shape("base qkv x.W^T", 1, 2048, 256, 768, "nt"),
    shape("base fc1 x.W^T", 1, 2048, 256, 1024, "nt"),
    shape("base fc2 x.W^T", 1, 2048, 1024, 256, "nt"),
    shape("base fc1 g^T.x", 1, 1024, 2048, 256, "tn"),
    shape("base fc2 g.W", 1, 2048, 256, 1024, "nn"),
    shape("base q.k^T", 128, 128, 32, 128, "nt"),
    shape("base p.v", 128, 128, 128, 32, "nn"),
];
