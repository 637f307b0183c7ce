//! The machine on small hand-written PTX, so that these run without NVRTC: sign extension, widths
//! of immediates, atomics, divergence and reconvergence, barriers and the race check.

use ptx_emulator::{Arg, Config, Emulator, Error, FaultKind, Machine};

/// An H100's SMs and a block's limits.
const H100: Machine = Machine { sms: 132, max_threads: 1024, max_shared: 232_448 };

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

fn one_block(threads: u32) -> Config {
    Config { grid: (1, 1, 1), block: (threads, 1, 1), dynamic_shared: 0, sanitize: true }
}

fn words(m: &Emulator, at: u64, n: usize) -> Vec<u32> {
    m.read_f32(at, n).unwrap().iter().map(|f| f.to_bits()).collect()
}

#[test]
fn signed_bytes_wide_immediates_and_compare_and_swap() {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    ld.global.s8 %r1, [%rd1];
    st.global.u32 [%rd1+4], %r1;
    setp.eq.s32 %p1, %r1, -1;
    selp.b32 %r2, -1, 0, %p1;
    st.global.u32 [%rd1+8], %r2;
    atom.global.cas.b32 %r3, [%rd1+12], -1, 7;
    ret;
}}
"
    );
    let mut m = Emulator::new(&ptx, H100).unwrap();
    let buf = m.alloc(16, "B");
    m.write_f32(buf, &[f32::from_bits(0xff), 0.0, 0.0, f32::from_bits(u32::MAX)]).unwrap();
    m.launch("k", one_block(1), &[Arg::Ptr(buf)]).unwrap();
    assert_eq!(words(&m, buf, 4)[1..], [u32::MAX, u32::MAX, 7], "−1 sign-extended, selected, swapped");
}

#[test]
fn lanes_that_branch_apart_meet_again() {
    // Odd lanes add 10, even lanes 20, then every lane adds 1 after the join.
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.s32 %p1, %r2, 0;
    @%p1 bra EVEN;
    add.s32 %r3, %r1, 10;
    bra.uni JOIN;
EVEN:
    add.s32 %r3, %r1, 20;
JOIN:
    add.s32 %r4, %r3, 1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
}}
"
    );
    let mut m = Emulator::new(&ptx, H100).unwrap();
    let buf = m.alloc(4 * 40, "C");
    m.launch("k", one_block(40), &[Arg::Ptr(buf)]).unwrap();
    let want: Vec<u32> = (0..40).map(|t| t + if t % 2 == 0 { 21 } else { 11 }).collect();
    assert_eq!(words(&m, buf, 40), want);
}

/// Warp 0 writes a shared word that warp 1 reads; with `BARRIER` a `bar.sync` stands between.
fn shared_handoff(barrier: bool) -> Result<Vec<u32>, Error> {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 _ZZ1kE4slot[4];
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, %tid.x;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra SKIP;
    mov.u32 %r2, 1234;
    st.shared.u32 [_ZZ1kE4slot], %r2;
SKIP:
    {}
    ld.shared.u32 %r3, [_ZZ1kE4slot];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}}
",
        if barrier { "bar.sync 0;" } else { "" }
    );
    let mut m = Emulator::new(&ptx, H100).unwrap();
    let buf = m.alloc(4 * 64, "C");
    m.launch("k", one_block(64), &[Arg::Ptr(buf)])?;
    Ok(words(&m, buf, 64))
}

#[test]
fn a_missing_barrier_is_a_race_and_a_barrier_orders_the_warps() {
    assert_eq!(shared_handoff(true).unwrap(), vec![1234; 64]);
    match shared_handoff(false) {
        Err(Error::Fault(f)) => {
            assert_eq!(f.kind, FaultKind::Race, "{}", f.message);
            assert!(f.message.contains("the shared array `slot`"), "{}", f.message);
        }
        other => panic!("no race reported: {other:?}"),
    }
}

#[test]
fn an_instruction_outside_the_subset_is_refused_with_its_name() {
    let ptx = format!("{HEADER}.visible .entry k()\n{{\n\tnanosleep.u32 10;\n\tret;\n}}\n");
    let mut m = Emulator::new(&ptx, H100).unwrap();
    let e = m.launch("k", one_block(1), &[]).unwrap_err();
    assert!(e.to_string().contains("does not implement `nanosleep.u32`"), "{e}");
}

/// A kernel whose every thread stores 4 + skew·ctaid.x times: every block alike without skew.
fn stores(skew: u32, grid: (u32, u32, u32), scale: bool) -> Result<ptx_emulator::Traffic, Error> {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mul.lo.s32 %r6, %r2, %r1;
    add.s32 %r6, %r6, 4;
    mul.wide.u32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
again:
    st.global.u32 [%rd3], %r6;
    sub.s32 %r6, %r6, 1;
    setp.ne.s32 %p1, %r6, 0;
    @%p1 bra again;
    ret;
}}
"
    );
    let mut m = Emulator::new(&ptx, H100).unwrap();
    m.scale = scale;
    let buf = m.alloc(4 * 64 * grid.0 as usize, "out");
    let config = Config { grid, block: (64, 1, 1), dynamic_shared: 0, sanitize: false };
    m.launch("k", config, &[Arg::Ptr(buf), Arg::I32(skew as i32)])
}

/// A regular grid's counts from one block of each kind equal the whole grid's; a grid whose
/// blocks inside count differently is refused, not guessed.
#[test]
fn a_scaled_launch_counts_what_the_whole_launch_counts_or_refuses() {
    for grid in [(1, 1, 1), (2, 3, 1), (7, 5, 3), (9, 1, 4)] {
        let whole = stores(0, grid, false).unwrap();
        let scaled = stores(0, grid, true).unwrap();
        assert_eq!(scaled.additive(), whole.additive(), "grid {grid:?}");
        let blocks = u64::from(grid.0 * grid.1 * grid.2);
        assert_eq!(scaled.scaled_of, blocks);
        assert!(scaled.scaled_ran <= 27 + 3 * 3 && scaled.scaled_ran <= blocks + 9, "{}", scaled.scaled_ran);
        assert_eq!(whole.scaled_ran, 0);
    }
    // A side whose blocks count differently runs every one of its blocks: the counts are exact.
    for grid in [(7, 20, 1), (32, 9, 1)] {
        let (scaled, whole) = (stores(1, grid, true).unwrap(), stores(1, grid, false).unwrap());
        assert_eq!(scaled.additive(), whole.additive(), "grid {grid:?}");
        assert_eq!(scaled.most_block_instructions, whole.most_block_instructions, "the busiest block");
        assert!(scaled.scaled_ran < u64::from(grid.0 * grid.1), "{}", scaled.scaled_ran);
    }
    // A longer one is refused, saying what predicting it would take.
    let e = stores(1, (40, 2, 1), true).expect_err("40 blocks along x differ");
    assert!(matches!(e, ptx_emulator::Error::NotScalable(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("its 40 clusters along that side") && e.contains("emulate it whole"), "{e}");
    // The fault the check exists for: scaling the skewed grid without it would have guessed.
    let (whole, first) = (stores(1, (7, 2, 1), false).unwrap(), stores(1, (1, 1, 1), false).unwrap());
    assert_ne!(whole.global_store_requests, 7 * 2 * first.global_store_requests);
}

/// Blocks that take turns (block x waits until block x − 1 has written x, as Stream-K's pieces
/// do) run whole; scaled, the few blocks cannot run alone, and the launch is refused.
#[test]
fn a_scaled_launch_of_blocks_that_wait_for_each_other_is_refused() {
    let ptx = format!(
        "{HEADER}.visible .entry turn(.param .u64 turn_param_0)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [turn_param_0];
    mov.u32 %r1, %ctaid.x;
wait:
    ld.volatile.global.u32 %r2, [%rd1];
    setp.ne.s32 %p1, %r2, %r1;
    @%p1 bra wait;
    add.s32 %r3, %r1, 1;
    st.volatile.global.u32 [%rd1], %r3;
    ret;
}}
"
    );
    let run = |scale: bool| {
        let mut m = Emulator::new(&ptx, H100).unwrap();
        m.scale = scale;
        let flag = m.alloc(4, "flag");
        let config = Config { grid: (7, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: false };
        m.launch("turn", config, &[Arg::Ptr(flag)]).map(|_| words(&m, flag, 1)[0])
    };
    assert_eq!(run(false).unwrap(), 7, "every block took its turn");
    let e = run(true).expect_err("a few blocks cannot take turns alone");
    assert!(matches!(e, ptx_emulator::Error::NotScalable(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("wait for one another") && e.contains("emulate it whole"), "{e}");
}

/// Three blocks of 64 threads each load their 256 bytes twice, across a barrier, and the time
/// model's counts follow: two loading phases a block; the second computes after its load, and
/// the first too when `prefetch` is set; the second load of the same bytes misses no L1.
fn phases(prefetch: bool) -> ptx_emulator::Traffic {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 k_param_0)
{{
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    {}
    bar.sync 0;
    ld.global.f32 %f2, [%rd3];
    add.f32 %f3, %f1, %f2;
    ret;
}}
",
        if prefetch { "fma.rn.f32 %f1, %f1, %f1, %f1;" } else { "" }
    );
    let mut m = Emulator::new(&ptx, H100).unwrap();
    let buf = m.alloc(256, "in");
    let config = Config { grid: (3, 1, 1), block: (64, 1, 1), dynamic_shared: 0, sanitize: false };
    m.launch("k", config, &[Arg::Ptr(buf)]).unwrap()
}

#[test]
fn the_time_models_counts_phases_misses_and_blocks() {
    let plain = phases(false);
    assert_eq!(plain.blocks, 3);
    assert_eq!(plain.load_phases, 3 * 2, "a phase before the barrier and one after");
    assert_eq!(plain.overlapped_phases, 3, "the add after the second load, none before the barrier");
    assert_eq!(plain.global_load_sectors, 3 * 2 * 8, "two loads of 256 bytes a block");
    assert_eq!(plain.l1_miss_sectors, 3 * 8, "the second load finds the first's sectors");
    assert_eq!(plain.fp32_instructions, 3 * 2, "one add a warp");
    assert_eq!(plain.most_block_instructions * 3, plain.warp_instructions, "blocks alike");
    let prefetch = phases(true);
    assert_eq!(prefetch.overlapped_phases, 6, "and the FMA after the first load");
    assert_eq!(prefetch.fp32_instructions, 3 * 2 * 2);
}

/// A block whose two warps wait at different named barriers deadlocks by itself: scaled or not,
/// that is the kernel's fault, not a grid that cannot be scaled.
#[test]
fn a_deadlock_inside_a_block_stays_a_fault_when_scaled() {
    let ptx = format!(
        "{HEADER}.visible .entry k()
{{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra first;
    bar.sync 2, 64;
    ret;
first:
    bar.sync 1, 64;
    ret;
}}
"
    );
    for scale in [false, true] {
        let mut m = Emulator::new(&ptx, H100).unwrap();
        m.scale = scale;
        let config = Config { grid: (3, 1, 1), block: (64, 1, 1), dynamic_shared: 0, sanitize: false };
        match m.launch("k", config, &[]) {
            Err(Error::Fault(f)) => assert_eq!(f.kind, FaultKind::Deadlock, "{}", f.message),
            other => panic!("scale {scale}: {other:?}"),
        }
    }
}
