//! The blocks of a launch are dealt to the SMs of the machine the emulator is given, not to a
//! fixed count: the per-SM store counts of one launch differ between 132 SMs and 114.

use ptx_emulator::{Arg, Config, Emulator, Machine, Swizzle, TensorMap};

/// Each block stores one box of 16 floats (64 bytes) from its shared memory at column
/// 16 · blockIdx.x of a one-dimensional tensor.
const PTX: &str = ".version 8.0
.target sm_90a
.address_size 64
.visible .entry put(.param .align 64 .b8 put_param_0[128])
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    .shared .align 128 .b8 box[64];
    mov.u64 %rd2, put_param_0;
    cvta.param.u64 %rd1, %rd2;
    mov.u32 %r1, %ctaid.x;
    shl.b32 %r2, %r1, 4;
    cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd1, {%r2}], [box];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;
}
";

/// The most and the least bytes an SM stores when 229 blocks (two waves of 114 and one block)
/// are dealt to `sms` SMs.
fn stores_per_sm(sms: u32) -> (u64, u64) {
    let blocks = 229u32;
    let mut m = Emulator::new(PTX, Machine { sms, max_threads: 1024, max_shared: 232_448 }).unwrap();
    let out = m.alloc(64 * blocks as usize, "the output");
    let map = TensorMap {
        address: out,
        element: 4,
        rank: 1,
        dims: [16 * u64::from(blocks), 1, 1, 1, 1],
        strides: [64 * u64::from(blocks), 0, 0, 0],
        boxes: [16, 1, 1, 1, 1],
        swizzle: Swizzle::None,
    };
    let config = Config { grid: (blocks, 1, 1), block: (1, 1, 1), dynamic_shared: 0, sanitize: false };
    let traffic =
        m.launch("put", config, &[Arg::Map(map.encode().unwrap())]).unwrap_or_else(|e| panic!("{e}"));
    (traffic.sm_stores_most, traffic.sm_stores_least)
}

#[test]
fn blocks_are_dealt_to_the_machines_sms() {
    // 229 blocks on 114 SMs: SM 0 receives blocks 0, 114 and 228; the others two each.
    assert_eq!(stores_per_sm(114), (3 * 64, 2 * 64));
    // On 132 SMs: SMs 0 to 96 receive two blocks, the rest one.
    assert_eq!(stores_per_sm(132), (2 * 64, 64));
}
