//! A kernel with no pipeline: `--picture-timeline` on step 05 says in one sentence that there is
//! nothing to draw, rather than an empty picture.

use common::Shape;
use common::testing::emulator;
use step05_thread_tile::STEP;

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_timeline_of_a_kernel_without_a_pipeline_says_so() {
    let t = emulator::timeline(&STEP, &[], Shape { m: 64, n: 64, k: 64 }, [0, 0, 0], true).unwrap();
    assert!(t.rounds > 0, "the block ran");
    assert!(t.producers().is_empty() && t.consumers().is_empty() && t.buffers() == 0);
    assert_eq!(t.store_buffers(), vec!["C"], "its stores are seen");
    assert_eq!(
        t.check().unwrap_err(),
        "matmul uses no mbarriers, copy-engine copies or wgmma in block (0, 0, 0), so it has no \
         pipeline of a producer, the copy engine and consumers to draw (the timeline is for labs 08 \
         and later)"
    );
}
