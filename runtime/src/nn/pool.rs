//! Pooling and reshaping layers: `MaxPool2d<K>`, `AvgPool2d<K>`,
//! `GlobalAvgPool` and `Flatten`. None has parameters.

use super::{Ctx, Layer, stateless_module};
use crate::adjoint;
use crate::{Backend, Pool2dOptions, Tensor};

/// Options of the pooling layers.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolConfig {
    /// Step between windows; `None` means the kernel size (PyTorch's default).
    pub stride: Option<usize>,
    /// Implicit padding on every side.
    pub padding: usize,
}

/// Max pooling over `K x K` windows.
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d<const K: usize> {
    /// Window, stride and padding.
    pub options: Pool2dOptions,
}

/// Average pooling over `K x K` windows (padding counts as zeros).
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2d<const K: usize> {
    /// Window, stride and padding.
    pub options: Pool2dOptions,
}

fn pool_options(k: usize, config: PoolConfig) -> Pool2dOptions {
    Pool2dOptions::new(k).stride(config.stride.unwrap_or(k)).padding(config.padding)
}

impl<const K: usize> MaxPool2d<K> {
    /// Max pooling with the given options.
    pub fn new(config: PoolConfig) -> Self {
        MaxPool2d { options: pool_options(K, config) }
    }
}

impl<const K: usize> AvgPool2d<K> {
    /// Average pooling with the given options.
    pub fn new(config: PoolConfig) -> Self {
        AvgPool2d { options: pool_options(K, config) }
    }
}

impl<const K: usize> Default for MaxPool2d<K> {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

impl<const K: usize> Default for AvgPool2d<K> {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

/// Mean over the spatial dims: `[n, c, h, w] -> [n, c]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GlobalAvgPool;

/// Flattens every dim after the batch dim: `[n, ...] -> [n, prod(...)]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flatten;

stateless_module!(GlobalAvgPool, Flatten);
stateless_module!(generics [const K: usize] MaxPool2d<K>, AvgPool2d<K>);

impl<B: Backend, const K: usize> Layer<B, 4, 4> for MaxPool2d<K> {
    /// Where each maximum came from, and the input shape.
    type Cache = (Tensor<B, 4>, [usize; 4]);

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        x.max_pool2d(self.options)
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, Self::Cache) {
        let (y, idx) = x.max_pool2d_with_indices(self.options);
        (y, (idx, x.shape()))
    }

    fn backward(&self, (idx, shape): &Self::Cache, g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        (Tensor::from_storage(adjoint::max_pool2d::<B>(g.storage(), shape, idx.storage())), ())
    }
}

impl<B: Backend, const K: usize> Layer<B, 4, 4> for AvgPool2d<K> {
    type Cache = [usize; 4];

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 4> {
        x.avg_pool2d(self.options)
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 4>, [usize; 4]) {
        (x.avg_pool2d(self.options), x.shape())
    }

    fn backward(&self, shape: &[usize; 4], g: &Tensor<B, 4>) -> (Tensor<B, 4>, ()) {
        (Tensor::from_storage(adjoint::avg_pool2d::<B>(g.storage(), shape, &self.options)), ())
    }
}

impl<B: Backend> Layer<B, 4, 2> for GlobalAvgPool {
    type Cache = [usize; 4];

    fn forward(&self, x: &Tensor<B, 4>) -> Tensor<B, 2> {
        let [n, c, _, _] = x.shape();
        x.mean_dim(2).mean_dim(3).reshape([n, c])
    }

    fn forward_train(&mut self, x: &Tensor<B, 4>, _: &mut Ctx) -> (Tensor<B, 2>, [usize; 4]) {
        (Layer::<B, 4, 2>::forward(self, x), x.shape())
    }

    fn backward(&self, shape: &[usize; 4], g: &Tensor<B, 2>) -> (Tensor<B, 4>, ()) {
        // A mean over the h x w positions of each plane.
        let [n, c, h, w] = *shape;
        let g4: Tensor<B, 4> = g.reshape([n, c, 1, 1]);
        (Tensor::from_storage(adjoint::mean::<B>(g4.storage(), shape, h * w)), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, 2> for Flatten {
    type Cache = [usize; D];

    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, 2> {
        let s = x.shape();
        x.reshape([s[0], s[1..].iter().product()])
    }

    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, 2>, [usize; D]) {
        (Layer::<B, D, 2>::forward(self, x), x.shape())
    }

    fn backward(&self, shape: &[usize; D], g: &Tensor<B, 2>) -> (Tensor<B, D>, ()) {
        (Tensor::from_storage(adjoint::reshape::<B>(g.storage(), shape)), ())
    }
}

impl From<&blaze_spec::Options> for PoolConfig {
    fn from(o: &blaze_spec::Options) -> Self {
        PoolConfig { stride: o.stride, padding: o.padding }
    }
}

impl<B: Backend, const K: usize> super::FromSpec<B> for MaxPool2d<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::MaxPool2d;
    fn from_spec(o: &blaze_spec::Options, _: &mut crate::rng::Rng, _: &B::Device) -> Self {
        MaxPool2d::new(o.into())
    }
}

impl<B: Backend, const K: usize> super::FromSpec<B> for AvgPool2d<K> {
    const LAYER: blaze_spec::Layer = blaze_spec::Layer::AvgPool2d;
    fn from_spec(o: &blaze_spec::Options, _: &mut crate::rng::Rng, _: &B::Device) -> Self {
        AvgPool2d::new(o.into())
    }
}

super::spec::plain_from_spec!(GlobalAvgPool, Flatten);
