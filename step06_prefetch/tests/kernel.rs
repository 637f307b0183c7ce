use common::testing::thread_tile::{self, FAULTS};
use common::testing::{self, DEEP, SHAPES};
use step06_prefetch::{STEP, VARIANTS};

#[test]
fn documented_sets_are_valid_and_bad_ones_refused() {
    thread_tile::assert_sets_checked(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compiles_documented_sets_without_spills() {
    thread_tile::assert_sets_compile(&STEP);
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_an_edit_that_does_not_compile_shows_the_log() {
    thread_tile::assert_broken_edit_reported(&STEP);
}

common::reference_tests!(STEP);

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_documented_sets_match_the_reference() {
    thread_tile::assert_sets_correct_on_gpu(&STEP);
}

common::planted_fault_tests!(STEP, FAULTS, &[SHAPES, DEEP].concat(), env!("CARGO_BIN_EXE_step06_prefetch"));

/// The Stream-K variant beside the kernel (variants/stream_k.cu), with its own geometry: blocks
/// that share the last tile rows and rows padded to 16 bytes.
mod stream_k {
    use super::*;
    use common::testing::faults;
    use common::testing::thread_tile::STREAM_K_FAULTS;

    fn variant() -> common::GpuStep {
        let v = &VARIANTS[0];
        STEP.with_variant(v, v.source, v.file)
    }

    #[test]
    fn a_copy_named_like_the_variant_gets_its_launch() {
        let dir = std::env::temp_dir().join(format!("step06-variant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (copy, other) = (dir.join("stream_k.cu"), dir.join("kernel.cu"));
        std::fs::write(&copy, VARIANTS[0].source).unwrap();
        std::fs::write(&other, STEP.source).unwrap();
        let step = common::compile_only::with_kernel(&STEP, &copy).unwrap();
        let plain = common::compile_only::with_kernel(&STEP, &other).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(step.schedule, common::Schedule::StreamK) && step.pads_rows);
        assert!(step.params.iter().any(|p| p.name == "SHARE"));
        assert_eq!(step.source, VARIANTS[0].source);
        assert!(matches!(plain.schedule, common::Schedule::Tiles) && !plain.pads_rows);
        assert!(!plain.params.iter().any(|p| p.name == "SHARE"));
    }

    /// The variant's diff, given to `--kernel` in place of the copy, builds the same kernel from
    /// the step's and gets the variant's launch too.
    #[test]
    fn the_variants_diff_gets_its_launch() {
        let dir = std::env::temp_dir().join(format!("step06-variant-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let diff = dir.join("stream_k.diff");
        std::fs::write(&diff, include_str!("../variants/stream_k.diff")).unwrap();
        let step = common::compile_only::with_kernel(&STEP, &diff).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(step.schedule, common::Schedule::StreamK) && step.pads_rows);
        assert_eq!(step.source, VARIANTS[0].source);
        assert_eq!(step.file, format!("{}+{}", STEP.file, diff.display()));
    }

    /// Name and content must agree: the step's kernel named stream_k.cu, or the variant under
    /// another name, is refused in one sentence instead of running with the wrong launch.
    #[test]
    fn a_copy_whose_name_and_content_disagree_is_refused() {
        let dir = std::env::temp_dir().join(format!("step06-mismatch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (named, unnamed) = (dir.join("stream_k.cu"), dir.join("my_stream_k.cu"));
        std::fs::write(&named, STEP.source).unwrap();
        std::fs::write(&unnamed, VARIANTS[0].source).unwrap();
        let named_err = common::compile_only::with_kernel(&STEP, &named).err().unwrap().to_string();
        let unnamed_err = common::compile_only::with_kernel(&STEP, &unnamed).err().unwrap().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(named_err.contains("is named like the variant") && !named_err.contains('\n'), "{named_err}");
        assert!(
            unnamed_err.contains("name the copy stream_k.cu") && !unnamed_err.contains('\n'),
            "{unnamed_err}"
        );
    }

    /// The variant takes the kernel's parameters, in the same order, and SHARE.
    #[test]
    fn the_variant_takes_the_kernels_parameters_and_share() {
        let v = &VARIANTS[0];
        assert_eq!(&v.params[..v.params.len() - 1], step06_prefetch::PARAMS);
        assert_eq!(v.params.last().unwrap().name, "SHARE");
        let names: Vec<_> = v.search.iter().map(|s| s.0).collect();
        let kernel: Vec<_> = step06_prefetch::SEARCH.iter().map(|s| s.0).chain(["SHARE"]).collect();
        assert_eq!(names, kernel);
    }

    /// Its first lines name the kernel it copies and its change, as `--help` says it, and it is
    /// that kernel with the diff beside it (`variants/stream_k.diff`) applied.
    #[test]
    fn the_variant_is_the_kernel_with_its_diff() {
        let copies = testing::copies::assert_copies(env!("CARGO_PKG_NAME"));
        let [copy] = &copies[..] else { panic!("{copies:?}") };
        let v = &VARIANTS[0];
        let said = (copy.file.as_str(), copy.base.as_str(), copy.change.as_str());
        assert_eq!(said, (v.file, STEP.file, format!("{}.", v.idea).as_str()));
    }

    #[test]
    fn help_lists_the_variant() {
        let help = STEP.help();
        assert!(
            help.contains("step06_prefetch/variants/stream_k.cu") && help.contains(VARIANTS[0].idea),
            "{help}"
        );
    }

    #[test]
    fn documented_sets_are_valid_and_bad_ones_refused() {
        thread_tile::assert_sets_checked(&variant());
    }

    #[test]
    fn the_shapes_of_the_overwrite_fault_are_shared() {
        thread_tile::assert_shared_shapes_share(&variant());
    }

    #[test]
    fn planted_faults_apply_to_the_variant() {
        faults::assert_faults_apply(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_documented_sets_and_faults_without_spills() {
        thread_tile::assert_sets_compile(&variant());
        faults::assert_faults_compile(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_matches_the_reference_and_planted_faults_are_caught() {
        testing::assert_defaults_pass(&variant(), SHAPES);
        testing::assert_exact(&variant(), &[SHAPES, DEEP].concat());
        faults::assert_caught(&variant(), STREAM_K_FAULTS);
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_a_shared_tile_piece_that_overwrites_the_sum_fails() {
        thread_tile::assert_overwrite_caught_on_gpu(&variant());
    }
}
