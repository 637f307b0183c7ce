//! Matrices read from files a learner brings (`.npy`, `.safetensors`) and C written back as
//! `.npy`, through maintained crates (`npyz`, `safetensors`): f32, f16, bf16 and f64 values are
//! converted to f32, C (row-major) and Fortran (column-major) order are both read.
//!
//! A file is named `PATH.npy`, or `PATH.safetensors:TENSOR` (the tensor's name may be left out
//! when the file holds one tensor). Anything that cannot be read as a matrix is refused with one
//! sentence that names the file and what is wrong.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use npyz::{DType, NpyFile, Order, TypeChar, WriterBuilder};

use crate::matrix::Matrix;

/// A matrix read from a file, and how its values became f32: None for f32 values, else what
/// they were and what the conversion did to them (f64 rounds; f16 and bf16 widen exactly).
#[derive(Debug)]
pub struct Read {
    pub matrix: Matrix,
    pub converted: Option<String>,
}

impl Read {
    /// The file as a report names it: `spec`, and how its values became f32 where they were not.
    pub fn named(&self, spec: &str) -> String {
        match &self.converted {
            Some(how) => format!("{spec} ({how})"),
            None => spec.to_owned(),
        }
    }
}

/// Reads one matrix from `spec` (see the module docs); `name` ("A" or "B") goes into the errors.
pub fn read_matrix(spec: &str, name: &str) -> Result<Read> {
    if let Some((path, tensor)) = split_safetensors(spec) {
        return read_safetensors(path, tensor, name);
    }
    if spec.ends_with(".npy") {
        return read_npy(Path::new(spec), name);
    }
    bail!(
        "{name} from '{spec}': the course reads matrices from .npy files and from .safetensors files (FILE.safetensors:TENSOR)"
    )
}

/// `PATH.safetensors` or `PATH.safetensors:TENSOR` split into the path and the tensor's name.
fn split_safetensors(spec: &str) -> Option<(&str, Option<&str>)> {
    const EXT: &str = ".safetensors";
    let at = spec.find(EXT)? + EXT.len();
    match &spec[at..] {
        "" => Some((spec, None)),
        rest => rest.strip_prefix(':').map(|t| (&spec[..at], Some(t))),
    }
}

fn open(path: &Path, name: &str) -> Result<File> {
    File::open(path).map_err(|e| anyhow!("{name} from {}: the file cannot be opened ({e})", path.display()))
}

fn read_npy(path: &Path, name: &str) -> Result<Read> {
    let what = format!("{name} from {}", path.display());
    let npy = NpyFile::new(BufReader::new(open(path, name)?))
        .map_err(|e| anyhow!("{what}: not a readable .npy file ({e})"))?;
    let (rows, cols) = rank_two(npy.shape(), &what)?;
    let fortran = npy.order() == Order::Fortran;
    let DType::Plain(ty) = npy.dtype() else {
        bail!("{what}: a structured array; give a plain array of f32, f16, bf16 or f64 values")
    };
    if let Some(found) = npy_data_bytes(path) {
        let expected = (rows as u64).saturating_mul(cols as u64).saturating_mul(ty_size(&npy.dtype()));
        if found < expected {
            bail!(
                "{what}: its header gives {rows}×{cols} values, {expected} bytes, but the file holds {found} bytes after the header (cut short, or a header that claims too much)"
            );
        }
    }
    let unreadable = |e: std::io::Error| anyhow!("{what}: the values cannot be read ({e})");
    let (values, converted): (Vec<f32>, _) = match (ty.type_char(), ty.size_field()) {
        (TypeChar::Float, 4) => (npy.into_vec::<f32>().map_err(unreadable)?, None),
        (TypeChar::Float, 8) => to_f32(npy.into_vec::<f64>().map_err(unreadable)?, &what)?,
        (TypeChar::Float, 2) => (
            npy.into_vec::<half::f16>().map_err(unreadable)?.into_iter().map(f32::from).collect(),
            Some(WIDENED_F16.to_owned()),
        ),
        // NumPy has no bf16 type: ml_dtypes' bfloat16 arrays are saved as two-byte raw values.
        (TypeChar::RawData, 2) => (
            npy.into_vec::<npyz::FixedSizeBytes<2>>()
                .map_err(unreadable)?
                .into_iter()
                .map(|b| half::bf16::from_le_bytes(b.0).to_f32())
                .collect(),
            Some(WIDENED_BF16.to_owned()),
        ),
        _ => bail!("{what}: values of type '{ty}'; the course reads f32, f16, bf16 and f64 values"),
    };
    Ok(Read { matrix: row_major(values, rows, cols, fortran), converted })
}

const WIDENED_F16: &str = "f16 values, each exact in f32";
const WIDENED_BF16: &str = "bf16 values, each exact in f32";

/// The bytes of an element of `dtype` (1 for a structured array, which is refused after).
fn ty_size(dtype: &DType) -> u64 {
    match dtype {
        DType::Plain(ty) => ty.num_bytes().unwrap_or(1) as u64,
        _ => 1,
    }
}

/// The bytes of a `.npy` file after its header (the format's magic, version, header length and
/// header), or None where the file cannot be read that far.
fn npy_data_bytes(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = [0u8; 12];
    let mut file = File::open(path).ok()?;
    file.read_exact(&mut head).ok()?;
    let header = match head[6] {
        1 => 10 + u64::from(u16::from_le_bytes([head[8], head[9]])),
        _ => 12 + u64::from(u32::from_le_bytes([head[8], head[9], head[10], head[11]])),
    };
    file.metadata().ok()?.len().checked_sub(header)
}

fn read_safetensors(path: &str, tensor: Option<&str>, name: &str) -> Result<Read> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow!("{name} from {path}: the file cannot be read ({e})"))?;
    let file =
        safetensors::SafeTensors::deserialize(&bytes).map_err(|e| match safetensors_mismatch(&bytes) {
            Some(why) => anyhow!("{name} from {path}: {why}"),
            None => anyhow!("{name} from {path}: not a readable .safetensors file ({e:?})"),
        })?;
    let mut names = file.names();
    names.sort();
    let tensor = match tensor {
        Some(t) => t,
        None if names.len() == 1 => names[0],
        None => bail!(
            "{name} from {path}: the file holds {} tensors ({}); name one as {path}:TENSOR",
            names.len(),
            names.join(", ")
        ),
    };
    let what = format!("{name} from {path}:{tensor}");
    let view = file
        .tensor(tensor)
        .map_err(|_| anyhow!("{what}: the file has no tensor of that name (it has {})", names.join(", ")))?;
    let shape: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
    let (rows, cols) = rank_two(&shape, &what)?;
    let data = view.data();
    use safetensors::Dtype;
    let (values, converted): (Vec<f32>, _) = match view.dtype() {
        Dtype::F32 => {
            (data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(), None)
        }
        Dtype::F64 => to_f32(
            data.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect(),
            &what,
        )?,
        Dtype::F16 => (
            data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            Some(WIDENED_F16.to_owned()),
        ),
        Dtype::BF16 => (
            data.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            Some(WIDENED_BF16.to_owned()),
        ),
        other => bail!("{what}: values of type {other:?}; the course reads F32, F16, BF16 and F64 tensors"),
    };
    Ok(Read { matrix: row_major(values, rows, cols, false), converted })
}

/// Why a `.safetensors` file whose header reads is not whole: a tensor whose shape and type need
/// other bytes than its offsets give, or offsets past the end of the file, with the bytes
/// expected and found; None where the header itself does not read.
fn safetensors_mismatch(bytes: &[u8]) -> Option<String> {
    let n = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let header: serde_json::Value =
        serde_json::from_slice(bytes.get(8..8usize.checked_add(n as usize)?)?).ok()?;
    let found = bytes.len() as u64 - 8 - n;
    let mut furthest = 0;
    for (tensor, info) in header.as_object()?.iter().filter(|(k, _)| *k != "__metadata__") {
        let size = match info.get("dtype")?.as_str()? {
            "F64" | "I64" | "U64" => 8,
            "F32" | "I32" | "U32" => 4,
            "F16" | "BF16" | "I16" | "U16" => 2,
            _ => 1,
        };
        let shape: Vec<u64> =
            info.get("shape")?.as_array()?.iter().map(|d| d.as_u64()).collect::<Option<_>>()?;
        let offsets: Vec<u64> =
            info.get("data_offsets")?.as_array()?.iter().map(|d| d.as_u64()).collect::<Option<_>>()?;
        let (&begin, &end) = (offsets.first()?, offsets.get(1)?);
        let need = shape.iter().product::<u64>() * size;
        if end.checked_sub(begin) != Some(need) {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            return Some(format!(
                "tensor {tensor}'s header gives a {} matrix of {need} bytes, but its offsets hold {} bytes",
                dims.join("×"),
                end.saturating_sub(begin)
            ));
        }
        furthest = furthest.max(end);
    }
    (furthest > found).then(|| {
        format!(
            "its header gives {furthest} bytes of tensors, but the file holds {found} bytes after the header (cut short, or a header that claims too much)"
        )
    })
}

/// The two dimensions of a rank-two array, or a sentence saying why it is not a matrix.
fn rank_two(shape: &[u64], what: &str) -> Result<(usize, usize)> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    match *shape {
        [rows, cols] if rows > 0 && cols > 0 => Ok((rows as usize, cols as usize)),
        [_, _] => bail!(
            "{what}: the array is {} and has no elements; a matrix needs at least one row and one column",
            dims.join("×")
        ),
        _ => bail!(
            "{what}: an array of rank {} ({}); a matrix has rank 2 (rows × columns)",
            shape.len(),
            if dims.is_empty() { "a scalar".to_owned() } else { dims.join("×") }
        ),
    }
}

/// f64 values rounded to f32, with how many the rounding changed; a finite value beyond f32's
/// range is refused rather than turned into ∞.
fn to_f32(values: Vec<f64>, what: &str) -> Result<(Vec<f32>, Option<String>)> {
    if let Some((i, v)) =
        values.iter().enumerate().find(|(_, v)| v.is_finite() && v.abs() > f64::from(f32::MAX))
    {
        bail!(
            "{what}: the value {v:e} (element {i}) is beyond f32's range (±3.4e38); scale the matrix first"
        );
    }
    let rounded: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let changed = values.iter().zip(&rounded).filter(|&(&v, &r)| f64::from(r) != v && !v.is_nan()).count();
    let note = format!("f64 values rounded to f32, {changed} of {} changed by it", values.len());
    Ok((rounded, Some(note)))
}

fn row_major(values: Vec<f32>, rows: usize, cols: usize, fortran: bool) -> Matrix {
    let data = if fortran {
        // Column-major: element (r, c) is at c·rows + r.
        let mut out = vec![0.0f32; rows * cols];
        for (c, column) in values.chunks_exact(rows).enumerate() {
            for (r, &v) in column.iter().enumerate() {
                out[r * cols + c] = v;
            }
        }
        out
    } else {
        values
    };
    Matrix { rows, cols, data }
}

/// Writes a row-major `rows`×`cols` f32 matrix as a `.npy` file (C order).
pub fn write_npy(path: &Path, rows: usize, cols: usize, data: &[f32]) -> Result<()> {
    if path.extension().is_none_or(|e| e != "npy") {
        bail!("C is written as a .npy file: name it FILE.npy, not {}", path.display());
    }
    let file = File::create(path).map_err(|e| anyhow!("C cannot be written to {}: {e}", path.display()))?;
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[rows as u64, cols as u64])
        .writer(BufWriter::new(file))
        .begin_nd()
        .with_context(|| format!("writing C to {}", path.display()))?;
    writer.extend(data.iter().copied()).with_context(|| format!("writing C to {}", path.display()))?;
    writer.finish().with_context(|| format!("writing C to {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("matmul-files-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], order: Order, values: &[T]) {
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .order(order)
            .writer(BufWriter::new(File::create(path).unwrap()))
            .begin_nd()
            .unwrap();
        w.extend(values.iter().copied()).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn npy_round_trip_in_every_type_and_order() {
        let d = dir();
        let want = Matrix { rows: 2, cols: 3, data: vec![1.0, -2.5, 3.0, 0.5, 4.0, -6.0] };
        let p = d.join("c.npy");
        write_npy(&p, 2, 3, &want.data).unwrap();
        assert_eq!(read_matrix(p.to_str().unwrap(), "A").unwrap().matrix, want);
        // f64 and f16, C order; f32 in Fortran order (columns first).
        let f64s: Vec<f64> = want.data.iter().map(|&v| f64::from(v)).collect();
        npy(&d.join("d.npy"), &[2, 3], Order::C, &f64s);
        let f64_read = read_matrix(d.join("d.npy").to_str().unwrap(), "A").unwrap();
        assert_eq!(f64_read.matrix, want);
        assert_eq!(f64_read.converted.as_deref(), Some("f64 values rounded to f32, 0 of 6 changed by it"));
        // Values f32 cannot hold exactly are counted.
        npy(&d.join("d3.npy"), &[1, 3], Order::C, &[0.1f64, 0.5, 1.0 / 3.0]);
        let third = read_matrix(d.join("d3.npy").to_str().unwrap(), "A").unwrap();
        assert_eq!(third.converted.as_deref(), Some("f64 values rounded to f32, 2 of 3 changed by it"));
        let f16s: Vec<half::f16> = want.data.iter().map(|&v| half::f16::from_f32(v)).collect();
        npy(&d.join("h.npy"), &[2, 3], Order::C, &f16s);
        let f16_read = read_matrix(d.join("h.npy").to_str().unwrap(), "A").unwrap();
        assert_eq!((f16_read.matrix, f16_read.converted.as_deref()), (want.clone(), Some(WIDENED_F16)));
        let columns = [1.0f32, 0.5, -2.5, 4.0, 3.0, -6.0];
        npy(&d.join("f.npy"), &[2, 3], Order::Fortran, &columns);
        let f32_read = read_matrix(d.join("f.npy").to_str().unwrap(), "A").unwrap();
        assert_eq!((f32_read.matrix, f32_read.converted), (want, None));
    }

    #[test]
    fn safetensors_in_every_type_by_name() {
        let d = dir();
        let p = d.join("m.safetensors");
        let vals = [1.0f32, -2.5, 3.0, 0.5];
        let f32b: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let bf16b: Vec<u8> = vals.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect();
        let f64b: Vec<u8> = vals.iter().flat_map(|&v| f64::from(v).to_le_bytes()).collect();
        use safetensors::{Dtype, tensor::TensorView};
        let tensors = [
            ("w", TensorView::new(Dtype::F32, vec![2, 2], &f32b).unwrap()),
            ("wb", TensorView::new(Dtype::BF16, vec![1, 4], &bf16b).unwrap()),
            ("wd", TensorView::new(Dtype::F64, vec![4, 1], &f64b).unwrap()),
            ("v", TensorView::new(Dtype::F32, vec![4], &f32b).unwrap()),
        ];
        std::fs::write(&p, safetensors::serialize(tensors, None).unwrap()).unwrap();
        let s = p.to_str().unwrap();
        assert_eq!(read_matrix(&format!("{s}:w"), "A").unwrap().matrix.data, vals);
        let m = read_matrix(&format!("{s}:wb"), "A").unwrap().matrix;
        assert_eq!((m.rows, m.cols, m.data.as_slice()), (1, 4, vals.as_slice()));
        let wd = read_matrix(&format!("{s}:wd"), "A").unwrap();
        assert_eq!(
            (wd.matrix.rows, wd.converted.as_deref()),
            (4, Some("f64 values rounded to f32, 0 of 4 changed by it"))
        );
        let err = |spec: String| read_matrix(&spec, "B").unwrap_err().to_string();
        assert!(err(format!("{s}:v")).contains("rank 1"), "{}", err(format!("{s}:v")));
        assert!(err(format!("{s}:nope")).contains("no tensor of that name"));
        assert!(err(s.to_owned()).contains("holds 4 tensors"));
    }

    /// `bytes` with the first `from` made `to`, of the same length (a header edited in place).
    fn replaced(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = bytes.windows(from.len()).position(|w| w == from).expect("the header holds it");
        let mut out = bytes.to_vec();
        out[at..at + to.len()].copy_from_slice(to);
        out
    }

    /// A file cut short, or whose header claims more values than it holds, is named with the
    /// bytes its header needs and the bytes it has, in one sentence, in both formats.
    #[test]
    fn cut_and_lying_files_name_the_bytes_expected_and_found() {
        let d = dir();
        let err = |p: &Path| read_matrix(p.to_str().unwrap(), "A").unwrap_err().to_string();
        let whole = d.join("whole.npy");
        npy(&whole, &[8, 8], Order::C, &[1.0f32; 64]);
        let bytes = std::fs::read(&whole).unwrap();
        let cut = d.join("cut.npy");
        std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
        let e = err(&cut);
        assert!(e.contains("cut.npy") && e.contains("256 bytes") && e.contains("holds 156 bytes"), "{e}");
        // A header that claims 16 rows of the file's 8 (the same header length).
        let lying = d.join("lying.npy");
        std::fs::write(&lying, replaced(&bytes, b"(8, 8, )", b"(16,8, )")).unwrap();
        let e = err(&lying);
        assert!(e.contains("lying.npy") && e.contains("16×8") && e.contains("512 bytes"), "{e}");
        assert!(e.contains("holds 256 bytes") && !e.contains('\n'), "{e}");

        use safetensors::{Dtype, tensor::TensorView};
        let f32b: Vec<u8> = [1.0f32; 6].iter().flat_map(|v| v.to_le_bytes()).collect();
        let tensors = [("w", TensorView::new(Dtype::F32, vec![2, 3], &f32b).unwrap())];
        let st = safetensors::serialize(tensors, None).unwrap();
        let cut = d.join("cut.safetensors");
        std::fs::write(&cut, &st[..st.len() - 8]).unwrap();
        let e = err(&cut);
        assert!(e.contains("cut.safetensors") && e.contains("24 bytes") && e.contains("holds 16"), "{e}");
        let lying = d.join("lying.safetensors");
        std::fs::write(&lying, replaced(&st, b"[2,3]", b"[4,3]")).unwrap();
        let e = err(&lying);
        assert!(e.contains("4×3 matrix of 48 bytes") && e.contains("offsets hold 24 bytes"), "{e}");
    }

    #[test]
    fn wrong_files_are_refused_in_one_sentence() {
        let d = dir();
        let err = |spec: &str| read_matrix(spec, "A").unwrap_err().to_string();
        let missing = d.join("missing.npy");
        assert!(err(missing.to_str().unwrap()).contains("cannot be opened"));
        assert!(err("x.csv").contains(".npy files"));
        npy(&d.join("r3.npy"), &[2, 2, 2], Order::C, &[0f32; 8]);
        assert!(err(d.join("r3.npy").to_str().unwrap()).contains("rank 3"));
        npy(&d.join("i.npy"), &[2, 2], Order::C, &[1i32; 4]);
        assert!(err(d.join("i.npy").to_str().unwrap()).contains("f32, f16, bf16 and f64"));
        npy(&d.join("e.npy"), &[0, 3], Order::C, &[0f32; 0]);
        assert!(err(d.join("e.npy").to_str().unwrap()).contains("no elements"));
        npy(&d.join("big.npy"), &[1, 2], Order::C, &[1.0f64, 1e300]);
        assert!(err(d.join("big.npy").to_str().unwrap()).contains("beyond f32's range"));
        std::fs::write(d.join("junk.npy"), b"not an array").unwrap();
        assert!(err(d.join("junk.npy").to_str().unwrap()).contains("not a readable .npy"));
        for e in [err("x.csv"), err(d.join("junk.npy").to_str().unwrap())] {
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(write_npy(&d.join("c.txt"), 1, 1, &[0.0]).unwrap_err().to_string().contains(".npy"));
    }
}
