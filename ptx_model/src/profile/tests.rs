//! Tests of the profiles: their curves, their names, and the source each figure names.

use super::*;

#[test]
fn a_curve_is_read_between_its_points_and_held_beyond() {
    let c = Curve { points: &[(0.0, 100.0), (100.0, 200.0), (200.0, 400.0)], most: 500.0 };
    assert_eq!(c.at(0.0), 100.0);
    assert_eq!(c.at(50.0), 150.0);
    assert_eq!(c.at(150.0), 300.0);
    // Beyond the last point: the last segment's slope, up to the most measured.
    assert_eq!(c.at(240.0), 480.0);
    assert_eq!(c.at(1000.0), 500.0);
    assert_eq!(c.idle(), 100.0);
}

#[test]
fn profiles_are_found_by_short_and_driver_names() {
    assert_eq!(by_name("h200").map(|p| p.name), Some("H200"));
    assert_eq!(by_name("NVIDIA H100 80GB HBM3").map(|p| p.name), Some("H100"));
    assert!(by_name("A100").is_none());
}

/// A profile whose name holds another's is chosen by its own name, exactly or held, and the
/// shorter name still finds its own profile.
#[test]
fn a_name_that_holds_another_profiles_name_is_its_own() {
    let found = |n: &str| by_name(n).map(|p| p.name);
    assert_eq!(found("H100-PCIe"), Some("H100-PCIe"));
    assert_eq!(found("NVIDIA H100 PCIe"), Some("H100-PCIe"));
    assert_eq!(found("nvidia h100-pcie 80gb"), Some("H100-PCIe"));
    assert_eq!(found("h100"), Some("H100"));
    assert_eq!(found("NVIDIA H100 80GB HBM3"), Some("H100"));
    assert_eq!(found("B200"), None);
    // Among profiles listed in another order, the same choices.
    let among = [&H100_PCIE, &H200, &H100];
    assert_eq!(by_name_among(&among, "h100").map(|p| p.name), Some("H100"));
    assert_eq!(by_name_among(&among, "NVIDIA H100 PCIe").map(|p| p.name), Some("H100-PCIe"));
}

#[test]
fn the_known_names_are_the_profiles_listed() {
    assert_eq!(known_names(), "H100, H200 or H100-PCIe");
    let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
    for (i, p) in PROFILES.iter().enumerate() {
        assert!(!names[..i].contains(&p.name), "{} is listed twice", p.name);
    }
}

/// Every curve's loads rise, so that reading it between two points is reading a line.
#[test]
fn every_curve_rises_in_load() {
    for p in PROFILES {
        for c in [p.memory.l2_latency, p.memory.dram_latency] {
            assert!(c.points.windows(2).all(|w| w[0].0 < w[1].0), "{}: {:?}", p.name, c.points);
            assert!(c.most >= c.points.last().unwrap().1, "{}", p.name);
        }
    }
}

/// The words that name where a figure comes from: a calibration record's microbenchmark, the
/// driver, NVIDIA's published figures or spec sheet, a measurement, or an estimate.
const SOURCES: [&str; 9] = [
    "latency.cu",
    "throughput.cu",
    "loaded.cu",
    "cudaGetDeviceProperties",
    "published",
    "spec sheet",
    "measured",
    "estimate",
    "recorded",
];

/// The fields of each profile constant in `text` (`pub const X: Profile = Profile { … };`)
/// whose figure names no source: on its own line's comment, or on the comment lines just above.
/// Names, the cuBLAS record's name and the lines that open or close a value are not figures.
fn unsourced(text: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut inside: Option<&str> = None;
    let mut above = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("pub const ").and_then(|r| r.strip_suffix(": Profile = Profile {"))
        {
            inside = Some(name);
            above.clear();
            continue;
        }
        let Some(profile) = inside else { continue };
        if t == "};" {
            inside = None;
            continue;
        }
        if let Some(comment) = t.strip_prefix("//") {
            above.push_str(comment);
            continue;
        }
        let (code, comment) = t.split_once("//").unwrap_or((t, ""));
        let code = code.trim();
        let field = code.split(':').next().unwrap_or("");
        let is_field = code.starts_with("..")
            || (code.contains(':') && field.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        let opens = code.ends_with('{') || code.ends_with('[');
        let exempt = ["name", "device_name", "record"].contains(&field);
        if is_field && !opens && !exempt {
            let said = format!("{above} {comment}");
            if !SOURCES.iter().any(|s| said.contains(s)) {
                missing.push(format!("{profile}: `{code}` names no source"));
            }
        }
        above.clear();
    }
    missing
}

/// Each figure of each profile names its source (a calibration record, a spec sheet, a
/// published figure, an estimate), and a field left without one is caught.
#[test]
fn each_constant_of_a_profile_names_its_source() {
    let text = include_str!("mod.rs");
    assert_eq!(unsourced(text), Vec::<String>::new());
    // A figure whose comment is taken away is found.
    let planted: String = text
        .lines()
        .map(|l| if l.trim_start().starts_with("sms: 114,") { "        sms: 114," } else { l })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(planted != text, "the PCIe profile's SM count is written as the plant expects");
    assert_eq!(unsourced(&planted), ["H100_PCIE: `sms: 114,` names no source"]);
    // Every profile constant was read: one PROFILES entry each.
    let constants = text.lines().filter(|l| l.ends_with(": Profile = Profile {")).count();
    assert_eq!(constants, PROFILES.len());
}

/// The file names in `text` that name a record: `2026-…-NAME.log` or `.md`, whole, or
/// shortened to `…-NAME.log` after a whole name of the same run.
fn records_named(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "-._…/".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.ends_with(".log") || w.ends_with(".md"))
        .filter(|w| w.starts_with('…') || w.starts_with("20") || w.starts_with("runs/"))
        .collect()
}

/// Each record the profiles name is there under `docs/src/results/`: the calibration runs their
/// comments name, and each profile's cuBLAS record; each microbenchmark named is in
/// `ptx_emulator/calibration/`.
#[test]
fn each_record_a_profile_names_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let results = root.join("../docs/src/results");
    let runs: Vec<String> = std::fs::read_dir(results.join("runs"))
        .expect("the runs' records")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    let text = include_str!("mod.rs");
    let named = records_named(text);
    assert!(named.len() >= 6, "{named:?}");
    for name in named {
        let there = match name.strip_prefix('…') {
            Some(end) => runs.iter().any(|r| r.ends_with(end)),
            None => runs.iter().any(|r| r == name) || results.join(name).exists(),
        };
        assert!(there, "profile/mod.rs names {name}, which is not under docs/src/results/runs/");
    }
    for p in PROFILES {
        if let Some(c) = p.cublas {
            assert!(results.join(c.record).exists(), "{}: no record {}", p.name, c.record);
        }
    }
    for bench in ["latency.cu", "throughput.cu", "loaded.cu"] {
        assert!(
            root.join("../ptx_emulator/calibration").join(bench).exists(),
            "no ptx_emulator/calibration/{bench}"
        );
    }
    assert_eq!(
        records_named("`2026-01-01-nowhere.log`, `…-missing.log`."),
        ["2026-01-01-nowhere.log", "…-missing.log"]
    );
}
