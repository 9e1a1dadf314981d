//! The device: adapter choice, cached pipelines, a pool of storage buffers,
//! and batched submission. Ops record their dispatches into one command
//! encoder; it is submitted when data is read back (or every
//! [`MAX_BATCH`] dispatches), so a training step costs a handful of
//! submissions, not one per op. Each dispatch's parameters go into a
//! uniform arena written once per submission.
//!
//! Faults (an allocation beyond the adapter's limits, an out-of-memory or
//! validation error from the driver, a lost device) cannot surface from
//! ops, which return tensors. The device records the first one, stops
//! recording work, and reports it from [`WgpuDevice::synchronize`], which
//! the fallible entry points call; reading a tensor back from a faulted
//! device panics with the fault.
//!
//! Every device runs a self-check when it opens (`self_check.rs`): a
//! shader of the integer, shift, comparison and NaN operations the
//! generated code relies on, compared with what the CPU computes. An
//! adapter that disagrees is refused unless the caller opts in.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use blaze_gpu_host::{GpuBackend, Identity};
use blaze_runtime::DeviceError;

use crate::WgpuError;

/// A wgpu device and its queue, with the kernels compiled on it so far.
/// Cloning shares the device; `WgpuDevice::default()` is one device
/// shared by the process (it panics, saying how to get one, when there is
/// no adapter).
#[derive(Clone)]
pub struct WgpuDevice {
    pub(crate) inner: Arc<Inner>,
}

blaze_gpu_host::device_handle!(WgpuDevice, GpuBackend::Wgpu, "BLAZE_REQUIRE_WGPU");

/// How [`WgpuDevice::open`] picks and sets up a device.
#[derive(Clone, Debug, Default)]
pub struct DeviceOptions {
    /// The first adapter whose name contains this (case-insensitively);
    /// `None` reads `BLAZE_WGPU_ADAPTER`, and without it takes the best
    /// adapter (hardware before software). `WGPU_BACKEND=vulkan|gl|metal|dx12`
    /// limits the APIs searched.
    pub adapter: Option<String>,
    /// The largest buffer, in bytes, below the adapter's own limit: a
    /// device that must fit a smaller budget, or a test of what happens
    /// beyond it.
    pub max_buffer_bytes: Option<u64>,
    /// Opens an adapter that fails the self-check, computing some integer
    /// or NaN operation differently from the CPU. `BLAZE_WGPU_ALLOW_DIVERGENT=1`
    /// does the same.
    pub allow_divergent: bool,
}

/// Dispatches recorded before a submission is forced.
pub const MAX_BATCH: usize = 128;
/// Bytes of parameters per dispatch: 64 `u32`s, as 16 `vec4<u32>`.
pub const PARAM_BYTES: u64 = 256;

#[derive(Debug)]
pub(crate) struct Inner {
    /// The order the process opened it in, and its adapter.
    id: Identity,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    /// The largest buffer a tensor may have, in bytes.
    max_buffer: u64,
    /// The first fault, shared with wgpu's error and device-lost callbacks.
    fault: Arc<Mutex<Option<String>>>,
    pipelines: Mutex<HashMap<String, wgpu::ComputePipeline>>,
    state: Mutex<State>,
    /// The parameters of one batch's dispatches, `MAX_BATCH` blocks.
    arena: wgpu::Buffer,
}

/// The batch being recorded, and the buffer pool.
#[derive(Debug, Default)]
struct State {
    encoder: Option<wgpu::CommandEncoder>,
    params: Vec<u8>,
    dispatches: usize,
    /// Dispatches recorded since the device opened.
    total: u64,
    /// Free buffers by size in bytes (powers of two).
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    /// Buffers dropped while the batch that may read them is unsubmitted.
    retired: Vec<wgpu::Buffer>,
    /// The mappable buffer reads go through, kept for the next read.
    staging: Option<wgpu::Buffer>,
}

/// A pooled storage buffer: back to the pool when the last tensor that
/// holds it is dropped.
#[derive(Debug)]
pub(crate) struct PoolBuffer {
    pub(crate) buffer: Option<wgpu::Buffer>,
    device: Arc<Inner>,
}

impl PoolBuffer {
    pub(crate) fn get(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().unwrap_or_else(|| unreachable!("a pool buffer is present until dropped"))
    }
}

impl Drop for PoolBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.device.lock().retired.push(b);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A buffer bound to a dispatch.
pub(crate) type Binding<'a> = &'a wgpu::Buffer;

impl WgpuDevice {
    /// A device as `options` say, before its self-check: what
    /// [`WgpuDevice::open`] (`self_check.rs`) checks and admits.
    pub(crate) fn open_unchecked(options: &DeviceOptions) -> Result<Self, WgpuError> {
        let fit = |mut limits: wgpu::Limits| {
            // Blaze binds one group; wgpu-core cannot hold more than 8 (the
            // no-op backend offers u32::MAX, which wgpu-core cannot lay out).
            limits.max_bind_groups = limits.max_bind_groups.min(4);
            if let Some(cap) = options.max_buffer_bytes {
                limits.max_buffer_size = limits.max_buffer_size.min(cap);
                limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap);
            }
            limits
        };
        // 16-bit floats in shaders where the adapter has them: the
        // products under an f16 precision stage their tiles in f16.
        let opened =
            blaze_gpu_host::open_device(GpuBackend::Wgpu, options.adapter.as_deref(), wgpu::Features::SHADER_F16, fit)?;
        let (info, device, queue) = (opened.info, opened.device, opened.queue);
        let limits = device.limits();
        let fault: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = Arc::clone(&fault);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| record(&slot, full_message(&e))));
        let slot = Arc::clone(&fault);
        device.set_device_lost_callback(move |reason, message| {
            record(&slot, format!("the device was lost ({reason:?}): {message}"));
        });
        let arena = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("blaze params"),
            size: PARAM_BYTES * MAX_BATCH as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let max_buffer = limits.max_buffer_size.min(limits.max_storage_buffer_binding_size);
        let inner = Inner {
            id: Identity::next(info),
            device,
            queue,
            max_buffer,
            fault,
            pipelines: Mutex::new(HashMap::new()),
            state: Mutex::new(State::default()),
            arena,
        };
        Ok(WgpuDevice { inner: Arc::new(inner) })
    }

    /// The first fault this device has had, if any.
    pub fn fault(&self) -> Option<String> {
        self.inner.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records `message` as the device's fault unless it already has one.
    pub(crate) fn record_fault(&self, message: String) {
        record(&self.inner.fault, message);
    }

    /// Waits for everything recorded so far to run and reports the first
    /// fault the device has had; see [`blaze_runtime::Device::synchronize`].
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        if self.fault().is_none() {
            self.flush();
            if let Err(e) = self.inner.device.poll(wgpu::PollType::wait_indefinitely()) {
                self.record_fault(format!("waiting for the device failed: {e}"));
            }
        }
        match self.fault() {
            Some(message) => Err(DeviceError { device: self.adapter_name(), message }),
            None => Ok(()),
        }
    }

    /// Releases the device's memory now instead of when the last handle
    /// goes. Every tensor on it becomes invalid: later ops do nothing, and
    /// [`WgpuDevice::synchronize`] reports the device as destroyed.
    pub fn destroy(&self) {
        self.record_fault("the device was destroyed (`WgpuDevice::destroy`)".into());
        self.inner.device.destroy();
    }

    /// The largest buffer a tensor may occupy, in bytes.
    pub fn max_buffer_bytes(&self) -> u64 {
        self.inner.max_buffer
    }

    /// Whether shaders on this device compute in f16 (the adapter has
    /// `SHADER_F16`).
    pub fn has_f16(&self) -> bool {
        self.inner.device.features().contains(wgpu::Features::SHADER_F16)
    }

    pub(crate) fn max_groups(&self) -> u32 {
        self.inner.device.limits().max_compute_workgroups_per_dimension
    }

    /// The pipeline of `entry` in `wgsl`, compiled once per `key`.
    pub(crate) fn pipeline(
        &self,
        kernel: &'static str,
        key: &str,
        wgsl: impl FnOnce() -> String,
        entry: &str,
    ) -> Result<wgpu::ComputePipeline, WgpuError> {
        let mut cache = self.inner.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(key) {
            return Ok(p.clone());
        }
        let device = &self.inner.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kernel),
            source: wgpu::ShaderSource::Wgsl(wgsl().into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(WgpuError::Launch { kernel, message: full_message(&e) });
        }
        cache.insert(key.to_owned(), pipeline.clone());
        Ok(pipeline)
    }

    /// [`WgpuDevice::pipeline`] for a tensor op, which cannot fail: a
    /// shader the device rejects is its fault, and `None` leaves the
    /// dispatches that would use it unrecorded.
    pub(crate) fn compile(
        &self,
        kernel: &'static str,
        key: &str,
        wgsl: impl FnOnce() -> String,
        entry: &str,
    ) -> Option<wgpu::ComputePipeline> {
        if self.fault().is_some() {
            return None;
        }
        self.pipeline(kernel, key, wgsl, entry).map_err(|e| self.record_fault(e.to_string())).ok()
    }

    /// A buffer of at least `bytes` bytes from the pool. Beyond the
    /// device's limit the request is a fault, and a small stand-in keeps
    /// the op going until the fault is reported.
    pub(crate) fn alloc(&self, bytes: u64) -> Arc<PoolBuffer> {
        let max = self.inner.max_buffer;
        if bytes > max {
            self.record_fault(format!("a tensor of {bytes} bytes exceeds this device's largest buffer of {max} bytes"));
        }
        // Powers of two pool well; near the limit, the exact size fits.
        let pow2 = bytes.max(16).next_power_of_two();
        let size = if bytes > max {
            16
        } else if pow2 <= max {
            pow2
        } else {
            bytes.next_multiple_of(4)
        };
        let reused = self.inner.lock().free.get_mut(&size).and_then(Vec::pop);
        let buffer = reused.unwrap_or_else(|| {
            self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("blaze tensor"),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        Arc::new(PoolBuffer { buffer: Some(buffer), device: self.inner.clone() })
    }

    /// A pooled buffer holding `bytes`.
    pub(crate) fn upload(&self, bytes: &[u8]) -> Arc<PoolBuffer> {
        let b = self.alloc(bytes.len() as u64);
        if !bytes.is_empty() && self.fault().is_none() {
            // Queue writes land before the next submission's commands; the
            // pool only hands out buffers no unsubmitted command reads.
            let padded;
            let data = if bytes.len().is_multiple_of(4) {
                bytes
            } else {
                padded = [bytes, &[0; 3][..4 - bytes.len() % 4]].concat();
                &padded
            };
            self.inner.queue.write_buffer(b.get(), 0, data);
        }
        b
    }

    /// Compute dispatches this device has recorded since it opened: what
    /// one step costs in kernel launches (count before and after it).
    pub fn dispatches(&self) -> u64 {
        self.inner.lock().total
    }

    /// Records one dispatch of `pipeline` with `buffers` bound in order
    /// (storage bindings) and `params` (up to 64 words) as the uniform
    /// binding after them.
    /// Nothing is recorded for a pipeline that failed to compile (`None`)
    /// or on a faulted device.
    pub(crate) fn dispatch(
        &self,
        pipeline: &Option<wgpu::ComputePipeline>,
        buffers: &[Binding<'_>],
        params: &[u32],
        groups: (u32, u32, u32),
    ) {
        self.dispatch_with(pipeline, buffers, Some(params), groups);
    }

    /// [`WgpuDevice::dispatch`], with no uniform binding for `None`.
    pub(crate) fn dispatch_with(
        &self,
        pipeline: &Option<wgpu::ComputePipeline>,
        buffers: &[Binding<'_>],
        params: Option<&[u32]>,
        groups: (u32, u32, u32),
    ) {
        let words = params.unwrap_or(&[]);
        assert!(words.len() <= (PARAM_BYTES / 4) as usize, "wgpu: {} kernel parameters", words.len());
        let Some(pipeline) = pipeline else { return };
        if groups.0 == 0 || groups.1 == 0 || groups.2 == 0 || self.fault().is_some() {
            return;
        }
        let mut st = self.inner.lock();
        if st.dispatches == MAX_BATCH {
            self.submit(&mut st);
        }
        let offset = st.params.len() as u64;
        let mut block = [0u8; PARAM_BYTES as usize];
        for (i, p) in words.iter().enumerate() {
            block[4 * i..4 * i + 4].copy_from_slice(&p.to_le_bytes());
        }
        st.params.extend_from_slice(&block);
        st.dispatches += 1;
        st.total += 1;
        let dev = &self.inner.device;
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
            .collect();
        if params.is_some() {
            entries.push(wgpu::BindGroupEntry {
                binding: buffers.len() as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &self.inner.arena,
                    offset,
                    size: wgpu::BufferSize::new(PARAM_BYTES),
                }),
            });
        }
        let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let encoder = st
            .encoder
            .get_or_insert_with(|| dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None }));
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
    }

    /// Records a copy of `bytes` bytes between buffers.
    pub(crate) fn copy(&self, from: &wgpu::Buffer, to: &wgpu::Buffer, bytes: u64) {
        if bytes == 0 || self.fault().is_some() {
            return;
        }
        let mut st = self.inner.lock();
        let dev = &self.inner.device;
        let encoder = st
            .encoder
            .get_or_insert_with(|| dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None }));
        encoder.copy_buffer_to_buffer(from, 0, to, 0, bytes);
    }

    /// Submits the recorded batch; buffers retired while it was recorded
    /// go back to the pool.
    fn submit(&self, st: &mut State) {
        if let Some(encoder) = st.encoder.take() {
            if !st.params.is_empty() {
                self.inner.queue.write_buffer(&self.inner.arena, 0, &st.params);
            }
            self.inner.queue.submit([encoder.finish()]);
        }
        st.params.clear();
        st.dispatches = 0;
        for b in std::mem::take(&mut st.retired) {
            st.free.entry(b.size()).or_default().push(b);
        }
    }

    /// Submits everything recorded so far.
    pub fn flush(&self) {
        let mut st = self.inner.lock();
        self.submit(&mut st);
    }

    /// The first `bytes` bytes of `buffer`, after everything recorded so
    /// far ran; `None` once the device has faulted (its contents are
    /// invalid then).
    pub(crate) fn try_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Option<Vec<u8>> {
        if bytes == 0 {
            return Some(Vec::new());
        }
        if self.fault().is_some() {
            return None;
        }
        let dev = &self.inner.device;
        let size = bytes.next_multiple_of(4);
        let staging = {
            let mut st = self.inner.lock();
            let staging = match st.staging.take() {
                Some(b) if b.size() >= size => b,
                _ => dev.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("blaze readback"),
                    size: size.next_power_of_two(),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
            };
            let encoder = st
                .encoder
                .get_or_insert_with(|| dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None }));
            encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
            self.submit(&mut st);
            staging
        };
        let slice = staging.slice(..size);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let fail = |e: String| {
            self.record_fault(format!("reading a tensor back failed: {e}"));
            None
        };
        if let Err(e) = dev.poll(wgpu::PollType::wait_indefinitely()) {
            return fail(e.to_string());
        }
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return fail(e.to_string()),
            Err(e) => return fail(e.to_string()),
        }
        let out = match slice.get_mapped_range() {
            Ok(view) => view[..bytes as usize].to_vec(),
            Err(e) => return fail(e.to_string()),
        };
        staging.unmap();
        self.inner.lock().staging = Some(staging);
        // A fault during the work just waited for makes the bytes invalid.
        self.fault().is_none().then_some(out)
    }

    /// [`WgpuDevice::try_read`] for values a caller asked for: a faulted
    /// device panics with its fault rather than hand back made-up numbers.
    pub(crate) fn read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Vec<u8> {
        self.try_read(buffer, bytes).unwrap_or_else(|| {
            panic!(
                "wgpu: {}: {}; tensors on this device are invalid (fit, nn::to_device and launch return this as an error; \
                 WgpuDevice::synchronize reports it)",
                self.adapter_name(),
                self.fault().unwrap_or_default()
            )
        })
    }

    /// [`WgpuDevice::try_read`] inside an op, which cannot fail: zeros on
    /// a faulted device, whose fault is reported by `synchronize`.
    pub(crate) fn read_or_zeros(&self, buffer: &wgpu::Buffer, bytes: u64) -> Vec<u8> {
        self.try_read(buffer, bytes).unwrap_or_else(|| vec![0; bytes as usize])
    }
}

/// An error with its chain of causes (wgpu's own text is only the outer
/// layer: "Validation Error").
fn full_message(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        message = format!("{message}: {c}");
        cause = c.source();
    }
    message
}

/// Keeps `message` as the fault in `slot` unless one is there already.
fn record(slot: &Mutex<Option<String>>, message: String) {
    let mut f = slot.lock().unwrap_or_else(|p| p.into_inner());
    if f.is_none() {
        *f = Some(message);
    }
}
