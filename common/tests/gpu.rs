//! The baseline and the reference on a real GPU.

use common::cublas::Blas;
use common::measure::{self, Buffers, Recipe};
use common::{Inputs, Precision, Shape, gpu, reference, verify};

/// Shapes from K = 1 to K = 2²⁰, small and large, on which the baselines meet their limits.
const BASELINE_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (7, 3, 5),
    (33, 65, 17),
    (129, 257, 1000),
    (1000, 17, 1),
    (1024, 1024, 1),
    (64, 64, 65536),
    (2, 2, 65536),
    (16, 16, 1 << 20),
    (1, 1, 1 << 20),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
];

/// Runs `blas`'s product on every baseline shape, random and exact inputs, and holds it to
/// `precision`'s limits with room.
fn baseline_passes(gpu: &gpu::Gpu, blas: &Blas, name: &str, precision: Precision) {
    for &(m, n, k) in BASELINE_SHAPES {
        let shape = Shape::new(m, n, k).unwrap();
        for exact in [false, true] {
            let inputs = Inputs::new(shape, 77, exact);
            let bufs = Buffers::upload(gpu, &inputs).unwrap();
            let (c, _) = measure::measure_cublas(gpu, blas, &bufs, Recipe::checked()).unwrap();
            let reference =
                if m * n * k <= 1 << 24 { reference::cpu(&inputs) } else { blas.reference(&inputs).unwrap() };
            let v = verify::verify(shape, &c, &reference, precision);
            println!("{name} {shape} exact={exact}: {}", v.summary());
            assert!(v.passed(), "{shape}: {}", v.summary());
            assert!(v.normwise.ratio() < verify::ROOM, "{shape}: {}", v.summary());
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and cuBLAS"]
fn gpu_cublas_sgemm_passes_both_limits_with_room_up_to_k_2_20() {
    let gpu = gpu::open("common", 0).unwrap();
    baseline_passes(&gpu, &Blas::new(gpu.stream.clone()).unwrap(), "cuBLAS SGEMM", Precision::Fp32);
}

/// cuBLAS with TF32 tensor-op math, held to TF32's limits (rounded to nearest).
#[test]
#[ignore = "needs an NVIDIA GPU and cuBLAS"]
fn gpu_cublas_tf32_passes_tf32_limits_with_room_up_to_k_2_20() {
    let gpu = gpu::open("common", 0).unwrap();
    baseline_passes(&gpu, &Blas::tf32(gpu.stream.clone()).unwrap(), "cuBLAS TF32", Precision::Tf32);
}

/// Every product among FP32's subnormals, C normal (`tiny:66`), at several K and shapes up to
/// 4096³: cuBLAS SGEMM passes FP32's limits with room, and cuBLAS TF32 (TF32 operands: the fault
/// the check exists for) fails them.
#[test]
#[ignore = "needs an NVIDIA GPU and cuBLAS"]
fn gpu_cublas_sgemm_passes_on_subnormal_products_and_tf32_fails() {
    use common::matrix::Family;
    let gpu = gpu::open("common", 0).unwrap();
    let (sgemm, tf32) = (Blas::new(gpu.stream.clone()).unwrap(), Blas::tf32(gpu.stream.clone()).unwrap());
    for (m, n, k) in [(256, 256, 256), (1000, 17, 1000), (64, 64, 65536), (4096, 4096, 4096)] {
        let inputs = Inputs::family(Shape::new(m, n, k).unwrap(), 79, Family::Tiny(66));
        let bufs = Buffers::upload(&gpu, &inputs).unwrap();
        let reference = sgemm.reference(&inputs).unwrap();
        let (c, _) = measure::measure_cublas(&gpu, &sgemm, &bufs, Recipe::checked()).unwrap();
        let v = verify::verify(inputs.shape, &c, &reference, Precision::Fp32);
        println!("cuBLAS SGEMM tiny:66 {}: {}", inputs.shape, v.summary());
        assert!(v.passed() && v.normwise.ratio() < verify::ROOM, "{}: {}", inputs.shape, v.summary());
        let (c, _) = measure::measure_cublas(&gpu, &tf32, &bufs, Recipe::checked()).unwrap();
        let v = verify::verify(inputs.shape, &c, &reference, Precision::Fp32);
        println!("cuBLAS TF32 held to FP32, tiny:66 {}: {}", inputs.shape, v.summary());
        assert!(!v.passed(), "TF32 passed as FP32 at {}: {}", inputs.shape, v.summary());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and cuBLAS"]
fn gpu_dgemm_reference_agrees_with_the_cpu_reference() {
    let gpu = gpu::open("common", 0).unwrap();
    let blas = Blas::new(gpu.stream.clone()).unwrap();
    let shape = Shape::new(300, 200, 500).unwrap();
    let inputs = Inputs::random(shape, 78);
    let on_gpu = blas.reference(&inputs).unwrap();
    let on_cpu = reference::cpu(&inputs);
    for (x, y) in on_gpu.c.iter().zip(&on_cpu.c).chain(on_gpu.abs.iter().zip(&on_cpu.abs)) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_device_facts_are_plausible() {
    let gpu = gpu::open("common", 0).unwrap();
    let d = &gpu.info;
    assert!(d.sms > 0 && d.clock_mhz > 500 && d.limits.max_threads_per_block >= 1024);
    assert!(d.limits.max_smem_per_block >= 48 * 1024);
    assert!(d.peak_gflops() > 1000.0, "{d:?}");
}

/// NVML finds the GPU the driver opened, and the clock it reads under a timed product lies
/// between 200 MHz and the GPU's top clock, at a plausible power.
#[test]
#[ignore = "needs an NVIDIA GPU, cuBLAS and NVML"]
fn gpu_the_clock_is_read_while_a_product_is_timed() {
    let gpu = gpu::open("common", 0).unwrap();
    let clocks = gpu.clocks.as_ref().expect("NVML reads the GPU");
    let (idle_mhz, idle_watts) = clocks.read().unwrap();
    println!("before: {idle_mhz} MHz, {idle_watts:.0} W");
    // The driver of the course's GPUs (580) gives the instant power, not only a second's mean.
    assert!(clocks.instant_watts().is_some(), "NVML gives no instant power here");
    let blas = Blas::tf32(gpu.stream.clone()).unwrap();
    let bufs = Buffers::upload(&gpu, &Inputs::new(Shape::square(4096).unwrap(), 5, false)).unwrap();
    let sampling = common::timing::Sampling::new(Some(40));
    let (_, t) = measure::measure_cublas(&gpu, &blas, &bufs, Recipe::timed(sampling, false)).unwrap();
    let held = t.unwrap().held.expect("read while timed");
    println!("while timed: {held:?}");
    let top = f64::from(gpu.info.clock_mhz) + 1.0;
    assert!(held.sm_mhz > 200.0 && held.sm_mhz <= top, "{held:?} against a top clock of {top} MHz");
    assert!(held.watts > 50.0 && held.watts < 2000.0 && held.readings >= 10, "{held:?}");
}

#[test]
#[ignore = "needs libnvrtc"]
fn nvrtc_compile_errors_show_the_log_with_the_file_name() {
    let broken = "extern \"C\" __global__ void matmul(int M) { undefined_name = M; }";
    let err = gpu::compile(broken, "stepXX/src/kernel.cu", "sm_90", &[]).unwrap_err().to_string();
    assert!(err.contains("stepXX/src/kernel.cu"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");
    assert!(err.contains("does not compile for sm_90"), "{err}");
}

#[test]
#[ignore = "needs a machine without libnvrtc"]
fn without_the_compiler_library_says_how_to_get_nvrtc() {
    assert!(!gpu::nvrtc_present(), "this machine has NVRTC; run this test where it has not");
    let err = gpu::compile("", "x.cu", "sm_90", &[]).unwrap_err().to_string();
    assert!(err.contains("nvidia-cuda-nvrtc") && err.contains("LD_LIBRARY_PATH"), "{err}");
}
