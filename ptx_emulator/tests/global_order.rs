//! The sanitizer's order of a workspace's stores and loads across blocks, by the PTX memory
//! model, on small hand-written PTX (no NVRTC): block 0 stores a word and signals, block 1 waits
//! for the signal and loads the word. The blocks run one after the other, so the load always sees
//! the store here; only a release that the acquire reads orders it on a GPU. And a workspace
//! word that a product leaves non-zero, read by the next product.

use ptx_emulator::{Arg, Config, Emulator, Machine};

/// An H100's SMs and a block's limits.
const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Block 0: thread `storer` stores 42 at word 1 of the workspace, then `meet` (a barrier or
/// nothing), then thread 0 runs `signal` on word 0. Block 1: thread 0 runs `wait` (into %r4)
/// until word 0 is non-zero, loads word 1 and writes it to `out`.
fn kernel(storer: u32, meet: &str, signal: &str, wait: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u64 %rd2, [k_param_1];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mov.u32 %r6, 42;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra CONSUME;
    setp.ne.s32 %p2, %r2, {storer};
    @%p2 bra STORED;
    st.global.u32 [%rd1+4], %r6;
STORED:
    {meet}
    setp.ne.s32 %p2, %r2, 0;
    @%p2 bra DONE;
    {signal}
    bra.uni DONE;
CONSUME:
    setp.ne.s32 %p2, %r2, 0;
    @%p2 bra DONE;
WAIT:
    {wait}
    setp.eq.s32 %p2, %r4, 0;
    @%p2 bra WAIT;
    ld.global.u32 %r5, [%rd1+4];
    st.global.u32 [%rd2], %r5;
DONE:
    ret;
}}
"
    )
}

/// Runs `ptx`'s kernel on two blocks of two warps over a watched workspace (or a plain buffer):
/// the value block 1 loaded, or the fault's sentence.
fn run(ptx: &str, watched: bool) -> Result<u32, String> {
    let mut m = Emulator::new(ptx, H100).unwrap();
    let ws = if watched { m.alloc_workspace(8, "the flags") } else { m.alloc(8, "the flags") };
    let out = m.alloc(4, "out");
    m.next_product();
    let config = Config { grid: (2, 1, 1), block: (64, 1, 1), dynamic_shared: 0, sanitize: true };
    m.launch("k", config, &[Arg::Ptr(ws), Arg::Ptr(out)]).map_err(|e| e.to_string())?;
    Ok(m.read_f32(out, 1).unwrap()[0].to_bits())
}

const ATOM_RELEASE: &str = "atom.add.release.gpu.global.u32 %r3, [%rd1], 1;";
const ATOM_RELAXED: &str = "atom.add.relaxed.gpu.global.u32 %r3, [%rd1], 1;";
const LD_ACQUIRE: &str = "ld.acquire.gpu.global.u32 %r4, [%rd1];";
const LD_RELAXED: &str = "ld.relaxed.gpu.global.u32 %r4, [%rd1];";
const BAR: &str = "bar.sync 0;";

/// The race's sentence names the load, the word, the storing block and why nothing orders them.
fn assert_race(got: Result<u32, String>, why: &str) {
    let e = got.expect_err("a race the model does not order");
    for part in [
        "global-memory race: thread (0,0,0) of block (1,0,0) loads word 1 of the workspace `the flags`",
        "which warp 0 of block (0,0,0) stored at",
        "nothing orders that store before this load",
        why,
    ] {
        assert!(e.contains(part), "missing {part:?} in: {e}");
    }
}

#[test]
fn a_release_read_by_an_acquire_orders_the_store() {
    assert_eq!(run(&kernel(0, "", ATOM_RELEASE, LD_ACQUIRE), true), Ok(42));
    let acq_rel = "atom.add.acq_rel.gpu.global.u32 %r4, [%rd1], 0;";
    assert_eq!(run(&kernel(0, "", "st.release.gpu.global.u32 [%rd1], %r6;", acq_rel), true), Ok(42));
}

#[test]
fn a_release_without_an_acquire_is_a_race() {
    assert_race(run(&kernel(0, "", ATOM_RELEASE, LD_RELAXED), true), "because the load at");
    assert_race(run(&kernel(0, "", ATOM_RELEASE, LD_RELAXED), true), "is relaxed (the storing side");
    // The same kernel on a buffer the sanitizer does not watch (not a workspace) runs.
    assert_eq!(run(&kernel(0, "", ATOM_RELEASE, LD_RELAXED), false), Ok(42));
}

#[test]
fn an_acquire_without_a_release_is_a_race() {
    assert_race(run(&kernel(0, "", ATOM_RELAXED, LD_ACQUIRE), true), "since this side's load at");
    assert_race(run(&kernel(0, "", ATOM_RELAXED, LD_ACQUIRE), true), "reads no release of it");
    // Relaxed on both sides: the atomic's line is named.
    let relaxed = "atom.add.relaxed.gpu.global.u32 %r4, [%rd1], 0;";
    assert_race(run(&kernel(0, "", ATOM_RELAXED, relaxed), true), "because the atomic at");
}

#[test]
fn fences_around_relaxed_accesses_make_a_pair() {
    let fenced_signal = format!("fence.acq_rel.gpu;\n    {ATOM_RELAXED}");
    let fenced_wait = format!("{LD_RELAXED}\n    fence.acq_rel.gpu;");
    assert_eq!(run(&kernel(0, "", &fenced_signal, &fenced_wait), true), Ok(42));
    // membar.gl and fence.sc are fences of the same kind.
    let membar = format!("membar.gl;\n    {ATOM_RELAXED}");
    let sc = format!("{LD_RELAXED}\n    fence.sc.gpu;");
    assert_eq!(run(&kernel(0, "", &membar, &sc), true), Ok(42));
    // A fence on one side alone, or at the block's scope, orders nothing across blocks.
    assert_race(run(&kernel(0, "", &fenced_signal, LD_RELAXED), true), "is relaxed");
    assert_race(run(&kernel(0, "", ATOM_RELAXED, &fenced_wait), true), "reads no release of it");
    let cta = format!("fence.acq_rel.cta;\n    {ATOM_RELAXED}");
    assert_race(run(&kernel(0, "", &cta, &fenced_wait), true), "reads no release of it");
}

#[test]
fn a_barrier_before_the_release_brings_in_the_group_stores() {
    // Warp 1 stores; thread 0 of warp 0 releases after the block's barrier.
    assert_eq!(run(&kernel(32, BAR, ATOM_RELEASE, LD_ACQUIRE), true), Ok(42));
    // Without the barrier, warp 1's store is not among what warp 0 releases.
    let e = run(&kernel(32, "", ATOM_RELEASE, LD_ACQUIRE), true).expect_err("a race");
    assert!(e.contains("which warp 1 of block (0,0,0) stored at"), "{e}");
    assert!(e.contains("reads no release of it"), "{e}");
    // Every thread fences, the block meets, one thread counts with a relaxed atomic; the other
    // side reads relaxed and fences.
    let fence_meet = format!("fence.acq_rel.gpu;\n    {BAR}");
    let fenced_wait = format!("{LD_RELAXED}\n    fence.acq_rel.gpu;");
    assert_eq!(run(&kernel(32, &fence_meet, ATOM_RELAXED, &fenced_wait), true), Ok(42));
    let e = run(&kernel(32, BAR, ATOM_RELAXED, &fenced_wait), true).expect_err("no fence, a race");
    assert!(e.contains("which warp 1 of block (0,0,0) stored at"), "{e}");
}

/// A count the kernel adds to and never resets: the next product reads what the first left.
#[test]
fn a_count_left_for_the_next_product_is_named() {
    let ptx = |reset: &str| {
        format!(
            "{HEADER}.visible .entry k(.param .u64 k_param_0)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    atom.add.acq_rel.gpu.global.u32 %r1, [%rd1+8], 3;
    {reset}
    ret;
}}
"
        )
    };
    let one = Config { grid: (1, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: true };
    for (reset, host, left) in [
        ("", false, true),
        ("mov.u32 %r2, 0;\n    st.global.u32 [%rd1+8], %r2;", false, false),
        ("", true, false),
    ] {
        let mut m = Emulator::new(&ptx(reset), H100).unwrap();
        let ws = m.alloc_workspace(12, "the counts");
        for _ in 0..2 {
            m.next_product();
            if host {
                m.write_f32(ws, &[0.0; 3]).unwrap();
            }
            m.launch("k", one, &[Arg::Ptr(ws)]).unwrap();
        }
        let finding = m.take_finding();
        assert_eq!(finding.is_some(), left, "reset {reset:?}, host {host}: {finding:?}");
        if let Some(f) = finding {
            for part in [
                "in launch 2 of the product, thread (0,0,0) of block (0,0,0) reads 3 from word 2 of the workspace `the counts`",
                "which launch 1 left there with the atomic at",
                "a workspace the host zeroes once must be left zeroed by every launch",
            ] {
                assert!(f.contains(part), "missing {part:?} in: {f}");
            }
        }
        assert_eq!(m.take_finding(), None, "taken once");
    }
}
