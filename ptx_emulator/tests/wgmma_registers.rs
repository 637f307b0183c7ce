//! The registers a wgmma in flight still reads: an ordinary write to one of A's fragments before
//! the `wgmma.wait_group` that covers the wgmma's group is named with the write, the wgmma and
//! that wait (or its absence); a write after the wait, a read of A, the accumulators (which
//! ptxas guards itself) and a chain of wgmma into the same accumulators are not. Hand-written PTX
//! for one warpgroup, its B a zeroed 8×8 tile of shared memory, so that these run without NVRTC.

use ptx_emulator::{Config, Emulator, Error, FaultKind, Machine};

/// An H100's SMs and a block's limits.
const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

/// A warpgroup that issues a m64n8k8 wgmma (line 12 of `w.cu`) with A from `%r2..%r5` and the
/// accumulators `%f1..%f4`, commits it (line 13), then runs `body`.
fn kernel(body: &str) -> String {
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .f32 %f<12>;
    .reg .b64 %rd<4>;
    .shared .align 128 .b8 bs[256];
    .loc 1 10 5
    mov.u32 %r1, bs;
    cvt.u64.u32 %rd1, %r1;
    shr.u64 %rd1, %rd1, 4;
    or.b64 %rd2, %rd1, 524288;
    mov.b32 %r2, 0;
    mov.b32 %r3, 0;
    mov.b32 %r4, 0;
    mov.b32 %r5, 0;
    mov.b32 %r6, 0;
    mov.b32 %r7, 0;
    mov.b32 %r8, 0;
    mov.b32 %r9, 0;
    mov.f32 %f1, 0f00000000;
    mov.f32 %f2, 0f00000000;
    mov.f32 %f3, 0f00000000;
    mov.f32 %f4, 0f00000000;
    setp.ne.b32 %p1, %r2, 0;
    .loc 1 11 5
    wgmma.fence.sync.aligned;
    .loc 1 12 5
    wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {{%f1, %f2, %f3, %f4}}, {{%r2, %r3, %r4, %r5}}, %rd2, %p1, 1, 1;
    .loc 1 13 5
    wgmma.commit_group.sync.aligned;
{body}
    ret;
}}
    .file 1 \"w.cu\"
"
    )
}

fn run(ptx: &str) -> Result<(), (FaultKind, String)> {
    let mut m = Emulator::new(ptx, H100).unwrap();
    let config = Config { grid: (1, 1, 1), block: (128, 1, 1), dynamic_shared: 0, sanitize: true };
    match m.launch("k", config, &[]) {
        Ok(_) => Ok(()),
        Err(Error::Fault(f)) => Err((f.kind, f.message)),
        Err(other) => panic!("not a fault: {other}"),
    }
}

#[test]
fn a_fragment_written_before_the_wait_is_named_with_the_wait() {
    let (kind, message) = run(&kernel(
        "    .loc 1 14 5
    mov.b32 %r3, 7;
    .loc 1 15 5
    wgmma.wait_group.sync.aligned 0;",
    ))
    .unwrap_err();
    assert_eq!(kind, FaultKind::Race, "{message}");
    assert!(
        message.starts_with(
            "thread (0,0,0) of block (0,0,0) writes a register at w.cu:14 that the wgmma at w.cu:12 still reads as its operand A's fragment: its warp waits for that wgmma with the wgmma.wait_group at w.cu:15, after the write ("
        ),
        "{message}"
    );
}

#[test]
fn a_fragment_written_with_no_wait_after_is_named_at_the_end() {
    let (kind, message) = run(&kernel(
        "    .loc 1 14 5
    mov.b32 %r5, 7;",
    ))
    .unwrap_err();
    assert_eq!(kind, FaultKind::Race, "{message}");
    assert!(
        message.contains(
            "writes a register at w.cu:14 that the wgmma at w.cu:12 still reads as its operand A's fragment: its warp never waits for that wgmma with wgmma.wait_group ("
        ),
        "{message}"
    );
}

#[test]
fn a_fragment_written_after_the_wait_or_read_before_it_is_no_fault() {
    let after = "    .loc 1 14 5
    wgmma.wait_group.sync.aligned 0;
    .loc 1 15 5
    mov.b32 %r3, 7;";
    assert_eq!(run(&kernel(after)), Ok(()));
    let read = "    .loc 1 14 5
    add.s32 %r10, %r3, %r4;
    .loc 1 15 5
    wgmma.wait_group.sync.aligned 0;";
    assert_eq!(run(&kernel(read)), Ok(()));
}

/// The accumulators are ptxas's to guard (it adds the wait and says so), and a second wgmma may
/// accumulate into them while the first is in flight.
#[test]
fn the_accumulators_and_the_chain_are_no_fault() {
    let chain = "    .loc 1 14 5
    add.f32 %f5, %f1, %f2;
    .loc 1 15 5
    wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, {%r6, %r7, %r8, %r9}, %rd2, %p1, 1, 1;
    wgmma.commit_group.sync.aligned;
    .loc 1 16 5
    mov.f32 %f4, 0f3F800000;
    .loc 1 17 5
    wgmma.wait_group.sync.aligned 0;";
    assert_eq!(run(&kernel(chain)), Ok(()));
}

/// With two groups in flight, `wait_group 1` retires the first: its registers are free, the
/// second's are not until the `wait_group 0` after them.
#[test]
fn a_wait_that_leaves_a_group_in_flight_frees_only_the_groups_before_it() {
    let second = "    .loc 1 14 5
    wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, {%r6, %r7, %r8, %r9}, %rd2, %p1, 1, 1;
    wgmma.commit_group.sync.aligned;
    .loc 1 15 5
    wgmma.wait_group.sync.aligned 1;
    .loc 1 16 5
    mov.b32 %r2, 7;
    .loc 1 17 5
    mov.b32 %r9, 7;
    .loc 1 18 5
    wgmma.wait_group.sync.aligned 0;";
    let (_, message) = run(&kernel(second)).unwrap_err();
    assert!(
        message.contains(
            "writes a register at w.cu:17 that the wgmma at w.cu:14 still reads as its operand A's fragment: its warp waits for that wgmma with the wgmma.wait_group at w.cu:18, after the write"
        ),
        "{message}"
    );
}
