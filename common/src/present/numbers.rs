//! How the report and the prediction write large counts, bytes, joules and times.

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

/// A time in seconds as the prediction writes it: milliseconds to one decimal from 10 ms up, to
/// three from 0.1 ms, microseconds to one decimal below.
pub fn duration(s: f64) -> String {
    let ms = s * 1e3;
    if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else if ms >= 0.1 {
        format!("{ms:.3} ms")
    } else {
        format!("{:.1} µs", s * 1e6)
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

#[cfg(test)]
mod tests {
    use super::duration;

    /// Each unit and precision on both sides of its edge.
    #[test]
    fn a_duration_takes_its_unit_and_precision_at_each_edge() {
        assert_eq!(duration(9.99e-3), "9.990 ms");
        assert_eq!(duration(10e-3), "10.0 ms");
        assert_eq!(duration(123e-3), "123.0 ms");
        assert_eq!(duration(0.1e-3), "0.100 ms");
        assert_eq!(duration(99.9e-6), "99.9 µs");
    }
}
