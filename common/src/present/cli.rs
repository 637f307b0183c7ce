//! The command line every step shares.

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::hooks::StepOption;
use crate::matrix::Family;

/// Largest accepted dimension: the largest `int`, which a kernel's M, N and K arguments are.
/// Nothing else caps one dimension: a shape whose matrices pass any memory is refused by
/// [`Shape::new`](crate::matrix::Shape::new), and one that does not fit in this machine's memory
/// by the memory check, each naming what does not fit.
pub const MAX_DIM: usize = i32::MAX as usize;

/// clap's id of a step's own option.
const STEP_OPTION: &str = "step_option";

#[derive(Parser, Clone, Debug, PartialEq)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Square problem: M = N = K = SIZE (the step's default shape when no size is given).
    #[arg(long, short = 's', value_name = "SIZE", value_parser = parse_dim)]
    pub size: Option<usize>,

    /// Rows of A and C (overrides --size for M).
    #[arg(short = 'm', value_name = "M", value_parser = parse_dim)]
    pub m: Option<usize>,

    /// Columns of B and C (overrides --size for N).
    #[arg(short = 'n', value_name = "N", value_parser = parse_dim)]
    pub n: Option<usize>,

    /// Columns of A, rows of B: the length of each dot product (overrides --size for K).
    #[arg(short = 'k', value_name = "K", value_parser = parse_dim)]
    pub k: Option<usize>,

    /// Timed samples. By default a GPU step takes about half a second of kernel time, at least 20
    /// samples and at most 1000, a sample being one product or, for short kernels, a batch of
    /// back-to-back products; the CPU step runs the product as many times as its first run fits
    /// into half a second, at least once.
    #[arg(long, value_name = "N", value_parser = parse_reps)]
    pub reps: Option<usize>,

    /// The longest a GPU run waits for one launch before it stops, naming the kernel as likely
    /// stuck at a barrier. By default a second plus a hundred times the product's time at 0.1
    /// TFLOP/s.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,

    /// Seed of the random inputs; the same seed reproduces the same matrices.
    #[arg(long, default_value_t = 42, value_parser = parse_seed)]
    pub seed: u64,

    /// Small-integer inputs (-3 to 3) for which f32 arithmetic is exact: the result must equal
    /// the reference bit for bit, so any misplaced or missing term fails at any K (the same as
    /// --inputs integers).
    #[arg(long, conflicts_with = "inputs")]
    pub exact: bool,

    /// The family of random inputs: uniform (in [-1, 1], the default), normal, positive (uniform
    /// in [0, 1]), lognormal:σ, wide:E (exponents from -E to E), gram (B = Aᵀ), identity+noise:ε,
    /// integers (the same as --exact), tiny:E (positive times 2^-E: E = 66 puts every product
    /// among FP32's subnormals) or kscaled:E (uniform, A's column p times 2^s and B's row p times
    /// 2^-s, s from -E to E: A·B unchanged) or nonfinite (uniform, a NaN in every 16th row of A
    /// and an infinity in every 16th column of B: what a step's FP32 path takes).
    #[arg(long, value_name = "KIND", value_parser = Family::parse)]
    pub inputs: Option<Family>,

    /// Read A from a file instead of drawing it: FILE.npy or FILE.safetensors:TENSOR (f32, f16,
    /// bf16 or f64 values; C or Fortran order). The files give the shape. Needs --b.
    #[arg(long = "a", value_name = "FILE", requires = "b", conflicts_with_all = ["inputs", "exact"])]
    pub a: Option<String>,

    /// Read B from a file (see --a). Needs --a.
    #[arg(long = "b", value_name = "FILE", requires = "a")]
    pub b: Option<String>,

    /// Write the result C to FILE.npy (f32, row-major), as the step computed it.
    #[arg(long, value_name = "FILE.npy")]
    pub save_c: Option<std::path::PathBuf>,

    /// Skip the check against the f64 reference.
    #[arg(long)]
    pub no_verify: bool,

    /// Skip the cuBLAS SGEMM baseline (GPU steps).
    #[arg(long)]
    pub no_cublas: bool,

    /// Which GPU to use, numbered from 0 (default 0; GPU steps).
    #[arg(long, value_name = "ORDINAL", value_parser = parse_ordinal)]
    pub device: Option<usize>,

    /// Override one of the kernel's compile-time parameters, e.g. --param TILE=16 (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, u32)>,

    /// The value of the step's own option, where it has one and it was given (see
    /// [`crate::hooks::StepOption`]).
    #[arg(skip)]
    pub step_option: Option<u32>,

    /// Run an edited copy of the step's kernel from PATH instead of the built-in one, or, for a
    /// PATH ending in .diff (a variant kept as its change alone), the kernel with that diff
    /// applied: the same compile, verify, time and report, with no Rust rebuild.
    #[arg(long, value_name = "PATH")]
    pub kernel: Option<std::path::PathBuf>,

    /// Run one of the step's staged kernels instead of its own (a step that has stages lists
    /// them under --help): the same compile, verify, time and report.
    #[arg(long, value_name = "NAME", conflicts_with = "kernel")]
    pub stage: Option<String>,

    /// Run the kernel (or the --kernel FILE, or the --stage) over the step's own list of cases,
    /// each a run of its own with the sanitizer where emulated: shapes, parameters and inputs that
    /// reach each path of the step's product (its tiles' edges, a split of K, Stream-K, an FP32
    /// path, clusters, ...). One line a case: the path, the verdict, whether the run's report shows
    /// the path reached, and the command that runs the case alone. Fails where any case fails or
    /// misses its path.
    #[arg(
        long,
        conflicts_with_all = ["size", "m", "n", "k", "inputs", "exact", "a", "params", "tune", "compile_only", "scaled", "format", "json_to", "save_c", "no_verify", "picture_access", "picture_timeline"]
    )]
    pub every_path: bool,

    /// Only compile the kernel (for --arch) and print its resources and ptxas's output; needs no GPU.
    #[arg(long)]
    pub compile_only: bool,

    /// The architecture --compile-only compiles for, e.g. sm_80 or sm_90 (default: the GPU
    /// present, or sm_90 without one).
    #[arg(long, value_name = "sm_XY", value_parser = parse_arch)]
    pub arch: Option<String>,

    /// With --compile-only, also write the machine code to PATH (a cubin), to read its
    /// instructions with `cuobjdump -sass PATH` or `nvdisasm PATH` from the CUDA toolkit.
    #[arg(long, value_name = "PATH")]
    pub cubin: Option<std::path::PathBuf>,

    /// Run the kernel on the PTX emulator on the CPU instead of the GPU: the same verdict, an
    /// H100's time predicted (not measured), a check for races and out-of-bounds accesses, and
    /// the memory traffic Nsight Compute would count. Without a GPU a step emulates anyway, at a small default size.
    #[arg(long, conflicts_with_all = ["tune", "compile_only"])]
    pub emulate: bool,

    /// With --emulate: run one block of each kind (first, inside, last along each side of the
    /// grid) and multiply their counts out, so that a large shape's traffic takes seconds. C is
    /// then not computed, so not verified; a grid whose blocks differ inside is refused.
    #[arg(long, requires = "emulate")]
    pub scaled: bool,

    /// With --emulate: the GPU the run copies (its SMs, their limits) and whose time the model
    /// predicts, by its profile's name (the H100 unless named; a wrong name is answered with the
    /// names known). The report names it; the other GPUs' times follow on the same line.
    #[arg(long, value_name = "NAME", requires = "emulate", value_parser = parse_gpu)]
    pub gpu: Option<&'static ptx_model::profile::Profile>,

    /// With --emulate: draw one warp's access at a line of the kernel, FILE.cu:LINE (a line the
    /// PTX gives a load or store: a wrong one is refused with the list), to an SVG
    /// (--picture-to) and print what it shows: each lane's address, and the 32-byte sectors and
    /// 128-byte lines of a global access or the banks, conflicts and wavefronts of a shared one,
    /// as the run counts them. The warp is warp 0 of block (0,0,0) unless :block=X,Y,Z and
    /// :warp=W follow (kernel.cu:34:warp=4); the picture is of the first launch in which that
    /// warp executes a global or shared load or store (or ldmatrix) at the line, each such
    /// instruction of the line the first time the warp executes it (at most 4; the copies of one
    /// load that an unrolled loop makes, once).
    #[arg(long, value_name = "FILE.cu:LINE", value_parser = parse_picture)]
    pub picture_access: Option<ptx_emulator::recording::warp_access::Request>,

    /// Where --picture-access writes its SVG (default access.svg in the system's scratch folder, /tmp on Linux).
    #[arg(long, value_name = "FILE.svg")]
    pub picture_to: Option<std::path::PathBuf>,

    /// With --emulate: draw the busiest block's warps in the time model's clocks (when each
    /// issued and what it waited for) to FILE.svg, and, for a kernel with a pipeline (labs 08
    /// on), one block's pipeline round by round as the emulator ran it to FILE.svg, the clocks
    /// beside it in FILE-cycles.svg; print what each shows.
    #[arg(long, value_name = "FILE.svg", requires = "emulate")]
    pub picture_timeline: Option<std::path::PathBuf>,

    /// The block --picture-timeline draws (default 0,0,0).
    #[arg(long, value_name = "X,Y,Z", requires = "picture_timeline", value_parser = parse_block)]
    pub timeline_block: Option<[u32; 3]>,

    /// The rounds --picture-timeline draws, FIRST..END (END not included). Default: as many of
    /// the first rounds as fit 30 items across, a round taking its busiest row's items and half
    /// an item of space, so that every label stays readable (often a few of a run's rounds).
    #[arg(long, value_name = "FIRST..END", requires = "picture_timeline", value_parser = parse_rounds)]
    pub timeline_rounds: Option<(u32, u32)>,

    /// Search the step's parameter space: compile, verify and time every valid set, then rank
    /// them. Parameters given with --param stay fixed; --no-verify ranks unverified sets.
    #[arg(long)]
    pub tune: bool,

    /// How the report is printed: text (the default), or json, the same report as one JSON
    /// object with a schema version (the book's "Measuring correctly" describes it).
    #[arg(
        long,
        value_name = "FORMAT",
        value_enum,
        conflicts_with_all = ["tune", "compile_only", "picture_access", "picture_timeline"]
    )]
    pub format: Option<Format>,

    /// Also write the report as JSON, on one line, to FILE, while it is printed as --format
    /// says: how a record keeps its JSON beside its log.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tune", "compile_only"])]
    pub json_to: Option<std::path::PathBuf>,

    /// Append this run's record to FILE.jsonl, one JSON line: the command as typed (without
    /// --record), its exit status, its wall time in seconds, its report (as --json-to writes
    /// it; null where it printed none) and the one-sentence error it failed with (null where
    /// it passed). A refused command line is recorded too. How the scripts keep their records.
    #[arg(long, value_name = "FILE.jsonl")]
    pub record: Option<std::path::PathBuf>,
}

/// How a run prints its report.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// The block a learner reads.
    #[default]
    Text,
    /// The same report as one JSON object.
    Json,
}

impl Args {
    /// The GPU an emulated run copies and predicts for, and the one whose SMs a step's choice
    /// assumes before a GPU is opened: `--gpu`, else the default profile (the one place that
    /// reads it).
    pub fn profile(&self) -> &'static ptx_model::profile::Profile {
        chosen(self.gpu)
    }

    /// Parses the process's arguments; `extra_help` (the step's parameters, its default shape
    /// and chapter) goes under --help, and the options named in `hidden` (ones the step refuses)
    /// are left out of it. On bad input clap prints one line and exits with status 2.
    pub fn parse_for(about: &str, extra_help: String, hidden: &[&str], option: Option<StepOption>) -> Self {
        crate::record::begin();
        // Every run's compile reports its registers (the emulator's occupancy and time model
        // read them; a GPU run prints them), cached kernel or not.
        crate::gpu::keep_ptxas_reports();
        let command = Self::command_for(about, extra_help, hidden, option);
        let matches = command.try_get_matches().unwrap_or_else(|e| crate::record::refused(e));
        let mut args = Args::from_arg_matches(&matches).unwrap_or_else(|e| crate::record::refused(e));
        if let Err(e) = crate::record::open(args.record.as_deref()) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        args.step_option = option.and_then(|_| matches.get_one::<u32>(STEP_OPTION).copied());
        args
    }

    /// The command [`Args::parse_for`] parses with: the shared options, and the step's own.
    pub fn command_for(
        about: &str,
        extra_help: String,
        hidden: &[&str],
        option: Option<StepOption>,
    ) -> clap::Command {
        let mut cmd = Args::command().about(about.to_owned()).after_help(extra_help);
        for &id in hidden {
            cmd = cmd.mut_arg(id, |a| a.hide(true));
        }
        if let Some(o) = option {
            let (lo, hi) = o.range;
            cmd = cmd.arg(
                clap::Arg::new(STEP_OPTION)
                    .long(o.long)
                    .value_name(o.value_name)
                    .help(o.help)
                    .value_parser(clap::value_parser!(u32).range(i64::from(lo)..=i64::from(hi))),
            );
        }
        cmd
    }

    /// The shape asked for, falling back on `default` for what was not given.
    pub fn shape(&self, default: (usize, usize, usize)) -> (usize, usize, usize) {
        let pick = |one: Option<usize>, d: usize| one.or(self.size).unwrap_or(d);
        (pick(self.m, default.0), pick(self.n, default.1), pick(self.k, default.2))
    }

    /// Options only the GPU steps take: clap's id for each, and the flag as a learner writes it.
    pub const GPU_ONLY: [(&'static str, &'static str); 13] = [
        ("params", "--param"),
        ("tune", "--tune"),
        ("device", "--device"),
        ("no_cublas", "--no-cublas"),
        ("kernel", "--kernel"),
        ("stage", "--stage"),
        ("compile_only", "--compile-only"),
        ("arch", "--arch"),
        ("cubin", "--cubin"),
        ("emulate", "--emulate"),
        ("picture_access", "--picture-access"),
        ("picture_to", "--picture-to"),
        ("every_path", "--every-path"),
    ];

    /// Which of [`Args::GPU_ONLY`] were given.
    pub fn gpu_only_given(&self) -> Vec<&'static str> {
        let given = [
            !self.params.is_empty(),
            self.tune,
            self.device.is_some(),
            self.no_cublas,
            self.kernel.is_some(),
            self.stage.is_some(),
            self.compile_only,
            self.arch.is_some(),
            self.cubin.is_some(),
            self.emulate,
            self.picture_access.is_some(),
            self.picture_to.is_some(),
            self.every_path,
        ];
        Self::GPU_ONLY.iter().zip(given).filter(|(_, g)| *g).map(|((_, flag), _)| *flag).collect()
    }

    /// The GPU to use: --device, or the first.
    pub fn ordinal(&self) -> usize {
        self.device.unwrap_or(0)
    }

    /// The family of random inputs asked for: --inputs, --exact, or the default.
    pub fn family(&self) -> Family {
        match (self.inputs, self.exact) {
            (Some(f), _) => f,
            (None, true) => Family::Integers,
            (None, false) => Family::Uniform,
        }
    }

    /// The flags that give these inputs again at `shape`: the files, or the shape with the
    /// family and seed where they are not the defaults.
    pub fn inputs_flags(&self, shape: crate::matrix::Shape) -> String {
        if let (Some(a), Some(b)) = (&self.a, &self.b) {
            return format!("--a {a} --b {b}");
        }
        let mut f = format!("-m {} -n {} -k {}", shape.m, shape.n, shape.k);
        if self.family() != Family::Uniform {
            f += &format!(" --inputs {}", self.family());
        }
        if self.seed != 42 {
            f += &format!(" --seed {}", self.seed);
        }
        f
    }

    /// True when the user named any dimension.
    pub fn shape_given(&self) -> bool {
        self.size.is_some() || self.m.is_some() || self.n.is_some() || self.k.is_some()
    }
}

/// A dimension from 1 to [`MAX_DIM`], or a sentence saying why not.
pub fn parse_dim(s: &str) -> Result<usize, String> {
    let v: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number; give a dimension from 1 to {MAX_DIM}"))?;
    if v < 1 {
        return Err(format!("a dimension must be at least 1, not {v}"));
    }
    if v > MAX_DIM as i128 {
        return Err(format!(
            "{v} is larger than {MAX_DIM}, the largest `int`, which a kernel takes its M, N and K as"
        ));
    }
    Ok(v as usize)
}

/// A repetition count from 1 to 1 000 000, or a sentence saying why not.
pub fn parse_reps(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (1..=1_000_000).contains(&v) => Ok(v as usize),
        Ok(v) => Err(format!("the repetition count must be from 1 to 1000000, not {v}")),
        Err(_) => Err(format!("'{s}' is not a whole number of repetitions")),
    }
}

/// `--timeout`: seconds, more than 0 and at most a day.
pub fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        Ok(v) => Err(format!("the timeout must be more than 0 and at most 86400 seconds, not {v}")),
        Err(_) => Err(format!("'{s}' is not a number of seconds")),
    }
}

fn parse_param(s: &str) -> Result<(String, u32), String> {
    let (name, value) =
        s.split_once('=').ok_or_else(|| format!("'{s}' is not of the form NAME=VALUE, e.g. TILE=16"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("'{s}' names no parameter; write NAME=VALUE, e.g. TILE=16"));
    }
    let value = match value.trim().parse::<i128>() {
        Ok(v) if (0..=i128::from(u32::MAX)).contains(&v) => v as u32,
        Ok(v) => return Err(format!("the value of {name}, {v}, is outside 0 to {}", u32::MAX)),
        Err(_) => return Err(format!("the value of {name} must be a whole number, not '{value}'")),
    };
    Ok((name.to_owned(), value))
}

fn parse_arch(s: &str) -> Result<String, String> {
    match crate::gpu::LaunchLimits::for_arch(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(format!(
            "'{s}' is not an architecture this course compiles for; choose sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100 or sm_120"
        )),
    }
}

/// The GPU profile a command line chooses: the one `--gpu` named, else the default profile (the
/// one place that reads it; `compare --predicted` chooses through it too).
pub fn chosen(gpu: Option<&'static ptx_model::profile::Profile>) -> &'static ptx_model::profile::Profile {
    gpu.unwrap_or(ptx_model::profile::DEFAULT)
}

/// The profile `s` names (see [`ptx_model::profile::by_name`]), or one sentence naming those
/// known.
pub fn parse_gpu(s: &str) -> Result<&'static ptx_model::profile::Profile, String> {
    ptx_model::profile::by_name(s).ok_or_else(|| {
        format!(
            "'{s}' is no GPU the time model has a profile of; choose {}",
            ptx_model::profile::known_names()
        )
    })
}

fn parse_picture(s: &str) -> Result<ptx_emulator::recording::warp_access::Request, String> {
    ptx_emulator::recording::warp_access::Request::parse(s)
}

/// A block of the grid: `X,Y,Z`.
fn parse_block(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<Option<u32>> = s.split(',').map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        [Some(x), Some(y), Some(z)] => Ok([x, y, z]),
        _ => Err(format!("`{s}` is not a block: give its three coordinates, as 1,0,0")),
    }
}

/// Rounds `FIRST..END`, END not included.
fn parse_rounds(s: &str) -> Result<(u32, u32), String> {
    let range = s.split_once("..").and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match range {
        Some((a, b)) if a < b => Ok((a, b)),
        _ => Err(format!("`{s}` is not a window of rounds: give FIRST..END with FIRST below END, as 0..60")),
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (0..=i128::from(u64::MAX)).contains(&v) => Ok(v as u64),
        _ => Err(format!("the seed must be a whole number from 0 to {}, not '{s}'", u64::MAX)),
    }
}

fn parse_ordinal(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (0..=1024).contains(&v) => Ok(v as usize),
        _ => Err(format!("a GPU is numbered from 0 (the first), not '{s}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("step").chain(args.iter().copied()))
    }

    /// The default window --help states for --timeline-rounds (N items across, a round its
    /// busiest row's items and half an item more) is the one the timeline draws.
    #[test]
    fn the_timeline_rounds_default_is_the_one_the_help_states() {
        use ptx_emulator::recording::timeline::{Timeline, TimelineEvent, What};
        use ptx_pictures::TimelinePicture;
        let help = Args::command().render_long_help().to_string();
        let entry = help.split("--timeline-rounds").nth(1).expect("the option's help");
        let said =
            entry.split("Default:").nth(1).expect("a default stated").split_whitespace().collect::<Vec<_>>();
        let across: f64 = said
            .windows(3)
            .find(|w| w[1] == "items" && w[2] == "across,")
            .and_then(|w| w[0].parse().ok())
            .expect("the items across");
        assert!(entry.contains("half an item of space"), "{entry}");
        // 200 rounds in which the producer issues `items` copies, each to a buffer of its own.
        for items in [1usize, 3] {
            let events = (0..200u32)
                .flat_map(|round| {
                    (0..items).map(move |s| TimelineEvent {
                        round,
                        who: 0,
                        what: What::Issue {
                            bar: 8 * s,
                            phase: round,
                            dst: 0,
                            bytes: 16,
                            tensor: 0,
                            blocks: 1,
                        },
                    })
                })
                .collect();
            let t = Timeline { rounds: 200, events, warps: 4, ..Timeline::default() };
            let fit = (across / (items as f64 + 0.5)).floor() as u32;
            assert_eq!(t.window(None), Ok((0, fit)), "{items} items a round, {across} across");
        }
    }

    #[test]
    fn the_timeline_takes_a_file_a_block_and_a_window_with_emulate() {
        let a = parse(&[
            "--emulate",
            "--picture-timeline",
            "t.svg",
            "--timeline-block",
            "1,0,0",
            "--timeline-rounds",
            "3..9",
        ])
        .unwrap();
        assert_eq!(a.picture_timeline, Some("t.svg".into()));
        assert_eq!((a.timeline_block, a.timeline_rounds), (Some([1, 0, 0]), Some((3, 9))));
        assert!(parse(&["--picture-timeline", "t.svg"]).is_err(), "needs --emulate");
        assert_eq!(
            parse_block("1,2").unwrap_err(),
            "`1,2` is not a block: give its three coordinates, as 1,0,0"
        );
        assert_eq!(
            parse_rounds("9..3").unwrap_err(),
            "`9..3` is not a window of rounds: give FIRST..END with FIRST below END, as 0..60"
        );
    }

    /// `--every-path` runs the step's own cases: a shape, a parameter or inputs of the command
    /// line would be ignored, so they are refused with it; what each case runs with is taken.
    #[test]
    fn every_path_takes_no_shape_of_its_own() {
        let a = parse(&["--every-path", "--emulate", "--kernel", "k.cu", "--seed", "3"]).unwrap();
        assert!(a.every_path && a.emulate && a.kernel.is_some());
        for bad in [
            &["-m", "5"][..],
            &["--size", "64"],
            &["--param", "BM=64"],
            &["--inputs", "normal"],
            &["--scaled"],
        ] {
            let args: Vec<&str> = ["--every-path", "--emulate"].iter().chain(bad).copied().collect();
            let e = parse(&args).unwrap_err().to_string();
            assert!(e.contains("cannot be used with"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.shape((4096, 4096, 4096)), (4096, 4096, 4096));
        assert!(!a.shape_given());
        assert_eq!((a.seed, a.device, a.reps), (42, None, None));
        assert!(!a.no_verify && !a.no_cublas && !a.exact && a.params.is_empty());
        assert_eq!(a.family(), Family::Uniform);
    }

    /// `--timeout` takes seconds above 0 and up to a day, and refuses the rest in a sentence.
    #[test]
    fn the_timeout_is_positive_seconds() {
        assert_eq!(parse(&["--timeout", "2.5"]).unwrap().timeout, Some(2.5));
        assert_eq!(parse(&[]).unwrap().timeout, None);
        for bad in ["0", "-1", "1e9", "soon"] {
            let e = parse(&["--timeout", bad]).unwrap_err().to_string();
            assert!(e.contains("seconds"), "--timeout {bad}: {e}");
        }
    }

    #[test]
    fn inputs_families_and_files() {
        assert_eq!(parse(&["--inputs", "wide:12"]).unwrap().family(), Family::Wide(12));
        assert_eq!(parse(&["--exact"]).unwrap().family(), Family::Integers);
        let e = parse(&["--inputs", "zipf"]).unwrap_err().to_string();
        assert!(e.contains("not a family of inputs"), "{e}");
        assert!(parse(&["--inputs", "gram", "--exact"]).is_err());
        let a = parse(&["--a", "a.npy", "--b", "w.safetensors:w", "--save-c", "c.npy"]).unwrap();
        assert_eq!((a.a.as_deref(), a.b.as_deref()), (Some("a.npy"), Some("w.safetensors:w")));
        assert!(parse(&["--a", "a.npy"]).is_err());
        assert!(parse(&["--b", "b.npy"]).is_err());
        assert!(parse(&["--a", "a.npy", "--b", "b.npy", "--inputs", "normal"]).is_err());
    }

    #[test]
    fn size_and_single_dimensions() {
        let a = parse(&["--size", "128", "-k", "7"]).unwrap();
        assert_eq!(a.shape((1, 1, 1)), (128, 128, 7));
        let a = parse(&["-m", "3", "-n", "5", "-k", "9"]).unwrap();
        assert_eq!(a.shape((4096, 4096, 4096)), (3, 5, 9));
        assert!(a.shape_given());
    }

    #[test]
    fn flags_and_params() {
        let a = parse(&[
            "--reps",
            "5",
            "--seed",
            "9",
            "--no-verify",
            "--no-cublas",
            "--exact",
            "--device",
            "1",
            "--param",
            "TILE=16",
            "--param",
            "BM=64",
        ])
        .unwrap();
        assert_eq!((a.reps, a.seed, a.device), (Some(5), 9, Some(1)));
        assert!(a.no_verify && a.no_cublas && a.exact);
        assert_eq!(a.params, vec![("TILE".to_owned(), 16), ("BM".to_owned(), 64)]);
    }

    #[test]
    fn rejects_bad_values_with_a_sentence() {
        for (args, says) in [
            (&["--size", "0"][..], "at least 1"),
            (&["--size", "-4"][..], "at least 1"),
            (&["-m", "abc"][..], "not a whole number"),
            (&["--size", "1.5"][..], "not a whole number"),
            (&["-k", "99999999999"][..], "larger than 2147483647, the largest `int`"),
            (&["--reps", "0"][..], "from 1 to"),
            (&["--param", "TILE"][..], "NAME=VALUE"),
            (&["--param", "TILE=x"][..], "whole number"),
            (&["--param", "=3"][..], "names no parameter"),
            (&["--param", "TILE=99999999999"][..], "outside 0 to 4294967295"),
            (&["--param", "TILE=-1"][..], "outside 0 to"),
            (&["--seed", "-1"][..], "the seed must be a whole number from 0"),
            (&["--seed", "x"][..], "the seed must be a whole number from 0"),
            (&["--device", "-1"][..], "numbered from 0"),
            (&["--compile-only", "--arch", "90"][..], "not an architecture this course compiles for"),
            (&["--compile-only", "--arch", "sm_60"][..], "not an architecture this course compiles for"),
            (
                &["--emulate", "--gpu", "B200"][..],
                "'B200' is no GPU the time model has a profile of; choose H100, H200 or H100-PCIe",
            ),
            (&["--bogus"][..], "unexpected argument"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }

    /// `--gpu` chooses a profile by its name or the driver's, exactly first; without it the
    /// command line's profile is the default one.
    #[test]
    fn the_gpu_is_chosen_once_by_name() {
        let chosen = |args: &[&str]| parse(args).unwrap().profile().name;
        assert_eq!(chosen(&["--emulate", "--gpu", "h100-pcie"]), "H100-PCIe");
        assert_eq!(chosen(&["--emulate", "--gpu", "NVIDIA H100 PCIe"]), "H100-PCIe");
        assert_eq!(chosen(&["--emulate", "--gpu", "H200"]), "H200");
        assert_eq!(chosen(&["--emulate"]), "H100");
        assert_eq!(parse(&["--emulate", "--gpu", "h100-pcie"]).unwrap().profile().machine.sms, 114);
    }

    /// A dimension of millions is taken as it is (what does not fit is refused by the shape and
    /// the memory check, naming it); one past the largest `int` is refused, naming the `int`.
    #[test]
    fn dimensions_of_millions_are_taken_and_one_past_an_int_is_refused() {
        for (m, n, k) in [(1_724_256, 132, 2), (13_074_999, 2, 1), (1 << 21, 8, 8)] {
            let [ms, ns, ks] = [m, n, k].map(|v: usize| v.to_string());
            let a = parse(&["-m", &ms, "-n", &ns, "-k", &ks]).unwrap();
            assert_eq!(a.shape((1, 1, 1)), (m, n, k));
            assert!(crate::matrix::Shape::new(m, n, k).is_ok(), "{m}×{n}×{k}");
        }
        assert_eq!(parse_dim("2147483647"), Ok(2_147_483_647));
        let e = parse_dim("2147483648").unwrap_err();
        assert!(e.contains("largest `int`") && !e.contains('\n'), "{e}");
        // A matrix past 2^31 elements is a shape (the kernels compile wide for it); one past
        // any memory is refused by the shape, naming it.
        assert!(crate::matrix::Shape::new(3_000_000, 1000, 1).is_ok_and(|s| s.wide()));
        let e = crate::matrix::Shape::new(2_000_000_000, 2_000_000_000, 1).unwrap_err();
        assert!(e.contains("C would have 2000000000×2000000000 elements") && e.contains("2^48"), "{e}");
    }

    #[test]
    fn options_a_step_refuses_are_left_out_of_its_help() {
        let help =
            Args::command_for("x", String::new(), &["params", "tune"], None).render_long_help().to_string();
        assert!(!help.contains("--param") && !help.contains("--tune") && help.contains("--size"), "{help}");
    }

    /// A step's own option is offered by its command alone, parsed within its range.
    #[test]
    fn a_steps_own_option_is_its_alone() {
        fn apply(n: u32, params: &mut Vec<(String, u32)>) {
            params.push(("COUNT".to_owned(), n));
        }
        let option = StepOption { long: "count", value_name: "N", help: "how many", range: (2, 16), apply };
        let cmd = || Args::command_for("x", String::new(), &[], Some(option));
        assert!(cmd().render_long_help().to_string().contains("--count <N>"));
        let m = cmd().try_get_matches_from(["x", "--count", "5"]).unwrap();
        assert_eq!(m.get_one::<u32>(STEP_OPTION), Some(&5));
        let err = cmd().try_get_matches_from(["x", "--count", "17"]).unwrap_err().to_string();
        assert!(err.contains("17"), "{err}");
        let plain = Args::command_for("x", String::new(), &[], None);
        assert!(plain.try_get_matches_from(["x", "--count", "5"]).is_err(), "another step takes no --count");
    }

    #[test]
    fn help_explains_every_option() {
        let help = Args::command().render_long_help().to_string();
        for opt in [
            "--size",
            "-m",
            "-n",
            "-k",
            "--reps",
            "--seed",
            "--exact",
            "--no-verify",
            "--no-cublas",
            "--device",
            "--param",
            "--kernel",
            "--compile-only",
            "--arch",
            "--cubin",
        ] {
            assert!(help.contains(opt), "{opt} missing from --help");
        }
    }
}
