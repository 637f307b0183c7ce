//! The arithmetic a step claims to perform: its name, whether it runs on the tensor cores, and
//! the compute roof it is measured against. The limits it is held to are the error model's.

use std::fmt;

/// The arithmetic a step claims to perform, and so the limits it is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f32 operands, products and sums: steps 01–06 and 10, and cuBLAS SGEMM.
    Fp32,
    /// Operands rounded to TF32 (round to nearest), products summed by the tensor cores: their
    /// TF32 mode as step 07 and cuBLAS use it.
    Tf32,
    /// Operands truncated to TF32 (their 13 low mantissa bits ignored), summed by the tensor
    /// cores: what they do with FP32 bits they read without a conversion.
    Tf32Truncated,
    /// FP32 accuracy from the tensor cores: each operand split into two TF32 parts and three
    /// TF32 products summed, the sums kept in f32 rounded to nearest (see
    /// [`SPLIT_TF32`](super::SPLIT_TF32)). Held to the normwise model of 3K terms summed in f32,
    /// plus what the split leaves out ([`SPLIT_RHO`](super::SPLIT_RHO)).
    Tf32x3,
    /// FP32 accuracy from the INT8 tensor cores (step 11): rows of A and columns of B scaled to
    /// integers, whose product is computed exactly from residues and rebuilt. Its claim is
    /// FP32's, so it is held to FP32's limits, per element and normwise.
    Int8Crt,
}

impl Precision {
    /// The precision whose limits a result of this claim is held to. A claim of FP32's accuracy
    /// (3×TF32, INT8 residues) is held to the limits of a strict FP32 product of the same inputs:
    /// its own error model may explain a result, never widen what it must reach.
    pub fn held_to(self) -> Precision {
        match self {
            Precision::Tf32x3 | Precision::Int8Crt => Precision::Fp32,
            p => p,
        }
    }

    /// Whether the result is held to TF32's limits (and its share is of cuBLAS TF32).
    pub fn is_tf32(self) -> bool {
        matches!(self, Precision::Tf32 | Precision::Tf32Truncated)
    }

    /// Whether the products run on the tensor cores (the step is set against cuBLAS TF32 too).
    pub fn tensor_cores(self) -> bool {
        self.is_tf32() || matches!(self, Precision::Tf32x3 | Precision::Int8Crt)
    }

    /// The compute roof a step of this precision is measured against: its name and GFLOP/s, from
    /// the GPU's FP32 peak and its dense TF32 peak (None where the TF32 peak is not known). INT8
    /// products from residues are set against the INT8 peak itself, four times the TF32 one on
    /// Hopper; [`shared_roof`] shares it among the products a result takes.
    pub fn roof(self, fp32_peak: f64, tf32_peak: Option<f64>) -> (&'static str, Option<f64>) {
        match self {
            p if p.is_tf32() => ("TF32 peak", tf32_peak),
            Precision::Tf32x3 => ("a third of TF32 peak", tf32_peak.map(|p| p / 3.0)),
            Precision::Int8Crt => ("INT8 peak", tf32_peak.map(|p| 4.0 * p)),
            _ => ("FP32 peak", Some(fp32_peak)),
        }
    }
}

/// The roof `name` of `gflops` shared among `products` products a result takes (2 to 16): "a
/// seventh of INT8 peak" and its GFLOP/s; the roof itself for one product or more than sixteen.
pub fn shared_roof(name: &str, gflops: Option<f64>, products: usize) -> (String, Option<f64>) {
    const SHARE: [&str; 17] = [
        "",
        "",
        "half",
        "a third",
        "a quarter",
        "a fifth",
        "a sixth",
        "a seventh",
        "an eighth",
        "a ninth",
        "a tenth",
        "an eleventh",
        "a twelfth",
        "a thirteenth",
        "a fourteenth",
        "a fifteenth",
        "a sixteenth",
    ];
    match SHARE.get(products) {
        Some(share) if products > 1 => (format!("{share} of {name}"), gflops.map(|g| g / products as f64)),
        _ => (name.to_owned(), gflops),
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Tf32Truncated => "TF32 (truncated)",
            Precision::Tf32x3 => "FP32 (3×TF32)",
            Precision::Int8Crt => "FP32 (INT8 residues)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A roof shared among a result's products is named by the share and divided by it.
    #[test]
    fn a_shared_roof_is_named_and_divided() {
        assert_eq!(
            shared_roof("INT8 peak", Some(1400.0), 7),
            ("a seventh of INT8 peak".to_owned(), Some(200.0))
        );
        assert_eq!(shared_roof("INT8 peak", Some(900.0), 9).0, "a ninth of INT8 peak");
        assert_eq!(shared_roof("INT8 peak", Some(1.0), 1), ("INT8 peak".to_owned(), Some(1.0)));
        assert_eq!(shared_roof("INT8 peak", None, 16), ("a sixteenth of INT8 peak".to_owned(), None));
    }
}
