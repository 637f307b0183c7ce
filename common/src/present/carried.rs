//! A prediction carried along K: the time model's prediction of one launch at two shorter depths
//! of K, carried to the whole K (a scaled run of a long K, `run/depth.rs`). Every time and count
//! the model sums over K (each term, the replay's clocks, each unit's busy clocks, the sectors)
//! is a + b·K once the main loop runs steadily, and follows its own line. The time is the
//! replay's clocks on their line, but never less than any unit's busy clocks on theirs: where
//! the shallower depth is held by one unit (the L2's bytes of the stores of C, which do not grow
//! with K) and the deeper by another (the tensor cores), the clocks' line alone would carry the
//! first unit's floor into the slope. The bottleneck is then named as the replay names it, from
//! the units' shares at K; DRAM's bytes and the launch's own cost bound it below as they do.

use ptx_model::predict::{BUSY, Bottleneck, Prediction, Replay};
use ptx_model::profile::Profile;

/// The value at `k` on the line through `(depths[0], a)` and `(depths[1], b)`.
pub fn along(depths: [usize; 2], k: usize, a: f64, b: f64) -> f64 {
    let [k0, k1] = depths.map(|d| d as f64);
    b + (b - a) * (k as f64 - k1) / (k1 - k0)
}

/// `gpu`'s prediction of the step's kernel and the launch's whole time (its other kernels too),
/// at K = `k`, carried from those at `depths[0]` (`a`) and `depths[1]` (`b`), of a launch of
/// `blocks` blocks (whether it fills the SMs, which the clock reads).
pub fn carried(
    gpu: &Profile,
    (pa, whole_a): &(Prediction, f64),
    (pb, whole_b): &(Prediction, f64),
    (depths, k): ([usize; 2], usize),
    blocks: u64,
) -> (Prediction, f64) {
    let line = |x: f64, y: f64| along(depths, k, x, y).max(0.0);
    let term = |p: &Prediction, l: Bottleneck| p.terms.iter().find(|t| t.0 == l).map_or(0.0, |t| t.1);
    let mut p = pb.clone();
    p.terms = pb.terms.iter().map(|&(l, y)| (l, line(term(pa, l), y))).collect();
    p.phases = line(pa.phases, pb.phases);
    p.overlapped = line(pa.overlapped, pb.overlapped);
    p.l2_read_sectors = line(pa.l2_read_sectors as f64, pb.l2_read_sectors as f64).round() as u64;
    p.l2_written_sectors = line(pa.l2_written_sectors as f64, pb.l2_written_sectors as f64).round() as u64;
    let mut seconds = line(pa.seconds, pb.seconds);
    if let (Some(ra), Some(rb)) = (&pa.replay, &mut p.replay) {
        let plain = line(ra.cycles, rb.cycles);
        // Each unit's busy clocks, on its own line.
        let busy = |share: fn(&Replay) -> f64| line(share(ra) * ra.cycles, share(rb) * rb.cycles);
        let units = [
            (Bottleneck::Issue, busy(|r| r.issue_busy)),
            (Bottleneck::L1, busy(|r| r.l1_busy)),
            (Bottleneck::TensorCores, busy(|r| r.tensor_busy)),
            (Bottleneck::L2, busy(|r| r.l2_busy)),
        ];
        let cycles = units.iter().map(|u| u.1).fold(plain, f64::max);
        let slots = busy(|r| r.issue_slots);
        let share = |clocks: f64| if cycles > 0.0 { clocks / cycles } else { 0.0 };
        [rb.issue_busy, rb.l1_busy, rb.tensor_busy, rb.l2_busy] = units.map(|u| share(u.1));
        rb.issue_slots = share(slots);
        // The clock the tensor cores' share at K holds, as the replay sets it: the SM's time in
        // cycles at that clock, and the launch's gap as at the deeper depth.
        if !matches!(pb.bottleneck, Bottleneck::Dram | Bottleneck::Launch) && pb.clock_mhz > 0.0 {
            let filled = (blocks as f64 / f64::from(gpu.machine.sms)).min(1.0);
            let gap = pb.seconds - rb.cycles / (pb.clock_mhz * 1e6);
            p.clock_mhz = gpu.clock_mhz(rb.tensor_busy * filled);
            seconds = cycles / (p.clock_mhz * 1e6) + gap;
        } else {
            seconds += (cycles - plain) / (pb.clock_mhz * 1e6);
        }
        rb.cycles = cycles;
        rb.seconds += ra.seconds;
        let (busiest, most) = units
            .iter()
            .map(|&(l, c)| (l, share(c)))
            .fold((Bottleneck::Latency, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        p.bottleneck = if most >= BUSY { busiest } else { Bottleneck::Latency };
    }
    let dram = term(&p, Bottleneck::Dram);
    if dram > seconds {
        (p.bottleneck, seconds) = (Bottleneck::Dram, dram);
    }
    if gpu.launch > seconds {
        (p.bottleneck, seconds) = (Bottleneck::Launch, gpu.launch);
    }
    p.floor = matches!(p.bottleneck, Bottleneck::L2 | Bottleneck::Dram);
    p.seconds = seconds;
    let others = line(whole_a - pa.seconds, whole_b - pb.seconds);
    (p, seconds + others)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptx_model::profile::H200;

    fn replayed(cycles: f64, tensor: f64, l2: f64) -> Prediction {
        let mut p = H200.predict(
            &Default::default(),
            ptx_model::predict::LaunchFacts { blocks: 132, resident: 1, registers: 0, compulsory_bytes: 0 },
        );
        p.clock_mhz = 1000.0;
        p.bottleneck = Bottleneck::TensorCores;
        p.seconds = cycles / 1e9 + H200.launch_gap;
        p.replay =
            Some(Replay { cycles, tensor_busy: tensor / cycles, l2_busy: l2 / cycles, ..Default::default() });
        p
    }

    #[test]
    fn the_time_follows_its_line_and_no_unit_is_busier_than_it() {
        // Tensor work 1000 clocks a unit of K; the L2's 600 000 clocks of stores, then 100 a
        // unit of K. At 512 the L2 holds the time, at 1024 the tensor cores.
        let a = replayed(651_200.0, 512_000.0, 651_200.0);
        let b = replayed(1_024_000.0, 1_024_000.0, 702_400.0);
        let (p, _) =
            carried(&H200, &(a.clone(), a.seconds), &(b.clone(), b.seconds), ([512, 1024], 4096), 132);
        let r = p.replay.as_ref().unwrap();
        // The clocks' line alone would give 1 024 000 + 6 × 372 800; the tensor cores' own
        // line gives 4 096 000, and holds the time.
        assert!((r.cycles - 4_096_000.0).abs() < 1e-6, "{}", r.cycles);
        assert_eq!(p.bottleneck, Bottleneck::TensorCores);
        assert!((r.tensor_busy - 1.0).abs() < 1e-12);
        // At the clock the tensor cores' share holds: the tensor clock.
        assert_eq!(p.clock_mhz, H200.tensor_mhz);
        let at = 4_096_000.0 / (H200.tensor_mhz * 1e6) + H200.launch_gap;
        assert!((p.seconds - at).abs() < 1e-12, "{} {at}", p.seconds);
    }

    #[test]
    fn a_line_carries_each_time_to_k() {
        assert_eq!(along([256, 512], 4096, 10.0, 18.0), 10.0 + 8.0 * 15.0);
        assert_eq!(along([256, 512], 512, 10.0, 18.0), 18.0);
    }
}
