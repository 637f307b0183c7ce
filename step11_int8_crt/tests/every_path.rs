//! `--every-path`: the step's cases each reach their path with the step's kernel, and a kernel
//! with one wrong line fails the case that exists for its path.

use common::testing;

const BIN: &str = env!("CARGO_BIN_EXE_step11_int8_crt");

#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_reaches_each_declared_path() {
    testing::assert_every_path_reached(BIN, step11_int8_crt::hooks::EVERY_PATH);
}

/// The planted fault: a residue's quotient rounded down instead of to nearest (residues from 0 to m, not from −m/2 to m/2).
#[test]
#[ignore = "needs NVRTC"]
fn nvrtc_every_path_fails_a_planted_fault() {
    let source = include_str!("../../step11_int8_crt/src/kernel.cu");
    testing::assert_every_path_catches(
        BIN,
        source,
        (
            "float q = round_float(t * TABLE.inverse[l]);\n    float r = __fmaf_rn(-q, TABLE.modulus[l], t);\n    return __float_as_uint(__fadd_rn(r, MAGIC)) & 0xFFu;\n}\n// ANCHOR_END",
            "float q = floorf(t * TABLE.inverse[l]);\n    float r = __fmaf_rn(-q, TABLE.modulus[l], t);\n    return __float_as_uint(__fadd_rn(r, MAGIC)) & 0xFFu;\n}\n// ANCHOR_END",
        ),
        "7 moduli, odd shape",
    );
}
