#!/usr/bin/env python3
"""Dependencies nothing uses, and features a member forgets: for each member of the workspace,
every crate named under [dependencies] or [dev-dependencies] must appear (its name with - as _)
in the member's Rust sources (src, tests, benches, examples); every crate of
[workspace.dependencies] must be used by a member; and a member whose sources use a module that
another member builds only with a feature (`#[cfg(feature = "F")]` before `pub mod M;` or
`pub use …::M;` in its src/lib.rs, as `common::testing`) must turn that feature on where it
depends on it. A dependency nothing uses costs every fresh clone its build; a forgotten feature
goes unseen in `cargo test --workspace`, where another member turns it on, and breaks
`cargo test -p MEMBER`.

    scripts/unused-deps.py        (exits 1 with one line per fault)
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


def gated_modules(member):
    """The modules of `member`'s root that are built only with a feature: {module: feature}."""
    lib = ROOT / member / "src" / "lib.rs"
    gated, feature = {}, None
    for line in lib.read_text(encoding="utf-8").splitlines() if lib.exists() else []:
        line = line.strip()
        found = re.fullmatch(r'#\[cfg\(feature = "([\w-]+)"\)\]', line)
        if found:
            feature = found.group(1)
            continue
        if feature:
            item = re.fullmatch(r"pub (?:mod |use [\w:]*::)(\w+);", line)
            if item:
                gated[item.group(1)] = feature
        feature = None
    return gated


def features_on(manifest, dep):
    """The features `manifest` turns on for `dep`, in either section."""
    on = set()
    for section in ("dependencies", "dev-dependencies"):
        spec = manifest.get(section, {}).get(dep)
        if isinstance(spec, dict):
            on |= set(spec.get("features", []))
    return on


def main():
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))["workspace"]
    manifests = {
        member: tomllib.loads((ROOT / member / "Cargo.toml").read_text(encoding="utf-8"))
        for member in workspace["members"]
    }
    names = {manifest["package"]["name"]: member for member, manifest in manifests.items()}
    faults, declared = [], set()
    for member, manifest in manifests.items():
        text = sources(member)
        for section in ("dependencies", "dev-dependencies"):
            for dep, spec in manifest.get(section, {}).items():
                declared.add(dep)
                # A dev-dependency on the member itself turns features on for its own tests.
                if dep == manifest["package"]["name"] and isinstance(spec, dict) and spec.get("features"):
                    continue
                if not re.search(r"\b" + re.escape(dep.replace("-", "_")) + r"\b", text):
                    faults.append(f"{member}/Cargo.toml: [{section}] {dep} is used nowhere in {member}'s sources")
        for dep in set(manifest.get("dependencies", {})) | set(manifest.get("dev-dependencies", {})):
            if dep not in names or dep == manifest["package"]["name"]:
                continue
            on = features_on(manifest, dep)
            for module, feature in gated_modules(names[dep]).items():
                path = dep.replace("-", "_") + "::" + module
                if re.search(r"\b" + re.escape(path) + r"\b", text) and feature not in on:
                    faults.append(
                        f"{member}/Cargo.toml: {member} uses {path}, which needs {dep}'s feature "
                        f'"{feature}": add {dep} = {{ workspace = true, features = ["{feature}"] }} '
                        "to its [dev-dependencies]"
                    )
    for dep in workspace.get("dependencies", {}):
        if dep not in declared:
            faults.append(f"Cargo.toml: [workspace.dependencies] {dep} is declared by no member")
    for fault in faults:
        print(f"unused-deps: {fault}")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
