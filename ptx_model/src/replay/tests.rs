//! The replay on traces built by hand, each of which a wrong replay gets wrong: a chain against
//! independent work, a load hidden by the work after it or not, a barrier, the schedulers, an
//! mbarrier's phase, ptxas's order and the steady state.

use super::L2Misses;
use super::issue_order::schedule;
use super::sim::{Setup, replay};
use crate::profile::H100;

const H100_SM: crate::profile::Sm = H100.sm;
const L2_IDLE: f64 = 284.0;
use ptx_emulator::recording::trace::{InstClass, Phase, Static, Trace, TraceEvent, Where};

const FMA: u32 = 0; // fma r1 ← r1 (a chain)
const FMA_FREE: u32 = 1; // fma r2 ← r3 (independent)
const LOAD: u32 = 2; // ld r4 ← [r5]
const USE: u32 = 3; // fma r6 ← r4
const BAR: u32 = 4;
const WAIT: u32 = 5;
const COPY: u32 = 6;
const ADDR: u32 = 7; // add r5 ← r7

fn statics() -> Vec<Static> {
    let s = |class, reads: &[u32], writes: &[u32]| Static {
        class,
        reads: reads.to_vec(),
        writes: writes.to_vec(),
    };
    vec![
        s(InstClass::Fp32, &[1], &[1]),
        s(InstClass::Fp32, &[3], &[2]),
        s(InstClass::GlobalLoad, &[5], &[4]),
        s(InstClass::Fp32, &[4], &[6]),
        s(InstClass::Barrier, &[], &[]),
        s(InstClass::MbarWait, &[], &[8]),
        s(InstClass::TmaLoad, &[], &[]),
        s(InstClass::Alu, &[7], &[5]),
    ]
}

fn at(pc: u32) -> TraceEvent {
    TraceEvent { pc, ..TraceEvent::default() }
}

/// A global load that misses the L1 (one L2 sector).
fn load() -> TraceEvent {
    TraceEvent { pc: LOAD, a: 1, b: 1, space: Where::Global, ..TraceEvent::default() }
}

fn trace(streams: Vec<Vec<TraceEvent>>, warps_per_block: u32) -> Trace {
    let links = vec![Vec::new(); streams.len()];
    Trace { blocks: 1, warps_per_block, streams, links, instructions: 0, local_bytes: 0 }
}

fn setup() -> Setup {
    Setup {
        l2_miss: 0.0,
        dram_latency: 600.0,
        clusters: 1,
        resident: 1,
        busy_sms: 132,
        shared_bytes: 0,
        l2_rate: 7.07e12 / 1.98e9,
        l2_latency: L2_IDLE,
        serialized_wgmma: false,
        l2_clock: 1.0,
        picture: 0.0,
    }
}

fn cycles(t: &Trace) -> f64 {
    let o = replay(t, &statics(), &H100_SM, &setup());
    assert!(o.stuck.is_none(), "{:?}", o.stuck);
    o.cycles
}

#[test]
fn a_chain_waits_for_each_result_and_independent_work_issues_each_clock() {
    let chain = cycles(&trace(vec![vec![at(FMA); 100]], 1));
    let free = cycles(&trace(vec![vec![at(FMA_FREE); 100]], 1));
    assert!((chain - 100.0 * H100_SM.fp32).abs() < 5.0, "{chain}");
    let gap = H100_SM.schedulers as f64 / H100_SM.issue;
    assert!((free - 100.0 * gap).abs() < 5.0, "{free}");
}

/// The lesson of step 06: the same load and work, the load issued before the work that does not
/// need it, or after.
#[test]
fn a_load_issued_before_the_work_hides_under_it() {
    let work = vec![at(FMA_FREE); 200];
    let early: Vec<TraceEvent> = [vec![load()], work.clone(), vec![at(USE)]].concat();
    let late: Vec<TraceEvent> = [work, vec![load(), at(USE)]].concat();
    let (e, l) = (cycles(&trace(vec![early], 1)), cycles(&trace(vec![late], 1)));
    let gap = H100_SM.schedulers as f64 / H100_SM.issue;
    assert!(e < 200.0 * gap + 60.0 + L2_IDLE - 200.0 * gap + 20.0 && e < l, "early {e}, late {l}");
    assert!(l > 200.0 * gap + L2_IDLE, "the late load waits all its latency: {l}");
}

#[test]
fn a_barrier_holds_every_warp_until_the_last_arrives() {
    let long: Vec<TraceEvent> = [vec![at(FMA); 100], vec![at(BAR)], vec![at(FMA_FREE)]].concat();
    let short = vec![at(BAR), at(FMA), at(FMA)];
    let alone = cycles(&trace(vec![long.clone()], 1));
    let both = cycles(&trace(vec![long, short], 2));
    assert!(both > 100.0 * H100_SM.fp32, "{both}");
    assert!(both >= alone - 1.0, "{both} {alone}");
    // Without the barrier the short warp would be done long before.
    let apart = cycles(&trace(vec![vec![at(FMA); 100], vec![at(FMA); 2]], 2));
    assert!(apart < both, "{apart} {both}");
}

#[test]
fn four_schedulers_run_four_warps_at_once_and_a_fifth_shares_one() {
    let gap = H100_SM.schedulers as f64 / H100_SM.issue;
    let four = cycles(&trace(vec![vec![at(FMA_FREE); 100]; 4], 4));
    let eight = cycles(&trace(vec![vec![at(FMA_FREE); 100]; 8], 8));
    assert!((four - 100.0 * gap).abs() < 5.0, "{four}");
    assert!((eight - 200.0 * gap).abs() < 5.0, "{eight}");
}

#[test]
fn a_copy_releases_the_waiter_on_its_phase_when_it_lands() {
    let phase = Phase { bar: 8, phase: 0 };
    let copy = TraceEvent { pc: COPY, a: 1024, b: 32, link: 0, links_len: 1, ..TraceEvent::default() };
    let wait = TraceEvent { pc: WAIT, link: 1, links_len: 1, ..TraceEvent::default() };
    let mut t = trace(vec![vec![copy, wait, at(FMA)]], 1);
    t.links = vec![vec![phase, phase]];
    let c = cycles(&t);
    assert!(c > H100_SM.tma + H100_SM.mbarrier, "{c}");
    assert!(c < H100_SM.tma + H100_SM.mbarrier + 60.0, "{c}");
    // A wait on a phase whose copy comes after it in the same warp never ends: the replay stops
    // and says so.
    let mut stuck = trace(vec![vec![TraceEvent { link: 0, ..wait }, TraceEvent { link: 1, ..copy }]], 1);
    stuck.links = vec![vec![phase, phase]];
    assert!(replay(&stuck, &statics(), &H100_SM, &setup()).stuck.is_some());
}

#[test]
fn ptxas_moves_loads_up_only_where_registers_are_free() {
    // An unrolled loop: address, load, use, four times; the loads read the same address register.
    let body: Vec<TraceEvent> = (0..4).flat_map(|_| [at(ADDR), load(), at(USE)]).collect();
    let kept = schedule(&body, &statics(), 0);
    assert_eq!(kept, body, "no free registers: the source's order");
    let moved = schedule(&body, &statics(), 32);
    assert_eq!(moved.len(), body.len());
    let first_use = moved.iter().position(|e| e.pc == USE).unwrap();
    let first_load = moved.iter().position(|e| e.pc == LOAD).unwrap();
    assert!(first_load < first_use, "{moved:?}");
    // Every load still follows the address it reads and precedes the use of what it loaded.
    for (i, _) in moved.iter().enumerate().filter(|(_, e)| e.pc == LOAD) {
        assert!(moved[..i].iter().any(|p| p.pc == ADDR));
    }
    let (slow, fast) = (cycles(&trace(vec![body], 1)), cycles(&trace(vec![moved], 1)));
    assert!(fast <= slow, "{fast} {slow}");
}

#[test]
fn more_clusters_than_the_replay_runs_go_on_at_the_steady_rate() {
    let t = trace(vec![vec![at(FMA); 50]], 1);
    let one = replay(&t, &statics(), &H100_SM, &setup());
    let many = replay(&t, &statics(), &H100_SM, &Setup { clusters: 100, ..setup() });
    assert!(many.replayed < 100);
    assert!((many.cycles / one.cycles - 100.0).abs() < 2.0, "{} {}", many.cycles, one.cycles);
    // Two resident blocks of a chain interleave: half the time each.
    let two = replay(&t, &statics(), &H100_SM, &Setup { clusters: 100, resident: 2, ..setup() });
    assert!((two.cycles / one.cycles - 50.0).abs() < 2.0, "{}", two.cycles / one.cycles);
}

/// A load predicated off in every lane issues and moves nothing: what follows does not wait for
/// it, and the L2 sees no bytes.
#[test]
fn an_instruction_predicated_off_only_takes_its_issue() {
    let off = TraceEvent { space: Where::Off, ..load() };
    let with_off = replay(&trace(vec![vec![off, at(USE)]], 1), &statics(), &H100_SM, &setup());
    let with_load = replay(&trace(vec![vec![load(), at(USE)]], 1), &statics(), &H100_SM, &setup());
    assert!(with_off.cycles < 20.0, "{}", with_off.cycles);
    assert!(with_load.cycles > L2_IDLE, "{}", with_load.cycles);
    assert_eq!(with_off.l2_bytes, 0.0);
}

/// A warp whose recorded stream ends at a barrier (a trace made by hand: a kernel's ends at its
/// exit) leaves the replay to say it cannot finish, without reading past the stream.
#[test]
fn a_stream_that_ends_at_a_barrier_is_named_not_read_past() {
    let t = trace(vec![vec![at(BAR)], vec![at(FMA), at(FMA), at(BAR), at(FMA)]], 2);
    let o = replay(&t, &statics(), &H100_SM, &setup());
    let why = o.stuck.expect("warp 0 never finishes");
    assert!(why.contains("warp 0") && why.contains("instruction 4"), "{why}");
}

/// A request waits for its slowest sector: with a share of the L2's sectors missing to DRAM, a
/// request of 128 sectors nearly always holds one miss and waits DRAM's latency, not the mean of
/// the two; requests of one sector miss now and then, and warps of them wait longer on average.
#[test]
fn a_request_waits_for_its_slowest_sector() {
    let run = |sectors: u32, warps: usize, miss: f64| {
        let streams: Vec<Vec<TraceEvent>> =
            (0..warps).map(|_| vec![TraceEvent { b: sectors, ..load() }, at(USE)]).collect();
        let t = trace(streams, warps as u32);
        let o = replay(&t, &statics(), &H100_SM, &Setup { l2_miss: miss, dram_latency: 900.0, ..setup() });
        assert!(o.stuck.is_none());
        o.cycles
    };
    let hits = run(128, 1, 0.0);
    assert!(hits < L2_IDLE + 200.0, "{hits}");
    // 1 − 0.9^128: such a request meets a miss.
    let wide = run(128, 1, 0.1);
    assert!(wide > 900.0, "{wide}");
    // Sixty-four warps of one sector each: some of them miss, and the last waits for DRAM.
    let (quiet, some) = (run(1, 64, 0.0), run(1, 64, 0.1));
    assert!(quiet < L2_IDLE + 100.0 && some > 900.0, "{quiet} {some}");
}

/// The share of the L2's reads from DRAM, from the first blocks' footprints: a grid whose
/// operands fit in the L2 reads each sector from DRAM once; one that does not reads each wave's
/// sectors again, a wave's being the first block's and each neighbour's new ones.
#[test]
fn a_footprint_gives_the_l2_misses_by_wave() {
    // A GEMM's block reads a panel of A (along y) and one of B (along x), 1000 sectors each: the
    // neighbour along x shares A and reads a new B panel, the one along y the reverse. The
    // operands are 32 panels of each, 64,000 sectors (2 MB).
    let f = super::Footprint { sectors: 2000, new_along_x: 1000, new_along_y: 1000, side_x: 32, side_y: 32 };
    let clusters = 32 * 32;
    let reads = clusters * 2000;
    let compulsory = 64_000 * 32;
    // An L2 that holds them: each sector read from DRAM once.
    let fits = f.misses(clusters, 132, compulsory, 60 << 20, reads);
    assert!((fits - 64_000.0 / reads as f64).abs() < 1e-12, "{fits}");
    // An L2 of a quarter of them: a wave of 132 blocks covers 32 along x and 5 along y, reading
    // 2000 + 31·1000 + 4·1000 sectors; 1024 / 132 waves of it.
    let small = f.misses(clusters, 132, compulsory, 512 << 10, reads);
    let want = (37_000.0 * clusters as f64 / 132.0).floor() / reads as f64;
    assert!((small - want).abs() < 1e-9, "{small} {want}");
    // No footprint recorded: no misses drawn.
    assert_eq!(super::Footprint::default().misses(clusters, 132, compulsory, 512 << 10, reads), 0.0);
}

/// Each clock of each warp is in one state: a chain of 100 dependent FMAs is 100 issues and 99
/// waits for an arithmetic result, nothing else; two warps on one scheduler with independent
/// work each wait for the other's issues as ready.
#[test]
fn each_warps_clocks_are_counted_once_by_their_state() {
    let o = replay(&trace(vec![vec![at(FMA); 100]], 1), &statics(), &H100_SM, &setup());
    let s = o.states;
    let gap = H100_SM.schedulers as f64 / H100_SM.issue;
    assert_eq!(s.issued, 100.0);
    assert!((s.dispatch - 100.0 * (gap - 1.0)).abs() < 1e-6, "{s:?}");
    assert!((s.arithmetic - 99.0 * (H100_SM.fp32 - gap)).abs() < 1e-6, "{s:?}");
    assert_eq!(s.ready + s.memory + s.shared + s.barrier + s.phases + s.tensor, 0.0, "{s:?}");
    // Warps 0 and 4 of a block share scheduler 0: each is ready while the other issues.
    let mut streams = vec![vec![at(FMA_FREE); 50]];
    streams.extend((1..5).map(|_| vec![at(FMA_FREE); 50]));
    let o = replay(&trace(streams, 5), &statics(), &H100_SM, &setup());
    assert!(o.states.ready > 40.0, "{:?}", o.states);
    let last_issue: f64 = o.cycles;
    assert!(o.states.total() <= 5.0 * last_issue + 1e-6, "{:?} over {last_issue}", o.states);
}

/// Issue is in order: an mma.sync its scheduler's tensor pipe has not taken yet holds the warp's
/// next instruction, even one that needs none of its results (what Nsight Compute samples on
/// lab 07 as waits and the math pipe's throttle at the HMMA).
#[test]
fn an_mma_the_tensor_pipe_has_not_taken_holds_the_warps_next_instruction() {
    let mut st = statics();
    st.push(Static { class: InstClass::MmaSync, reads: vec![10], writes: vec![11] });
    let mma = TraceEvent { pc: 8, ..TraceEvent::default() };
    let t = trace(vec![[vec![mma; 10], vec![at(FMA_FREE)]].concat()], 1);
    let o = replay(&t, &st, &H100_SM, &setup());
    let each = 2048.0 / (H100_SM.mma_sync_rate / H100_SM.schedulers as f64);
    // The tenth mma starts after nine in the pipe; the FMA issues after it, not ten issues in.
    assert!(o.cycles >= 9.0 * each, "{} against {}", o.cycles, 9.0 * each);
    assert!(o.states.arithmetic > 8.0 * (each - 2.0), "{:?}", o.states);
}
