//! One product's launch, written once for both devices. A step whose product queues more than
//! its kernel (steps 09 to 12) writes that launch once, against [`Queue`]; common hands it a
//! queue on the GPU's stream ([`crate::gpu_queue`]) or one on the PTX emulator
//! ([`crate::emulator_queue`]), and both run the same kernels with the same arguments, grids and
//! workspaces, in the same order.
//!
//! Buffers are device addresses (`u64`) on either device. A workspace is named, kept from
//! product to product and grown when a product needs more, as a GPU run keeps it: what one
//! product leaves in it, the next product reads, on the emulator as on the GPU.

use anyhow::Result;

use crate::tma::{Element, EncodedMap, TmaBox};

/// One argument of a kernel, pushed by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelArg {
    I32(i32),
    I64(i64),
    /// A device address: an operand, a workspace, or a place inside one.
    Ptr(u64),
    /// A tensor map, passed as a `const __grid_constant__ CUtensorMap`.
    Map(EncodedMap),
}

/// A launch's grid, threads per block (x, y, z) and bytes of dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub smem: u32,
}

impl LaunchShape {
    /// `grid` of one-dimensional blocks of `threads`, with `smem` bytes of dynamic shared memory.
    pub fn of(grid: (u32, u32, u32), threads: u32, smem: u32) -> LaunchShape {
        LaunchShape { grid, block: (threads, 1, 1), smem }
    }
}

/// A CUDA source of its own, loaded beside the step's module (step 09's FP32 path): its kernels
/// run on the same memory. `file` names it in messages and tells modules apart.
#[derive(Clone, Copy, Debug)]
pub struct CudaSource<'s> {
    pub source: &'s str,
    pub file: &'s str,
}

/// Where one product's kernels are queued: a GPU's stream, or the PTX emulator. Everything a
/// step's launch needs, and nothing of either device.
pub trait Queue {
    /// Whether a module loaded here (the step's, or one [`Queue::load`] added) defines `entry`.
    fn has_entry(&self, entry: &str) -> bool;

    /// Loads `module` beside the step's, once (a second call with the same file does nothing).
    fn load(&mut self, module: CudaSource) -> Result<()>;

    /// Queues kernel `entry` on `launch` with `args`: a kernel around the step's product.
    fn launch(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()>;

    /// As [`Queue::launch`], for a kernel after the product each of whose blocks reads and
    /// writes only its own elements of the product's result (step 11's rebuild of C): a scaled
    /// emulation runs it scaled as it runs the product (one block of each kind, its counts
    /// multiplied out), since nothing the product reads comes from it.
    fn launch_scaled(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()> {
        self.launch(entry, launch, args)
    }

    /// Queues the step kernel itself, `matmul` or a twin the product runs in its place (step
    /// 12's `matmul_cut`): the kernel the report's traffic and a scaled run are about. A kernel
    /// that declares fewer parameters than `args` (a stage) is given those it declares.
    fn launch_matmul(&mut self, entry: &str, launch: LaunchShape, args: &[KernelArg]) -> Result<()>;

    /// As [`Queue::launch_matmul`], where the launch knows which of its grid's clusters do alike
    /// work (a persistent kernel's clusters that take as many whole units): `alike` names one
    /// cluster of each kind by its index in the grid (x fastest), with how many clusters it
    /// stands for. A scaled emulation runs those alone and multiplies out their counts; a GPU,
    /// and an emulation of the whole grid, run the launch as it is.
    fn launch_matmul_alike(
        &mut self,
        entry: &str,
        launch: LaunchShape,
        args: &[KernelArg],
        alike: &[(u64, u64)],
    ) -> Result<()> {
        let _ = alike;
        self.launch_matmul(entry, launch, args)
    }

    /// The workspace called `name`, of at least `bytes`: kept from product to product (what a
    /// launch leaves in it the next one reads), zeroed when it is first made or grown.
    fn workspace(&mut self, name: &'static str, bytes: usize) -> Result<u64>;

    /// As [`Queue::workspace`], zeroed in stream order before this product's kernels.
    fn zeroed(&mut self, name: &'static str, bytes: usize) -> Result<u64>;

    /// As [`Queue::workspace`], for a result the product writes whole before it reads it (the
    /// padded C′): on the emulator filled with NaN first, so that an element no thread writes
    /// fails as never written, as in C; on a GPU as it is (a fill would be timed with the
    /// product).
    fn poisoned(&mut self, name: &'static str, bytes: usize) -> Result<u64>;

    /// `len` ints from int `from` of workspace `name`, once every kernel queued so far has
    /// finished; None where no product has made that workspace.
    fn read_i32(&mut self, name: &'static str, from: usize, len: usize) -> Result<Option<Vec<i32>>>;

    /// The tensor map of `parts` row-major matrices of `element`s at `ptr`, each `rows`×`cols`
    /// with rows `pitch` elements apart (`[rows, cols, pitch, parts]`), in boxes of `bx`, with
    /// the 128-byte swizzle.
    fn encode(&mut self, element: Element, ptr: u64, dims: [usize; 4], bx: TmaBox) -> Result<EncodedMap>;

    /// A new buffer named `name` (in messages) holding `data`: an operand of the product.
    fn upload(&mut self, name: &'static str, data: &[f32]) -> Result<u64>;

    /// The `len` floats at `ptr`, a buffer [`Queue::upload`] made, once every kernel queued so
    /// far has finished.
    fn download(&mut self, ptr: u64, len: usize) -> Result<Vec<f32>>;

    /// Frees a buffer [`Queue::upload`] made.
    fn free(&mut self, ptr: u64) -> Result<()>;

    /// What is queued from here to [`Queue::resume`] runs on a second stream, after what was
    /// queued before, where the device has one (the emulator runs everything in the order it is
    /// queued: one order the two streams allow).
    fn fork(&mut self) -> Result<()>;

    /// What is queued from here runs on the product's stream again, beside what was forked.
    fn resume(&mut self) -> Result<()>;

    /// The product's stream waits here for what was forked.
    fn join(&mut self) -> Result<()>;

    /// Marks the start of the part of the product that is timed apart, where a run asked for it
    /// ([`crate::step_kernel::StepKernel::time_paths_next`]).
    fn time_from(&mut self) -> Result<()>;

    /// Marks its end.
    fn time_to(&mut self) -> Result<()>;

    /// The milliseconds from [`Queue::time_from`] to [`Queue::time_to`] of the last product that
    /// timed them (read once); None where none did, and on the emulator.
    fn timed_ms(&mut self) -> Result<Option<f64>>;
}
