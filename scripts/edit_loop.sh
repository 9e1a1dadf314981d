#!/usr/bin/env bash
# Measures the edit-compile loop a user of Blaze lives in: a crate of five
# small #[model]s that trains each with `fit`, built in release from
# clean, then rebuilt after editing one model (a hidden width toggled
# between 32 and 48), three times. Prints the seconds of each build.
#
#   scripts/edit_loop.sh [--warm] [WORKDIR]   (default: a fresh temporary folder)
#
# --warm keeps WORKDIR's target folder from an earlier run: the first
# build then recompiles only what changed in Blaze (for iterating on
# Blaze itself), and the rebuilds are measured as before.
#
# The crate depends on this checkout by path and has its own target
# folder, so the clean build compiles Blaze and its dependencies too
# (downloaded already: run any cargo build here first when offline).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
warm=false
if [[ ${1:-} == --warm ]]; then
    warm=true
    shift
fi
work=${1:-$(mktemp -d)}
mkdir -p "$work/src"
cat >"$work/Cargo.toml" <<TOML
[package]
name = "edit-loop"
version = "0.1.0"
edition = "2024"

[dependencies]
blaze = { path = "$repo" }

[workspace]
TOML
cp "$repo/Cargo.lock" "$work/Cargo.lock"
cp "$repo/rust-toolchain.toml" "$work/" 2>/dev/null || true

write_models() { # $1: the edited model's hidden width
    cat >"$work/src/main.rs" <<RUST
use blaze::data::{DataLoader, InMemoryDataset};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::train::{FitConfig, Mse, fit};
use blaze::DataVec;

#[model(input = [16])]
pub struct Wide { fc1: Linear<16, 64>, act: Relu, fc2: Linear<64, 4> }

#[model(input = [16])]
pub struct Deep { fc1: Linear<16, 32>, act: Tanh, fc2: Linear<32, 32>, act2: Gelu, fc3: Linear<32, 4> }

#[model(input = [1, 8, 8])]
pub struct Conv {
    #[layer(padding = 1)]
    conv: Conv2d<1, 8, 3>,
    act: Relu,
    pool: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<128, $1>,
    act2: Relu,
    out: Linear<$1, 4>,
}

#[model(input = [16])]
pub struct Normed { norm: LayerNorm<16>, fc1: Linear<16, 48>, act: Silu, fc2: Linear<48, 4> }

#[model(input = [16])]
pub struct Dropped { fc1: Linear<16, 24>, drop: Dropout, act: Relu, fc2: Linear<24, 4> }

fn data(shape: &[usize]) -> InMemoryDataset {
    let per: usize = shape.iter().product();
    let x: Vec<f32> = (0..64 * per).map(|i| (i % 7) as f32 / 7.0).collect();
    InMemoryDataset::with_targets(x, shape, DataVec::F32(vec![0.5; 64 * 4]), &[4]).expect("consistent")
}

macro_rules! train {
    (\$m:ident, \$shape:expr) => {{
        let mut model = \$m::new_seeded(0, &CpuDevice);
        let config = FitConfig { epochs: 1, verbose: false, ..FitConfig::new(Mse) };
        let (mut t, mut v) = (DataLoader::new(data(&\$shape), 16), DataLoader::new(data(&\$shape), 64));
        let h = fit(&mut model, &mut Adam::new(1e-3), &mut t, &mut v, &config).expect("trains");
        println!("{}: loss {:.4}", stringify!(\$m), h.epochs[0].val.loss());
    }};
}

fn main() {
    train!(Wide, [16]);
    train!(Deep, [16]);
    train!(Conv, [1, 8, 8]);
    train!(Normed, [16]);
    train!(Dropped, [16]);
}
RUST
}

build() { # prints the seconds of a release build
    local start end
    start=$(date +%s.%N)
    (cd "$work" && CARGO_TARGET_DIR="$work/target" cargo build --release --quiet)
    end=$(date +%s.%N)
    python3 -c "print(f'{$end - $start:.1f}')"
}

write_models 32
if $warm; then
    echo "release build of the changed tree: $(build) s"
else
    rm -rf "$work/target"
    echo "clean release build: $(build) s"
fi
(cd "$work" && CARGO_TARGET_DIR="$work/target" cargo run --release --quiet >/dev/null)
for width in 48 32 48; do
    write_models "$width"
    echo "release rebuild after editing one model: $(build) s"
done
