//! Registers spilled to local memory, in every entry point of a step's compiled kernel: `matmul`
//! and the others a product may queue (prologues, the step's own kernels, twins). A kernel that
//! spills still launches, so a run runs it, on a GPU as on the emulator, and its report names the
//! spill (bytes stored and loaded a thread, from ptxas's report) and what its traffic costs: a
//! learner measures what the emulator showed them. The tuner, which ranks sets, leaves out one
//! whose kernels spill, unless the step allows an entry point a few bytes by name
//! ([`GpuStep::spill_allowance`]); `--compile-only` names what it would leave out.

use anyhow::{Result, anyhow, bail};

use crate::gpu::{Compiled, ENTRY, Kernel, PtxasInfo};
use crate::params::Params;
use crate::step::GpuStep;

/// What one entry point spills: the bytes its spill code stores and loads, as ptxas reports
/// them, or, where no report came (a cached compile), the driver's local bytes per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spill {
    Code { stores: u32, loads: u32 },
    Local(u32),
}

impl Spill {
    /// The bytes an allowance is held to: stores and loads together, or the local bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Spill::Code { stores, loads } => stores + loads,
            Spill::Local(bytes) => bytes,
        }
    }
}

impl std::fmt::Display for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Spill::Code { stores, loads } => {
                write!(f, "{stores} bytes stored and {loads} loaded by spill code")
            }
            Spill::Local(bytes) => write!(f, "{bytes} bytes of local memory per thread"),
        }
    }
}

/// The entry points that spill, with what their spill code stores and loads, from ptxas's
/// report in the compile's log; None when the log has no report (a cached compile).
pub fn reported(compiled: &Compiled) -> Option<Vec<(String, Spill)>> {
    compiled.ptxas?;
    let entries = PtxasInfo::entries(&compiled.log).into_iter();
    let spill = |p: &PtxasInfo| Spill::Code { stores: p.spill_stores, loads: p.spill_loads };
    Some(entries.filter(|(_, p)| p.spill_bytes() > 0).map(|(name, p)| (name, spill(&p))).collect())
}

/// The entry points of a loaded kernel that spill: ptxas's report where there is one, else the
/// driver's local memory per thread (stack frame and spills) of each entry point the machine code
/// defines.
pub fn spilling(kernel: &Kernel) -> Result<Vec<(String, Spill)>> {
    if let Some(found) = reported(&kernel.compiled) {
        return Ok(found);
    }
    let mut found = Vec::new();
    for name in entry_points(&kernel.compiled.cubin) {
        let bytes = kernel.local_bytes(&name)?;
        if bytes > 0 {
            found.push((name, Spill::Local(bytes)));
        }
    }
    Ok(found)
}

/// A note for each entry point other than `matmul` that spills (the report's `spills` line names
/// `matmul`'s): its bytes stored and loaded a thread by spill code, from ptxas's report.
pub fn notes(compiled: &Compiled) -> Vec<String> {
    PtxasInfo::entries(&compiled.log)
        .into_iter()
        .filter(|(name, p)| name != ENTRY && p.spill_bytes() > 0)
        .map(|(name, p)| {
            format!(
                "`{name}` spills registers to local memory: {} bytes stored and {} loaded a thread by spill code \
                 (ptxas's report); it runs, and their traffic is counted in the time above",
                p.spill_stores, p.spill_loads
            )
        })
        .collect()
}

/// The bytes `step` allows `entry` to spill (0 unless it names the entry).
pub fn allowance(step: &GpuStep, entry: &str) -> u32 {
    step.spill_allowance.iter().find(|(name, _)| *name == entry).map_or(0, |&(_, bytes)| bytes)
}

/// Why the tuner leaves `params` out when an entry point of `spilling` spills more than `step`
/// allows it, in one sentence that names the entry point, its bytes stored and its bytes loaded.
pub fn refuse(step: &GpuStep, params: &Params, spilling: &[(String, Spill)]) -> Result<()> {
    for (entry, spill) in spilling {
        let allowed = allowance(step, entry);
        if spill.bytes() <= allowed {
            continue;
        }
        let beyond = match allowed {
            0 => String::new(),
            n => format!(", more than the {n} bytes stored and loaded that the step allows it"),
        };
        let fix = match entry.as_str() {
            ENTRY => "choose smaller per-thread tiles",
            _ => "choose other parameters, or keep fewer values live in it",
        };
        let with = if params.is_empty() { String::new() } else { format!("with {params} ") };
        bail!(
            "{with}the kernel's entry point `{entry}` spills registers to local memory ({spill}){beyond}, \
             which a run reports and the tuner leaves out; {fix}"
        );
    }
    Ok(())
}

/// Why the tuner leaves `params` out when the loaded kernel spills ([`spilling`], [`refuse`]).
pub fn check(step: &GpuStep, params: &Params, kernel: &Kernel) -> Result<()> {
    refuse(step, params, &spilling(kernel)?)
}

/// The names of the entry points (`__global__` functions) that machine code for the GPU defines:
/// the functions of its ELF symbol table that are marked as entries (STO_CUDA_ENTRY). Empty when
/// the bytes are not such an ELF file.
pub fn entry_points(cubin: &[u8]) -> Vec<String> {
    read_entry_points(cubin).unwrap_or_default()
}

fn read_entry_points(elf: &[u8]) -> Result<Vec<String>> {
    const STT_FUNC: u8 = 2;
    const STO_CUDA_ENTRY: u8 = 0x10;
    const SHT_SYMTAB: u32 = 2;
    let bytes = |at: usize, n: usize| {
        let end = at.checked_add(n).ok_or_else(|| anyhow!("an offset beyond the file"))?;
        elf.get(at..end).ok_or_else(|| anyhow!("truncated at {at}"))
    };
    let u16_at = |at| bytes(at, 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at| bytes(at, 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |at| bytes(at, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize);
    if bytes(0, 5)? != b"\x7fELF\x02" {
        bail!("not a 64-bit ELF file");
    }
    let (table, size, count) = (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?);
    let section = |i: usize| -> Result<(u32, usize, usize, usize)> {
        let at = table.saturating_add(i.saturating_mul(size));
        Ok((u32_at(at + 4)?, u64_at(at + 24)?, u64_at(at + 32)?, u32_at(at + 40)? as usize))
    };
    let mut names = Vec::new();
    for i in 0..count {
        let (kind, offset, length, link) = section(i)?;
        if kind != SHT_SYMTAB {
            continue;
        }
        let strings = section(link)?.1;
        for symbol in (offset..offset.saturating_add(length)).step_by(24) {
            let (info, other) = (bytes(symbol + 4, 1)?[0], bytes(symbol + 5, 1)?[0]);
            if info & 0xf == STT_FUNC && other & STO_CUDA_ENTRY != 0 {
                let start = strings.saturating_add(u32_at(symbol)? as usize);
                let end = elf[start.min(elf.len())..].iter().position(|&b| b == 0).map(|n| start + n);
                let name = end.and_then(|end| std::str::from_utf8(&elf[start..end]).ok());
                names.push(name.ok_or_else(|| anyhow!("a symbol's name is unreadable"))?.to_owned());
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(allowance: &'static [(&'static str, u32)]) -> GpuStep {
        GpuStep { name: "step99", spill_allowance: allowance, ..GpuStep::DEFAULT }
    }

    fn spills(list: &[(&str, u32, u32)]) -> Vec<(String, Spill)> {
        list.iter().map(|&(n, stores, loads)| (n.to_owned(), Spill::Code { stores, loads })).collect()
    }

    #[test]
    fn every_entry_point_that_spills_is_refused_in_one_sentence() {
        let params = Params::defaults(&[]);
        refuse(&step(&[]), &params, &[]).unwrap();
        let err = refuse(&step(&[]), &params, &spills(&[("reconstruct", 4, 12)])).unwrap_err().to_string();
        assert!(
            err.contains(
                "`reconstruct` spills registers to local memory (4 bytes stored and 12 loaded by spill code)"
            ) && !err.contains('\n'),
            "{err}"
        );
        let err = refuse(&step(&[]), &params, &spills(&[(ENTRY, 8, 8)])).unwrap_err().to_string();
        assert!(err.contains("8 bytes stored and 8 loaded") && err.contains("per-thread tiles"), "{err}");
        let local = [(ENTRY.to_owned(), Spill::Local(24))];
        let err = refuse(&step(&[]), &params, &local).unwrap_err().to_string();
        assert!(err.contains("(24 bytes of local memory per thread)"), "{err}");
    }

    #[test]
    fn an_allowance_covers_its_entry_point_alone_and_up_to_its_bytes() {
        let (params, allowed) = (Params::defaults(&[]), step(&[("matmul_cut", 128)]));
        refuse(&allowed, &params, &spills(&[("matmul_cut", 64, 64)])).unwrap();
        let err = refuse(&allowed, &params, &spills(&[("matmul_cut", 64, 65)])).unwrap_err().to_string();
        assert!(
            err.contains("64 bytes stored and 65 loaded")
                && err.contains("more than the 128 bytes stored and loaded"),
            "{err}"
        );
        assert!(refuse(&allowed, &params, &spills(&[("matmul_cut", 2, 2), ("matmul", 2, 2)])).is_err());
    }

    /// The entry points of machine code NVRTC made: the `__global__` functions, not a device
    /// function the compiler kept apart.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_the_machine_code_names_its_entry_points() {
        let source = "__device__ __noinline__ float twice(float x) { return 2.0f * x; }\n\
                      extern \"C\" __global__ void first(float* p) { p[threadIdx.x] = twice(p[0]); }\n\
                      extern \"C\" __global__ void second(float* p) { p[threadIdx.x] = 1.0f; }\n";
        let compiled = crate::gpu::compile(source, "entries.cu", "sm_90", &[]).unwrap();
        let mut names = entry_points(&compiled.cubin);
        names.sort();
        assert_eq!(names, ["first", "second"]);
    }

    #[test]
    fn bytes_that_are_not_an_elf_file_define_no_entry_points() {
        assert!(entry_points(b"").is_empty());
        assert!(entry_points(b"\x7fELF\x02\x01\x01 and then nothing").is_empty());
        assert!(entry_points(&[0u8; 4096]).is_empty());
    }
}
