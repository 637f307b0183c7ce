#!/usr/bin/env python3
"""Counts the instructions of a kernel's machine code (SASS) by opcode: in the whole kernel and in
its hot loop, the loop with the most FFMAs (or, for a tensor-core kernel, HMMA/HGMMA). Reads the
text of `nvdisasm -c FILE.cubin` or `cuobjdump -sass FILE.cubin` on stdin.

    cargo run --release -p step06_prefetch -- --compile-only --arch sm_90 --cubin k.cubin
    nvdisasm -c k.cubin | scripts/sass-summary.py            # or: cuobjdump -sass k.cubin | ...

The hot loop is what the chapters mean by "the main loop": per pass, how many of the issued
instructions are the arithmetic the kernel exists for, and what the rest are (shared-memory
loads by width, global loads, barriers, address arithmetic).
"""

import collections
import re
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")
WORK = ("FFMA", "HMMA", "HGMMA")


def opcode(text):
    """The opcode with its width or type modifiers (LDS.128, HMMA.1688.F32.TF32), no predicate."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else "?"


def parse(lines):
    """The kernel's instructions in order, and its loops as (first, last) instruction indexes."""
    instructions, labels, loops = [], {}, []
    for line in lines:
        label = LABEL.match(line)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        found = INSTRUCTION.search(line)
        if not found:
            continue
        text = found.group(2)
        instructions.append(opcode(text))
        target = TARGET.search(text)
        if target and opcode(text).startswith("BRA") and labels.get(target.group(1), len(instructions)) < len(instructions):
            loops.append((labels[target.group(1)], len(instructions) - 1))
    return instructions, loops


def table(title, ops):
    counts = collections.Counter(ops)
    work = sum(n for op, n in counts.items() if op.startswith(WORK))
    print(f"{title}: {len(ops)} instructions, {work} of them FFMA/HMMA/HGMMA ({100 * work / max(len(ops), 1):.1f}%)")
    for op, n in counts.most_common():
        print(f"  {n:6d}  {op}")


def main():
    instructions, loops = parse(sys.stdin.read().splitlines())
    if not instructions:
        sys.exit("sass-summary: no instructions on stdin (give it nvdisasm -c or cuobjdump -sass output)")
    table("whole kernel", instructions)
    if loops:
        first, last = max(loops, key=lambda l: sum(op.startswith(WORK) for op in instructions[l[0]:l[1] + 1]))
        print()
        table(f"hot loop (instructions {first} to {last})", instructions[first:last + 1])


if __name__ == "__main__":
    main()
