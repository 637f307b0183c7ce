//! How the report and the prediction write large counts.

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
