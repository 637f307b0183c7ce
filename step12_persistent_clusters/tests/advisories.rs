//! ptxas has nothing to say about step 12's wgmma code: its kernel, its stages and its variants
//! compile for an H100 with no advisory (no fence or wait ptxas had to add, no wgmma serialised).

use common::run::EmulatorStep;
use common::{GpuStep, Shape, emulated};
use step12_persistent_clusters::{STAGES, STEP, VARIANTS};

fn assert_no_advisories(step: &GpuStep, name: &str) {
    let shape = Shape { m: 256, n: 256, k: 256 };
    let (params, _) = step.params_for(shape, emulated::profile::H100.machine.sms, &[]).unwrap();
    let e = EmulatorStep::new(step, params, shape, true, &emulated::profile::H100)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(e.resources.registers > 0, "{name}: the compile for an H100 gave no registers");
    assert_eq!(e.advisories, vec![], "{name}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_the_kernel_its_stages_and_variants_draw_no_advisories() {
    assert_no_advisories(&STEP, STEP.file);
    for stage in STAGES {
        assert_no_advisories(&STEP.stage(stage.name).unwrap(), stage.file);
    }
    for v in VARIANTS {
        assert_no_advisories(&STEP.with_variant(v, v.source, v.file), v.file);
    }
}
