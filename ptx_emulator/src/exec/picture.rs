//! What a picture of one warp's access keeps (see [`crate::watch`]): called where the emulator
//! executes a global or shared load or store, or an `ldmatrix`, only while a picture is asked for.

use crate::inst::{Addr, Inst, Merge, Space, Src};
use crate::memory::SHARED_WINDOW;
use crate::watch::{Access, Head};

use super::state::{Cluster, Lanes, Warp};

/// What kind of access the instruction makes, as the picture tells them apart.
#[derive(Clone, Copy)]
pub enum Seen {
    /// A load or store of `bytes` a lane in `space` (resolved where the instruction names none).
    Plain { space: Space, bytes: u32, write: bool },
    /// `ldmatrix` of `count` 8×8 matrices.
    Matrix { count: u32 },
}

impl Cluster<'_> {
    /// Keeps the access `inst` (at `pc`) makes for the lanes in `exec` of warp `w`, if it is one
    /// the picture asked for. Called before the instruction executes, while its address
    /// registers still hold the addresses.
    pub(super) fn watched(&self, inst: &Inst, pc: u32, w: &Warp, exec: u32, addr: &Addr, seen: Seen) {
        let Some(watch) = self.launch.watch else { return };
        let block = self.ctas[self.rank].ctaid;
        if !watch.wants(self.k.files.get(&inst.file), inst.line, block, w.index, pc) {
            return;
        }
        let address = |l: usize| {
            let base = match addr.base {
                Src::Reg(x) => w.regs[x as usize][l],
                Src::Imm(v) => v,
            };
            base.wrapping_add(addr.offset as u64)
        };
        let generic = !inst.opcode.contains(".shared");
        let shared = |l: usize| address(l).wrapping_sub(if generic { SHARED_WINDOW } else { 0 });
        let write = matches!(seen, Seen::Plain { write: true, .. });
        let head = Head { at: self.at(inst), opcode: inst.opcode.clone(), block, warp: w.index, write };
        let access = match seen {
            Seen::Plain { space: Space::Shared, bytes, write } => {
                let lanes: Vec<(u32, u64)> = Lanes(exec).map(|l| (l as u32, shared(l))).collect();
                // Counted as the machine code makes it (see `count_shared_load`).
                match (write, inst.merge) {
                    (false, Merge::Leader { bytes, from, .. }) => {
                        let lanes =
                            lanes.into_iter().map(|(l, a)| (l, u64::from((a as u32).wrapping_sub(from))));
                        Access { joined: true, ..Access::shared(head, bytes, lanes.collect()) }
                    }
                    // Counted with the group's first load, and drawn there.
                    (false, Merge::Follower { .. }) => return,
                    _ => Access::shared(head, bytes, lanes),
                }
            }
            Seen::Plain { bytes, .. } => {
                Access::global(head, bytes, Lanes(exec).map(|l| (l as u32, address(l))).collect())
            }
            Seen::Matrix { count } => {
                let lanes: Vec<(u32, u64)> = (0..8 * count as usize).map(|l| (l as u32, shared(l))).collect();
                let mut access = Access::shared(head, 16, lanes);
                access.kind = crate::watch::Kind::Matrix;
                access.wavefronts = u64::from(count);
                access
            }
        };
        watch.keep(pc, access);
    }
}
