//! Step 11's hooks: its product is the sequence of [`crate::sequence`], played on the device, and
//! its report adds the moduli each product took. Modules import one way: `residues` (the
//! arithmetic), then `coherent` and `sequence`, then this file.

use anyhow::{Result, anyhow};

use common::Inputs;
use common::Shape;
use common::hooks::{Hooks, PathCase, Paths, Product, Queue, ReportLine, StepOption};
use common::params::Params;
use common::paths::{Made, Reach};

use crate::MODULI;
use crate::residues::{MOST, RECONSTRUCT_ENTRY, moduli_taken};
use crate::sequence::{Work, play, sequence, workspace_bytes};

/// Step 11's hooks: every launch is the residues' sequence.
pub struct ResidueHooks;

impl Hooks for ResidueHooks {
    fn every_path(&self) -> &'static [PathCase] {
        EVERY_PATH
    }

    // ANCHOR: product
    /// The sequence ([`crate::sequence::sequence`]), played on the device.
    fn product(&self, q: &mut dyn Queue, product: &Product) -> Result<()> {
        let boxes =
            product.boxes.ok_or_else(|| anyhow!("step 11's launch needs the boxes of its tensor maps"))?;
        let rebuilds = q.has_entry(RECONSTRUCT_ENTRY);
        play(q, product, &sequence(product.shape, rebuilds, boxes))
    }
    // ANCHOR_END: product

    /// The FP32 path's counts, with the moduli the product took, read from its statistics.
    fn paths(&self, q: &mut dyn Queue, shape: Shape, params: &Params) -> Result<Option<Paths>> {
        let Some(paths) = step09_3xtf32::fp32_path::paths(q)? else { return Ok(None) };
        let first = params.get(MODULI.name) as usize;
        let forced = params.find(crate::COUNT.name).is_some_and(|c| c > 0);
        let stats = Work::Stats.name();
        let read = |from, len| {
            q.read_i32(stats, from, len)?.ok_or_else(|| anyhow!("the product left no statistics to read"))
        };
        let (taken, mut needs) = moduli_taken(read, shape, first, forced)?;
        if let Some(along_k) = crate::equilibrate::taken(q, Work::Summary.name(), shape.k)? {
            needs = format!("{needs} · {along_k}");
        }
        Ok(Some(with_moduli(paths, Some((taken, needs)))))
    }

    /// `--moduli N`: N moduli forced on every row and column.
    fn option(&self) -> Option<StepOption> {
        Some(StepOption {
            long: "moduli",
            value_name: "N",
            help: "Force how many moduli this step takes on every row and column, 2 to 16, its rule and bound off (its parameters COUNT = N and MODULI = N, or 8 above 8): to see how few the data would need",
            range: (2, 16),
            apply: force_moduli,
        })
    }

    fn workspace_bytes(&self, _params: &Params, shape: Shape) -> u64 {
        workspace_bytes(shape)
    }

    fn report_line(&self, params: &Params, _shape: Shape, _grid: (u32, u32, u32)) -> ReportLine {
        Some((
            "moduli",
            format!(
                "{} INT8 products, one per modulus, or up to {MOST} where the data needs more (the paths line says how many), after A and B are scaled to integers and cut into residues, before C is rebuilt from them (all counted in the time)",
                params.get(MODULI.name)
            ),
        ))
    }
}

/// The FP32 path's counts with the step's own words: the moduli the product took, and how many
/// each row and column needed.
fn with_moduli(paths: Paths, moduli: Option<(usize, String)>) -> Paths {
    let own = match &moduli {
        Some((taken, _)) => format!("scaled to integers ({taken} moduli)"),
        None => "scaled to integers".to_owned(),
    };
    let (products, more) = match moduli {
        Some((taken, needs)) => (Some(taken), Some(("needs", needs))),
        None => (None, None),
    };
    Paths { own, products, more, ..paths }
}

/// `--moduli N` as parameters: MODULI first, so that a `--param MODULI` given as well still wins,
/// and COUNT last.
fn force_moduli(n: u32, params: &mut Vec<(String, u32)>) {
    params.insert(0, (MODULI.name.to_owned(), n.min(8)));
    params.push((crate::COUNT.name.to_owned(), n));
}

/// The odd shape every case but the coherent ones runs at: one tile, cut by every edge.
const ODD: [&str; 6] = ["-m", "67", "-n", "45", "-k", "129"];

/// `--every-path`: the rule's seven moduli at an odd shape and over several tiles, more moduli
/// where the data needs them and sixteen forced (the wide rebuild), the FP32 path beside the
/// product, scales moved along K, and inputs coherent in A and in B (rounding to nearest errs the
/// same way on every term there: what the unbiased rounding is for).
pub const EVERY_PATH: &[PathCase] = &[
    PathCase { path: "7 moduli, odd shape", args: &ODD, env: None, made: None, reach: Reach::Products(7) },
    PathCase {
        path: "several tiles",
        args: &["-m", "150", "-n", "300", "-k", "64"],
        env: None,
        made: None,
        reach: Reach::Products(7),
    },
    PathCase {
        path: "more moduli for the data",
        args: &["-m", "67", "-n", "45", "-k", "129", "--inputs", "identity+noise:0.000001"],
        env: None,
        made: None,
        reach: Reach::Products(9),
    },
    PathCase {
        path: "16 moduli (wide rebuild)",
        args: &["-m", "40", "-n", "40", "-k", "64", "--moduli", "16"],
        env: None,
        made: None,
        reach: Reach::Products(16),
    },
    PathCase {
        path: "FP32 path beside the product",
        args: &["-m", "67", "-n", "45", "-k", "129", "--inputs", "nonfinite"],
        env: None,
        made: None,
        reach: Reach::Fp32AndKernel,
    },
    PathCase {
        path: "scales moved along K",
        args: &["-m", "67", "-n", "45", "-k", "129", "--inputs", "kscaled:40"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "coherent in A",
        args: &[],
        env: None,
        made: Some(&COHERENT_A),
        reach: Reach::Products(7),
    },
    PathCase {
        path: "coherent in B",
        args: &[],
        env: None,
        made: Some(&COHERENT_B),
        reach: Reach::Products(7),
    },
];

/// Inputs whose roundings to nearest all err one way while C cancels ([`crate::coherent`]).
const COHERENT_A: Made = Made { name: "coherent-a", shape: (16, 16, 512), make: coherent_a };
const COHERENT_B: Made = Made { name: "coherent-b", shape: (16, 16, 512), make: coherent_b };

fn coherent_a(shape: Shape) -> Result<Inputs, String> {
    crate::coherent::coherent(shape, 7, crate::coherent::Ties::A)
}

fn coherent_b(shape: Shape) -> Result<Inputs, String> {
    crate::coherent::coherent(shape, 7, crate::coherent::Ties::B)
}
