//! A fault's sentence names what the kernel names: an mbarrier by its array and index, the call
//! in the kernel with the helper's own line, a peer block of the cluster by its place and rank,
//! and the fence missing between a peer's barrier's init and a relaxed cluster barrier. Hand-written PTX with NVRTC's line information (`inlined_at`, the helpers' names in the
//! debug strings), so that these run without NVRTC.

use ptx_emulator::{Config, Emulator, Error, FaultKind, Machine};

/// An H100's SMs and a block's limits.
const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

/// `.b8` bytes of a C string, as the `.debug_str` section holds the helpers' mangled names.
fn c_string(s: &str) -> String {
    let bytes: Vec<String> = s.bytes().chain([0]).map(|b| b.to_string()).collect();
    format!(".b8 {}", bytes.join(","))
}

/// A cluster of two blocks with two mbarriers in a static shared array `bars`, initialised (the
/// first only) by a helper at line 21 of `k.cu`, then a cluster barrier; then `body`, whose
/// helpers' lines are 8 and 12.
fn kernel(body: &str) -> String {
    kernel_synced("barrier.cluster.arrive;\n    barrier.cluster.wait;", body)
}

/// The same with `sync` (at line 22) between the init and `body`.
fn kernel_synced(sync: &str, body: &str) -> String {
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqnctapercluster 2, 1, 1
{{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .shared .align 8 .b8 bars[16];
    .loc 1 20 5
    mov.u32 %r1, %tid.x;
    mov.u32 %r5, %ctaid.x;
    mov.u32 %r2, bars;
    .loc 1 3 5, function_name $L__info_string0, inlined_at 1 21 9
    mbarrier.init.shared::cta.b64 [%r2], 1;
    .loc 1 22 5
    {sync}
{body}
    ret;
}}
    .file 1 \"k.cu\"
    .section .debug_str
    {{
$L__info_string0:
{}
$L__info_string1:
{}
$L__info_string2:
{}
    }}
",
        c_string("_Z9mbar_initPyj"),
        c_string("_Z11mbar_arrivePy"),
        c_string("_ZN4sync9mbar_waitEPyj"),
    )
}

fn fault(ptx: &str) -> (FaultKind, String) {
    let mut m = Emulator::new(ptx, H100).unwrap();
    let config = Config { grid: (2, 1, 1), block: (32, 1, 1), dynamic_shared: 0, sanitize: true };
    match m.launch("k", config, &[]) {
        Err(Error::Fault(f)) => (f.kind, f.message),
        other => panic!("no fault: {other:?}"),
    }
}

#[test]
fn a_wait_on_a_barrier_never_initialised_names_it_and_the_call() {
    let (kind, message) = fault(&kernel(
        "    .loc 1 12 5, function_name $L__info_string2, inlined_at 1 23 9
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2+8], 0;
    @!%p1 bra wait_again;
wait_again:
    .loc 1 12 5, function_name $L__info_string2, inlined_at 1 23 9
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2+8], 0;",
    ));
    assert_eq!(kind, FaultKind::Barrier, "{message}");
    assert!(message.contains("the mbarrier `bars[1]` before any mbarrier.init"), "{message}");
    assert!(message.contains("at k.cu:23, in sync::mbar_wait at :12"), "{message}");
    assert!(!message.contains("rank"), "the block's own barrier: {message}");
}

#[test]
fn a_peer_blocks_barrier_is_named_with_the_block() {
    let (kind, message) = fault(&kernel(
        "    setp.ne.u32 %p2, %r5, 0;
    @%p2 bra done;
    mapa.shared::cluster.u32 %r3, %r2, 1;
    .loc 1 8 5, function_name $L__info_string1, inlined_at 1 24 9
    mbarrier.arrive.shared::cluster.b64 _, [%r3+8];
done:
    barrier.cluster.arrive;
    barrier.cluster.wait;",
    ));
    assert_eq!(kind, FaultKind::Barrier, "{message}");
    assert!(
        message.contains("the mbarrier `bars[1]` of block (1,0,0), rank 1 of this cluster before any"),
        "{message}"
    );
    assert!(message.contains("at k.cu:24, in mbar_arrive at :8"), "{message}");
}

/// Block 0's thread 0 arrives on block 1's `bars[0]`.
const REMOTE_ARRIVE: &str = "    setp.ne.u32 %p2, %r5, 0;
    @%p2 bra done;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra done;
    mapa.shared::cluster.u32 %r3, %r2, 1;
    .loc 1 8 5, function_name $L__info_string1, inlined_at 1 24 9
    mbarrier.arrive.shared::cluster.b64 _, [%r3];
done:
    barrier.cluster.arrive;
    barrier.cluster.wait;";

fn runs(ptx: &str) -> Result<(), String> {
    let mut m = Emulator::new(ptx, H100).unwrap();
    let config = Config { grid: (2, 1, 1), block: (32, 1, 1), dynamic_shared: 0, sanitize: true };
    m.launch("k", config, &[]).map(|_| ()).map_err(|e| format!("{e:?}"))
}

/// A relaxed cluster barrier releases nothing: a peer's arrival on the barrier is not ordered
/// after its init without `fence.mbarrier_init.release.cluster`, which the fault names with the
/// relaxed arrive; with the fence, or with a release arrive, the same arrival runs.
#[test]
fn a_relaxed_cluster_barrier_without_the_init_fence_is_named() {
    let relaxed = "barrier.cluster.arrive.relaxed;\n    barrier.cluster.wait;";
    let (kind, message) = fault(&kernel_synced(relaxed, REMOTE_ARRIVE));
    assert_eq!(kind, FaultKind::Race, "{message}");
    assert!(
        message.contains("uses the mbarrier `bars[0]` of block (1,0,0), rank 1 of this cluster at k.cu:24"),
        "{message}"
    );
    assert!(
        message.contains("the barrier.cluster.arrive.relaxed at k.cu:22 releases nothing, and no fence.mbarrier_init.release.cluster comes between the init and that arrive"),
        "{message}"
    );
    let fenced = format!("fence.mbarrier_init.release.cluster;\n    {relaxed}");
    runs(&kernel_synced(&fenced, REMOTE_ARRIVE)).unwrap();
    runs(&kernel(REMOTE_ARRIVE)).unwrap();
}
