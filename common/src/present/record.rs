//! The record a program keeps of its own run (`--record FILE.jsonl`): one JSON line appended to
//! the file, `{"command", "exit", "wall_s", "report", "error"}`, which is how the scripts that
//! make the book's records keep each run beside its log, and what `compare`'s tables and the
//! figures catalog read.
//!
//! - `command`: the program's file name and its arguments as typed, less `--record` and its
//!   file (an argument that is not plain is quoted for a shell);
//! - `exit`: the exit status (0; 1 for a failed run or a wrong result; 2 for a refused option);
//! - `wall_s`: the seconds from the command line's parsing to the exit, to two places;
//! - `report`: the report's JSON as `--json-to` writes it, null where the run printed none;
//! - `error`: the one-sentence error the run ended with, null where it passed.
//!
//! A run is one process, so what the record needs is held here as the run goes: the start and
//! the file when the command line is parsed ([`begin`], [`open`]), the report when it is
//! printed ([`keep`]), and the outcome at the exit ([`exit`], or [`refused`] where clap refused
//! the command line), which writes the line.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use anyhow::{Result, anyhow};

/// When the run began, its record's file, and the report it printed (one line of JSON).
static STARTED: OnceLock<Instant> = OnceLock::new();
static FILE: OnceLock<PathBuf> = OnceLock::new();
static REPORT: Mutex<Option<String>> = Mutex::new(None);

/// Marks the run's start: called first thing, before the command line is parsed.
pub fn begin() {
    let _ = STARTED.set(Instant::now());
}

/// Takes the record's file for this run, checked first: a file that cannot be written stops the
/// run before it starts, in one sentence, rather than losing its line at the end.
pub fn open(path: Option<&Path>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(|e| record_error(path, e))?;
    let _ = FILE.set(path.to_owned());
    Ok(())
}

/// Keeps the report the run printed, for its record: `json` gives its JSON on one line, asked
/// for only where the run keeps a record.
pub fn keep(json: impl FnOnce() -> String) {
    if FILE.get().is_some() {
        *REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(json());
    }
}

/// Ends the run: prints `error` (the one sentence it failed with) where there is one, writes the
/// record's line where `--record` was given, and returns the exit status (1 on an error).
pub fn exit(error: Option<String>) -> ExitCode {
    if let Some(e) = &error {
        eprintln!("error: {e}");
    }
    let status = u8::from(error.is_some());
    match FILE.get() {
        Some(path) => written(path, status, error.as_deref()),
        None => ExitCode::from(status),
    }
}

/// Writes the line of a command line that clap refused (`error`, its first line the sentence)
/// where the arguments name a record's file, then lets clap print its message and exit as it
/// does. Help and the version, which clap also ends the run with, are not recorded.
pub fn refused(error: clap::Error) -> ! {
    if error.use_stderr()
        && let Some(path) = file_in(std::env::args_os().skip(1))
    {
        let rendered = error.render().to_string();
        let first = rendered.lines().next().unwrap_or_default();
        let sentence = first.strip_prefix("error: ").unwrap_or(first);
        let status = u8::try_from(error.exit_code()).unwrap_or(2);
        if open(Some(&path)).is_ok() {
            let _ = written(&path, status, Some(sentence));
        }
    }
    error.exit()
}

/// Appends the run's line to `path`; returns `status`, or 1 where the line cannot be written.
fn written(path: &Path, status: u8, error: Option<&str>) -> ExitCode {
    let report = REPORT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let wall_s = STARTED.get().map_or("null".to_owned(), |t| format!("{:.2}", t.elapsed().as_secs_f64()));
    let text = line(&command(std::env::args_os()), status, &wall_s, report.as_deref(), error);
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{text}\n").as_bytes()));
    match appended {
        Ok(()) => ExitCode::from(status),
        Err(e) => {
            eprintln!("error: {}", record_error(path, e));
            ExitCode::FAILURE
        }
    }
}

/// A record's line, its fields in their order: `report` is the report's JSON text (null where
/// none), `wall_s` the seconds as written.
fn line(command: &str, exit: u8, wall_s: &str, report: Option<&str>, error: Option<&str>) -> String {
    let string = |s: &str| serde_json::to_string(s).expect("a string is plain data");
    format!(
        r#"{{"command":{},"exit":{exit},"wall_s":{wall_s},"report":{},"error":{}}}"#,
        string(command),
        report.unwrap_or("null"),
        error.map_or("null".to_owned(), string),
    )
}

/// The command as typed: the program's file name, then its arguments less `--record FILE` (or
/// `--record=FILE`), each that is not plain in single quotes.
pub fn command(args: impl IntoIterator<Item = OsString>) -> String {
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    let program = args.next().unwrap_or_default();
    let name = Path::new(&program).file_name().map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let mut words = vec![name];
    while let Some(arg) = args.next() {
        if arg == "--record" {
            args.next();
        } else if !arg.starts_with("--record=") {
            words.push(quoted(&arg));
        }
    }
    words.join(" ")
}

/// `--record`'s file among a command line's arguments (as clap takes it: the last one given).
fn file_in(args: impl IntoIterator<Item = OsString>) -> Option<PathBuf> {
    let mut file = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--record" {
            file = args.next().map(PathBuf::from);
        } else if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--record=")) {
            file = Some(PathBuf::from(value));
        }
    }
    file
}

/// `word` as a shell reads it back: as it is where plain, else in single quotes.
fn quoted(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+@%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The sentence for a record's file that cannot be written.
fn record_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow!("--record could not write {}: {e}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_command_is_as_typed_less_the_record() {
        let typed =
            os(&["target/release/step10_any_shape", "--size", "64", "--record", "r.jsonl", "--emulate"]);
        assert_eq!(command(typed), "step10_any_shape --size 64 --emulate");
        let quoted = os(&["step02_gpu_naive", "--record=r.jsonl", "--kernel", "my file.cu", "-m", "it's"]);
        assert_eq!(command(quoted), r"step02_gpu_naive --kernel 'my file.cu' -m 'it'\''s'");
    }

    #[test]
    fn the_record_file_is_the_last_given() {
        assert_eq!(file_in(os(&["--size", "4"])), None);
        assert_eq!(file_in(os(&["--record", "a", "--record=b"])), Some(PathBuf::from("b")));
        assert_eq!(file_in(os(&["--record=a", "--record", "b"])), Some(PathBuf::from("b")));
    }

    #[test]
    fn a_line_has_the_fields_in_order() {
        let l = line("p --size 4", 1, "0.50", None, Some(r#"a "quoted" word"#));
        assert_eq!(
            l,
            r#"{"command":"p --size 4","exit":1,"wall_s":0.50,"report":null,"error":"a \"quoted\" word"}"#
        );
        assert_eq!(
            line("p", 0, "1.00", Some(r#"{"schema":3}"#), None),
            r#"{"command":"p","exit":0,"wall_s":1.00,"report":{"schema":3},"error":null}"#
        );
    }
}
