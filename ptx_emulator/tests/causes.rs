//! A sentence names the cause where it lies on neither of the two lines that meet. Two blocks of
//! a cluster share a 64-byte box that one block's copy engine multicasts into both: each block
//! counts the box on its `full` mbarrier, and its lanes 0 and 1 free the box by arriving on
//! `empty`. When they arrive on their own block's `empty` instead of the copying block's, the
//! race between the next copy and a read names the arrival, the block whose barrier it reached
//! and the block whose barrier it should reach; when the copy's mask leaves a block out, the
//! deadlock names that block's `full` first, with the copy and its mask. Hand-written PTX with
//! line information (`k.cu`), so that these run without NVRTC.

use ptx_emulator::{Arg, Config, Emulator, Error, FaultKind, Machine, Swizzle, TensorMap};

/// An H100's SMs and a block's limits.
const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

/// The kernel: block `producer` of the cluster multicasts the box with cta mask `mask` (at line
/// 16), each block's lanes 0 and 1 arrive (at line 23) on the `empty` of the block `to` names
/// (`%r1`, the lane: block 0 and block 1; `%r5`, the block's own rank), and `then` follows.
fn kernel(producer: u32, mask: u16, to: &str, then: &str) -> String {
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqnctapercluster 2, 1, 1
{{
    .reg .pred %p<8>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<3>;
    .shared .align 128 .b8 box[64];
    .shared .align 8 .b8 full[8];
    .shared .align 8 .b8 empty[8];
    mov.u64 %rd2, k_param_0;
    cvta.param.u64 %rd1, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r5, %cluster_ctarank;
    mov.u32 %r2, full;
    mov.u32 %r3, empty;
    mov.u32 %r4, box;
    mov.u32 %r6, 0;
    mov.u16 %rs1, {mask};
    setp.eq.u32 %p1, %r1, 0;
    setp.eq.u32 %p2, %r5, {producer};
    and.pred %p3, %p1, %p2;
    .loc 1 10 5
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    .loc 1 11 5
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 2;
    .loc 1 12 5
    barrier.cluster.arrive;
    barrier.cluster.wait;
    .loc 1 14 5
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 64;
    .loc 1 16 5
    @%p3 cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r4], [%rd1, {{%r6}}], [%r2], %rs1;
filled:
    .loc 1 18 5
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 0;
    @!%p4 bra filled;
    .loc 1 20 5
    ld.shared.u32 %r7, [%r4];
    setp.lt.u32 %p5, %r1, 2;
    @%p5 mapa.shared::cluster.u32 %r9, %r3, {to};
    .loc 1 23 5
    @%p5 mbarrier.arrive.shared::cluster.b64 _, [%r9];
{then}
    .loc 1 40 5
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}}
    .file 1 \"k.cu\"
"
    )
}

/// The second round: the producer's thread 0 waits (line 27) until its own `empty` has counted
/// the box freed, and every block's thread 0 announces the next box's bytes; the producer copies
/// it again (line 31), and every thread waits for it.
const AGAIN: &str = "    @!%p1 bra announced;
    @!%p2 bra announce;
freed:
    .loc 1 27 5
    mbarrier.try_wait.parity.shared::cta.b64 %p6, [%r3], 0;
    @!%p6 bra freed;
announce:
    .loc 1 29 5
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 64;
    .loc 1 31 5
    @%p2 cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r4], [%rd1, {%r6}], [%r2], %rs1;
announced:
    .loc 1 33 5
    mbarrier.try_wait.parity.shared::cta.b64 %p7, [%r2], 1;
    @!%p7 bra announced;";

/// Runs the kernel on a cluster of two blocks of one warp, the box a 16-float row of `A`.
fn run(ptx: &str) -> Result<(), (FaultKind, String)> {
    let mut m = Emulator::new(ptx, H100).unwrap();
    let a = m.alloc(64, "A");
    let map = TensorMap {
        address: a,
        element: 4,
        rank: 1,
        dims: [16, 1, 1, 1, 1],
        strides: [64, 0, 0, 0],
        boxes: [16, 1, 1, 1, 1],
        swizzle: Swizzle::None,
    };
    let config = Config { grid: (2, 1, 1), block: (32, 1, 1), dynamic_shared: 0, sanitize: true };
    match m.launch("k", config, &[Arg::Map(map.encode().unwrap())]) {
        Ok(_) => Ok(()),
        Err(Error::Fault(f)) => Err((f.kind, f.message)),
        Err(e) => panic!("{e}"),
    }
}

/// Lanes 0 and 1 of each block free the box on their own block's `empty`, so block 1, whose
/// copy engine writes into block 0, refills it once its own consumers are done: the race names
/// block 0's arrival, the barrier it reached and block 1's that it should reach. Arriving on
/// block `lane`'s `empty` (the copying block's among them) runs.
#[test]
fn an_arrival_on_its_own_blocks_barrier_is_named_with_the_block_it_should_reach() {
    let (kind, message) = run(&kernel(1, 0b11, "%r5", AGAIN)).unwrap_err();
    assert_eq!(kind, FaultKind::Race, "{message}");
    assert!(message.contains("the copy issued at k.cu:31 writes byte 0 of the shared array `box` of block (0,0,0), which warp 0 read at k.cu:20"), "{message}");
    assert!(
        message.contains(
            "warp 0 frees the buffer with its arrival at k.cu:23 on the mbarrier `empty` of its own block (0,0,0)"
        ),
        "the arrival and the block it reached: {message}"
    );
    assert!(
        message.contains(
            "but the copy comes from block (1,0,0), which waits at k.cu:27 on its own mbarrier `empty` before it writes into block (0,0,0): the arrival must reach the mbarrier `empty` of block (1,0,0)"
        ),
        "the block it should reach: {message}"
    );
    run(&kernel(1, 0b11, "%r1", AGAIN)).unwrap();
}

/// Block 0 multicasts the box with mask 0b01, leaving block 1 out: block 1's `full` waits for
/// 64 bytes that never come. The deadlock names that barrier first, then the copy and its mask;
/// with mask 0b11 the same kernel runs.
#[test]
fn a_deadlock_names_the_barrier_starved_of_bytes_first_with_the_mask_that_leaves_it_out() {
    let (kind, message) = run(&kernel(0, 0b01, "%r1", "")).unwrap_err();
    assert_eq!(kind, FaultKind::Deadlock, "{message}");
    assert!(
        message.starts_with(
            "deadlock: the mbarrier `full` of block (1,0,0) waits for 64 bytes that no copy sends it: \
             the copy at k.cu:16 multicasts its 64 bytes with mask 0b01, which leaves block (1,0,0) \
             (rank 1 of the cluster) out; every thread of the cluster waits and none can run: "
        ),
        "{message}"
    );
    // The list that follows begins with the starved barrier's waiters too.
    let list = message.split("none can run: ").nth(1).unwrap();
    assert!(
        list.starts_with("thread (0,0,0) of block (1,0,0) (and 31 more threads) waits at k.cu:18"),
        "{list}"
    );
    run(&kernel(0, 0b11, "%r1", "")).unwrap();
}

/// An expect_tx that announces more than the copies carry starves its barrier too, with no
/// mask to blame: the sentence names the expect_tx, what it announced and what came.
#[test]
fn a_deadlock_on_bytes_no_mask_leaves_out_names_the_expect_tx() {
    let over = kernel(0, 0b11, "%r1", "").replace("_, [%r2], 64;", "_, [%r2], 80;");
    let (kind, message) = run(&over).unwrap_err();
    assert_eq!(kind, FaultKind::Deadlock, "{message}");
    assert!(
        message.starts_with(
            "deadlock: the mbarrier `full` of block (0,0,0) waits for 16 bytes that no copy sends it: \
             the expect_tx at k.cu:14 announced 80 bytes, and the copies counted on the phase brought 64; "
        ),
        "{message}"
    );
}
