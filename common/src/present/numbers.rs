//! How the report and the prediction write large counts, bytes and joules.

/// Large counts with a comma between thousands, as a reader scans them.
pub fn count(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Joules to three decimals in a unit that suits them: one product takes from microjoules (a
/// small shape) to joules.
pub fn joules(j: f64) -> String {
    match j {
        j if j >= 0.01 => format!("{j:.3} J"),
        j if j >= 1e-5 => format!("{:.3} mJ", j * 1e3),
        j => format!("{:.2} µJ", j * 1e6),
    }
}

/// Bytes in the largest binary unit that leaves a whole part.
pub fn bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
