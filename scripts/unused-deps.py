#!/usr/bin/env python3
"""Dependencies nothing uses: for each member of the workspace, every crate named under
[dependencies] or [dev-dependencies] must appear (its name with - as _) in the member's Rust
sources (src, tests, benches, examples); and every crate of [workspace.dependencies] must be
used by a member. A dependency nothing uses costs every fresh clone its build.

    scripts/unused-deps.py        (exits 1 with one line per unused dependency)
"""

import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sources(member):
    text = []
    for folder in ("src", "tests", "benches", "examples"):
        path = ROOT / member / folder
        if path.exists():
            text += [f.read_text(encoding="utf-8") for f in sorted(path.rglob("*.rs"))]
    return "\n".join(text)


def main():
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))["workspace"]
    faults, declared = [], set()
    for member in workspace["members"]:
        manifest = tomllib.loads((ROOT / member / "Cargo.toml").read_text(encoding="utf-8"))
        text = sources(member)
        for section in ("dependencies", "dev-dependencies"):
            for dep in manifest.get(section, {}):
                declared.add(dep)
                if not re.search(r"\b" + re.escape(dep.replace("-", "_")) + r"\b", text):
                    faults.append(f"{member}/Cargo.toml: [{section}] {dep} is used nowhere in {member}'s sources")
    for dep in workspace.get("dependencies", {}):
        if dep not in declared:
            faults.append(f"Cargo.toml: [workspace.dependencies] {dep} is declared by no member")
    for fault in faults:
        print(f"unused-deps: {fault}")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
