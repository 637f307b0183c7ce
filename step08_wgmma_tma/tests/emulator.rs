//! Step 08 on the PTX emulator: the copy engine, the mbarrier pipeline and wgmma run on the CPU,
//! within TF32's limits at small and odd shapes, for the kernel, its documented widths and its
//! variants; the planted faults fail there as on a GPU; and each hazard of the async proxy, and
//! a descriptor that reads another layout than the copy engine wrote, is named in one sentence
//! with its `.cu` line.

use common::Shape;
use common::testing::emulator::{self, EMULATED_SHAPES};
use step08_wgmma_tma::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[("BM", 128), ("BN", 64), ("STAGES", 2)], &EMULATED_SHAPES[..2]);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 128), ("BN", 192), ("STAGES", 3), ("GROUP", 1)],
        &EMULATED_SHAPES[..2],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_variants_match_the_reference() {
    for (file, source) in [
        (
            "step08_wgmma_tma/variants/transposing_prologue.cu",
            include_str!("../variants/transposing_prologue.cu"),
        ),
        (
            "step08_wgmma_tma/variants/in_pipeline_transpose.cu",
            include_str!("../variants/in_pipeline_transpose.cu"),
        ),
    ] {
        let variant = emulator::with_source(&STEP, file, source.into());
        emulator::assert_emulated_pass(&variant, &[], &EMULATED_SHAPES[..3]);
    }
}

/// What the copy engine and the tensor cores did, counted: one copy of A's box and BN/32 of B's
/// per buffer fill, the bytes of whole boxes, and a wgmma per warp and 8-deep step.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_copies_and_products_are_counted() {
    let (_, verdict, t) = emulator::emulate_counted(&STEP, &[], Shape { m: 256, n: 256, k: 96 }).unwrap();
    assert!(verdict.passed());
    // Two blocks (BN = 128), three 32-deep slices each: a box of A (256×32) and four of B.
    assert_eq!(t.bulk_load_requests, 2 * 3 * 5);
    assert_eq!(t.bulk_load_bytes, 2 * 3 * 4 * (256 * 32 + 128 * 32));
    assert_eq!(t.wgmma_instructions, 2 * 2 * 4 * 3 * 4, "blocks × consumers × warps × slices × k8 steps");
    assert_eq!(t.flops, 2 * 256 * 256 * 96);
}

/// A consumer that reads a buffer without waiting for its copies: the sanitizer names the read
/// and the copy, on the first buffer, before anything could go wrong by luck.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_read_before_the_copy_has_landed() {
    let missing = emulator::planted(&STEP, "            mbar_wait(&full[s], (kt / STAGES) % 2);\n", "");
    emulator::assert_fault_named(&missing, &[], (64, 64, 64), &["race"]);
    // The wrong parity passes the wait at once: the same hazard.
    let parity = emulator::planted(
        &STEP,
        "mbar_wait(&full[s], (kt / STAGES) % 2);",
        "mbar_wait(&full[s], (kt / STAGES + 1) % 2);",
    );
    emulator::assert_fault_named(&parity, &[], (64, 64, 64), &["race", "kernel.cu:275, in wgmma at :"]);
}

/// A descriptor advanced by bytes instead of 16-byte units reads the next buffer's bytes, which
/// the warp never waited for: the sentence names the barrier the bytes belong to and the one the
/// warp waited on, and gives no parity hint (the wait was right; the address is not).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_descriptor_advanced_in_bytes() {
    let bytes = emulator::planted(&STEP, "desc + (8 * k8 * 4 >> 4)", "desc + 8 * k8 * 4");
    let message = emulator::assert_fault_named(
        &bytes,
        &[],
        (128, 128, 128),
        &[
            "kernel.cu:275, in wgmma at :",
            "phase 0 of the mbarrier `full[1]`",
            "this warp waited on the mbarrier `full[0]` and never on that mbarrier",
            "in tma_load at :",
        ],
    );
    assert!(!message.contains("parity"), "{message}");
}

/// A consumer that frees its buffer before its wgmma are done: the copy engine refills it while
/// the tensor cores may still read it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_buffer_refilled_under_a_wgmma() {
    let early = emulator::planted(&STEP, "            wgmma_wait_all();\n", "");
    emulator::assert_fault_named(&early, &[], (64, 64, 256), &["while the wgmma at", "wgmma.wait_group"]);
}

/// Bytes announced that no copy delivers: the phase never completes, and the emulator names the
/// barrier, the phase and who waits, where a GPU hangs. Bytes delivered beyond those announced
/// are named where they land.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_expect_tx_that_does_not_match_the_copies() {
    let more = emulator::planted(
        &STEP,
        "mbar_expect_bytes(&full[s], STAGE_BYTES);",
        "mbar_expect_bytes(&full[s], STAGE_BYTES + 16);",
    );
    let expect = line_of("mbar_expect_bytes(&full[s], STAGE_BYTES");
    let message = emulator::assert_fault_named(
        &more,
        &[],
        (64, 64, 64),
        &[
            "deadlock",
            "16 bytes of copies",
            "parity 0",
            &format!("the expect_tx at {expect}, in mbar_expect_bytes at :54 announced, "),
            "have landed and no copy on its way brings the rest",
        ],
    );
    assert!(message.contains("on a GPU the kernel would hang"), "{message}");
    let fewer = emulator::planted(
        &STEP,
        "mbar_expect_bytes(&full[s], STAGE_BYTES);",
        "mbar_expect_bytes(&full[s], STAGE_BYTES - 16);",
    );
    // Named at the copy that brings the bytes over, and at the expect_tx that announced them.
    for shape in [(64, 64, 64), (256, 256, 256)] {
        emulator::assert_fault_named(
            &fewer,
            &[],
            shape,
            &[
                "the copies counted on the mbarrier `full[0]` deliver 16 bytes more than its expect_tx announced",
                &format!("the expect_tx at {expect}, in mbar_expect_bytes at :54 announced "),
                "bytes for the phase, and its copies, this one included, carry ",
            ],
        );
    }
}

/// An empty barrier that waits for one arrival more than the consumers give: a deadlock, named
/// with the init that set the count, and with the consumers that wait for the buffer the
/// producer cannot refill.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_deadlock_instead_of_hanging() {
    let more = emulator::planted(
        &STEP,
        "mbar_init(&empty[s], 4 * CONSUMERS);",
        "mbar_init(&empty[s], 4 * CONSUMERS + 1);",
    );
    let init = line_of("mbar_init(&empty[s], 4 * CONSUMERS);");
    emulator::assert_fault_named(
        &more,
        &[],
        (64, 64, 256),
        &[
            "deadlock",
            "waits at step08_wgmma_tma/src/kernel.cu:238, in mbar_wait at :",
            "of the mbarrier `empty[0]` (phase 0 is under way and still waits for 1 of 9 arrivals; ",
            &format!("the count of 9 was set at the mbarrier.init at {init}, in mbar_init at :47)"),
            "thread (128,0,0) of block (0,0,0) (and ",
            "of the mbarrier `full[0]` (phase 1 is under way",
        ],
    );
}

/// A descriptor that reads another layout than the one the copy engine wrote A's tile in: on a
/// GPU C is silently wrong. Without the swizzle bits, the operand's row 1 is read where the copy
/// put row 0's columns 4..; with 8-row groups 512 bytes apart instead of 1024, row 8 is read
/// where row 4 lies. The sanitizer names the first element read from the wrong place.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_descriptor_that_reads_another_layout() {
    let unswizzled = emulator::planted(&STEP, " | (1ull << 62);", ";");
    emulator::assert_fault_named(
        &unswizzled,
        &[],
        (64, 64, 64),
        &[
            "the wgmma at step08_wgmma_tma/src/kernel.cu:",
            "element (row 1, k 0) of A's tile, its operand B, from byte",
            "put element (row 0, column 4) of A (64×64), not element (row 1, column 0)",
            "reads 16-byte rows without a swizzle",
            "the tensor map wrote rows of 128 bytes with the 128-byte swizzle",
        ],
    );
    let stride = emulator::planted(&STEP, "((1024ull >> 4) << 32)", "((512ull >> 4) << 32)");
    emulator::assert_fault_named(
        &stride,
        &[],
        (64, 64, 64),
        &[
            "the wgmma at step08_wgmma_tma/src/kernel.cu:",
            "element (row 8, k 0) of A's tile, its operand B,",
            "put element (row 4, column 0) of A (64×64), not element (row 8, column 0)",
            "8-row groups 512 bytes apart",
            "8-row groups 1024 bytes apart",
        ],
    );
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step08_wgmma_tma::STEP,
        &[(300, 200, 96), (512, 512, 128)],
    );
}

/// The `.cu` line of the step's kernel that holds `text`, as a fault names it.
fn line_of(text: &str) -> String {
    let line = STEP.source.lines().position(|l| l.contains(text)).expect("the text is in the kernel") + 1;
    format!("{}:{line}", STEP.file)
}

/// `message` names, right after `before`, the line of a helper's call or the line in the helper
/// (an instruction of an inlined helper may be named by either).
fn assert_names(message: &str, before: &str, lines: &[String]) {
    assert!(
        lines.iter().any(|l| message.contains(&format!("{before}{l}"))),
        "`{before}` followed by none of {lines:?}: {message}"
    );
}

/// An expect_tx short by whole boxes: the phase completes when the announced bytes have
/// landed, before the last boxes of B have, and on a GPU a consumer may read them unfilled. No
/// byte count goes negative within the phase, so only the copies still in flight show it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_phase_that_completes_before_its_copies_land() {
    let expect = [line_of("mbar_expect_bytes(&full[s], STAGE_BYTES);"), line_of("\"r\"(bytes)")];
    let copy = [line_of("tma_load(Bs + s * B_TILE + b * B_BOX"), line_of("\"l\"(map), \"r\"(col)")];
    for (short, copies) in [(4096, "the copy"), (8192, "2 copies")] {
        let fewer = emulator::planted(
            &STEP,
            "mbar_expect_bytes(&full[s], STAGE_BYTES);",
            &format!("mbar_expect_bytes(&full[s], STAGE_BYTES - {short});"),
        );
        for shape in [(64, 64, 64), (256, 128, 96), (128, 256, 320)] {
            let message = emulator::assert_fault_named(
                &fewer,
                &[],
                shape,
                &[
                    "phase 0 of the mbarrier `full[",
                    &format!("completed with {short} bytes of {copies} issued at "),
                    &format!("announced {short} bytes fewer than the phase's copies carry"),
                ],
            );
            assert_names(&message, &format!("{copies} issued at "), &copy);
            assert_names(&message, "the expect_tx at ", &expect);
        }
    }
}

/// Barriers set up by one thread and used by the others with no __syncthreads() between: on a
/// GPU a consumer may wait on, or the copy engine count bytes off, a barrier not yet set up.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_mbarrier_used_before_its_init_is_ordered() {
    let init = [line_of("mbar_init(&full[s], 1);"), line_of("mbarrier.init.shared::cta.b64")];
    let unordered = emulator::planted(
        &STEP,
        "    __syncthreads();\n    // ANCHOR_END: setup",
        "    // ANCHOR_END: setup",
    );
    for shape in [(64, 64, 64), (256, 128, 96), (128, 256, 320)] {
        let message = emulator::assert_fault_named(
            &unordered,
            &[],
            shape,
            &[
                "thread (128,0,0) of block (0,0,0) uses the mbarrier `full[",
                "with nothing ordering the use after its mbarrier.init by thread (0,0,0) of block (0,0,0) at ",
            ],
        );
        assert_names(&message, "by thread (0,0,0) of block (0,0,0) at ", &init);
    }
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K; its offsets were 64-bit
/// already (its tensor maps read A and B), so its narrow PTX forms none either.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], false);
}
