//! The device without a GPU: a kernel compiled by NVRTC to PTX for one fixed architecture and
//! run by the PTX emulator (the `ptx_emulator` crate) on the CPU, with its race check and its
//! traffic counters. The run (`drive/run/emulate.rs`) chooses it when asked to (`--emulate`) or
//! when no GPU is there.

use anyhow::{Result, anyhow, bail};
use cudarc::nvrtc;

use crate::gpu::{self, NO_NVRTC, nvrtc_present};

pub use ptx_emulator::recording::Recorded;
pub use ptx_emulator::recording::timeline::{self, Timeline};
pub use ptx_emulator::{
    Arg, Config, Emulator, Error as EmulatorError, FULL_SIDE, FaultKind, Swizzle, TensorMap, Traffic,
};
pub use ptx_model::replay::ReplayRecorded;
pub use ptx_model::{predict, profile};
pub use ptx_pictures::TimelinePicture;

/// The architecture whose PTX the emulator runs for labs 02–07 and 10: the H100's, the GPU it
/// copies, so that a kernel that chooses its instructions by architecture (lab 07 rounds to TF32
/// with `cvt.rn` from sm_90 on) runs what an H100 runs.
pub const PTX_ARCH: &str = "compute_90";

/// The architecture of the Hopper labs' PTX (wgmma, the copy engine's tensor copies, clusters),
/// whose instructions exist on that architecture alone.
pub const HOPPER_PTX_ARCH: &str = "compute_90a";

/// How the report names the device.
pub const DEVICE_LINE: &str = "emulated on the CPU";

/// Compiles `source` to PTX for `arch` ([`PTX_ARCH`] or [`HOPPER_PTX_ARCH`]), with the `.cu`
/// line of every instruction (NVRTC's `--generate-line-info`, which changes no instruction), and
/// `-D NAME=value` for each define (and [`gpu::offset_type`]'s).
pub fn ptx(source: &str, file: &str, arch: &str, defines: &[(String, u32)]) -> Result<String> {
    Ok(ptx_and_log(source, file, arch, &[], defines)?.0)
}

/// The H100's machine code of a Hopper kernel and the PTX it was made from, in one compile for
/// `sm_90a` with `--generate-line-info` and ptxas's report: the PTX the emulator runs (the same
/// text a compile for [`HOPPER_PTX_ARCH`] gives) and NVRTC's log, whose ptxas lines hold the
/// kernel's registers and ptxas's advisories, their PTX line numbers counted in that PTX.
pub fn hopper_ptx_and_log(source: &str, file: &str, defines: &[(String, u32)]) -> Result<(String, String)> {
    ptx_and_log(source, file, HOPPER_TARGET, &["--ptxas-options=-v"], defines)
}

/// One compile for `target` with line information, `extra` options and the defines: the PTX
/// (its `.file` naming `file`) and NVRTC's log.
fn ptx_and_log(
    source: &str,
    file: &str,
    target: &str,
    extra: &[&str],
    defines: &[(String, u32)],
) -> Result<(String, String)> {
    if !nvrtc_present() {
        bail!("{NO_NVRTC}");
    }
    let mut options = vec![
        format!("--gpu-architecture={target}"),
        "--std=c++17".to_owned(),
        "--generate-line-info".to_owned(),
    ];
    options.extend(extra.iter().map(|o| (*o).to_owned()));
    options.extend(defines.iter().map(|(name, value)| format!("-D{name}={value}")));
    options.push(gpu::offset_type(defines));
    gpu::nvrtc_program(source, file, target, &options, |prog, log| {
        // SAFETY: `nvrtc_program` hands over a live, successfully compiled program.
        let ptx = unsafe { nvrtc::result::get_ptx(prog) };
        let ptx = ptx.map_err(|e| anyhow!("NVRTC gave no PTX for {file}: {e:?}"))?;
        Ok((own_file_names(&gpu::c_text(&ptx), &files_of(source, file)), log.to_owned()))
    })
}

/// The H100's own target for a Hopper kernel's machine code.
pub const HOPPER_TARGET: &str = "sm_90a";

/// The files a source's lines come from, as it names them: `file`, and each file a `#line`
/// directive names (a step's include files, see `contract/includes.rs`).
fn files_of<'a>(source: &'a str, file: &'a str) -> Vec<&'a str> {
    let mut files = vec![file];
    for line in source.lines() {
        let Some(name) = line.strip_prefix("#line ").and_then(|rest| rest.split('"').nth(1)) else {
            continue;
        };
        if !files.contains(&name) {
            files.push(name);
        }
    }
    files
}

/// The PTX with each `.file` directive that names one of `files` naming it as given (NVRTC
/// writes the path it was compiled from, which a fault's message then repeats), so that a fault
/// names the file as the learner knows it.
fn own_file_names(ptx: &str, files: &[&str]) -> String {
    let mut out = String::with_capacity(ptx.len());
    for line in ptx.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let named = match (trimmed.starts_with(".file"), line.find('"'), line.rfind('"')) {
            (true, Some(open), Some(close)) if close > open => {
                files.iter().find(|f| line[open + 1..close].ends_with(**f)).map(|f| (open, close, f))
            }
            _ => None,
        };
        match named {
            Some((open, close, file)) => {
                out.push_str(&line[..=open]);
                out.push_str(file);
                out.push_str(&line[close..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The blocks of one kernel an SM of `gpu` holds at once, from the kernel's registers per
/// thread, its threads per block and its shared memory per block, as the CUDA occupancy
/// calculator counts them (the profile's SM: [`ptx_model::profile::Sm::resident_blocks`]).
pub fn blocks_per_sm(gpu: &profile::Profile, registers: u32, threads: u32, shared: u32) -> u32 {
    gpu.sm.resident_blocks(registers, threads, shared)
}

/// Registers of one SM on every architecture the course compiles for (sm_75 to sm_120).
pub const REGISTERS_PER_SM: u32 = 65_536;

/// The registers a block of `threads` threads of `registers` registers each takes, given to its
/// warps in units of 256 as [`blocks_per_sm`] counts them.
pub fn block_registers(registers: u32, threads: u32) -> u32 {
    threads.div_ceil(32).max(1) * (registers.max(1) * 32).next_multiple_of(256)
}

/// The sentence that says why no SM can hold one block of the kernel, for `--compile-only` and
/// an emulated run alike; `None` where one fits.
pub fn too_many_registers(registers: u32, threads: u32) -> Option<String> {
    let needed = block_registers(registers, threads);
    (needed > REGISTERS_PER_SM).then(|| {
        format!(
            "a block of {threads} threads needs at least {needed} registers, more than the {REGISTERS_PER_SM} of an SM: it cannot launch"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_directive_names_the_file_as_given() {
        let ptx = ".version 9.0\n\t.file\t1 \"/home/me/course/step04_tiled/step04_tiled/src/kernel.cu\"\n\t.file\t2 \"/usr/include/x.h\"\n";
        let renamed = own_file_names(ptx, &["step04_tiled/src/kernel.cu"]);
        assert!(renamed.contains("\t.file\t1 \"step04_tiled/src/kernel.cu\"\n"), "{renamed}");
        assert!(renamed.contains("/usr/include/x.h"), "other files keep their names: {renamed}");
    }

    #[test]
    fn an_include_file_is_named_as_its_line_directive_names_it() {
        let source = "int a;\n#line 1 \"step99/src/two.cuh\"\nint b;\n#line 3 \"mine/k.cu\"\n";
        assert_eq!(files_of(source, "mine/k.cu"), ["mine/k.cu", "step99/src/two.cuh"]);
        let ptx =
            "\t.file\t1 \"/home/me/course/mine/k.cu\"\n\t.file\t2 \"/home/me/course/step99/src/two.cuh\"\n";
        let renamed = own_file_names(ptx, &files_of(source, "mine/k.cu"));
        assert_eq!(renamed, "\t.file\t1 \"mine/k.cu\"\n\t.file\t2 \"step99/src/two.cuh\"\n");
    }

    #[test]
    fn occupancy_counts_registers_warps_and_shared_memory() {
        // 512 threads of 128 registers: 16 warps of 4096 registers fill the 65536.
        assert_eq!(blocks_per_sm(&profile::H100, 128, 512, 49_152), 1);
        // 256 threads of 40 registers and 8 KiB: registers allow 6, warps 8, shared memory 25.
        assert_eq!(blocks_per_sm(&profile::H100, 40, 256, 8192), 6);
        // 1024 threads of 32 registers: the warps (2) allow two, the registers two.
        assert_eq!(blocks_per_sm(&profile::H100, 32, 1024, 0), 2);
        // 100 KiB of shared memory: two blocks.
        assert_eq!(blocks_per_sm(&profile::H100, 32, 128, 102_400), 2);
    }

    #[test]
    fn a_block_beyond_the_registers_of_an_sm_is_named() {
        assert_eq!(too_many_registers(128, 512), None);
        assert_eq!(blocks_per_sm(&profile::H100, 168, 512, 0), 0);
        assert_eq!(
            too_many_registers(168, 512).as_deref(),
            Some(
                "a block of 512 threads needs at least 86016 registers, more than the 65536 of an SM: it cannot launch"
            )
        );
        // 170 registers × 384 threads is 65280, but warps take registers in units of 256.
        assert_eq!(blocks_per_sm(&profile::H100, 170, 384, 0), 0);
        assert!(too_many_registers(170, 384).is_some_and(|s| s.contains("67584 registers")));
    }
}
