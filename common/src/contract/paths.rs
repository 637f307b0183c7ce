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
}

impl Paths {
    /// `rows` and `cols` on the FP32 path, its time `ms` where timed apart; the rest the step
    /// fills in.
    pub fn new(rows: usize, cols: usize, ms: Option<f64>) -> Paths {
        Paths { rows, cols, ms, own: String::new(), products: None, more: None }
    }
}
