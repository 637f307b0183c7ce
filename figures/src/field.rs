//! Field selectors: a figure read from the JSON a run's log keeps beside it, by the path of its
//! field, rather than found in the log's text by a regular expression.
//!
//! A catalog line whose selector starts with `json` reads the record's JSON sibling: for
//! `results/runs/NAME.log`, `NAME.json` (one report) or else `NAME.jsonl` (one value a line,
//! read as an array of them). The path is fields separated by dots: a name (`derived`), a
//! position in an array (`0`), or `[KEY=VALUE]`, the first element of an array whose field KEY
//! is VALUE (`[command=step02_gpu_naive --emulate --size 256]`). For example
//! `json [command=step01_cpu_naive --size 256].report.derived.gflops`.

use serde_json::Value;

/// The word a field selector begins with.
pub const PREFIX: &str = "json";

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum PathStep {
    Key(String),
    Index(usize),
    Where(String, String),
}

/// A parsed field path, with its text as the catalog writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    text: String,
    steps: Vec<PathStep>,
}

impl Field {
    /// The path after `json `; an error says what is wrong with it.
    pub fn parse(path: &str) -> Result<Field, String> {
        let mut steps = Vec::new();
        let mut rest = path.trim();
        if rest.is_empty() {
            return Err("the field selector names no field: write json PATH, e.g. json derived.gflops".into());
        }
        while !rest.is_empty() {
            let (step, tail) = if let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else {
                    return Err(format!("the field path \"{path}\" opens a [ it does not close"));
                };
                let Some((key, value)) = inner[..end].split_once('=') else {
                    return Err(format!("the field path \"{path}\" has a [...] that is not [KEY=VALUE]"));
                };
                (PathStep::Where(key.trim().to_owned(), value.trim().to_owned()), &inner[end + 1..])
            } else {
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                let name = &rest[..end];
                if name.is_empty() {
                    return Err(format!("the field path \"{path}\" has an empty field"));
                }
                let step = match name.parse::<usize>() {
                    Ok(i) => PathStep::Index(i),
                    Err(_) => PathStep::Key(name.to_owned()),
                };
                (step, &rest[end..])
            };
            steps.push(step);
            rest = match tail.strip_prefix('.') {
                Some("") => {
                    return Err(format!("the field path \"{path}\" ends with a dot"));
                }
                Some(more) => more,
                None if tail.is_empty() || tail.starts_with('[') => tail,
                None => {
                    return Err(format!(
                        "the field path \"{path}\" runs on after a ]: separate fields with dots"
                    ));
                }
            };
        }
        Ok(Field { text: path.trim().to_owned(), steps })
    }

    /// The path as the catalog writes it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The number at the path in `json`; an error names the field that is missing, null or not
    /// a number (the caller adds where).
    pub fn pick(&self, json: &Value) -> Result<f64, String> {
        let mut at = json;
        let mut walked = String::new();
        for step in &self.steps {
            let next = match step {
                PathStep::Key(key) => at.get(key.as_str()),
                PathStep::Index(i) => at.get(*i),
                PathStep::Where(key, value) => at.as_array().and_then(|items| {
                    items.iter().find(|item| match item.get(key.as_str()) {
                        Some(Value::String(s)) => s == value,
                        Some(other) => serde_json::from_str::<Value>(value).ok().as_ref() == Some(other),
                        None => false,
                    })
                }),
            };
            let shown = match step {
                PathStep::Key(key) => key.clone(),
                PathStep::Index(i) => i.to_string(),
                PathStep::Where(key, value) => format!("[{key}={value}]"),
            };
            walked += &if walked.is_empty() || shown.starts_with('[') { shown } else { format!(".{shown}") };
            at = next.ok_or_else(|| format!("the JSON has no field {walked}"))?;
        }
        match at {
            Value::Number(n) => n.as_f64().ok_or_else(|| format!("the field {walked} is not a number")),
            Value::Null => Err(format!("the field {walked} is null (the run did not measure it)")),
            other => Err(format!("the field {walked} is {other}, not a number")),
        }
    }
}

/// The JSON beside the record at `path` (`NAME.log` or `NAME.md`): `NAME.json`, or `NAME.jsonl`
/// as an array of its lines; the error names the files looked for.
pub fn sibling(root: &std::path::Path, path: &str) -> Result<Value, String> {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    let (one, lines) = (format!("{stem}.json"), format!("{stem}.jsonl"));
    if let Ok(text) = std::fs::read_to_string(root.join(&one)) {
        return serde_json::from_str(&text).map_err(|e| format!("{one} is not JSON ({e})"));
    }
    let text = std::fs::read_to_string(root.join(&lines))
        .map_err(|_| format!("the record {path} has no JSON beside it ({one} or {lines})"))?;
    let items = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{lines}:{}: not JSON ({e})", i + 1)))
        .collect::<Result<Vec<Value>, String>>()?;
    Ok(Value::Array(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(path: &str, json: &Value) -> Result<f64, String> {
        Field::parse(path)?.pick(json)
    }

    #[test]
    fn a_path_walks_names_positions_and_matches() {
        let json = serde_json::json!([
            {"command": "step01 --size 256", "wall_s": 0.7, "report": {"derived": {"gflops": 0.35}}},
            {"command": "step02 --emulate", "exit": 1, "wall_s": 2.55, "report": {"derived": {"gflops": null}},
             "list": [1, 2.5]},
        ]);
        assert_eq!(pick("[command=step02 --emulate].wall_s", &json), Ok(2.55));
        assert_eq!(pick("0.report.derived.gflops", &json), Ok(0.35));
        assert_eq!(pick("[exit=1].wall_s", &json), Ok(2.55));
        assert_eq!(pick("1.list.1", &json), Ok(2.5));
        assert_eq!(pick("[command=step01 --size 256].report.derived.gflops", &json), Ok(0.35));
        let err = |p: &str| pick(p, &json).unwrap_err();
        assert_eq!(err("[command=step03].wall_s"), "the JSON has no field [command=step03]");
        assert_eq!(err("0.report.derive.gflops"), "the JSON has no field 0.report.derive");
        assert!(err("1.report.derived.gflops").contains("is null"), "{}", err("1.report.derived.gflops"));
        assert!(err("0.command").contains("not a number"), "{}", err("0.command"));
    }

    #[test]
    fn a_wrong_path_is_named_in_one_sentence() {
        let err = |p: &str| Field::parse(p).unwrap_err();
        assert!(err("").contains("names no field"));
        assert!(err("a..b").contains("an empty field"));
        assert!(err("a.").contains("ends with a dot"));
        assert!(err("[a=b").contains("does not close"));
        assert!(err("[ab]").contains("not [KEY=VALUE]"));
        assert!(err("[a=b]c").contains("runs on after a ]"));
        assert_eq!(Field::parse(" [a=b c].d ").unwrap().as_str(), "[a=b c].d");
    }
}
