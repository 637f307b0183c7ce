//! What a step's own product reports of the rows and columns it sent down a path of their own
//! (steps 09 and 11's FP32 path): the report's paths line.

/// Where each row of A and column of B went in one product of a step that sends some of them
/// down a path of their own (steps 09 and 11's FP32 path), for the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Paths {
    /// Rows of A on the FP32 path, and columns of B.
    pub rows: usize,
    pub cols: usize,
    /// The FP32 path's time in milliseconds, where the product was timed apart.
    pub ms: Option<f64>,
    /// What the step's own arithmetic does with the other rows and columns, in words.
    pub own: String,
    /// How many products of its own arithmetic make each result, where that varies (step 11's
    /// moduli): the roof of a step that makes several is the peak shared among them.
    pub products: Option<usize>,
    /// A line the step adds under the paths line (label, text).
    pub more: Option<(&'static str, String)>,
    /// Why the step sent every row or column around its kernel, where its rule did (step 09's
    /// K below the split's depth): the report's note gives it.
    pub why_all: Option<String>,
}

impl Paths {
    /// `rows` and `cols` on the FP32 path, its time `ms` where timed apart; the rest the step
    /// fills in.
    pub fn new(rows: usize, cols: usize, ms: Option<f64>) -> Paths {
        Paths { rows, cols, ms, own: String::new(), products: None, more: None, why_all: None }
    }

    /// Whether the step's own kernel multiplied any element of C of `shape`: an element is the
    /// kernel's where its row of A and its column of B both stayed off the FP32 path.
    pub fn kernel_ran(&self, shape: crate::matrix::Shape) -> bool {
        self.rows < shape.m && self.cols < shape.n
    }

    /// The one sentence a report gives where the kernel multiplied nothing of `shape` (None where
    /// it did): which rows or columns went around it, and why where the step says.
    pub fn not_run(&self, shape: crate::matrix::Shape) -> Option<String> {
        if self.kernel_ran(shape) {
            return None;
        }
        let all = if self.rows >= shape.m {
            format!("all {} of A's rows", shape.m)
        } else {
            format!("all {} of B's columns", shape.n)
        };
        let why = self.why_all.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
        Some(format!(
            "the kernel did not run: {all} took the FP32 path{why}, so this verdict is the FP32 path's alone and says nothing of the kernel; `--every-path` runs shapes that reach it"
        ))
    }
}

/// One case of a step's `--every-path` list: a run that exists to reach one path of the step's
/// product, and what its report must show for that path to count as reached.
#[derive(Clone, Copy, Debug)]
pub struct PathCase {
    /// The path the case exists to reach, in a few words ("split K", "the FP32 path").
    pub path: &'static str,
    /// The run's arguments: its shape, `--param` overrides, `--inputs` family.
    pub args: &'static [&'static str],
    /// An environment variable the run sets (`STREAM_K_LAYOUT` for a forced layout).
    pub env: Option<(&'static str, &'static str)>,
    /// Inputs the case makes itself (step 11's coherent ones), written to `.npy` files the run
    /// reads with `--a` and `--b`; None: the run draws its own.
    pub made: Option<&'static Made>,
    /// What the run's own report must show.
    pub reach: Reach,
}

/// Inputs a step makes for a case of its own, at one shape.
#[derive(Clone, Copy, Debug)]
pub struct Made {
    /// A short name, for the files' names.
    pub name: &'static str,
    pub shape: (usize, usize, usize),
    /// The inputs at `shape`, or why they cannot be made there.
    pub make: fn(crate::matrix::Shape) -> Result<crate::matrix::Inputs, String>,
}

/// What a run's report shows where a case reached its path, read from the report's JSON.
#[derive(Clone, Copy, Debug)]
pub enum Reach {
    /// The step's kernel multiplied some of C (for a step with an FP32 path: some element had
    /// its row and its column off it; for the others, any run that finished).
    Kernel,
    /// Some row of A or column of B took the FP32 path, and the kernel ran too.
    Fp32AndKernel,
    /// Every element took the FP32 path (the case of a short K).
    Fp32Only,
    /// The kernel's launch line under this label contains this text (step 10's `split`, step
    /// 12's `schedule`).
    Says(&'static str, &'static str),
    /// The launch shares tiles between blocks (Stream-K's `share` line).
    Shared,
    /// The kernel stored C through the copy engine (bulk stores counted), or not.
    BulkStores(bool),
    /// The product took at least this many products of its own arithmetic per result (step
    /// 11's moduli, as its paths line counts them).
    Products(usize),
    /// The launch ran with this parameter at this value (step 10's `PATH` its rule chose).
    Param(&'static str, u32),
    /// The launch multiplied zero-padded copies of the rows (true), or the rows as they are.
    Padded(bool),
    /// The kernel made ordinary stores to global memory (counted by an emulated run): for a
    /// kernel that stores C by boxes, its pieces of a cut tile.
    GlobalStores,
    /// Both of two reaches.
    Both(&'static Reach, &'static Reach),
}

/// The cases a step without a list of its own runs: an odd shape its tiles cut (of at most 1024
/// elements of C, which step 03's one block holds), the default shape, and two other input
/// families at the odd shape.
pub const EVERY_STEP: &[PathCase] = &[
    PathCase {
        path: "the tiles' edges",
        args: &["-m", "27", "-n", "37", "-k", "129"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase { path: "the default shape", args: &[], env: None, made: None, reach: Reach::Kernel },
    PathCase {
        path: "every term exact (integers)",
        args: &["-m", "27", "-n", "37", "-k", "129", "--inputs", "integers"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
    PathCase {
        path: "wide exponents",
        args: &["-m", "27", "-n", "37", "-k", "129", "--inputs", "wide:20"],
        env: None,
        made: None,
        reach: Reach::Kernel,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Shape;

    /// The kernel ran where some element had its row and its column off the FP32 path; where
    /// every row (or column) took it, the sentence says so, with the step's reason.
    #[test]
    fn the_kernel_ran_unless_every_row_or_column_went_around_it() {
        let shape = Shape::new(67, 45, 129).unwrap();
        assert!(Paths::new(66, 44, None).kernel_ran(shape));
        assert_eq!(Paths::new(66, 44, None).not_run(shape), None);
        let all_rows = Paths { why_all: Some("K = 129 is below 256".into()), ..Paths::new(67, 0, None) };
        let said = all_rows.not_run(shape).unwrap();
        assert!(
            said.starts_with("the kernel did not run: all 67 of A's rows took the FP32 path (K = 129"),
            "{said}"
        );
        let all_cols = Paths::new(0, 45, None).not_run(shape).unwrap();
        assert!(all_cols.contains("all 45 of B's columns") && !all_cols.contains('('), "{all_cols}");
    }
}
