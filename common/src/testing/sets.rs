//! A step's documented parameter sets (those its chapter and its tests name), each written as
//! the values of a few named parameters: checked, compiled and run alike by every step that
//! lists them.

use crate::gpu::LaunchLimits;
use crate::matrix::Shape;
use crate::params::Params;
use crate::step::GpuStep;

use super::checker::{assert_all_pass, gpu_check};
use super::nvrtc::nvrtc_check;
use super::shapes::named_params;

/// The sets of `step`: each gives `names` the values of one row of `sets`, the other
/// parameters keeping their defaults.
pub struct Sets<'a, const N: usize> {
    pub step: &'a GpuStep,
    pub names: [&'static str; N],
    pub sets: &'a [[u32; N]],
}

impl<const N: usize> Sets<'_, N> {
    /// The step's parameters with the values `v` (a row of the sets, or any other).
    pub fn params(&self, v: [u32; N]) -> Params {
        named_params(self.step, self.names, v)
    }

    /// Every set passes the step's checks at 4096³ on `limits`.
    pub fn assert_valid(&self, limits: &LaunchLimits) {
        let s = Shape::square(4096).unwrap();
        for &v in self.sets {
            self.step.validate(&self.params(v), s, limits).unwrap_or_else(|e| panic!("{v:?}: {e}"));
        }
    }

    /// Every set is valid on `limits` ([`Sets::assert_valid`]); on Hopper's limits, the first is
    /// refused at K = 2³¹ − 9 for the kernel's 32-bit indices, and each `(values, says)` of
    /// `refused` at 4096³ in a message that holds `says`.
    pub fn assert_checked(&self, limits: &LaunchLimits, refused: &[([u32; N], &str)]) {
        self.assert_valid(limits);
        let near_limit = Shape::new(1, 1, i32::MAX as usize - 8).unwrap();
        let err =
            self.step.validate(&self.params(self.sets[0]), near_limit, &LaunchLimits::SM90).unwrap_err();
        assert!(err.to_string().contains("32-bit index limit"), "{err}");
        let s = Shape::square(4096).unwrap();
        for &(v, says) in refused {
            let err = self.step.validate(&self.params(v), s, &LaunchLimits::SM90).unwrap_err().to_string();
            assert!(err.contains(says), "{v:?}: {err}");
        }
    }

    /// Every set compiles with NVRTC for each of `archs` with no spill and no stack frame.
    pub fn assert_compile_without_spills<'s>(&self, archs: impl IntoIterator<Item = &'s str>) {
        for arch in archs {
            for &v in self.sets {
                let info = nvrtc_check(self.step, &self.params(v), arch)
                    .unwrap_or_else(|e| panic!("{} {arch} {v:?}: {e}", self.step.file));
                let frame = (info.spill_bytes(), info.stack_frame);
                assert_eq!(frame, (0, 0), "{} {arch} {v:?}: {info:?}", self.step.file);
            }
        }
    }

    /// Every set gives the reference's product at each of `shapes` on the GPU.
    pub fn assert_pass_on_gpu(&self, shapes: &[(usize, usize, usize)]) {
        for &v in self.sets {
            assert_all_pass(&gpu_check(self.step, self.params(v), shapes).unwrap());
        }
    }
}
