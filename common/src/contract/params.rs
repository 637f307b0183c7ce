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

// ANCHOR: wide
/// Every kernel's one parameter the step does not declare: compiled with `-D WIDE=1`, a kernel
/// forms its offsets into A, B and C in 64 bits (its type `offset_t` is `long long`, not `int`:
/// [`crate::gpu::offset_type`]).
/// A run sets it where some matrix has more than 2³¹ − 1 elements ([`Shape::wide`](crate::matrix::Shape::wide)) and leaves
/// it out everywhere else, so that the kernels of every other shape compile as they always have.
/// `--param WIDE=1` sets it at any shape, to check a kernel's wide offsets where a narrow run
/// can check its C.
pub const WIDE: Param = Param {
    name: crate::gpu::WIDE_DEFINE,
    default: 0,
    help: "1: offsets into A, B and C in 64 bits (set by the run where a matrix passes 2^31 - 1 elements)",
};
// ANCHOR_END: wide

/// The values of a step's parameters, in the order the step declares them, and whether its
/// kernels are compiled [`WIDE`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    values: Vec<(&'static str, u32)>,
    wide: bool,
}

impl Params {
    pub fn defaults(decl: &[Param]) -> Self {
        Self { values: decl.iter().map(|p| (p.name, p.default)).collect(), wide: false }
    }

    /// The defaults with `overrides` applied (`WIDE` among them); an unknown name is an error that
    /// lists the known ones.
    pub fn with_overrides(decl: &[Param], overrides: &[(String, u32)]) -> Result<Self> {
        let mut params = Self::defaults(decl);
        for (name, value) in overrides {
            match params.values.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = *value,
                None if name == WIDE.name => match value {
                    0 | 1 => params.wide = *value == 1,
                    _ => bail!("--param WIDE={value}: WIDE is 1 (64-bit offsets) or 0 (32-bit ones)"),
                },
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
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The value of `name`. Steps ask only for the parameters they declare.
    pub fn get(&self, name: &str) -> u32 {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("the step declares no parameter {name}"))
    }

    /// Whether the kernels compile [`WIDE`].
    pub fn wide(&self) -> bool {
        self.wide
    }

    /// The same values, compiled [`WIDE`] or not.
    pub fn widened(mut self, wide: bool) -> Self {
        self.wide = wide;
        self
    }

    /// The `-D NAME=value` defines: the values, and `WIDE=1` after them where the set is wide
    /// (a narrow set names no `WIDE`).
    pub fn defines(&self) -> Vec<(String, u32)> {
        self.named().map(|(n, v)| (n.to_owned(), v)).collect()
    }

    fn named(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.values.iter().copied().chain(self.wide.then_some((WIDE.name, 1)))
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && !self.wide
    }

    /// The command-line flags that reproduce this set.
    pub fn to_flags(&self) -> String {
        self.named().map(|(n, v)| format!("--param {n}={v}")).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.named().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECL: &[Param] = &[Param { name: "BLOCK", default: 32, help: "" }];

    #[test]
    fn wide_is_named_only_where_it_is_set() {
        let narrow = Params::defaults(DECL);
        assert_eq!(narrow.defines(), [("BLOCK".to_owned(), 32)], "a narrow set defines no WIDE");
        let wide = narrow.clone().widened(true);
        assert_eq!(wide.defines(), [("BLOCK".to_owned(), 32), ("WIDE".to_owned(), 1)]);
        assert_eq!(
            (wide.to_string(), wide.to_flags()),
            ("BLOCK=32 WIDE=1".into(), "--param BLOCK=32 --param WIDE=1".into())
        );
        assert_eq!(Params::with_overrides(DECL, &[("WIDE".into(), 1)]).unwrap(), wide);
        assert_eq!(Params::with_overrides(DECL, &[("WIDE".into(), 0)]).unwrap(), narrow);
        let err = Params::with_overrides(DECL, &[("WIDE".into(), 2)]).unwrap_err().to_string();
        assert!(err.contains("WIDE is 1 (64-bit offsets) or 0"), "{err}");
        assert!(Params::defaults(&[]).is_empty() && !Params::defaults(&[]).widened(true).is_empty());
    }
}
