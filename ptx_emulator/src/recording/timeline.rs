//! A block's pipeline, round by round: while one chosen block runs, the machine notes each
//! mbarrier initialised, arrived on, waited on in vain or seen complete, each copy the block
//! issues and each that lands in its shared memory, each wgmma, commit and wait, and each store
//! to global memory, with the scheduler's round it happened in ([`crate::exec`]'s rounds: the
//! emulator's own order of work, not cycles). [`Timeline`] reads the roles from what the warps
//! did (the warps that issue copies are the producer, the warpgroups that run wgmma are the
//! consumers); the pictures draw them.
//!
//! Recording is off unless a launch asks for a block; each hook then costs one test of an
//! `Option` on the paths it sits on (none of them the arithmetic's).

use std::sync::Mutex;

/// Who did something: a warp of the block (by its index), the copy engine, or a thread of
/// another block of the cluster.
pub const ENGINE: u32 = u32::MAX;
pub const PEER: u32 = u32::MAX - 1;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// An mbarrier initialised with its arrival count.
    Init {
        bar: usize,
        count: u32,
    },
    /// An arrival on one of the block's mbarriers, announcing `tx` bytes (`expect_tx`, else 0).
    Arrive {
        bar: usize,
        tx: u32,
    },
    /// A warp found the phase of `parity` not complete and stays at its `try_wait` this round.
    Blocked {
        bar: usize,
        parity: u32,
    },
    /// A warp's `try_wait` found the phase it waits for complete.
    Passed {
        bar: usize,
        parity: u32,
    },
    /// The mbarrier's phase `phase` (counted from 0) completed.
    Phase {
        bar: usize,
        phase: u32,
    },
    /// A copy of a box of `bytes` from tensor `tensor` (an index into [`Timeline::names`]) to
    /// byte `dst` of shared memory, counted on `bar` in its phase `phase`; `blocks`: how many
    /// blocks of the cluster receive it.
    Issue {
        bar: usize,
        phase: u32,
        dst: usize,
        bytes: u32,
        tensor: u16,
        blocks: u8,
    },
    /// A copy's bytes landed in the block's shared memory.
    Land {
        bar: usize,
        dst: usize,
        bytes: u32,
    },
    /// A wgmma reading B (and A, where it comes from shared memory) at these bytes.
    Wgmma {
        b: usize,
        a: Option<usize>,
    },
    Commit,
    /// `wgmma.wait_group` with this many groups left pending.
    WaitGroup {
        pending: u32,
    },
    /// A store of `bytes` to global buffer `buffer` (an index into [`Timeline::names`]);
    /// `engine`: through the copy engine (a tensor store of a box).
    Store {
        bytes: u32,
        buffer: u16,
        engine: bool,
    },
}

/// One thing that happened: the round, who, what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    pub round: u32,
    pub who: u32,
    pub what: What,
}

/// What a launch asks for: the block to record, and where the recording lands.
pub struct Ask {
    pub block: [u32; 3],
    pub recorded: Mutex<Option<Timeline>>,
}

/// A cluster's recorder: off for clusters that do not hold the block.
#[derive(Default)]
pub struct TimelineRecorder {
    pub(crate) on: bool,
    pub(crate) rank: usize,
    pub(crate) round: u32,
    /// The phase completing next is the copy engine's (a copy has just landed).
    pub(crate) engine: bool,
    pub(crate) events: Vec<TimelineEvent>,
    pub(crate) names: Vec<String>,
}

/// One block's recorded run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub kernel: String,
    pub block: [u32; 3],
    /// Warps in the block.
    pub warps: u32,
    /// Rounds the block's cluster ran.
    pub rounds: u32,
    pub events: Vec<TimelineEvent>,
    /// The global buffers' names (tensors copied, buffers stored to).
    pub names: Vec<String>,
}

impl TimelineRecorder {
    pub(crate) fn name(&mut self, name: String) -> u16 {
        match self.names.iter().position(|n| *n == name) {
            Some(i) => i as u16,
            None => {
                self.names.push(name);
                (self.names.len() - 1) as u16
            }
        }
    }

    pub(crate) fn note(&mut self, who: u32, what: What) {
        self.events.push(TimelineEvent { round: self.round, who, what });
    }
}

/// Why there is no picture: the block lies outside the grid.
pub fn outside_grid(name: &str, block: [u32; 3], grid: (u32, u32, u32)) -> Option<String> {
    let (gx, gy, gz) = grid;
    let [x, y, z] = block;
    (x >= gx || y >= gy || z >= gz).then(|| {
        format!(
            "block ({x}, {y}, {z}) is outside {name}'s grid of {gx}×{gy}×{gz} blocks, so it has no \
             timeline to draw: choose one from (0, 0, 0) to ({}, {}, {})",
            gx - 1,
            gy - 1,
            gz - 1
        )
    })
}

/// The mbarrier a copy is counted on and the phase it completes.
type CopyFill = (usize, u32);

impl Timeline {
    /// The mbarriers copies are counted on (`full[s]`), by their byte, in order.
    pub fn full_bars(&self) -> Vec<usize> {
        let mut bars: Vec<usize> = self
            .events
            .iter()
            .filter_map(|e| match e.what {
                What::Issue { bar, .. } | What::Land { bar, .. } => Some(bar),
                _ => None,
            })
            .collect();
        bars.sort_unstable();
        bars.dedup();
        bars
    }

    /// The mbarriers the consumers arrive on to free a buffer (`empty[s]`), by their byte.
    pub fn empty_bars(&self) -> Vec<usize> {
        let (full, consumers) = (self.full_bars(), self.consumers());
        let mut bars: Vec<usize> = self
            .events
            .iter()
            .filter_map(|e| match e.what {
                What::Arrive { bar, .. }
                    if !full.contains(&bar) && (e.who == PEER || consumers.contains(&(e.who / 4))) =>
                {
                    Some(bar)
                }
                _ => None,
            })
            .collect();
        bars.sort_unstable();
        bars.dedup();
        bars
    }

    /// The mbarrier at byte `bar` by its use: `full[s]`, `empty[s]`, or its byte.
    pub fn bar_name(&self, bar: usize) -> String {
        if let Some(s) = self.full_bars().iter().position(|&b| b == bar) {
            return format!("full[{s}]");
        }
        match self.empty_bars().iter().position(|&b| b == bar) {
            Some(s) => format!("empty[{s}]"),
            None => format!("the mbarrier at byte {bar}"),
        }
    }

    /// The pipeline buffers: as many as the mbarriers copies are counted on.
    pub fn buffers(&self) -> usize {
        self.full_bars().len()
    }

    /// The warps that issue copies: the producer.
    pub fn producers(&self) -> Vec<u32> {
        let mut w: Vec<u32> =
            self.events.iter().filter(|e| matches!(e.what, What::Issue { .. })).map(|e| e.who).collect();
        w.sort_unstable();
        w.dedup();
        w
    }

    /// The warpgroups that run wgmma: the consumers.
    pub fn consumers(&self) -> Vec<u32> {
        let mut g: Vec<u32> =
            self.events.iter().filter(|e| matches!(e.what, What::Wgmma { .. })).map(|e| e.who / 4).collect();
        g.sort_unstable();
        g.dedup();
        g
    }

    /// Counts of one kind of event.
    pub fn count(&self, kind: impl Fn(&What) -> bool) -> usize {
        self.events.iter().filter(|e| kind(&e.what)).count()
    }

    /// The sentence that says there is nothing to draw: a kernel without mbarriers, copies or
    /// wgmma (a pipeline of the copy engine and the tensor cores).
    pub fn check(&self) -> Result<(), String> {
        let pipelined = self.events.iter().any(|e| {
            matches!(e.what, What::Init { .. } | What::Issue { .. } | What::Land { .. } | What::Wgmma { .. })
        });
        match pipelined {
            true => Ok(()),
            false => Err(format!(
                "{} uses no mbarriers, copy-engine copies or wgmma in block ({}, {}, {}), so it has no \
                 pipeline of a producer, the copy engine and consumers to draw (the timeline is for \
                 labs 08 and later)",
                self.kernel, self.block[0], self.block[1], self.block[2]
            )),
        }
    }

    /// The most buffers the producer had filled (copies issued) and the consumers not yet freed
    /// (an `empty[s]` phase completed) at the end of any round: at most the buffers, in a
    /// pipeline that waits on `empty[s]` before it refills buffer s.
    pub fn most_ahead(&self) -> usize {
        let empty = self.empty_bars();
        let mut fills: Vec<(usize, u32)> = Vec::new();
        let (mut freed, mut most) = (0usize, 0usize);
        for e in &self.events {
            match e.what {
                What::Issue { bar, phase, .. } if !fills.contains(&(bar, phase)) => fills.push((bar, phase)),
                What::Phase { bar, .. } if empty.contains(&bar) => freed += 1,
                _ => continue,
            }
            most = most.max(fills.len().saturating_sub(freed));
        }
        most
    }

    /// Every wgmma that read a buffer before the `full[s]` phase of the copies last landed in it
    /// had completed (or before any landed there), as sentences (none in a sound pipeline).
    pub fn reads_before_full(&self) -> Vec<String> {
        // Where copies land (from, to), with the phase of the last copy landed there.
        let mut places: Vec<(usize, usize, Option<CopyFill>)> = Vec::new();
        for e in &self.events {
            if let What::Land { dst, bytes, .. } = e.what
                && !places.iter().any(|p| p.0 == dst)
            {
                places.push((dst, dst + bytes as usize, None));
            }
        }
        // Phases completed so far, per mbarrier.
        let mut done: Vec<(usize, u32)> = Vec::new();
        let completed =
            |done: &[(usize, u32)], bar: usize| done.iter().find(|d| d.0 == bar).map_or(0, |d| d.1);
        let mut wrong = Vec::new();
        for e in &self.events {
            match e.what {
                What::Land { bar, dst, .. } => {
                    let phase = completed(&done, bar);
                    if let Some(p) = places.iter_mut().find(|p| p.0 == dst) {
                        p.2 = Some((bar, phase));
                    }
                }
                What::Phase { bar, .. } => match done.iter_mut().find(|d| d.0 == bar) {
                    Some(d) => d.1 += 1,
                    None => done.push((bar, 1)),
                },
                What::Wgmma { b, a } => {
                    for at in std::iter::once(b).chain(a) {
                        let Some(&(_, _, fill)) = places.iter().find(|p| (p.0..p.1).contains(&at)) else {
                            continue;
                        };
                        let before = match fill {
                            None => "before any copy into it had landed".to_owned(),
                            Some((bar, phase)) if completed(&done, bar) <= phase => {
                                format!("before phase {phase} of {} completed", self.bar_name(bar))
                            }
                            Some(_) => continue,
                        };
                        wrong.push(format!(
                            "warp {} ran a wgmma reading shared byte {at} in round {} {before}",
                            e.who, e.round
                        ));
                    }
                }
                _ => {}
            }
        }
        wrong
    }

    /// The global buffers the block stores to.
    pub fn store_buffers(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for e in &self.events {
            if let What::Store { buffer, .. } = e.what
                && let Some(n) = self.names.get(buffer as usize)
                && !names.contains(&n.as_str())
            {
                names.push(n);
            }
        }
        names
    }
}
