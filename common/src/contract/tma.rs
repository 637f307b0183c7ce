//! Tensor maps, the contract's extension for Hopper: the tensor memory accelerator (TMA) copies tiles
//! described by a tensor map, which the host encodes through the driver and passes by value
//! after the six standard arguments:
//!
//! ```text
//! matmul(int M, int N, int K, const float* A, const float* B, float* C,
//!        const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map)
//! ```
//!
//! A tensor map needs the matrix's row pitch to be a multiple of 16 bytes. When K (A's row
//! length) or N (B's) is not a multiple of 4 floats, each launch first copies that matrix into a
//! workspace whose rows are padded to the next multiple of 4 (with [`crate::pad`]'s copy): the
//! copy is part of the launch, so timing counts it. Rows and columns beyond the matrix are outside the map, and the copy
//! engine fills them with zeros.
//!
//! A step may also decompose A into parts before its product ([`crate::Extension::PartTensorMaps`]): its own
//! `split_a` kernel, queued in front of every launch (so timing counts it too), writes two
//! M×K matrices whose sum is A (or A with its rows scaled, for a step that marks rows apart: see [`Marks`]) into one
//! workspace, and A's map gains a third coordinate that picks the part: `{k, row, part}`.
//!
//! A kernel of a plain tensor-map step may define `transpose_b`: it is then queued in front of
//! every launch (timed as well) to write Bᵀ, N rows of K floats, into a workspace, and B's map
//! is the map of Bᵀ, whose coordinates are `{k, n}`.

use anyhow::{Result, anyhow, bail};
use cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};

/// The entry point that writes A's two parts for a step with part tensor maps (step 09).
pub const PARTS_ENTRY: &str = "split_a";

/// The optional entry point of a tensor-map kernel that transposes B (see [`crate::product::maps`]).
pub const TRANSPOSE_ENTRY: &str = "transpose_b";

/// A box of `rows` × `cols` floats, the unit one copy moves into shared memory, where each row
/// of 128 bytes has its 16-byte pieces permuted (the 128-byte swizzle): `cols` must be at most
/// 32 and both at most 256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaBox {
    pub rows: u32,
    pub cols: u32,
}

/// An encoded tensor map: 128 opaque bytes, passed to the kernel by value.
pub type EncodedMap = [u64; 16];

/// Encodes the map of `parts` row-major `rows`×`cols` f32 matrices stored one after the other
/// at device address `ptr`, whose rows are `pitch` floats apart, copied in boxes of `bx` (a
/// third coordinate, the part, when there is more than one).
pub fn encode(
    ptr: sys::CUdeviceptr,
    rows: usize,
    cols: usize,
    pitch: usize,
    parts: usize,
    bx: TmaBox,
) -> Result<EncodedMap> {
    encode_as(Element::F32, ptr, [rows, cols, pitch, parts], bx)
}

/// What a tensor map's matrix holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    F32,
    /// Bytes (step 11's residues, signed or not: the copy engine only moves them).
    U8,
    /// bf16 (step 11's magnitudes, for its bound).
    Bf16,
}

impl Element {
    /// The bytes of one element.
    pub fn bytes(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::U8 => 1,
            Element::Bf16 => 2,
        }
    }
}

/// As [`encode`], for a matrix of `element`s: `[rows, cols, pitch, parts]` counted in elements,
/// a box of `bx.cols` elements of at most 128 bytes (the swizzle's width) by at most 256 rows.
pub fn encode_as(
    element: Element,
    ptr: sys::CUdeviceptr,
    [rows, cols, pitch, parts]: [usize; 4],
    bx: TmaBox,
) -> Result<EncodedMap> {
    let size = element.bytes();
    if (pitch * size) % 16 != 0 || pitch < cols {
        bail!(
            "a tensor map needs rows 16-byte aligned: a pitch of {} bytes for rows of {cols} cannot be mapped",
            pitch * size
        );
    }
    if bx.cols == 0 || bx.rows == 0 || bx.cols as usize * size > 128 || bx.rows > 256 {
        bail!(
            "a box of {}×{} elements of {size} bytes cannot be copied with the 128-byte swizzle",
            bx.rows,
            bx.cols
        );
    }
    let dims = [cols as u64, rows as u64, parts as u64];
    let strides = [(size * pitch) as u64, (size * pitch * rows) as u64];
    let boxes = [bx.cols, bx.rows, 1];
    let elem_strides = [1u32; 3];
    let rank = if parts > 1 { 3 } else { 2 };
    let data_type = match element {
        Element::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        Element::U8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        Element::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    };
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer addresses an array at least as long as the rank (2 or 3) implies;
    // the map is written in place and the device memory is only recorded, not touched.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            rank,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(|e| anyhow!("the driver could not encode a tensor map of a {rows}×{cols} matrix: {e:?}"))?;
    Ok(map.opaque)
}

/// Where a launch's marks and exponents lie (M + N ints each), for `split_a` and `matmul`, and
/// the one int `split_a` reads besides: the least scaled entry of the columns B keeps.
#[derive(Clone, Copy)]
pub struct Marks {
    pub marks: sys::CUdeviceptr,
    pub exps: sys::CUdeviceptr,
    pub col_least: sys::CUdeviceptr,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_the_copy_engine_cannot_take_are_refused_before_the_driver() {
        let bx = TmaBox { rows: 32, cols: 32 };
        let err = encode(0, 8, 6, 6, 1, bx).unwrap_err().to_string();
        assert!(err.contains("16-byte aligned"), "{err}");
        let err = encode(0, 8, 8, 8, 2, TmaBox { rows: 32, cols: 64 }).unwrap_err().to_string();
        assert!(err.contains("128-byte swizzle"), "{err}");
        // Bytes: 128 of them fill the swizzle's width, 129 do not; rows of 8 bytes are not aligned.
        let err = encode_as(Element::U8, 0, [8, 8, 8, 1], bx).unwrap_err().to_string();
        assert!(err.contains("16-byte aligned"), "{err}");
        let err = encode_as(Element::U8, 0, [8, 160, 160, 1], TmaBox { rows: 8, cols: 129 })
            .unwrap_err()
            .to_string();
        assert!(err.contains("128-byte swizzle"), "{err}");
    }
}
