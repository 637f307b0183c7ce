//! Step 12 on the PTX emulator: persistent blocks in clusters, A's box multicast to every block
//! of a cluster, C stored through the copy engine, and the cut twin `matmul_cut`, all run on the
//! CPU within TF32's limits; each stage too; and the hazards a GPU run finds by luck or by
//! hanging (a TMA store of C without its proxy fence, a peer's missing arrival, a block leaving
//! while its peers still use its shared memory), and a descriptor that disagrees with the copies
//! (on a GPU only a wrong C), named in one sentence with their `.cu` line.

use common::Shape;
use common::testing::emulator::{self, EMULATED_SHAPES};
use step12_persistent_clusters::{STAGES, STEP, VARIANTS};

/// A shape whose one unit the schedule cuts into pieces for 66 clusters (`matmul_cut`).
const CUT: (usize, usize, usize) = (256, 256, 2048);

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_kernel_matches_the_reference() {
    emulator::assert_emulated_pass(&STEP, &[], EMULATED_SHAPES);
    emulator::assert_emulated_pass(&STEP, &[], &[CUT, (300, 260, 2000)]);
    emulator::assert_emulated_pass(&STEP, &[("CLUSTER", 1)], &EMULATED_SHAPES[..2]);
    emulator::assert_emulated_pass(
        &STEP,
        &[("BM", 128), ("STAGES", 6), ("CLUSTER", 4)],
        &EMULATED_SHAPES[..2],
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_stages_match_the_reference() {
    for stage in STAGES {
        let step = STEP.stage(stage.name).unwrap();
        emulator::assert_emulated_pass(&step, &[], &EMULATED_SHAPES[..2]);
        emulator::assert_emulated_pass(&step, &[("CLUSTER", 4)], &EMULATED_SHAPES[..1]);
    }
}

/// A shape where every cluster walks three tiles or more and each tile has as many k-tiles as
/// the buffers (so a ping-pong consumer's first buffer was last filled for the other consumer's
/// tile), with edges in M, N and K.
const MANY: (usize, usize, usize) = (3000, 2100, 97);

/// The variants: ping-pong consumers, and B multicast in clusters of 2×2 blocks.
fn variant(name: &str) -> common::GpuStep {
    let v = VARIANTS.iter().find(|v| v.file.contains(name)).expect("a declared variant");
    STEP.with_variant(v, v.source, v.file)
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_variants_match_the_reference() {
    for name in ["ping_pong", "multicast_b"] {
        emulator::assert_emulated_pass(&variant(name), &[], &[EMULATED_SHAPES[1], EMULATED_SHAPES[4], MANY]);
    }
    emulator::assert_emulated_pass(&variant("ping_pong"), &[("CLUSTER", 2)], &[MANY]);
    // One consumer gives the turn to itself; three pass it round.
    emulator::assert_emulated_pass(&variant("ping_pong"), &[("BN", 64), ("CLUSTER", 1)], &[MANY]);
    let three = [("BM", 128), ("BN", 192), ("STAGES", 3)];
    emulator::assert_emulated_pass(&variant("ping_pong"), &three, &[(3000, 2100, 65)]);
    emulator::assert_emulated_pass(&variant("multicast_b"), &three, &[EMULATED_SHAPES[1], MANY]);
}

/// A ping-pong consumer that starts on its tile without its turn may wait on a buffer's fill one
/// phase early (the parity of fill f is that of fill f − 2): it reads a buffer the copy engine is
/// still writing. Without the warpgroup's meeting after its leader's wait, the other warps start
/// on their own and do the same.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_ping_pong_consumer_that_skips_its_turn() {
    let wait = "                if (leader) mbar_wait(&turn[me], turns % 2);\n";
    let meet = "                ++turns;
                asm volatile(\"bar.sync %0, 128;\" ::\"r\"(role) : \"memory\");
";
    for find in [format!("{wait}{meet}"), meet.to_owned()] {
        let skips = emulator::planted(&variant("ping_pong"), &find, "                ++turns;\n");
        emulator::assert_fault_named(&skips, &[], MANY, &["shared-memory race", "the copy issued at"]);
    }
}

/// Half of B's tile copied into this block alone, not into the block of its column too: that
/// block waits for bytes that never come.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_b_multicast_to_the_wrong_peer() {
    let wrong = emulator::planted(&variant("multicast_b"), "COLUMN_PEERS << column", "1 << rank");
    emulator::assert_fault_named(&wrong, &[], (256, 256, 256), &["deadlock", "would hang"]);
}

/// A's box is read from global memory once per cluster and delivered to each block: the bytes
/// multicast saves are counted beside those read.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_multicast_is_counted() {
    // 256-row tiles (at 256³ the rule would choose 128).
    let (_, verdict, t) =
        emulator::emulate_counted(&STEP, &[("BM", 256)], Shape { m: 256, n: 256, k: 64 }).unwrap();
    assert!(verdict.passed());
    // One cluster of two blocks, two 32-deep slices: each block copies half of A's 256×32 box
    // to both, and four 32×32 boxes of B to itself.
    let a_half = 128 * 32 * 4;
    assert_eq!(t.multicast_bytes, 2 * 2 * a_half);
    assert_eq!(t.multicast_load_bytes, 2 * 2 * a_half, "each block copies its half once");
    assert_eq!(t.bulk_load_bytes, 2 * 2 * (a_half + 4 * 32 * 32 * 4));
    assert_eq!(t.bulk_store_bytes, 4 * 256 * 256, "C, stored by the copy engine");
}

/// The hands-on exercise checks itself on the emulator: at 1024×8192×64 (4 block-rows of A, 32
/// units across) the 132 blocks' first copies read, with the kernel's order (groups of 4
/// block-rows: 17 unit-columns), 4·2 boxes of A and 17·2 of B; row by row (the starting file:
/// three block-rows, every unit-column), 3·2 of A and 32·2 of B. Both orders give the right C.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_tile_order_shows_in_the_first_rounds_tiles() {
    let shape = Shape { m: 1024, n: 8192, k: 64 };
    let first_tiles = |step: &common::GpuStep| {
        let (_, verdict, t) = emulator::emulate_counted(step, &[], shape).unwrap();
        assert!(verdict.passed(), "{}", verdict.summary());
        t.first_tiles
    };
    let file = "step12_persistent_clusters/exercises/tile_order.cu";
    let start = emulator::with_source(&STEP, file, include_str!("../exercises/tile_order.cu").into());
    assert_eq!((first_tiles(&STEP), first_tiles(&start)), (4 * 2 + 17 * 2, 3 * 2 + 32 * 2));
}

/// Without its proxy fence, the store of C's box reads what the async proxy may not see yet:
/// caught at every shape whose C goes through the copy engine (rows of whole 16 bytes), the cut
/// launch among them.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_tma_store_without_its_proxy_fence() {
    let unfenced =
        emulator::planted(&STEP, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");", "");
    for shape in [(256, 256, 256), (64, 64, 64), (130, 260, 40), CUT] {
        emulator::assert_fault_named(&unfenced, &[], shape, &["no fence.proxy.async between"]);
    }
}

/// A consumer that never frees its buffer in the peer block: the peer's producer waits for ever.
/// On a GPU the kernel hangs; here the emulator names the barrier and who waits.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_peer_that_never_arrives() {
    let missing = emulator::planted(
        &STEP,
        "                if (kt > k_begin && lane < CLUSTER)",
        "                if (kt > k_begin && lane < 1)",
    );
    emulator::assert_fault_named(
        &missing,
        &[],
        (256, 256, 512),
        &[
            "deadlock",
            ", in mbar_wait at step12_persistent_clusters/src/hopper.cuh:",
            "of the mbarrier `empty[",
            "arrivals",
            "would hang",
        ],
    );
}

/// Consumers that free a buffer on their own block's `empty` alone: the peer, whose copy engine
/// multicasts its box of A into this block, refills the buffer once its own consumers are done,
/// while this block's wgmma may still read it. The race names the arrival, the block whose barrier
/// it reached and the block whose barrier it should reach.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_an_arrival_on_its_own_blocks_empty() {
    let arrive = "mbar_arrive_cluster(&empty[(it + STAGES - 1) % STAGES], lane);";
    let line = STEP.source.lines().position(|l| l.contains(arrive)).unwrap() + 1;
    let own = arrive.replace("lane);", "rank);");
    let loop_and_last = format!(
        "{arrive}\n            }}\n            wgmma_wait_all();\n            if (lane < CLUSTER) {arrive}"
    );
    let planted = emulator::planted(&STEP, &loop_and_last, &loop_and_last.replace(arrive, &own));
    let fault = emulator::assert_fault_named(
        &planted,
        &[],
        (256, 256, 256),
        &[
            "shared-memory race: the copy issued at step12_persistent_clusters/src/kernel.cu:",
            "in tma_load_multicast at step12_persistent_clusters/src/hopper.cuh:",
            &format!(
                "frees the buffer with its arrival at {}:{line}, in mbar_arrive_cluster at step12_persistent_clusters/src/hopper.cuh:",
                STEP.file
            ),
        ],
    );
    // Which pair of blocks races first depends on how the emulator's threads are scheduled: the
    // sentence must name one block's own barrier, and the other block of its pair as the copy's.
    let block_after = |text: &str| -> String {
        let at = fault.find(text).unwrap_or_else(|| panic!("`{text}` missing from the fault: {fault}"));
        let rest = &fault[at + text.len()..];
        rest[..rest.find(')').expect("a block's coordinates")].to_owned()
    };
    let own = block_after("on the mbarrier `empty[0]` of its own block (");
    let from = block_after("but the copy comes from block (");
    assert_ne!(own, from, "{fault}");
    assert_eq!(block_after("before it writes into block ("), own, "{fault}");
    assert_eq!(block_after("the arrival must reach the mbarrier `empty[0]` of block ("), from, "{fault}");
}

/// The empty barrier counted for one block's consumers where every block's arrive (without
/// `× CLUSTER`): it completes at half the arrivals, and the producer refills a buffer a peer's
/// consumers still read. The sentence says so, with the barrier's name, and gives no parity hint.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_buffer_refilled_under_its_readers() {
    let half = emulator::planted(
        &STEP,
        "mbar_init(&empty[s], 4 * CONSUMERS * CLUSTER);",
        "mbar_init(&empty[s], 4 * CONSUMERS);",
    );
    let message = emulator::assert_fault_named(
        &half,
        &[],
        (256, 256, 256),
        &[
            "of the mbarrier `full[",
            "the copy engine refilled the buffer while this warp still reads it",
            "in tma_load at step12_persistent_clusters/src/hopper.cuh:",
        ],
    );
    assert!(!message.contains("parity"), "{message}");
}

/// A block that leaves while its peer may still arrive on its barriers or copy into it.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_peer_that_left_too_early() {
    let early = emulator::planted(
        &STEP,
        "    // Peers may still arrive on this block's barriers, or copy into it: leave together.\n    cluster_sync();\n",
        "",
    );
    emulator::assert_fault_named(
        &early,
        &[],
        (256, 512, 256),
        &["may leave while", "still uses its shared memory"],
    );
}

/// A descriptor of the 64-byte swizzle over A's tile, which the copy engine wrote with the
/// 128-byte one (each block's half multicast to both blocks of the cluster): the operand's row 1
/// is read where row 0's columns 16.. lie, and the sanitizer names it. With the right descriptor
/// but each block copying the same half of A's rows, the tile's row 128 (the first of the peer's
/// half) holds A's row 0: named too, as copies that do not fill the layout the descriptor reads.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_descriptor_that_disagrees_with_the_copies() {
    let swizzle = emulator::planted(
        &STEP,
        "((1024ull >> 4) << 32) | (1ull << 62)",
        "((1024ull >> 4) << 32) | (2ull << 62)",
    );
    emulator::assert_fault_named(
        &swizzle,
        &[("BM", 256)],
        (256, 256, 256),
        &[
            "the wgmma at step12_persistent_clusters/src/kernel.cu:",
            "element (row 1, k 0) of A's tile, its operand B,",
            "put element (row 0, column 16) of A (256×256), not element (row 1, column 0)",
            "reads the 64-byte swizzle",
        ],
    );
    let same_half = emulator::planted(&STEP, "origin.x + rank * BM / CLUSTER);", "origin.x);");
    emulator::assert_fault_named(
        &same_half,
        &[("BM", 256)],
        (256, 256, 256),
        &[
            "the wgmma at step12_persistent_clusters/src/kernel.cu:",
            "element (row 128, k 0) of A's tile, its operand B,",
            "put element (row 0, column 0) of A (256×256), not element (row 128, column 0)",
            "the copies did not put the tile's elements where that layout has them",
        ],
    );
}

/// One block of each kind, scaled (`--emulate --scaled`), counts what the whole grid counts:
/// the kinds the launch names, one cluster of each share of whole units (at 2304×2048, 72 units
/// for 66 clusters: the first six take two, the others one).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_scaled_counts_match_the_whole_emulation() {
    common::testing::emulator::assert_scaled_counts_match(
        &step12_persistent_clusters::STEP,
        &[(256, 256, 256), (2304, 2048, 128)],
    );
}

/// A count of pieces never reset for the next launch: the first launch is right, the second reads
/// the counts the first left and adds its pieces at the wrong time. The emulated run launches
/// twice, as a GPU run does, and fails on the next launch's line, which the final error names.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_run_fails_a_count_left_for_the_next_launch() {
    use common::testing::{run_for_report, scratch_file};
    let reset = "if (adder[role - 1]) *count = 0;  // ready for the next launch";
    assert_eq!(STEP.source.matches(reset).count(), 1);
    let kernel = scratch_file("never_reset.cu", &STEP.source.replace(reset, "if (adder[role - 1]) {}"));
    let bin = env!("CARGO_BIN_EXE_step12_persistent_clusters");
    for shape in [["256", "256", "2048"], ["300", "260", "2000"]] {
        let [m, n, k] = shape;
        let args = ["--emulate", "--kernel", kernel.to_str().unwrap(), "-m", m, "-n", n, "-k", k];
        let ran = run_for_report(bin, &args, &[]);
        let (out, err) = (&ran.out, &ran.err);
        assert_eq!(ran.code, Some(1), "{shape:?}: {out}{err}");
        let derived = &ran.report.as_ref().expect("the report as JSON")["derived"];
        assert_eq!(derived["passed"], true, "{shape:?}: the first launch is right: {out}");
        assert_eq!(derived["next_product_passed"], false, "{shape:?}: {out}");
        assert!(out.contains("next product FAIL · a second product"), "{shape:?}: {out}");
        assert!(err.contains("see the next product line above"), "{shape:?}: {err}");
    }
    // The kernel as it is passes both launches.
    let ran = run_for_report(bin, &["--emulate", "-m", "256", "-n", "256", "-k", "2048"], &[]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    let derived = &ran.report.as_ref().expect("the report as JSON")["derived"];
    assert!(derived["passed"] == true && derived["next_product_passed"] == true, "{}", ran.out);
}

/// Barriers set up in each block and ordered by the block's own barrier only: a peer's
/// multicast copy or arrival may reach a barrier its block has not set up yet. Only the cluster
/// barrier after the init orders it for the peers.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_peer_that_uses_an_mbarrier_before_its_init_is_ordered() {
    let local = emulator::planted(
        &STEP,
        "set them up.\n    cluster_sync();\n",
        "set them up.\n    __syncthreads();\n",
    );
    for shape in [(64, 64, 64), (256, 256, 256), (130, 260, 40)] {
        let message = emulator::assert_fault_named(
            &local,
            &[],
            shape,
            &[
                "uses the mbarrier `",
                "with nothing ordering the use after its mbarrier.init by thread (0,0,0) of block ",
            ],
        );
        // The user is a peer: another block than the initialiser's.
        let block =
            |text: &str| text.split("of block ").nth(1).and_then(|b| b.split(')').next()).map(str::to_owned);
        let user = message.split(" uses ").next().and_then(block);
        let initialiser = message.split("mbarrier.init by ").nth(1).and_then(block);
        assert!(user.is_some() && user != initialiser, "not a peer's use: {message}");
    }
}

/// An expect_tx short by one box of B, where the buffer's bytes come from both blocks of the
/// cluster: named as the phase that completes with a box still in flight, or, where the peer's
/// box lands once the block's own have completed the count, as bytes beyond those announced.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_phase_that_completes_before_its_copies_land() {
    let fewer = emulator::planted(
        &STEP,
        "mbar_expect_bytes(&full[s], STAGE_BYTES);",
        "mbar_expect_bytes(&full[s], STAGE_BYTES - 4096);",
    );
    for shape in [(64, 64, 64), (256, 256, 256), (130, 260, 40)] {
        let message = emulator::assert_fault_named(&fewer, &[], shape, &["the mbarrier `full["]);
        assert!(
            message.contains("announced 4096 bytes fewer than the phase's copies carry")
                || message.contains("deliver 4096 bytes more than its expect_tx announced"),
            "the shortfall is not named: {message}"
        );
    }
}

/// The line (from 1) of the kernel's first line that contains `text`.
fn line_of(text: &str) -> usize {
    STEP.source.lines().position(|l| l.contains(text)).expect("a line of the kernel") + 1
}

/// The line that `message` names right after `before` (`…kernel.cu:` then digits).
fn line_after(message: &str, before: &str) -> usize {
    let at = message.find(before).unwrap_or_else(|| panic!("`{before}` missing from: {message}"));
    let digits: String = message[at + before.len()..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no line after `{before}` in: {message}"))
}

/// Shapes whose last round the schedule cuts along K: one unit in 2 pieces, four units with
/// edges in M, N and K, and two units in runs of 8 k-tiles (PIECE = 8) with edges.
/// Parameters set apart from their defaults, and a shape.
type ParamCase = (&'static [(&'static str, u32)], (usize, usize, usize));

const CUT_SHAPES: [ParamCase; 3] = [(&[], CUT), (&[], (300, 260, 2000)), (&[("PIECE", 8)], (200, 300, 1000))];

/// The count of a tile's pieces made relaxed: nothing then orders a piece's sums before the
/// adder's loads of them (a GPU forgives it mostly, the PTX memory model does not), named at the
/// adder's load with the piece's store and the atomic.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_a_count_of_the_pieces_made_relaxed() {
    let relaxed =
        emulator::planted(&STEP, "atom.add.acq_rel.gpu.global.u32", "atom.add.relaxed.gpu.global.u32");
    let file = STEP.file;
    let (load, store) = (
        format!("at {file}:{}", line_of("__ldcg(")),
        format!("stored at {file}:{}", line_of("(mine + j * 512) =")),
    );
    for (overrides, shape) in CUT_SHAPES {
        let message = emulator::assert_fault_named(
            &relaxed,
            overrides,
            shape,
            &[
                "global-memory race: thread (",
                "loads word ",
                "of the workspace `the pieces' workspace`",
                &load,
                &store,
                "and nothing orders that store before this load, because the atomic at",
                "is relaxed (the storing side needs a release after the barrier that gathers its group's stores, and this side an acquire that reads what the release wrote)",
            ],
        );
        // The atomic: the call of `arrive` in the kernel, then the helper's asm statement.
        let call = line_after(&message, &format!("because the atomic at {file}:"));
        assert_eq!(call, line_of("arrive(count) == cut.y - 1"), "{shape:?}: {message}");
        let atomic = line_after(&message, &format!("{file}:{call}, in arrive at :"));
        let asm = line_of("atom.add.acq_rel.gpu.global.u32");
        assert!((asm..asm + 3).contains(&atomic), "{shape:?}: the atomic at line {atomic}: {message}");
    }
}

/// The reset of a tile's count removed: the next launch reads the count the first left, named
/// at the read with the first launch's atomic, beside the run's outcome (the next product's C is
/// wrong).
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulator_names_the_count_a_launch_left_for_the_next() {
    use common::testing::{run_for_output, scratch_file};
    let reset = "if (adder[role - 1]) *count = 0;  // ready for the next launch";
    let kernel = scratch_file("count_left.cu", &STEP.source.replace(reset, "if (adder[role - 1]) {}"));
    let path = kernel.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_step12_persistent_clusters");
    let asm = line_of("atom.add.acq_rel.gpu.global.u32");
    for (overrides, (m, n, k)) in CUT_SHAPES {
        let (m, n, k) = (m.to_string(), n.to_string(), k.to_string());
        let mut args = vec!["--emulate", "--kernel", path, "-m", &m, "-n", &n, "-k", &k];
        let params: Vec<String> = overrides.iter().map(|(p, v)| format!("{p}={v}")).collect();
        for p in &params {
            args.extend(["--param", p]);
        }
        let (code, out, err) = run_for_output(bin, &args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        assert!(out.contains("next product FAIL"), "{args:?}: {out}");
        let finding =
            err.lines().find(|l| l.contains("in launch 2 of the product")).unwrap_or_else(|| panic!("{err}"));
        for part in [
            "error: in launch 2 of the product, thread (",
            "reads ",
            "from word ",
            "of the workspace `the pieces' workspace` at ",
            "which launch 1 left there with the atomic at ",
            "and nothing set back to zero: a workspace the host zeroes once must be left zeroed by every launch",
        ] {
            assert!(finding.contains(part), "{args:?}: `{part}` missing from: {finding}");
        }
        // The read: the call of `arrive`, then the helper's asm; launch 1's atomic: the asm.
        let call = line_after(finding, &format!("` at {path}:"));
        assert_eq!(call, line_of("arrive(count) == cut.y - 1"), "{args:?}: {finding}");
        for before in [format!("{path}:{call}, in arrive at :"), format!("the atomic at {path}:")] {
            let line = line_after(finding, &before);
            assert!((asm..asm + 3).contains(&line), "{args:?}: line {line}: {finding}");
        }
        // The outcome's own sentence follows.
        assert!(err.contains("see the next product line above"), "{args:?}: {err}");
    }
}

/// Persistent clusters whose units C's edge cuts take unequal shares: a scaled run is refused
/// from the launch alone, before a block runs, and says which shapes make the units whole.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_a_scaled_run_of_unequal_shares_is_refused_before_it_emulates() {
    let why = common::testing::emulator::scaled_refusal_before_emulating(
        &step12_persistent_clusters::STEP,
        &[],
        (4000, 4000, 4000),
    );
    assert!(why.contains("unequal shares") && why.contains("multiple of"), "{why}");
}

/// Compiled wide (64-bit offsets), the kernel gives the narrow kernel's C bit for bit, and its
/// PTX forms no global address from a 32-bit product of M, N or K; its offsets were 64-bit
/// already (its tensor maps read A and B and write C), so its narrow PTX forms none either.
#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_emulated_wide_offsets_give_the_same_c() {
    common::testing::wide_offsets::assert_wide_matches_narrow(&STEP, &[(67, 45, 129), (33, 7, 5)], false);
}
