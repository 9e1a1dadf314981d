//! Tensor values as the GPU backends hold them: one 32-bit word per element
//! (an f32's bits; a bool as 0 or 1; an index as a `u32`), or two bytes per
//! element for f16 where the backend computes in it. What a backend does
//! not hold lives on the host, in `HostFallback`.

use blaze_runtime::{DType, DataVec, f16};

use crate::GpuBackend;

impl GpuBackend {
    /// How the backend's messages start: `wgpu`, `cubecl`.
    pub fn name(self) -> &'static str {
        match self {
            GpuBackend::Wgpu => "wgpu",
            GpuBackend::CubeCl => "cubecl",
        }
    }

    /// Its tensor backend: `WgpuNative`.
    fn native(self) -> &'static str {
        match self {
            GpuBackend::Wgpu => "WgpuNative",
            GpuBackend::CubeCl => "CubeNative",
        }
    }

    /// The facade's backend that pairs it with the host.
    fn with_host(self) -> &'static str {
        match self {
            GpuBackend::Wgpu => "blaze::wgpu::Wgpu",
            GpuBackend::CubeCl => "blaze::cubecl::CubeCl",
        }
    }

    /// The dtypes the backend's ops compute on, in words.
    fn computes(self) -> &'static str {
        match self {
            GpuBackend::Wgpu => "f32 and bool",
            GpuBackend::CubeCl => "f32, f16 and bool",
        }
    }

    /// Panics for op `op` given a tensor of `dtype` that the backend
    /// holds only as indices (i64) or not at all, saying what to use.
    pub fn refuse(self, op: &str, dtype: DType) -> ! {
        let native = self.native();
        panic!(
            "{} {op}: a {dtype} tensor; {native} computes on {}, and holds i64 only as indices: \
             use it as HostFallback<{native}, _> ({})",
            self.name(),
            self.computes(),
            self.with_host()
        )
    }

    /// A size or index as the 32-bit word a shader reads, or a panic naming it.
    pub fn index_word(self, x: usize) -> u32 {
        u32::try_from(x)
            .unwrap_or_else(|_| panic!("{}: index {x} does not fit the device's 32-bit indices", self.name()))
    }

    /// `values` as the bytes a buffer holds, and the dtype they keep; i64
    /// values are indices for the index ops (in bounds of what they index).
    /// f16 packs as halves when `f16` says the backend holds it; other
    /// dtypes live on the host, and panic here.
    pub fn pack(self, values: &DataVec, f16: bool) -> (Vec<u8>, DType) {
        match values {
            DataVec::F32(v) => (v.iter().flat_map(|x| x.to_le_bytes()).collect(), DType::F32),
            DataVec::Bool(v) => (v.iter().flat_map(|&x| u32::from(x).to_le_bytes()).collect(), DType::Bool),
            DataVec::I64(v) => {
                let words = v.iter().map(|&x| self.index_word(usize::try_from(x).unwrap_or(usize::MAX)));
                (words.flat_map(u32::to_le_bytes).collect(), DType::I64)
            }
            DataVec::F16(v) if f16 => (v.iter().flat_map(|x| x.to_le_bytes()).collect(), DType::F16),
            other => {
                let native = self.native();
                panic!(
                    "{} from_data: {} tensors live on the host: use {native} as HostFallback<{native}, _> ({})",
                    self.name(),
                    other.dtype(),
                    self.with_host()
                )
            }
        }
    }
}

/// The first `n` values of `dtype` in a buffer's `bytes`, as
/// [`GpuBackend::pack`] wrote them (an i64 tensor's words are `u32` indices).
pub fn unpack(bytes: &[u8], dtype: DType, n: usize) -> DataVec {
    if dtype == DType::F16 {
        return DataVec::F16(bytes.chunks_exact(2).take(n).map(|c| f16::from_le_bytes([c[0], c[1]])).collect());
    }
    let words = bytes.chunks_exact(4).take(n).map(|c| [c[0], c[1], c[2], c[3]]);
    match dtype {
        DType::F32 => DataVec::F32(words.map(f32::from_le_bytes).collect()),
        DType::Bool => DataVec::Bool(words.map(|w| u32::from_le_bytes(w) != 0).collect()),
        _ => DataVec::I64(words.map(|w| i64::from(u32::from_le_bytes(w))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_the_words_a_shader_reads() {
        let cases = [
            DataVec::F32(vec![1.5, -0.0, f32::NAN.copysign(-1.0), f32::INFINITY]),
            DataVec::Bool(vec![true, false, true]),
            DataVec::I64(vec![0, 7, i64::from(u32::MAX)]),
            DataVec::F16(vec![f16::from_f32(0.5), f16::NEG_INFINITY]),
        ];
        for values in cases {
            let (bytes, dtype) = GpuBackend::CubeCl.pack(&values, true);
            let back = unpack(&bytes, dtype, values.len());
            let bits = |v: &DataVec| format!("{:?}", v.to_f64_vec().iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            assert_eq!(bits(&back), bits(&values), "{dtype}");
        }
        assert_eq!(unpack(&[0; 12], DType::F32, 2).len(), 2, "a buffer may be longer than its tensor");
    }

    #[test]
    #[should_panic(
        expected = "wgpu from_data: f16 tensors live on the host: use WgpuNative as HostFallback<WgpuNative, _> (blaze::wgpu::Wgpu)"
    )]
    fn what_a_backend_does_not_hold_is_refused_by_name() {
        GpuBackend::Wgpu.pack(&DataVec::F16(vec![f16::ONE]), false);
    }

    #[test]
    #[should_panic(expected = "cubecl: index 4294967296 does not fit the device's 32-bit indices")]
    fn indices_must_fit_32_bits() {
        GpuBackend::CubeCl.pack(&DataVec::I64(vec![1 << 32]), true);
    }
}
