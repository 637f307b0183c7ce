//! Kernels compiled wide (`WIDE=1`, `offset_t` a `long long`: [`crate::params::WIDE`]) checked at
//! small shapes, where a narrow run can check them. Two checks, and what each catches:
//!
//! - on the emulator, the wide kernel's C is the narrow kernel's bit for bit: a cast that changes
//!   the arithmetic, or a wide-only line that computes something else, fails it;
//! - in the wide kernel's PTX, no address of global memory is formed from a 32-bit product of
//!   M, N or K with another variable (`mad.lo.s32 %r, %row, %K, …`, which a wide offset makes a
//!   `mul.wide.s32`): an offset left in `int`, which overflows only past 2³¹ elements and so
//!   passes every run at a small shape, fails it.
//!
//! Neither runs a matrix past 2³¹ elements; `scripts/gpu-wide.sh` does, on a GPU.

use std::collections::{HashMap, HashSet};

use crate::emulated;
use crate::matrix::{Family, Inputs, Shape};
use crate::run::EmulatorStep;
use crate::step::GpuStep;

/// `step` compiled wide gives on the emulator, at each of `shapes`, the C it gives narrow, bit
/// for bit; its wide PTX forms no global address from a 32-bit product of M, N or K
/// ([`narrow_products`]); and, where `narrow_had_them`, its narrow PTX does at one shape at least
/// (so that the check of the wide PTX is seen to find what it looks for in this kernel; a path
/// whose offsets are 64-bit already has none).
pub fn assert_wide_matches_narrow(step: &GpuStep, shapes: &[(usize, usize, usize)], narrow_had_them: bool) {
    let sms = emulated::profile::H100.machine.sms;
    let mut narrow_found = false;
    for &(m, n, k) in shapes {
        let shape = Shape { m, n, k };
        let inputs = Inputs::family(shape, 7, Family::Uniform);
        let (params, _) = step.params_for(shape, sms, &[]).unwrap_or_else(|e| panic!("{}: {e}", step.name));
        assert!(!params.wide(), "{} at {shape}: a small shape compiled wide", step.name);
        let c = |wide: bool| -> Vec<u32> {
            let run =
                EmulatorStep::new(step, params.clone().widened(wide), shape, false, &emulated::profile::H100)
                    .and_then(|mut e| e.multiply(&inputs, false));
            let (c, _) = run.unwrap_or_else(|e| panic!("{} at {shape}, wide: {wide}: {e}", step.name));
            c.iter().map(|x| x.to_bits()).collect()
        };
        let (narrow, wide) = (c(false), c(true));
        if let Some(at) = narrow.iter().zip(&wide).position(|(a, b)| a != b) {
            panic!(
                "{} at {shape}: compiled wide, C[{}, {}] is {} where the narrow kernel gives {}",
                step.name,
                at / n,
                at % n,
                f32::from_bits(wide[at]),
                f32::from_bits(narrow[at])
            );
        }
        let ptx = |wide: bool| step.ptx(&params.clone().widened(wide)).expect("the kernel compiles");
        let left = narrow_products(&ptx(true));
        assert!(
            left.is_empty(),
            "{} at {shape}, compiled wide: global addresses formed from 32-bit products of M, N or K:\n{}",
            step.name,
            left.join("\n")
        );
        narrow_found |= !narrow_products(&ptx(false)).is_empty();
    }
    assert_eq!(
        narrow_found, narrow_had_them,
        "{}: whether its narrow PTX forms addresses from 32-bit products of M, N or K",
        step.name
    );
}

/// The lines of `ptx`'s entry `matmul` that multiply in 32 bits (`mul.lo`, `mad.lo` of `.s32` or
/// `.u32`) M, N or K (its first three parameters, as loaded) by another value that is not a
/// constant, where the product goes on to form an address of global memory. Every definition of a
/// register counts, so a value carried round a loop is followed through each.
pub fn narrow_products(ptx: &str) -> Vec<String> {
    let body = entry_body(ptx, "matmul");
    let lines: Vec<Instruction> = body.iter().filter_map(|l| Instruction::parse(l)).collect();
    let mut defs: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, ins) in lines.iter().enumerate() {
        if let Some(d) = ins.dest {
            defs.entry(d).or_default().push(i);
        }
    }
    // Registers that hold M, N or K as loaded (through moves and conversions alone): a product
    // by one is a row times a row's length. A value computed from them (a count of tiles, a
    // quotient whose remainder is formed by a multiply) is not followed.
    let mut dims: HashSet<&str> = HashSet::new();
    loop {
        let before = dims.len();
        for ins in &lines {
            let Some(d) = ins.dest else { continue };
            let loads_dim = ins.op.starts_with("ld.param")
                && ["matmul_param_0]", "matmul_param_1]", "matmul_param_2]"]
                    .iter()
                    .any(|p| ins.text.contains(p));
            let moves_dim = (ins.op.starts_with("mov.") || ins.op.starts_with("cvt."))
                && ins.sources.len() == 1
                && dims.contains(ins.sources[0]);
            if loads_dim || moves_dim {
                dims.insert(d);
            }
        }
        if dims.len() == before {
            break;
        }
    }
    // Back from every global address through the instructions that define it.
    let mut seen: HashSet<usize> = HashSet::new();
    let mut todo: Vec<&str> =
        lines.iter().filter(|i| i.op.contains(".global")).flat_map(|i| i.addresses.clone()).collect();
    let mut found = Vec::new();
    while let Some(reg) = todo.pop() {
        for &i in defs.get(reg).map(Vec::as_slice).unwrap_or(&[]) {
            if !seen.insert(i) {
                continue;
            }
            let ins = &lines[i];
            let narrow_mul = ["mul.lo.s32", "mul.lo.u32", "mad.lo.s32", "mad.lo.u32"].contains(&ins.op);
            let factors = &ins.operands[1..ins.operands.len().min(3)];
            if narrow_mul
                && factors.iter().all(|f| f.starts_with('%'))
                && factors.iter().any(|f| dims.contains(f))
            {
                found.push(ins.text.to_owned());
            }
            todo.extend(ins.sources.iter().copied());
        }
    }
    found.sort();
    found
}

/// The lines of the body of `.entry NAME(…) { … }` in `ptx`.
fn entry_body<'p>(ptx: &'p str, name: &str) -> Vec<&'p str> {
    let mut lines = ptx.lines().skip_while(|l| !(l.contains(".entry") && l.contains(&format!(" {name}("))));
    let mut body = Vec::new();
    let mut depth = 0i32;
    for line in lines.by_ref() {
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        body.push(line);
        if depth == 0 && line.trim() == "}" {
            break;
        }
    }
    body
}

/// One PTX instruction: its opcode, its operands, the register it defines and those it reads, and
/// the 64-bit registers inside its `[…]` operands.
struct Instruction<'p> {
    text: &'p str,
    op: &'p str,
    operands: Vec<&'p str>,
    dest: Option<&'p str>,
    sources: Vec<&'p str>,
    addresses: Vec<&'p str>,
}

impl<'p> Instruction<'p> {
    fn parse(line: &'p str) -> Option<Self> {
        let text = line.trim();
        let text = text.split("//").next().unwrap_or("").trim();
        if text.is_empty()
            || text.starts_with('.')
            || text.starts_with('$')
            || text.starts_with('{')
            || text == "}"
        {
            return None;
        }
        let rest = match text.strip_prefix('@') {
            Some(guarded) => guarded.split_once(char::is_whitespace)?.1.trim(),
            None => text,
        };
        let (op, args) = rest.trim_end_matches(';').split_once(char::is_whitespace).unwrap_or((rest, ""));
        let operands: Vec<&str> =
            args.split(',').map(|a| a.trim().trim_matches(|c| c == '{' || c == '}').trim()).collect();
        let registers = |s: &'p str| -> Vec<&'p str> {
            s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '_'))
                .filter(|t| t.starts_with('%') && t.len() > 1)
                .collect()
        };
        let writes = !(op.starts_with("st.")
            || op.starts_with("cp.")
            || op.starts_with("bar")
            || op.starts_with("bra")
            || op.starts_with("ret")
            || op.starts_with("red.")
            || op.starts_with("prefetch")
            || op.starts_with("fence")
            || op.starts_with("membar"));
        let first = operands.first().copied().unwrap_or("");
        let dest = (writes && first.starts_with('%') && !first.contains('[')).then_some(first);
        let read_from = if dest.is_some() { &operands[1.min(operands.len())..] } else { &operands[..] };
        let sources = read_from.iter().flat_map(|o| registers(o)).collect();
        // A global address is a 64-bit register; a 32-bit one inside brackets is a shared
        // address or a tensor map's coordinate, counted in elements.
        let addresses = operands
            .iter()
            .filter(|o| o.starts_with('['))
            .flat_map(|o| registers(o))
            .filter(|r| r.starts_with("%rd"))
            .collect();
        Some(Self { text, op, operands, dest, sources, addresses })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "
.visible .entry matmul(
\t.param .u32 matmul_param_0,
\t.param .u32 matmul_param_1,
\t.param .u32 matmul_param_2,
\t.param .u64 matmul_param_3
)
{
\tld.param.u32 \t%r1, [matmul_param_2];
\tld.param.u64 \t%rd1, [matmul_param_3];
\tmov.u32 \t%r2, %ctaid.y;
\tmul.lo.s32 \t%r9, %r2, 7;
\tmad.lo.s32 \t%r3, %r2, %r1, %r9;
\tmul.wide.s32 \t%rd2, %r3, 4;
\tadd.s64 \t%rd3, %rd1, %rd2;
\t@%p1 ld.global.f32 \t%f1, [%rd3+4];
\tshl.b32 \t%r7, %r1, 3;
\tdiv.s32 \t%r8, %r2, %r7;
\tmul.lo.s32 \t%r10, %r8, %r7;
\tcvt.s64.s32 \t%rd4, %r10;
\tadd.s64 \t%rd5, %rd1, %rd4;
\tst.global.f32 \t[%rd5], %f1;
\tmul.lo.s32 \t%r4, %r2, %r1;
\tst.shared.u32 \t[%r4], %r2;
\tcp.async.bulk.tensor.2d.shared::cluster.global.tile [%r5], [%rd1, {%r4, %r2}], [%r6];
\tret;
}
";

    /// A 32-bit product of K and a block index that reaches a global load is named; the same
    /// product that reaches only a shared address or a tensor map's coordinate, a product by a
    /// constant, and one by a value computed from K (a remainder's multiply), are not.
    #[test]
    fn a_narrow_product_of_a_dimension_on_the_way_to_a_global_address_is_named() {
        assert_eq!(narrow_products(PTX), ["mad.lo.s32 \t%r3, %r2, %r1, %r9;"]);
        let wide = PTX.replace(
            "mad.lo.s32 \t%r3, %r2, %r1, %r9;\n\tmul.wide.s32 \t%rd2, %r3, 4;",
            "mul.wide.s32 \t%rd2, %r2, %r1;",
        );
        assert!(narrow_products(&wide).is_empty(), "{wide}");
        assert!(narrow_products(&PTX.replace("matmul(", "other(")).is_empty(), "another entry");
    }
}
