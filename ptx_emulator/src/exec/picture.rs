//! What a picture of one warp's access keeps (see [`crate::recording::warp_access`]): called where the emulator
//! executes a global or shared load or store, or an `ldmatrix`, only while a picture is asked for.
//! It names what the lanes reach as the kernel does ([`Cluster::name_access`]): the matrix, the
//! kernel argument or shared array, the expression of the source line, and each lane's (row,
//! column).

use std::collections::HashMap;

use crate::inst::{Addr, Inst, Merge, Space, Src};
use crate::memory::SHARED_WINDOW;
use crate::recording::source;
use crate::recording::warp_access::{Head, LaneWord, PictureKind, WarpAccess};
use crate::tensor_map::Swizzle;

use super::state::{Cluster, Lanes, Warp};

/// What kind of access the instruction makes, as the picture tells them apart.
#[derive(Clone, Copy)]
pub enum AccessKind {
    /// A load or store of `bytes` a lane in `space` (resolved where the instruction names none).
    Plain { space: Space, bytes: u32, write: bool },
    /// `ldmatrix` of `count` 8×8 matrices.
    Matrix { count: u32 },
}

impl Cluster<'_> {
    /// Keeps the access `inst` (at `pc`) makes for the lanes in `exec` of warp `w`, if it is one
    /// the picture asked for. Called before the instruction executes, while its address
    /// registers still hold the addresses.
    pub(super) fn watched(&self, inst: &Inst, pc: u32, w: &Warp, exec: u32, addr: &Addr, seen: AccessKind) {
        let Some(watch) = self.launch.watch else { return };
        let block = self.ctas[self.rank].ctaid;
        if !watch.wants(self.k.files.get(&inst.file), inst.line, block, w.index, pc) {
            return;
        }
        let address = |l: usize| {
            let base = match addr.base {
                Src::Reg(x) => w.regs[x as usize][l],
                Src::Imm(v) => v,
            };
            base.wrapping_add(addr.offset as u64)
        };
        let generic = !inst.names_shared;
        let shared = |l: usize| address(l).wrapping_sub(if generic { SHARED_WINDOW } else { 0 });
        let write = matches!(seen, AccessKind::Plain { write: true, .. });
        let head = Head { at: self.at(inst), opcode: inst.opcode.clone(), block, warp: w.index, write };
        let access = match seen {
            AccessKind::Plain { space: Space::Shared, bytes, write } => {
                let lanes: Vec<(u32, u64)> = Lanes(exec).map(|l| (l as u32, shared(l))).collect();
                // Counted as the machine code makes it (see `count_shared_load`).
                match (write, inst.merge) {
                    (false, Merge::Leader { bytes, from, .. }) => {
                        let lanes =
                            lanes.into_iter().map(|(l, a)| (l, u64::from((a as u32).wrapping_sub(from))));
                        WarpAccess { joined: true, ..WarpAccess::shared(head, bytes, lanes.collect()) }
                    }
                    // Counted with the group's first load, and drawn there.
                    (false, Merge::Follower { .. }) => return,
                    _ => WarpAccess::shared(head, bytes, lanes),
                }
            }
            AccessKind::Plain { bytes, .. } => {
                WarpAccess::global(head, bytes, Lanes(exec).map(|l| (l as u32, address(l))).collect())
            }
            AccessKind::Matrix { count } => {
                let lanes: Vec<(u32, u64)> = (0..8 * count as usize).map(|l| (l as u32, shared(l))).collect();
                let mut access = WarpAccess::shared(head, 16, lanes);
                access.kind = crate::recording::warp_access::PictureKind::Matrix;
                access.wavefronts = u64::from(count);
                access
            }
        };
        let mut access = access;
        self.name_access(inst, &mut access, &watch.defines);
        watch.keep(pc, access);
    }

    /// Fills in what `access` reaches, as the kernel names it, and each lane's place.
    fn name_access(&self, inst: &Inst, a: &mut WarpAccess, defines: &[(String, i64)]) {
        let empty = Vec::new();
        let text = |file: u32, line: u32| -> &str {
            let lines = self.k.sources.get(&file).map_or(&empty, |l| &**l);
            line.checked_sub(1).and_then(|i| lines.get(i as usize)).map_or("", |l| l.trim())
        };
        let short = |file: u32| self.k.files.get(&file).map_or("?", |f| f.rsplit('/').next().unwrap_or(f));
        let inner = text(inst.file, inst.line);
        a.named.line = format!("{}:{}: {inner}", short(inst.file), inst.line);
        let call = self.k.call_site(inst);
        if let Some((file, line, _)) = call {
            a.named.call = format!("{}:{line}: {}", short(file), text(file, line));
        }
        let source = self.k.sources.get(&inst.file).cloned().unwrap_or_default();
        a.places = vec![LaneWord::default(); a.lanes.len()];
        match a.kind {
            PictureKind::Global => self.name_global(a),
            PictureKind::Shared | PictureKind::Matrix => self.name_shared(a, &source, defines),
        }
        let mut found = source::expressions(inner, a.write);
        if found.is_empty()
            && let Some((file, line, _)) = call
        {
            found = source::expressions(text(file, line), a.write);
        }
        a.named.variable = source::choose(&found, &a.named.array, &a.named.matrix).unwrap_or_default();
    }

    /// M, N and K, the kernel's first three arguments, where they are 4-byte integers.
    pub(super) fn shape(&self) -> Option<[i64; 3]> {
        let p = &self.launch.kernel.params;
        let int = |i: usize| {
            let &(at, _) = p.get(i).filter(|x| x.1 == 4)?;
            let bytes = self.launch.params.get(at..at + 4)?;
            Some(i64::from(i32::from_le_bytes(bytes.try_into().ok()?)))
        };
        Some([int(0)?, int(1)?, int(2)?])
    }

    /// The rows and columns of the matrix the host called `name` (A is M×K, B K×N, Bᵀ N×K, C
    /// M×N, row-major), from the kernel's M, N and K.
    fn matrix_shape(&self, name: &str) -> Option<(i64, i64)> {
        let [m, n, k] = self.shape()?;
        match name {
            "A" => Some((m, k)),
            "B" => Some((k, n)),
            "Bᵀ" => Some((n, k)),
            "C" => Some((m, n)),
            _ => None,
        }
    }

    /// A global access: the kernel argument its addresses lie in, and each lane's (row, column)
    /// from the matrix's columns.
    fn name_global(&self, a: &mut WarpAccess) {
        let Some(&(_, first)) = a.lanes.first() else { return };
        let Some(name) = self.global.name(first) else { return };
        let start = self.global.start(first);
        let argument = self.launch.kernel.params.iter().any(|&(at, size)| {
            size == 8 && self.launch.params.get(at..at + 8).is_some_and(|b| b == start.to_le_bytes())
        });
        let what = if argument { "the kernel's argument" } else { "the buffer" };
        a.named.array = name.to_owned();
        let Some((rows, cols)) = self.matrix_shape(name) else {
            a.named.memory = format!("global memory: {what} `{name}`");
            return;
        };
        a.named.matrix = name.to_owned();
        a.named.memory = format!("global memory: matrix {name}, {what} `{name}`, {rows}×{cols}, row-major");
        a.named.how = format!("a lane's (row, column) of {name}: its float's index over {cols} columns");
        for (place, &(_, address)) in a.places.iter_mut().zip(&a.lanes) {
            let i = ((address - start) / 4) as i64;
            place.element = Some((i / cols, i % cols));
        }
    }

    /// A shared access: the shared array its first lane's offset lies in (its declared shape
    /// gives each lane's [row][column]), or the dynamic shared memory; and the element of A or B
    /// each lane's first word holds, from the copy that put it there or from its value.
    fn name_shared(&self, a: &mut WarpAccess, source: &[String], defines: &[(String, i64)]) {
        let Some(&(_, first)) = a.lanes.first() else { return };
        let dynamic = self.k.dynamic_at;
        let var =
            self.k.shared_vars.iter().rev().find(|v| first as usize >= v.start && (first as usize) < v.end);
        match var {
            Some(v) if !(first as usize >= dynamic && dynamic > v.start) => {
                a.named.array = v.name.clone();
                let shape = source::array_shape(source, &v.name, defines).filter(|s| s.len() == 2);
                let cells = shape.as_ref().map_or(0, |s| s.iter().product::<i64>());
                let element = if cells > 0 { (v.end - v.start) as i64 / cells } else { 0 };
                match shape.filter(|_| element > 0) {
                    Some(s) => {
                        a.named.memory = format!("the shared array `{}[{}][{}]`", v.name, s[0], s[1]);
                        for (place, &(_, off)) in a.places.iter_mut().zip(&a.lanes) {
                            let i = (off as i64 - v.start as i64) / element;
                            place.array = Some((i / s[1], i % s[1]));
                        }
                    }
                    None => a.named.memory = format!("the shared array `{}`", v.name),
                }
            }
            _ => {
                let name = source::dynamic_name(source).map_or(String::new(), |n| format!(" `{n}[]`"));
                a.named.memory = format!("the dynamic shared memory{name}");
            }
        }
        if !self.name_copied(a) && !a.write {
            self.name_by_value(a);
        }
    }

    /// The tensor element the copy engine put at each lane's first word, where a copy put it
    /// there (the sanitizer's record of the async proxy); for a swizzled box, also the column
    /// the swizzle stored it at and the column before it. Whether any lane's was found.
    fn name_copied(&self, a: &mut WarpAccess) -> bool {
        let shadow = &self.ctas[self.rank].async_shadow;
        if !shadow.on() {
            return false;
        }
        let mut tensor = None;
        for (place, &(_, off)) in a.places.iter_mut().zip(&a.lanes) {
            let Some(o) = shadow.origin(off as usize) else { continue };
            let map = &shadow.maps[o.map as usize];
            let element = i64::from(map.element);
            let col = (i64::from(o.at[0]) + (off % 16) as i64) / element;
            place.element = Some((i64::from(o.at[1]), col));
            if map.swizzle != Swizzle::None {
                let pitch = i64::from(map.boxes[0]) * element;
                place.array = Some((
                    i64::from(o.at[1]) % i64::from(map.boxes[1].max(1)),
                    (off as i64 % pitch) / element,
                ));
                place.unswizzled = Some(col % i64::from(map.boxes[0]));
            }
            tensor.get_or_insert(*map);
        }
        let Some(map) = tensor else { return false };
        let name = self.global.name(map.address).unwrap_or("a tensor");
        let dims: Vec<String> = map.dims[..map.rank as usize].iter().rev().map(u64::to_string).collect();
        a.named.matrix = name.to_owned();
        let swizzle = match map.swizzle {
            Swizzle::None => String::new(),
            s => format!(", with the {}-byte swizzle", s.span()),
        };
        a.named.memory = format!(
            "{}: a box of {name} the copy engine put there from the {} tensor {name}{swizzle}",
            a.named.memory,
            dims.join("×")
        );
        a.named.how = format!("a lane's (row, column) of {name}: the element the copy put at its first word");
        if map.swizzle != Swizzle::None {
            a.named.how.push_str(&format!(
                "; in the box of {} columns, the column before the swizzle and the one it stored it at",
                map.boxes[0]
            ));
        }
        true
    }

    /// Each lane's first word found by its value among the elements of A and B (where exactly
    /// one element holds it; a zero, or a value two elements share, is left unknown).
    fn name_by_value(&self, a: &mut WarpAccess) {
        let shared = self.shared();
        let value = |off: u64| crate::memory::load_bytes(shared, off as usize, 4) as u32;
        let mut wanted: HashMap<u32, Vec<(String, i64)>> = a
            .lanes
            .iter()
            .map(|&(_, off)| (value(off), Vec::new()))
            .filter(|(v, _)| *v & 0x7fff_ffff != 0)
            .collect();
        if wanted.is_empty() {
            return;
        }
        for (name, _, words) in self.global.buffers() {
            if !matches!(name, "A" | "B" | "Bᵀ") {
                continue;
            }
            for (i, w) in words.enumerate() {
                if let Some(found) = wanted.get_mut(&w)
                    && found.len() < 4
                {
                    found.push((name.to_owned(), i as i64));
                }
            }
        }
        // The matrix most lanes' values name alone; a value two elements share is taken where
        // only one of them lies in that matrix.
        let mut votes: Vec<(&str, usize)> = Vec::new();
        for found in wanted.values() {
            if let [(name, _)] = found.as_slice() {
                match votes.iter_mut().find(|v| v.0 == name) {
                    Some(v) => v.1 += 1,
                    None => votes.push((name, 1)),
                }
            }
        }
        let most = votes.iter().max_by_key(|v| v.1).map(|v| v.0.to_owned()).unwrap_or_default();
        let found = |off: u64| wanted.get(&value(off)).map_or(&[][..], Vec::as_slice);
        let alone = |off: u64| match found(off) {
            [one] => Some(one.1),
            more => match more.iter().filter(|f| f.0 == most).collect::<Vec<_>>().as_slice() {
                [one] => Some(one.1),
                _ => None,
            },
        };
        let known: Vec<Option<i64>> = a.lanes.iter().map(|&(_, off)| alone(off)).collect();
        let mut matrices: Vec<String> = Vec::new();
        for (n, (place, &(_, off))) in a.places.iter_mut().zip(&a.lanes).enumerate() {
            // Where two elements of the matrix hold the value, the one nearest the element of
            // the nearest lane known.
            let near = (1..known.len()).find_map(|d| {
                known.get(n.wrapping_sub(d)).copied().flatten().or(known.get(n + d).copied().flatten())
            });
            let nearest = found(off)
                .iter()
                .filter(|f| f.0 == most)
                .min_by_key(|f| near.map_or(i64::MAX, |k| (f.1 - k).abs()))
                .filter(|_| near.is_some());
            let (name, i) = match (alone(off), nearest) {
                (Some(i), _) => (found(off).iter().find(|f| f.1 == i).map_or(&most, |f| &f.0), i),
                (None, Some(f)) => (&f.0, f.1),
                _ => continue,
            };
            let Some((_, cols)) = self.matrix_shape(name) else { continue };
            place.element = Some((i / cols, i % cols));
            if !matrices.contains(name) {
                matrices.push(name.clone());
            }
        }
        if let [m] = &matrices[..] {
            a.named.matrix = m.clone();
            a.named.memory = format!("{}, holding elements of {m}", a.named.memory);
            a.named.how = format!(
                "a lane's (row, column) of {m}: the element of {m} whose value its first word holds \
                 (of two that hold it, the one nearest a neighbouring lane's)"
            );
        } else {
            // Several matrices, or none: the places say nothing one matrix could name.
            for place in &mut a.places {
                place.element = None;
            }
        }
    }
}
