//! What the machine records of a run for the time model and the pictures, as plain data: the
//! busiest cluster's warps for the replay ([`trace`], [`Recorded`]), what a launch's first
//! clusters read ([`Footprint`]), one block's pipeline round by round ([`timeline`]), and one
//! warp's access at a line ([`access`], named from the kernel's source by [`source`]). The machine
//! fills them as it runs; reading them in clock cycles and drawing them is left to the crates that
//! depend on it.

pub mod source;
pub mod timeline;
pub mod trace;
pub mod warp_access;

pub use trace::{Static, Trace};

/// One launch's recording: the busiest cluster's trace, what its instructions are, and the
/// launch's shape.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub kernel: String,
    pub trace: Trace,
    pub statics: Vec<Static>,
    /// Blocks in the grid, blocks in a cluster, and a block's shared memory.
    pub blocks: u64,
    pub cluster: u32,
    pub shared_bytes: u32,
    /// The registers a thread may use under the kernel's launch bounds.
    pub register_limit: u32,
    /// What the launch's first blocks read, for the L2's misses.
    pub footprint: Footprint,
    /// The trace with each warp's instructions in the order the time model's replay issues them,
    /// for the registers the kernel leaves free (the key): worked out at the first replay and
    /// kept for the others, which a run makes for each GPU it predicts and ask for the same.
    pub issue_order: std::sync::OnceLock<(u32, Trace)>,
}

impl Recorded {
    pub fn new(trace: Trace, launch: &crate::exec::Launch) -> Recorded {
        let (gx, gy, gz) = launch.grid;
        let k = launch.kernel;
        Recorded {
            kernel: k.name.clone(),
            trace,
            statics: trace::statics(k),
            blocks: u64::from(gx) * u64::from(gy) * u64::from(gz),
            cluster: launch.cluster_size() as u32,
            shared_bytes: (k.dynamic_at.max(k.static_shared) + launch.dynamic_shared) as u32,
            register_limit: k.register_limit,
            footprint: Footprint::default(),
            issue_order: std::sync::OnceLock::new(),
        }
    }
}

/// The global sectors the first blocks of a launch read, from which the share of the L2's reads
/// that miss it is estimated: what block (0, 0) reads, and what its neighbours along x and y
/// read that it does not. Blocks start in launch order, x fastest, `wave` at a time; while a
/// wave runs, its blocks read what the first block does plus each neighbour's new sectors, once
/// (the L2 holds what the wave shares); a later wave reads its own again from DRAM where the
/// launch's operands do not fit in the L2. A sample, stated: the grid's other blocks are taken to
/// read as these three do.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Footprint {
    pub sectors: u64,
    pub new_along_x: u64,
    pub new_along_y: u64,
    /// Clusters along x and y of the grid.
    pub side_x: u32,
    pub side_y: u32,
}
