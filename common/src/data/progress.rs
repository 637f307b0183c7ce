//! Progress bars for CPU work long enough to leave a learner wondering.

use indicatif::{ProgressBar, ProgressStyle};

/// Work below this many floating-point operations finishes in well under two seconds on one core.
const QUIET_BELOW_FLOPS: f64 = 2e9;

/// A bar counting `units` pieces of work, shown only when `flops` is large enough to be slow;
/// indicatif draws nothing when standard error is not a terminal.
pub fn bar(label: &str, units: u64, flops: f64) -> ProgressBar {
    if flops < QUIET_BELOW_FLOPS {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{msg:>12} [{bar:40}] {percent:>3}% · {elapsed} (eta {eta})")
        .expect("the template is valid")
        .progress_chars("=> ");
    ProgressBar::new(units).with_style(style).with_message(label.to_owned())
}
