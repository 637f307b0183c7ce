//! A kernel's compile-time parameters: what a step declares (`Param`) and the values one run
//! compiles with (`Params`), passed to NVRTC as `-D NAME=value`.

use std::fmt;

use anyhow::{Result, bail};

// ANCHOR: param
/// A compile-time constant of a kernel, passed to NVRTC as `-D NAME=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub default: u32,
    pub help: &'static str,
}
// ANCHOR_END: param

/// The values of a step's parameters, in the order the step declares them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Params(Vec<(&'static str, u32)>);

impl Params {
    pub fn defaults(decl: &[Param]) -> Self {
        Self(decl.iter().map(|p| (p.name, p.default)).collect())
    }

    /// The defaults with `overrides` applied; an unknown name is an error that lists the known ones.
    pub fn with_overrides(decl: &[Param], overrides: &[(String, u32)]) -> Result<Self> {
        let mut params = Self::defaults(decl);
        for (name, value) in overrides {
            match params.0.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = *value,
                None if decl.is_empty() => {
                    bail!("--param {name}: this step has no tunable parameters")
                }
                None => bail!(
                    "--param {name}: this step's parameters are {}",
                    decl.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        Ok(params)
    }

    /// The value of `name`, None when the set does not declare it (a variant's parameter).
    pub fn find(&self, name: &str) -> Option<u32> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The value of `name`. Steps ask only for the parameters they declare.
    pub fn get(&self, name: &str) -> u32 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("the step declares no parameter {name}"))
    }

    pub fn defines(&self) -> Vec<(String, u32)> {
        self.0.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The command-line flags that reproduce this set.
    pub fn to_flags(&self) -> String {
        self.0.iter().map(|(n, v)| format!("--param {n}={v}")).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}
