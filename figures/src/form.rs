//! How a figure is printed: decimals, a percent sign, digits grouped in threes, scientific
//! notation, and a divisor applied to the record's value first (GFLOP/s printed as TFLOP/s).
//!
//! In the catalog a form is a picture of the number, then optional words:
//!
//! ```text
//! 0            a whole number: 6187 (five digits or more are grouped by a narrow no-break
//!              space: 46 832)
//! 0.00         two decimals: 95.19
//! 0.0%         one decimal and a percent sign: 91.8%
//! 0.0e0        scientific notation, one decimal in the significand: 2.6e-7
//! 0 grouped    digits in threes split by a space: 46 832 (grouped-thin, grouped-nbsp: a thin
//!              or a no-break space)
//! 0.0 /1000    the record's value divided by 1000 first: 46832 printed as 46.8
//! 0 plain      never grouped, as a program prints it: 46832 (inside a quoted report)
//! ```
//!
//! Fixed forms round half away from zero (of the value as read into an f64); scientific forms
//! round as Rust's `{:e}` formatting does, ties to even.

use std::fmt;

/// A printed form of a figure.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Form {
    /// Decimals printed (of the significand, in scientific notation).
    pub decimals: usize,
    /// Scientific notation, as the reports print errors: 2.6e-7.
    pub scientific: bool,
    /// A percent sign after the number.
    pub percent: bool,
    /// The character that splits the digits in threes, if any.
    pub group: Option<char>,
    /// The record's value is divided by this before it is printed.
    pub divisor: Option<u64>,
    /// Never grouped, as a program prints it (a figure inside a quoted report).
    pub plain: bool,
}

const THIN: char = '\u{2009}';
const NBSP: char = '\u{00A0}';
const NARROW: char = '\u{202F}';

impl Form {
    /// Reads a form as the catalog writes it (see the module's documentation).
    pub fn parse(text: &str) -> Result<Form, String> {
        let mut words = text.split_whitespace();
        let picture = words.next().ok_or("the form is empty")?;
        let bad = || format!("\"{picture}\" is not a picture of a number such as 0, 0.0, 0.0% or 0.0e0");
        let (picture, percent) = picture.strip_suffix('%').map_or((picture, false), |p| (p, true));
        let (picture, scientific) = picture.strip_suffix("e0").map_or((picture, false), |p| (p, true));
        let decimals = match picture.strip_prefix('0').ok_or_else(bad)? {
            "" => 0,
            fraction => {
                let zeros = fraction.strip_prefix('.').ok_or_else(bad)?;
                if zeros.is_empty() || zeros.chars().any(|c| c != '0') {
                    return Err(bad());
                }
                zeros.len()
            }
        };
        let mut form = Form { decimals, scientific, percent, group: None, divisor: None, plain: false };
        for word in words {
            match word {
                "grouped" => form.group = Some(' '),
                "grouped-thin" => form.group = Some(THIN),
                "grouped-nbsp" => form.group = Some(NBSP),
                "plain" => form.plain = true,
                _ => match word.strip_prefix('/').and_then(|d| d.parse::<u64>().ok()) {
                    Some(d) if d > 0 => form.divisor = Some(d),
                    _ => {
                        return Err(format!(
                            "\"{word}\" is not a word of a form (grouped, grouped-thin, grouped-nbsp, plain or /N)"
                        ));
                    }
                },
            }
        }
        if form.scientific && form.group.is_some() {
            return Err("a number in scientific notation is not grouped".to_owned());
        }
        Ok(form)
    }

    /// `value` (as the record says it, before the divisor) printed in this form.
    pub fn print(&self, value: f64) -> String {
        let value = value / self.divisor.unwrap_or(1) as f64;
        let percent = if self.percent { "%" } else { "" };
        let decimals = self.decimals;
        if self.scientific {
            return format!("{value:.decimals$e}{percent}");
        }
        let text = format!("{:.*}", decimals, rounded(value, decimals));
        let (whole, fraction) = text.split_once('.').map_or((text.as_str(), None), |(w, f)| (w, Some(f)));
        let (sign, digits) = whole.strip_prefix('-').map_or(("", whole), |d| ("-", d));
        // A number of five digits or more is grouped even when its form does not say how: with
        // a narrow no-break space, as a reader expects 2 684 354 560 rather than 2684354560.
        let group = self.group.or((digits.len() >= 5 && !self.plain).then_some(NARROW));
        let grouped = match group {
            Some(sep) => {
                let head = digits.len() % 3;
                let mut parts = vec![&digits[..head]];
                parts.extend((head..digits.len()).step_by(3).map(|i| &digits[i..i + 3]));
                parts.retain(|p| !p.is_empty());
                parts.join(&sep.to_string())
            }
            None => digits.to_owned(),
        };
        format!("{sign}{grouped}{}{percent}", fraction.map_or(String::new(), |f| format!(".{f}")))
    }

    /// The form of a figure as written by hand: "6 184", "88.4%", "45.2", "2.6e-7" (thin and
    /// no-break spaces may group digits too), with the divisor it was quoted under. None when
    /// the whole text is not one number.
    pub fn of_quote(text: &str, divisor: Option<u64>) -> Option<Form> {
        let text = text.trim();
        let body = text.strip_suffix('%').unwrap_or(text);
        let percent = body.len() != text.len();
        let unsigned = body.strip_prefix('-').unwrap_or(body);
        if let Some((significand, exponent)) = unsigned.split_once('e') {
            let exponent = exponent.strip_prefix('-').unwrap_or(exponent);
            let (whole, fraction) = significand.split_once('.').unwrap_or((significand, ""));
            let ok = whole.len() == 1
                && whole.chars().all(|c| c.is_ascii_digit())
                && fraction.chars().all(|c| c.is_ascii_digit())
                && (significand.len() == 1 || !fraction.is_empty())
                && !exponent.is_empty()
                && exponent.chars().all(|c| c.is_ascii_digit());
            return ok.then_some(Form {
                decimals: fraction.len(),
                scientific: true,
                percent,
                group: None,
                divisor,
                plain: false,
            });
        }
        let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
        if fraction.is_some_and(|f| f.is_empty() || !f.chars().all(|c| c.is_ascii_digit())) {
            return None;
        }
        let group = whole.chars().find(|c| [' ', THIN, NBSP].contains(c));
        let first = whole.chars().next()?;
        if !first.is_ascii_digit() || !whole.chars().all(|c| c.is_ascii_digit() || Some(c) == group) {
            return None;
        }
        let form = Form {
            decimals: fraction.map_or(0, str::len),
            scientific: false,
            percent,
            group,
            divisor,
            plain: false,
        };
        Some(form)
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0")?;
        if self.decimals > 0 {
            write!(f, ".{}", "0".repeat(self.decimals))?;
        }
        if self.scientific {
            write!(f, "e0")?;
        }
        if self.percent {
            write!(f, "%")?;
        }
        match self.group {
            Some(' ') => write!(f, " grouped")?,
            Some(THIN) => write!(f, " grouped-thin")?,
            Some(_) => write!(f, " grouped-nbsp")?,
            None if self.plain => write!(f, " plain")?,
            None => {}
        }
        if let Some(d) = self.divisor {
            write!(f, " /{d}")?;
        }
        Ok(())
    }
}

/// `value` rounded to `decimals` places, half away from zero.
fn rounded(value: f64, decimals: usize) -> f64 {
    let scale = 10f64.powi(decimals as i32);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(form: &str, value: f64) -> String {
        Form::parse(form).unwrap().print(value)
    }

    #[test]
    fn forms_print_decimals_grouping_percent_and_scale() {
        assert_eq!(print("0 grouped", 45164.4), "45 164");
        assert_eq!(print("0 grouped-thin", 1234567.0), "1\u{2009}234\u{2009}567");
        assert_eq!(print("0 grouped-nbsp", 999.0), "999");
        assert_eq!(print("0%", 88.5), "89%", "half away from zero");
        assert_eq!(print("0.0%", 88.36), "88.4%");
        assert_eq!(print("0.00", 0.434), "0.43");
        assert_eq!(print("0.0", 9.96), "10.0");
        assert_eq!(print("0", 64.0), "64");
        assert_eq!(print("0.0 /1000", 45220.0), "45.2");
        assert_eq!(print("0.00 /1000000000", 4264434688.0), "4.26");
        assert_eq!(print("0.0e0", 2.64e-7), "2.6e-7");
        assert_eq!(print("0.0e0", 1.06e-6), "1.1e-6");
        assert_eq!(print("0.0e0", 0.0), "0.0e0");
        assert_eq!(print("0e0", 1e-6), "1e-6");
        // Five digits or more are grouped unless the form says plain (a quoted report).
        assert_eq!(print("0", 46832.0), "46\u{202f}832");
        assert_eq!(print("0", 4683.0), "4683");
        assert_eq!(print("0 plain", 46832.0), "46832");
        assert_eq!(print("0.0 /1000", 46832000.0), "46\u{202f}832.0");
    }

    #[test]
    fn forms_are_written_as_they_are_read() {
        for text in [
            "0",
            "0.0",
            "0.00%",
            "0.0e0",
            "0e0%",
            "0 grouped",
            "0.0 grouped-thin /1000",
            "0 /1000000",
            "0 plain",
        ] {
            assert_eq!(Form::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "1", "0.", "0.01", "0 spaced", "0 /0", "0 /x", "0.0e0 grouped", "00"] {
            assert!(Form::parse(bad).is_err(), "{bad:?} was read");
        }
    }

    #[test]
    fn quotes_written_by_hand_give_their_form() {
        let form = |t: &str| Form::of_quote(t, None).map(|f| f.to_string());
        assert_eq!(form("6 184").as_deref(), Some("0 grouped"));
        assert_eq!(form("11\u{2009}240").as_deref(), Some("0 grouped-thin"));
        assert_eq!(form("88.4%").as_deref(), Some("0.0%"));
        assert_eq!(form("2.6e-7").as_deref(), Some("0.0e0"));
        assert_eq!(form("1e-6").as_deref(), Some("0e0"));
        assert_eq!(form("0.00").as_deref(), Some("0.00"));
        assert_eq!(form("no figure"), None);
        assert_eq!(form("about 3 or 99"), None, "the whole text is the figure");
        assert_eq!(form("3."), None);
        assert_eq!(form("12e"), None);
        assert_eq!(Form::of_quote("45.2", Some(1000)).unwrap().to_string(), "0.0 /1000");
        for quote in ["6 184", "88.4%", "2.6e-7", "0.0e0", "17.3", "512"] {
            let form = Form::of_quote(quote, None).unwrap();
            let value: f64 = quote.replace([' ', '%'], "").parse().unwrap();
            assert_eq!(form.print(value), quote);
        }
    }
}
