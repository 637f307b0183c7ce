"""The reports a record keeps as JSON beside its log (NAME.jsonl beside NAME.log, one line a run:
{"command", "exit", "wall_s", "report", "error"}; scripts/record-json.sh writes them), for the
scripts that read records. A log written before the JSON has none: its readers fall back on its
text.
"""
import json
from pathlib import Path

# The versions of the report's JSON these scripts read (common::emit::SCHEMA). Schema 3 renamed
# the replay's busy shares (`issue_busy`, `l1_busy`, `tensor_busy`, `l2_busy`), which they do not read.
SCHEMAS = {1, 2, 3}


def runs(log):
    """Command -> its line (a later line of the same command replaces an earlier one), from the
    JSON beside `log`; None where the log has none."""
    path = Path(log).with_suffix(".jsonl")
    if not path.exists():
        return None
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        report = entry.get("report")
        if report is not None and report.get("schema") not in SCHEMAS:
            raise SystemExit(f"{path}:{n}: a report of schema {report.get('schema')}, and these scripts read {sorted(SCHEMAS)}")
        out[entry["command"]] = entry
    return out


def predicted_ms(report):
    """The predicted time of the launch in milliseconds on the GPU the run predicted for, or None.
    Schema 1 kept the H100's alone, as `h100_seconds`; from schema 2 on, `seconds` holds every
    profile's by name and `gpu` names the one asked for."""
    p = (report or {}).get("predicted")
    if p is None:
        return None
    if "seconds" in p:
        return p["seconds"][p["gpu"]] * 1e3
    return p["h100_seconds"] * 1e3


def scaled(report):
    """Whether the emulation ran a few blocks and multiplied their counts out."""
    return ((report or {}).get("device") or {}).get("emulated", {}).get("traffic", {}).get("scaled_of", 0) > 0


def measured_ms(report):
    """The median time of a timed run in milliseconds, or None."""
    t = (report or {}).get("time")
    return t["median_ms"] if t and t["samples"] > 0 else None
