//! General kernels (`#[workgroup(N)]`): their launch description
//! (`Workgroups`), the scalars and buffers a launch takes, and the checks
//! every backend runs before it dispatches one.

use super::*;

/// A general kernel (`#[workgroup(N)]` in `kernel!`): workgroups of
/// invocations over `f32` buffers and scalars. The CPU runs
/// [`Workgroups::run_workgroup`] for each workgroup, in parallel; the GPU
/// runs [`Workgroups::WGSL`].
pub trait Workgroups: Copy + fmt::Debug + Send + Sync + 'static {
    /// The kernel's name, for messages.
    const NAME: &'static str;
    /// The WGSL compute shader, validated by naga when the kernel compiled:
    /// buffers bound in parameter order, then the scalars in one uniform.
    const WGSL: &'static str;
    /// Invocations per workgroup.
    const WORKGROUP: u32;
    /// The parameters, in order.
    const PARAMS: &'static [ParamKind];
    /// Runs every invocation of workgroup `group` of `groups`.
    fn run_workgroup(group: u32, groups: u32, buffers: &[RawBuffer], scalars: &[ScalarArg]);
    /// The kernel for a backend whose kernels are compiled Rust, as for
    /// [`Elementwise::DEVICE`].
    const DEVICE: Option<&'static (dyn std::any::Any + Send + Sync)> = None;
}

/// A parameter of a general kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `&[f32]`.
    Input,
    /// `&mut [f32]`.
    Output,
    /// `f32`.
    F32,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
}

/// A scalar argument of a general kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarArg {
    /// An `f32`.
    F32(f32),
    /// A `u32`.
    U32(u32),
    /// An `i32`.
    I32(i32),
}

impl From<f32> for ScalarArg {
    fn from(v: f32) -> Self {
        ScalarArg::F32(v)
    }
}

impl From<u32> for ScalarArg {
    fn from(v: u32) -> Self {
        ScalarArg::U32(v)
    }
}

impl From<i32> for ScalarArg {
    fn from(v: i32) -> Self {
        ScalarArg::I32(v)
    }
}

/// A scalar as the parameter type a kernel declares (the generated
/// `launch` passes each as its declared type, so these do not convert).
macro_rules! scalar_as {
    ($t:ty) => {
        impl From<ScalarArg> for $t {
            fn from(a: ScalarArg) -> $t {
                match a {
                    ScalarArg::F32(v) => v as $t,
                    ScalarArg::U32(v) => v as $t,
                    ScalarArg::I32(v) => v as $t,
                }
            }
        }
    };
}
scalar_as!(f32);
scalar_as!(u32);
scalar_as!(i32);

/// A tensor handed to a general kernel.
#[derive(Debug)]
pub enum LaunchBuffer<'a, S> {
    /// Read only.
    Input(&'a S),
    /// Read and written in place.
    Output(&'a mut S),
}

impl<S> LaunchBuffer<'_, S> {
    /// The tensor, read or written.
    pub fn storage(&self) -> &S {
        match self {
            LaunchBuffer::Input(s) => s,
            LaunchBuffer::Output(s) => s,
        }
    }
}

/// A flat `f32` buffer as a kernel on the CPU sees it: invocations of
/// different workgroups read and write it at once, as on a GPU (which
/// elements each writes is the kernel's business). Every access is checked
/// against the length and panics naming the kernel and the buffer.
///
/// Elements are read and written as relaxed atomics: two workgroups may
/// write one element at once (a GPU leaves which write lands open; so does
/// this), and that must not be a data race in safe Rust. On x86 a relaxed
/// atomic load or store is the same instruction as a plain one.
#[derive(Debug, Clone, Copy)]
pub struct RawBuffer {
    ptr: *const AtomicU32,
    len: usize,
    writable: bool,
}

// SAFETY: a kernel's workgroups share buffers the way GPU workgroups do,
// every access is atomic, and `RawBuffer::new`'s caller keeps the memory
// alive and unaliased by Rust references for the launch.
unsafe impl Send for RawBuffer {}
unsafe impl Sync for RawBuffer {}

impl RawBuffer {
    /// Wraps `len` values at `ptr`.
    ///
    /// # Safety
    /// `ptr` must address `len` initialised `f32`s that outlive every use of
    /// the buffer, and, if `writable`, that nothing else reads or writes
    /// through other references while the kernel runs.
    pub unsafe fn new(ptr: *mut f32, len: usize, writable: bool) -> Self {
        // f32 and AtomicU32 have the same size and alignment.
        RawBuffer { ptr: ptr.cast_const().cast(), len, writable }
    }

    fn at(&self, i: u32, what: &str) -> &AtomicU32 {
        let i = i as usize;
        assert!(i < self.len, "{what}: index {i} out of bounds (length {})", self.len);
        // SAFETY: in bounds of the memory `new`'s caller vouches for, which
        // nothing but atomic accesses through this buffer touches meanwhile.
        unsafe { &*self.ptr.add(i) }
    }

    /// Element `i`.
    #[inline]
    pub fn load(&self, i: u32, what: &str) -> f32 {
        f32::from_bits(self.at(i, what).load(Ordering::Relaxed))
    }

    /// Sets element `i`.
    #[inline]
    pub fn store(&self, i: u32, v: f32, what: &str) {
        assert!(self.writable, "{what}: an input buffer is not written");
        self.at(i, what).store(v.to_bits(), Ordering::Relaxed);
    }
}

/// What is wrong with launching `K` on buffers that are outputs where
/// `outputs` says and on `scalars` scalars, if anything. Allocates only to
/// describe a mismatch.
pub fn launch_mismatch<K: Workgroups>(
    outputs: impl IntoIterator<Item = bool, IntoIter: Clone>,
    scalars: usize,
) -> Option<String> {
    let outputs = outputs.into_iter();
    let wanted = K::PARAMS.iter().filter_map(|p| match p {
        ParamKind::Input => Some(false),
        ParamKind::Output => Some(true),
        _ => None,
    });
    let wanted_scalars = K::PARAMS.len() - wanted.clone().count();
    if !outputs.clone().eq(wanted.clone()) {
        let (given, wanted): (Vec<bool>, Vec<bool>) = (outputs.collect(), wanted.collect());
        Some(format!("buffers {given:?} (true = output) for parameters {wanted:?}"))
    } else if scalars != wanted_scalars {
        Some(format!("{scalars} scalars for {wanted_scalars} parameters"))
    } else {
        None
    }
}

/// Panics, naming the kernel, unless the arguments match `K`'s parameters.
pub fn check_launch<K: Workgroups, S>(buffers: &[LaunchBuffer<'_, S>], scalars: &[ScalarArg]) {
    let outputs = buffers.iter().map(|b| matches!(b, LaunchBuffer::Output(_)));
    if let Some(problem) = launch_mismatch::<K>(outputs, scalars.len()) {
        panic!("{}: {problem}", K::NAME);
    }
}

/// Gives each output buffer a storage of its own, made by `copy`, before
/// a backend's launch writes it in place: a tensor shares its storage with
/// its clones, which must not see the write.
pub fn own_outputs<S>(buffers: &mut [LaunchBuffer<'_, S>], copy: impl Fn(&S) -> S) {
    for b in buffers.iter_mut() {
        if let LaunchBuffer::Output(t) = b {
            **t = copy(t);
        }
    }
}
