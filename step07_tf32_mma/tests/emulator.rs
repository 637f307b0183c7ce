//! Step 07 on the PTX emulator: `cp.async`, `ldmatrix` and the TF32 `mma.sync` run by whole
//! warps, within TF32's limits at small and odd shapes, for the kernel and each of its stages;
//! the shared-memory reads of each stage as the chapter counts them; the variant that issues the
//! MMAs alone runs to its end.

use common::Shape;
use common::testing::emulator::{self, EMULATED_SHAPES};
use step07_tf32_mma::{STAGES, STEP};

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 64), ("BN", 64), ("WM", 32), ("WN", 32)],
        &EMULATED_SHAPES[..2],
    );
}

/// Every stage at the default set (the emulator runs stage 1 there although its registers
/// spill, which a GPU run refuses) and at 64×32 warps, the set a GPU runs stage 1 with.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_match_the_reference() {
    for stage in STAGES {
        let step = STEP.stage(stage.name).unwrap();
        emulator::assert_emulated_pass(&step, &[], EMULATED_SHAPES);
        emulator::assert_emulated_pass(&step, &[("WN", 32)], &EMULATED_SHAPES[..2]);
    }
}

/// The same planted fault (the last slice of K left out) fails every stage on the emulator.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_catch_a_dropped_slice() {
    for stage in STAGES {
        let step = STEP.stage(stage.name).unwrap();
        let faulty = emulator::planted(
            &step,
            "for (int k0 = 0; k0 < K; k0 += BK)",
            "for (int k0 = 0; k0 < K - BK; k0 += BK)",
        );
        let (_, verdict) = emulator::emulate(&faulty, &[], Shape { m: 67, n: 45, k: 129 }).unwrap();
        assert!(!verdict.passed(), "{} with the last slice dropped passed", stage.name);
    }
}

/// What each stage reads from shared memory for every 32 MMAs (a warp's 8-deep step at the
/// default 64×64 warps), in load instructions and wavefronts: one float per load with bank
/// conflicts (stage 1: A transposed, rows of 128 floats, four lanes to a bank; stage 2: A as it
/// lies, rows of 32 floats, eight to a bank), none once the rows are padded, then fewer loads
/// for the same 32 wavefronts: B's pairs in 8-byte loads, A's fragments by ldmatrix.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_read_shared_memory_as_the_chapter_counts() {
    let expected: [(&str, u64, u64); 6] = [
        ("1_mma_sync", 32, 128),
        ("2_cp_async", 32, 192),
        ("3_padded_rows", 32, 32),
        ("4_swapped_operands", 32, 32),
        ("5_paired_columns", 24, 32),
        ("kernel", 12, 32),
    ];
    assert_eq!(expected.len(), STAGES.len() + 1, "one row per stage, and the kernel's last");
    let steps = STAGES.iter().map(|s| STEP.stage(s.name).unwrap()).chain([STEP]);
    for ((name, loads, wavefronts), step) in expected.into_iter().zip(steps) {
        let file = if name == "kernel" { "src/kernel.cu".to_owned() } else { format!("/{name}.cu") };
        assert!(step.file.ends_with(&file), "{name} is checked against {}", step.file);
        let (_, verdict, t) = emulator::emulate_counted(&step, &[], Shape { m: 128, n: 128, k: 64 }).unwrap();
        assert!(verdict.passed(), "{name}");
        let mmas = t.flops / (2 * 16 * 8 * 8);
        assert_eq!(mmas, 128 * 128 * 64 / (16 * 8 * 8), "{name}");
        let per_32 = |n: u64| n * 32 / mmas;
        assert_eq!(
            (per_32(t.shared_load_requests), per_32(t.shared_load_wavefronts)),
            (loads, wavefronts),
            "{name}: shared loads and wavefronts per 32 MMAs"
        );
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_mma_only_variant_runs_to_its_end() {
    let variant = emulator::with_source(
        &STEP,
        "step07_tf32_mma/variants/mma_only.cu",
        include_str!("../variants/mma_only.cu").into(),
    );
    emulator::emulate(&variant, &[], common::Shape { m: 128, n: 128, k: 64 }).unwrap();
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_missing_wait() {
    // Without waiting for its copies, a warp reads a tile that has not landed.
    let missing = emulator::planted(&STEP, "    asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n", "");
    emulator::assert_fault_named(&missing, &[], (64, 64, 64), &["before the cp.async of", "has landed"]);
}

/// The barrier moved from the end of the loop to after the next trip's copies: a warp's copy
/// into the other buffer is issued while other warps still read it (a write-after-read between
/// buffers, which no wait fixes). The fault names the copy and the barrier missing before it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_copy_into_a_buffer_still_read() {
    let early = emulator::planted(
        &STEP,
        "                        Bs + (buf ^ 1) * B_TILE);\n        compute_tile",
        "                        Bs + (buf ^ 1) * B_TILE);\n        __syncthreads();\n        compute_tile",
    );
    let early = emulator::planted(
        &early,
        "        wait_copies();\n        __syncthreads();\n        buf ^= 1;",
        "        wait_copies();\n        buf ^= 1;",
    );
    let message = emulator::assert_fault_named(
        &early,
        &[],
        (64, 64, 128),
        &["no barrier between the last reads of the buffer and the copy into it"],
    );
    assert!(!message.contains("wait_group"), "no wait in the reading thread fixes it: {message}");
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step07_tf32_mma::STEP,
        &[(300, 200, 96), (256, 256, 256)],
    );
}

/// ldmatrix's lane addresses with matrices 1 and 2 swapped (lanes 8–15 give the second strip's
/// rows, lanes 16–23 the first strip's four columns on): each lane's second register holds an
/// element of A from the wrong row and k. The emulator, which traces each register to the
/// element the cp.async put in shared memory, names the MMA's line, the lane and register, the
/// element needed and held, the copy and the ldmatrix, where verification alone said FAIL.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_operand_from_swapped_ldmatrix_lanes() {
    let swapped = emulator::planted(
        &STEP,
        "(wr + lane % 8 + (lane / 16) * 8) * AS + (lane / 8) % 2 * 4",
        "(wr + lane % 8 + (lane / 8) % 2 * 8) * AS + (lane / 16) * 4",
    );
    let line = |text: &str| {
        let at = swapped.source.lines().position(|l| l.contains(text)).expect("in the kernel") + 1;
        format!("{}:{at}", swapped.file)
    };
    // Named, as every fault, at the kernel's line (the call in `matmul`) and the helper's.
    let call = line("compute_tile(As + buf * A_TILE, Bs + buf * B_TILE, wr, wc, acc);");
    let message = emulator::assert_fault_named(
        &swapped,
        &[],
        (128, 128, 64),
        &[
            &format!("reads, at {call}, in mma at :"),
            "its register 1 of A's fragment (k 4, column 0 of the instruction's second operand) holding A[",
            "where the fragment layout needs A[",
            "its bytes were copied there at ",
            &format!("and loaded into the register at {call}, in load_a at :"),
        ],
    );
    assert!(!message.contains("verify"), "{message}");
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K (the narrow PTX does).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], true);
}
