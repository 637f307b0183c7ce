//! `compare --predicted`: the labs across steps on a machine without a GPU. Each lab runs at
//! each size on the PTX emulator (one block of each kind, or whole where that is refused and the
//! product is small), launched as on the GPU `--gpu` names (the H100 unless named), and the
//! emulator's time model predicts its time there. The table and chart are the ones a GPU run
//! writes, every rate marked predicted, the cuBLAS rows the rates recorded on that GPU, and
//! beside each lab's share the share it measured in that GPU's reference run, where the GPU has
//! a cuBLAS record (a GPU without one has neither, and the page says so).

use anyhow::{Context, Result, anyhow};
use common::emulated::profile::Profile;
use common::{Precision, Shape, gpu, run};
use compare::{CUBLAS, CUBLAS_TF32, Cell, GPU_STEPS, Record, Results, predicted_device, slug};

use super::{CompareArgs, sizes};

/// The reference run of `gpu` the predictions are set beside: the record its profile's cuBLAS
/// rates are held to, by its name under `docs/src/results/`, and its results; None for a GPU
/// without a cuBLAS record.
fn reference_of(gpu: &Profile) -> Result<Option<(&'static str, Results)>> {
    let Some(cublas) = gpu.cublas else { return Ok(None) };
    let path = format!("{}/../docs/src/results/{}", env!("CARGO_MANIFEST_DIR"), cublas.record);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the {}'s record {path}", gpu.name))?;
    let record = Record::parse(&text).with_context(|| format!("the {}'s reference record", gpu.name))?;
    Ok(Some((cublas.record, record.results)))
}

/// cuBLAS's rate recorded on `gpu` at `size`³ (SGEMM, or TF32 tensor-op math), where its record
/// has the size.
fn recorded_cublas(gpu: &Profile, size: usize, tf32: bool) -> Option<f64> {
    gpu.cublas?.rates.iter().find(|r| r.0 == size).map(|r| if tf32 { r.2 } else { r.1 })
}

/// The share lab `name` measured at `size`³ in a reference run, in percent.
fn measured_share(reference: &Results, name: &str, size: usize) -> Option<f64> {
    let row = reference.rows.iter().position(|(n, _)| n == name)?;
    let col = reference.sizes.iter().position(|&s| s == size)?;
    let cell = reference.rows[row].1[col]?;
    reference.share(row, cell, col)
}

pub fn run(args: &CompareArgs, command: String) -> Result<bool> {
    if !gpu::nvrtc_present() {
        return Err(anyhow!("{}", gpu::NO_NVRTC));
    }
    let gpu = common::cli::chosen(args.gpu);
    let reference = reference_of(gpu)?;
    let sizes = sizes(args);
    let mut rows: Vec<(String, Vec<Option<Cell>>)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for step in GPU_STEPS {
        let mut cells = Vec::new();
        for &size in &sizes {
            let shape = Shape::square(size).map_err(|e| anyhow!(e))?;
            eprintln!("compare: predicting {} at {size}³", step.name);
            match run::predict(step, shape, gpu) {
                Ok(p) => {
                    let gflops = shape.flops() / p.seconds / 1e9;
                    let how = match (p.whole, p.stand_in) {
                        (true, _) => ", emulated whole".to_owned(),
                        (false, Some(label)) => format!(", for {label}"),
                        (false, None) => String::new(),
                    };
                    eprintln!(
                        "  {:.3} ms, set by {} ({:.1} s{how})",
                        p.seconds * 1e3,
                        p.bottleneck,
                        p.emulated_seconds
                    );
                    cells.push(Some(Cell { gflops, passed: true, held: None }));
                }
                Err(e) => {
                    notes.push(format!("{} at {size}³: {e}", step.name));
                    cells.push(None);
                }
            }
        }
        rows.push((step.name.to_owned(), cells));
    }
    let (major, minor) = gpu::nvrtc_version().unwrap_or((0, 0));
    let results = results_of(gpu, sizes, rows, format!("{major}.{minor}"), command);
    let table = table(&results, gpu, reference.as_ref().map(|r| &r.1));
    println!("{table}");
    for n in &notes {
        println!("- {n}");
    }

    let stem = slug(&results.device);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let chart_file = format!("{stem}.svg");
    let md = args.out.join(format!("{stem}.md"));
    let reference_name = reference.as_ref().map(|r| r.0);
    std::fs::write(&md, page(&results, (gpu, reference_name), &table, &notes, &chart_file))
        .with_context(|| format!("writing {}", md.display()))?;
    let charts = compare::redraw(&md)?;
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {} and {}", md.display(), charts.join(" and "));
    Ok(true)
}

/// The results of a predicted run: the labs' predicted `rows` (one per GPU step, in course
/// order), then the cuBLAS rows as recorded on `gpu`, where it has a record.
fn results_of(
    gpu: &Profile,
    sizes: Vec<usize>,
    mut rows: Vec<(String, Vec<Option<Cell>>)>,
    nvrtc: String,
    command: String,
) -> Results {
    let mut precision: Vec<Precision> = GPU_STEPS.iter().map(|s| s.precision).collect();
    if gpu.cublas.is_some() {
        for (name, tf32) in [(CUBLAS, false), (CUBLAS_TF32, true)] {
            let cells = sizes.iter().map(|&s| recorded_cublas(gpu, s, tf32)).map(cell_of).collect();
            rows.push((name.to_owned(), cells));
        }
        precision.extend([Precision::Fp32, Precision::Tf32]);
    }
    Results {
        device: predicted_device(gpu.name),
        driver: "none".to_owned(),
        nvrtc,
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()[..10].to_owned(),
        command,
        predicted: true,
        sizes,
        intensities: vec![None; rows.len()],
        precision,
        rows,
        peak_gflops: 0.0,
        tf32_peak_gflops: None,
        dram_gbs: None,
        smem_gbs: 0.0,
    }
}

fn cell_of(gflops: Option<f64>) -> Option<Cell> {
    gflops.map(|gflops| Cell { gflops, passed: true, held: None })
}

/// The table of rates: each lab's predicted GFLOP/s and share of cuBLAS's rate recorded on `gpu`,
/// marked predicted, with the share it measured in `gpu`'s reference run beside it; the cuBLAS
/// rows as recorded.
fn table(results: &Results, gpu: &Profile, reference: Option<&Results>) -> String {
    let mut t = String::from("| step |");
    for s in &results.sizes {
        t += &format!(" {s}³ |");
    }
    t += "\n| --- |";
    t += &" ---: |".repeat(results.sizes.len());
    t += "\n";
    for (row, (name, cells)) in results.rows.iter().enumerate() {
        t += &format!("| {name} |");
        let baseline = name == CUBLAS || name == CUBLAS_TF32;
        for (col, cell) in cells.iter().enumerate() {
            let Some(c) = cell else {
                t += " – |";
                continue;
            };
            if baseline {
                t += &format!(" {:.0} recorded |", c.gflops);
                continue;
            }
            let share = results.share(row, *c, col).map_or(String::new(), |p| format!(" ({p:.1}%)"));
            let measured = reference
                .and_then(|r| measured_share(r, name, results.sizes[col]))
                .map_or(String::new(), |p| format!(" · {} {p:.1}%", gpu.name));
            t += &format!(" {:.0}{share} predicted{measured} |", c.gflops);
        }
        t += "\n";
    }
    t
}

/// The page: what the figures are, the table, the labs the model refused, the chart.
/// `reference`: the record of `gpu`'s reference run, where it has one.
fn page(
    results: &Results,
    (gpu, reference): (&Profile, Option<&str>),
    table: &str,
    notes: &[String],
    chart_file: &str,
) -> String {
    let name = gpu.name;
    let mut md = format!("# Results on {}\n\n", results.device);
    md += &format!(
        "Predicted {} with driver {}, NVRTC {}. Command: `{}`. No GPU ran: each lab ran on the PTX \
         emulator at its defaults (or its choice for the shape), one block of each kind where a few \
         blocks stand for the grid and whole where they cannot and the product is at most 1024³, \
         launched as on the {name}'s {} SMs, and the emulator's time model (the book's appendix \"The \
         time model\") predicted its {name} time. ",
        results.date, results.driver, results.nvrtc, results.command, gpu.machine.sms
    );
    md += &match reference {
        Some(record) => format!(
            "Each cell: the predicted GFLOP/s at the square size, its share of cuBLAS's rate recorded on \
             the {name} (of {CUBLAS} for the labs held to FP32's limits, of {CUBLAS_TF32} for the TF32 \
             labs), and after \"{name}\" the share the lab measured in the {name}'s reference run \
             ({record}). The cuBLAS rows are that run's rates. "
        ),
        None => format!(
            "Each cell: the predicted GFLOP/s at the square size; {}, and no reference run of the \
             {name} is recorded to set a measured share beside it. ",
            common::predicted::no_cublas(gpu)
        ),
    };
    md += "– marks a size the lab does not serve or the model cannot predict (listed below the table).\n\n";
    md += table;
    if !notes.is_empty() {
        md += "\nWithout a prediction:\n\n";
        for n in notes {
            md += &format!("- {n}\n");
        }
    }
    md += &format!("\n![GFLOP/s against size]({chart_file})\n");
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    #[ignore = "needs NVRTC"]
    fn nvrtc_the_predicted_table_is_written_without_a_gpu() {
        let out = std::env::temp_dir().join(format!("predicted-{}", std::process::id()));
        let args = CompareArgs::try_parse_from([
            "compare",
            "--predicted",
            "--sizes",
            "64",
            "--out",
            out.to_str().unwrap(),
        ])
        .unwrap();
        assert!(run(&args, "compare --predicted --sizes 64".into()).unwrap());
        let page = std::fs::read_to_string(out.join("h100-predicted-on-the-cpu.md")).unwrap();
        let record = Record::parse(&page).expect("the page reads back as a record");
        assert_eq!(record.results.sizes, vec![64]);
        // Every lab but step 03 (one block cannot hold 64² threads) is predicted and marked so.
        let predicted: Vec<&str> = page.lines().filter(|l| l.contains(" predicted |")).collect();
        assert_eq!(predicted.len(), GPU_STEPS.len() - 1, "{page}");
        assert!(page.contains("step03_single_block at 64³"), "the lab without a prediction says why");
        assert!(out.join("h100-predicted-on-the-cpu.svg").exists());
        std::fs::remove_dir_all(&out).ok();
    }

    /// The page a predicted run writes, read back as `--redraw` reads it, draws every lab that
    /// has a prediction as a line of its own beside cuBLAS's, and says under the chart what the
    /// lines are: predicted H100 rates, not rates measured on the CPU.
    /// The labs' rows of a predicted run at `sizes`: step 03 has no prediction at any size,
    /// step 10 none at 4096³ (as in a real run).
    fn labs(sizes: &[usize]) -> Vec<(String, Vec<Option<Cell>>)> {
        GPU_STEPS
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let cells = sizes
                    .iter()
                    .map(|&s| {
                        let none = step.name == "step03_single_block"
                            || (step.name == "step10_any_shape" && s == 4096);
                        let gflops = 1000.0 * (i + 1) as f64 * s as f64 / 256.0;
                        (!none).then_some(Cell { gflops, passed: true, held: None })
                    })
                    .collect();
                (step.name.to_owned(), cells)
            })
            .collect()
    }

    #[test]
    fn a_predicted_page_charts_every_lab_as_predicted() {
        let sizes = vec![256, 1024, 4096];
        let labs = labs(&sizes);
        let drawn: Vec<String> =
            labs.iter().filter(|(_, c)| c.iter().any(Option::is_some)).map(|(n, _)| n.clone()).collect();
        let cells = labs.iter().flat_map(|(_, c)| c.iter().flatten()).count();
        let h100 = &common::emulated::profile::H100;
        let results = results_of(h100, sizes, labs, "13.0".into(), "compare --predicted".into());
        let (name, reference) = reference_of(h100).unwrap().expect("the H100's reference run");
        let page = page(&results, (h100, Some(name)), &table(&results, h100, Some(&reference)), &[], "x.svg");
        let record = Record::parse(&page).expect("the page reads back as a record");
        assert!(record.results.predicted && record.roofline_file.is_none());
        let svg = record.charts().unwrap().remove(0).1;

        assert_eq!(drawn.len(), GPU_STEPS.len() - 1);
        for name in drawn.iter().map(String::as_str).chain([CUBLAS, CUBLAS_TF32]) {
            assert!(svg.contains(&format!(">{name}</text>")), "no legend entry for {name}:\n{svg}");
        }
        // A line and a legend key per lab and per cuBLAS baseline; a marker per prediction and
        // per lab's key (cuBLAS has lines only).
        assert_eq!(svg.matches("stroke-width=\"2\"").count(), 2 * (drawn.len() + 2), "{svg}");
        assert_eq!(svg.matches("stroke-width=\"0.75\"").count(), cells + drawn.len(), "{svg}");
        // The note says the labs' rates are predicted H100 ones; none is called the CPU lab's.
        assert!(!svg.contains("Not drawn") && !svg.contains(", on the CPU,"), "{svg}");
        assert!(
            svg.contains(
                ">Labs: H100 rates predicted by the PTX emulator's time model, without a GPU.</text>"
            )
        );
        assert!(svg.contains(">cuBLAS: the rates recorded on the H100.</text>"));
    }

    #[test]
    fn the_h100_share_beside_a_prediction_is_the_reference_runs() {
        let h100 = &common::emulated::profile::H100;
        let (name, reference) = reference_of(h100).unwrap().expect("the H100's reference run");
        assert_eq!(name, "runs/2026-11-26-nvidia-h100-80gb-hbm3-reference.md");
        // The reference record's row: step08_wgmma_tma at 4096³, 94.6% of cuBLAS TF32.
        let share = measured_share(&reference, "step08_wgmma_tma", 4096).unwrap();
        assert!((share - 94.6).abs() < 0.05, "{share}");
        assert!(measured_share(&reference, "step08_wgmma_tma", 64).is_none(), "no record at 64³");
        assert_eq!(recorded_cublas(h100, 4096, true), Some(363170.0));
    }

    /// On a GPU without a cuBLAS record (the H100 PCIe), the page has no cuBLAS rows, no shares
    /// and no measured share, says so in words, and names the GPU and its SMs; its chart's note
    /// says that no cuBLAS rate is recorded there.
    #[test]
    fn a_gpu_without_a_cublas_record_is_predicted_beside_none() {
        let pcie = &common::emulated::profile::H100_PCIE;
        assert!(reference_of(pcie).unwrap().is_none());
        let sizes = vec![256, 1024];
        let results =
            results_of(pcie, sizes.clone(), labs(&sizes), "13.0".into(), "compare --predicted".into());
        assert_eq!(results.device, "H100-PCIe (predicted on the CPU)");
        assert!(results.rows.iter().all(|(n, _)| n != CUBLAS && n != CUBLAS_TF32));
        let table = table(&results, pcie, None);
        assert!(!table.contains('%'), "no share without a cuBLAS rate: {table}");
        let page = page(&results, (pcie, None), &table, &[], "x.svg");
        assert!(page.contains("no cuBLAS run on the H100-PCIe is recorded"), "{page}");
        assert!(page.contains("launched as on the H100-PCIe's 114 SMs"), "{page}");
        let record = Record::parse(&page).expect("the page reads back as a record");
        let svg = record.charts().unwrap().remove(0).1;
        assert!(svg.contains(">cuBLAS: none recorded on the H100-PCIe.</text>"), "{svg}");
    }

    /// `--gpu` chooses the profile by name; a name no profile has is refused in one sentence
    /// that lists those known.
    #[test]
    fn the_gpu_is_chosen_by_name_and_a_wrong_one_refused() {
        let args = CompareArgs::try_parse_from(["compare", "--predicted", "--gpu", "H100-PCIe"]).unwrap();
        assert_eq!(common::cli::chosen(args.gpu).name, "H100-PCIe");
        let args = CompareArgs::try_parse_from(["compare", "--predicted"]).unwrap();
        assert_eq!(common::cli::chosen(args.gpu).name, "H100");
        let wrong = CompareArgs::try_parse_from(["compare", "--predicted", "--gpu", "B200"]).unwrap_err();
        assert!(
            wrong
                .to_string()
                .contains("'B200' is no GPU the time model has a profile of; choose H100, H200 or H100-PCIe"),
            "{wrong}"
        );
    }
}
