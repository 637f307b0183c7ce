//! Step 08's pipeline mistakes on the PTX emulator, each named at its cause: a buffer freed
//! before its wgmma were waited for (whatever order the emulator's rounds run the copy and the
//! wait in), a wait on the wrong parity, an `empty` barrier whose init counts fewer arrivals than
//! the consumers make, an `expect_tx` short of the copies, named at the expect_tx too, the
//! next tile's fragments loaded into the registers a wgmma in flight still reads, and a producer
//! that refills a buffer without waiting on its `empty` barrier.

use common::GpuStep;
use common::testing::emulator;
use step08_wgmma_tma::STEP;

/// The `.cu` line (from 1) of `step`'s kernel that holds `text`, as a fault names it.
fn line_of(step: &GpuStep, text: &str) -> String {
    let line = step.source.lines().position(|l| l.contains(text)).expect("the text is in the kernel") + 1;
    format!("{}:{line}", step.file)
}

/// The consumer's arrival on `empty[s]` moved before its `wgmma.wait_group`.
const WAIT_THEN_FREE: &str =
    "            wgmma_wait_all();\n            if (lane == 0) mbar_arrive(&empty[s]);\n";
const FREE_THEN_WAIT: &str =
    "            if (lane == 0) mbar_arrive(&empty[s]);\n            wgmma_wait_all();\n";

/// A consumer that frees its buffer between `wgmma.commit_group` and `wgmma.wait_group`: the
/// producer may refill the buffer while the tensor cores still read it. The emulator's rounds run
/// the consumer's wait before the producer's copy, so the copy never meets a wgmma in flight;
/// the sentence comes from what orders what, and names the arrival, its barrier and the wait
/// that came after it. The kernel and both variants, at shapes whose buffers are refilled.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_buffer_freed_before_its_wgmma_are_waited_for() {
    let variants = [
        (
            "step08_wgmma_tma/variants/transposing_prologue.cu",
            include_str!("../variants/transposing_prologue.cu"),
        ),
        (
            "step08_wgmma_tma/variants/in_pipeline_transpose.cu",
            include_str!("../variants/in_pipeline_transpose.cu"),
        ),
    ];
    let mut steps = vec![STEP];
    steps.extend(variants.map(|(file, source)| emulator::with_source(&STEP, file, source.into())));
    for step in steps {
        let early = emulator::planted(&step, WAIT_THEN_FREE, FREE_THEN_WAIT);
        let arrive = line_of(&early, "if (lane == 0) mbar_arrive(&empty[s]);");
        let wait = line_of(&early, "            wgmma_wait_all();");
        for shape in [(64, 64, 256), (256, 128, 320)] {
            let message = emulator::assert_fault_named(
                &early,
                &[],
                shape,
                &[
                    "the copy engine overwrites byte ",
                    "while the wgmma at ",
                    "freed the bytes with its arrival on the mbarrier `empty[",
                    &format!("` at {arrive}, in mbar_arrive at :"),
                    "while that wgmma was still in flight",
                    &format!("waits for it with the wgmma.wait_group at {wait}, in wgmma_wait_all at :"),
                    "after the arrival",
                    "the tensor cores may still read the buffer when the copy lands",
                ],
            );
            assert!(!message.contains("has not waited"), "{}: {message}", step.file);
        }
    }
}

/// A consumer that waits on `full[s]` with the parity flipped: the wait passes at once, before
/// the buffer's copies, and the sentence names that wait (its line, the parity, the phase under
/// way), not a missing one. Flipped only from the second round of buffers on, the wait passes on
/// the fill the warp has read already, and the warps that run ahead arrive on `empty[0]` before
/// its phase is theirs: named at that arrival, with the wait.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_wait_on_the_wrong_parity() {
    let right = "mbar_wait(&full[s], (kt / STAGES) % 2);";
    let wait = line_of(&STEP, right);
    let flipped = emulator::planted(&STEP, right, "mbar_wait(&full[s], (kt / STAGES + 1) % 2);");
    for shape in [(64, 64, 64), (256, 256, 256), (128, 256, 320)] {
        let message = emulator::assert_fault_named(
            &flipped,
            &[],
            shape,
            &[
                "race",
                &format!("its wait at {wait}, in mbar_wait at :"),
                "for the phase of parity 1 of the mbarrier `full[0]` passed at once in phase 0, before any phase of parity 1 had completed",
                "a wait on the wrong parity (the bytes read are phase 0's, of parity 0)",
            ],
        );
        assert!(!message.contains("no mbarrier wait"), "{message}");
    }
    let later = emulator::planted(&STEP, right, "mbar_wait(&full[s], (kt / STAGES + (kt >= STAGES)) % 2);");
    for shape in [(64, 64, 256), (128, 256, 320)] {
        emulator::assert_fault_named(
            &later,
            &[],
            shape,
            &[
                &format!("wait of thread (128,0,0) of block (0,0,0) at {wait}, in mbar_wait at :"),
                "for the phase of parity 0 of the mbarrier `full[0]` passed on phase 0 again, which it had passed on already, while phase 1 was under way",
                "a wait on the wrong parity (it needed phase 1, of parity 1)",
            ],
        );
    }
    // No wait at all still reads as no wait.
    let missing = emulator::planted(&STEP, &format!("            {right}\n"), "");
    let message = emulator::assert_fault_named(&missing, &[], (256, 256, 256), &["race"]);
    assert!(!message.contains("parity"), "{message}");
}

/// `empty[s]` initialised with a count of 1 where eight consumer warps arrive: the second
/// arrival of one use is not ordered after the first, which completed the phase. Named with the
/// init's line and count, the arrival and the one that completed the phase.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_init_that_counts_fewer_arrivals_than_come() {
    let one = emulator::planted(&STEP, "mbar_init(&empty[s], 4 * CONSUMERS);", "mbar_init(&empty[s], 1);");
    let init = line_of(&one, "mbar_init(&empty[s], 1);");
    let arrive = line_of(&one, "if (lane == 0) mbar_arrive(&empty[s]);");
    for shape in [(64, 64, 64), (256, 256, 256), (128, 256, 320)] {
        emulator::assert_fault_named(
            &one,
            &[],
            shape,
            &[
                "the mbarrier `empty[",
                &format!(
                    "gets 2 arrivals on a phase that counts 1, set at the mbarrier.init at {init}, in mbar_init at :"
                ),
                &format!("arrives at {arrive}, in mbar_arrive at :"),
                "with nothing ordering it after phase ",
                "which the arrival of thread (",
                &format!(") at {arrive}, in mbar_arrive at :60 completed"),
            ],
        );
    }
}

/// The consumer keeps one wgmma group in flight (`wgmma.wait_group 1`, the buffer before freed
/// instead) and loads the next tile's B fragments into the same `frag` registers, which the
/// wgmma of the group in flight still read as A: the H100 gives a wrong C. The emulator, which
/// reads them at the issue, names the load, the wgmma and the wait that came after it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_fragment_written_under_a_wgmma_in_flight() {
    let wait_all = "__device__ __forceinline__ void wgmma_wait_all() {\n    asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n}\n";
    let helper = format!(
        "{wait_all}__device__ __forceinline__ void wgmma_wait_one() {{ asm volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\"); }}\n"
    );
    let one = emulator::planted(&STEP, wait_all, &helper);
    let learner = emulator::planted(
        &one,
        &format!("{WAIT_THEN_FREE}        }}\n"),
        "            wgmma_wait_one();\n            if (kt > 0 && lane == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);\n        }\n        wgmma_wait_all();\n",
    );
    let source_line = |text: &str| learner.source.lines().position(|l| l.contains(text)).unwrap() + 1;
    let (first, last) = (source_line("float2 lo = load_pair("), source_line("frag[k8][3] = "));
    let wgmma = line_of(&learner, "wgmma(acc, frag[k8]");
    let wait = line_of(&learner, "            wgmma_wait_one();");
    for shape in [(256, 256, 256), (300, 259, 133)] {
        let message = emulator::assert_fault_named(
            &learner,
            &[],
            shape,
            &[
                &format!("that the wgmma at {wgmma}, in wgmma at :"),
                " still reads as B's fragment (the wgmma's operand A): ",
                &format!(
                    "its warp waits for that wgmma with the wgmma.wait_group at {wait}, in wgmma_wait_one at :"
                ),
                ", after the write (on a GPU the tensor cores read the fragment's registers until that wait",
            ],
        );
        // The write: a line of the fragments' loads.
        let write = message.split(" writes a register at ").nth(1).and_then(|r| r.split(' ').next());
        let line =
            write.and_then(|w| w.strip_prefix(&format!("{}:", STEP.file))).and_then(|l| l.parse().ok());
        assert!(line.is_some_and(|l: usize| (first..=last).contains(&l)), "{message}");
    }
}

/// The producer without its wait on `empty[s]`: it goes round the ring and arrives on `full[0]`
/// (its expect_tx) again before phase 0 completed. Named as the wait it skips, not as too many
/// arrivals on `full[0]`, whose count is right.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_refill_that_skips_the_wait_on_empty() {
    let wait = "                if (kt >= STAGES) mbar_wait(&empty[s], (kt / STAGES - 1) % 2);\n";
    let skipped = emulator::planted(&STEP, wait, "");
    let expect = line_of(&skipped, "mbar_expect_bytes(&full[s], STAGE_BYTES);");
    for shape in [(256, 256, 256), (128, 256, 320)] {
        let message = emulator::assert_fault_named(
            &skipped,
            &[],
            shape,
            &[
                &format!("arrives on the mbarrier `full[0]` at {expect}"),
                "a second time in its phase 0, before that phase completed",
                "it fills the buffer again before the buffer is freed, skipping its wait on the mbarrier `empty[0]`",
            ],
        );
        assert!(!message.contains("more often than its count"), "{message}");
    }
}

/// Lab 08 launches no clusters: its barriers' inits reach the block's threads through
/// `__syncthreads()`, and the copies come from the thread that initialised them, so the kernel
/// without its `fence.mbarrier_init` is right, as the book says, and the emulator says nothing.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_lab_08_without_its_init_fence_is_right() {
    let fence = "        asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n";
    let unfenced = emulator::planted(&STEP, fence, "");
    for (m, n, k) in [(256, 256, 256), (128, 256, 320)] {
        let (_, verdict) = emulator::emulate(&unfenced, &[], common::Shape { m, n, k }).unwrap();
        assert!(verdict.passed(), "at {m}×{n}×{k}");
    }
}

/// B's fragments read without the swizzle (`load_pair` at the place the piece had before it):
/// every row but the first of each eight holds other columns of B. Traced from the copy engine's
/// record of what it put where, the wgmma's first operand is named at its line, with the lane, the
/// register, the element needed and held, and the copy, where verification alone said FAIL.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_b_read_without_its_swizzle() {
    let unswizzled = emulator::planted(
        &STEP,
        "box + row * 32 + 4 * ((col / 4) ^ (row % 8)) + col % 4",
        "box + row * 32 + 4 * (col / 4) + col % 4",
    );
    let wgmma = line_of(&unswizzled, "wgmma(acc, frag[k8], desc + (8 * k8 * 4 >> 4));");
    let copy = line_of(&unswizzled, "tma_load(Bs + s * B_TILE + b * B_BOX, &b_map, &full[s]");
    for shape in [(256, 256, 256), (128, 256, 320)] {
        emulator::assert_fault_named(
            &unswizzled,
            &[],
            shape,
            &[
                &format!("reads, at {wgmma}, in wgmma at :"),
                "of B's fragment (row ",
                "of the instruction's first operand) holding B[",
                "where the fragment layout needs B[",
                &format!("its bytes were copied there at {copy}, in tma_load at :"),
            ],
        );
    }
}
