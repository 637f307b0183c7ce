//! Step 12's pipeline mistakes on the PTX emulator, each named at its cause: a buffer freed
//! before its wgmma were waited for, in the kernel, every stage and every variant; and the
//! deadlocks of a multicast mask that leaves a block out and of a peer's missing arrival, which
//! list every barrier and phase someone waits on, and so read differently; and the fence after
//! the barriers' inits, which a relaxed cluster barrier needs and a release one does not.

use common::GpuStep;
use common::testing::emulator;
use step12_persistent_clusters::{STAGES, STEP, VARIANTS};

/// `source` with its consumer's first `wgmma.wait_group` after the buffer's wait moved below the
/// arrival on `empty` that follows it (the comments between stay where they are).
fn free_before_waiting(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let full = lines.iter().position(|l| l.contains("mbar_wait(&full[")).expect("a consumer's wait");
    let wait = full + lines[full..].iter().position(|l| l.contains("wgmma_wait_")).expect("a wgmma wait");
    let mut end = wait + 1;
    while lines[end].trim_start().starts_with("//") {
        end += 1;
    }
    let comments = end;
    while !lines[end].trim_end().ends_with(';') {
        end += 1;
    }
    assert!(
        lines[comments..=end].iter().any(|l| l.contains("mbar_arrive") && l.contains("empty")),
        "no arrival on empty after the wait at line {}",
        wait + 1
    );
    let mut out: Vec<&str> = lines[..wait].to_vec();
    out.extend(&lines[wait + 1..=end]);
    out.push(lines[wait]);
    out.extend(&lines[end + 1..]);
    out.join("\n") + "\n"
}

/// Lab 12's kernel, each stage and each variant, with their names.
fn every_kernel() -> Vec<GpuStep> {
    let mut steps = vec![STEP];
    steps.extend(STAGES.iter().map(|s| STEP.stage(s.name).expect("a declared stage")));
    steps.extend(VARIANTS.iter().map(|v| STEP.with_variant(v, v.source, v.file)));
    steps
}

/// A consumer that frees a buffer (arrives on `empty`, in every block of the cluster from stage
/// 2 on) before its `wgmma.wait_group` for the products that read it: named at the copy that
/// refills the buffer, with the arrival and the wait that came after it, in the kernel, in every
/// stage and in both variants.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_buffer_freed_before_its_wgmma_are_waited_for() {
    for step in every_kernel() {
        let early = emulator::with_source(&step, step.file, free_before_waiting(step.source));
        let message = emulator::assert_fault_named(
            &early,
            &[],
            (256, 256, 512),
            &[
                "the copy engine overwrites byte ",
                "while the wgmma at ",
                "freed the bytes with its arrival on the mbarrier `empty[",
                "while that wgmma was still in flight",
                "waits for it with the wgmma.wait_group at ",
                "after the arrival",
            ],
        );
        // The arrival named is the planted one: the line just above the wait.
        let wait = message.split("the wgmma.wait_group at ").nth(1).unwrap_or_default();
        let wait_line: usize = wait.split([':', ',']).nth(1).and_then(|l| l.parse().ok()).unwrap_or(0);
        let arrive = early.source.lines().nth(wait_line.saturating_sub(2)).unwrap_or_default();
        assert!(
            arrive.contains("mbar_arrive"),
            "{}: no arrival above line {wait_line}: {message}",
            step.file
        );
    }
}

/// The items of a deadlock's sentence, and for each mbarrier one waits on, its name (with its
/// block where another block's thread waits) and the phase under way.
fn waited_phases(message: &str) -> Vec<String> {
    let list = message.split("none can run: ").nth(1).expect("a deadlock's list");
    list.split("; thread (")
        .filter_map(|item| {
            let block = item.split("of block (").nth(1)?.split(')').next()?;
            let bar = item.split("of the mbarrier `").nth(1)?;
            let (name, rest) = bar.split_once('`')?;
            let phase = rest.split("(phase ").nth(1)?.split(' ').next()?;
            Some(format!("{name} of block ({block}), phase {phase}"))
        })
        .collect()
}

/// A's box multicast to block 0 of the cluster alone: block 1's `full[0]` waits for bytes that
/// never come. A peer's consumers that never arrive on block 0's `empty`: block 0's producer
/// waits for arrivals. Each deadlock lists one waiter for each mbarrier and phase, block 1's
/// consumers among them, and says what each phase lacks, so the two read differently.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_multicast_that_misses_a_block_apart_from_a_missing_arrival() {
    // 256-row tiles: at this shape the rule would choose 128.
    let shape = (256, 256, 512);
    let expect = STEP.source.lines().position(|l| l.contains("mbar_expect_bytes(&full[s]")).unwrap() + 1;
    let copy =
        STEP.source.lines().position(|l| l.contains("tma_load_multicast(As + s * A_TILE")).unwrap() + 1;
    let mask = emulator::planted(&STEP, "((1 << CLUSTER) - 1)", "(1)");
    let missed = emulator::assert_fault_named(
        &mask,
        &[("BM", 256)],
        shape,
        &[
            // The starved barrier first, with the copy and the mask that leaves its block out.
            &format!(
                "deadlock: the mbarrier `full[0]` of block (1,0,0) waits for 32768 bytes that no copy sends it: the copy at {}:{copy}, in tma_load_multicast at {}:",
                STEP.file,
                step12_persistent_clusters::INCLUDES[0].file
            ),
            "multicasts its 16384 bytes with mask 0b01, which leaves block (1,0,0) (rank 1 of the cluster) out; every thread of the cluster waits",
            "none can run: thread (128,0,0) of block (1,0,0) (and 255 more threads) waits at ",
            "for the phase of parity 0 of the mbarrier `full[0]` (phase 0 is under way and still waits for 0 of 1 arrivals and 32768 bytes of copies",
            &format!(
                "of the 49152 bytes the expect_tx at {}:{expect}, in mbar_expect_bytes at {}:",
                STEP.file,
                step12_persistent_clusters::INCLUDES[0].file
            ),
            "announced, 16384 have landed and no copy on its way brings the rest",
        ],
    );
    let peer = emulator::planted(
        &STEP,
        "                if (kt > k_begin && lane < CLUSTER)",
        "                if (kt > k_begin && lane < 1)",
    );
    let unarrived = emulator::assert_fault_named(
        &peer,
        &[("BM", 256)],
        shape,
        &[
            "deadlock",
            "of the mbarrier `empty[",
            "still waits for 16 of 16 arrivals; the count of 16 was set",
        ],
    );
    assert_ne!(waited_phases(&missed), waited_phases(&unarrived));
    for message in [&missed, &unarrived] {
        let phases = waited_phases(message);
        let mut distinct = phases.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), phases.len(), "a phase listed twice: {message}");
        assert!(phases.iter().any(|p| p.contains("block (1,0,0)")), "block 1 is not listed: {message}");
    }
}

/// The setup's cluster barrier made relaxed: without `fence.mbarrier_init.release.cluster` a
/// peer's arrival on a block's `empty` barrier is not ordered after its init, and the fault names
/// the relaxed arrive and the fence; with the fence, or with the kernel's release arrive and no
/// fence, the product is right.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_the_init_fence_a_relaxed_cluster_barrier_needs() {
    let fence = "        asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n";
    let sync = "    cluster_sync();\n    // ANCHOR_END: setup";
    let relaxed = "    asm volatile(\"barrier.cluster.arrive.relaxed;\\nbarrier.cluster.wait;\" ::: \"memory\");\n    // ANCHOR_END: setup";
    let fenced_relaxed = emulator::planted(&STEP, sync, relaxed);
    let unfenced_relaxed = emulator::planted(&fenced_relaxed, fence, "");
    let shape = (256, 256, 256);
    emulator::assert_fault_named(
        &unfenced_relaxed,
        &[],
        shape,
        &[
            "with nothing ordering the use after its mbarrier.init by thread (0,0,0) of block (",
            "the barrier.cluster.arrive.relaxed at step12_persistent_clusters/src/kernel.cu:",
            "releases nothing, and no fence.mbarrier_init.release.cluster comes between the init and that arrive",
        ],
    );
    let (m, n, k) = shape;
    for right in [fenced_relaxed, emulator::planted(&STEP, fence, "")] {
        let (_, verdict) = emulator::emulate(&right, &[], common::Shape { m, n, k }).unwrap();
        assert!(verdict.passed(), "{}", right.file);
    }
}
