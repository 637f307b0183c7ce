//! NCCL through cudarc's bindings, loaded at run time like the other CUDA libraries: the crate
//! builds and tests on a machine with no NCCL, and says so in one sentence when a run needs it.

use std::ffi::c_void;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use cudarc::driver::CudaStream;
use cudarc::nccl::{result, sys};

pub const NO_NCCL: &str = "the exchange between GPUs runs through NCCL, and no NCCL library \
     (libnccl.so or libnccl.so.2) was found: install it (`python3 -m pip install nvidia-nccl-cu13`, \
     or your distribution's libnccl2) and put its folder on LD_LIBRARY_PATH, or run on one GPU \
     with --simulate G";

/// Set in the environment of the program started again with NCCL's link on the loader's path.
const RELAUNCHED: &str = "MATMUL_COURSE_NCCL_LINKED";

/// Whether cudarc can load NCCL (it looks for `libnccl.so` and a few other names).
pub fn present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { sys::is_culib_present() }
}

// ANCHOR: find
/// Makes NCCL loadable, or says why it is not. NCCL's packages install it under its versioned
/// name alone (`libnccl.so.2`), which cudarc does not look for: where only that name loads, this
/// links it as `libnccl.so` in a folder of its own and starts the program again with that folder
/// on the loader's path (the loader reads the path once, when a program starts).
pub fn find() -> Result<()> {
    if present() {
        return Ok(());
    }
    if std::env::var_os(RELAUNCHED).is_some() {
        bail!("{NO_NCCL}");
    }
    let Some(path) = versioned() else { bail!("{NO_NCCL}") };
    let dir = std::env::temp_dir().join("matmul-course-nccl");
    let link = dir.join("libnccl.so");
    let linked = std::fs::create_dir_all(&dir)
        .and_then(|_| match std::fs::read_link(&link) {
            Ok(target) if target == path => Ok(()),
            _ => {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&path, &link)
            }
        })
        .map_err(|e| anyhow!("could not link {} as {}: {e}", path.display(), link.display()));
    linked?;
    let paths = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    let mut joined = dir.into_os_string();
    if !paths.is_empty() {
        joined.push(":");
        joined.push(paths);
    }
    let exe =
        std::env::current_exe().map_err(|e| anyhow!("could not find this program to start it again: {e}"))?;
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("LD_LIBRARY_PATH", joined)
            .env(RELAUNCHED, "1"),
    );
    bail!("could not start this program again with NCCL's folder on the loader's path: {error}")
}

/// The file the system's loader opens for `libnccl.so.2`, read from this process's map of
/// loaded files.
fn versioned() -> Option<PathBuf> {
    // SAFETY: loading NCCL runs no code of ours; it stays loaded for the process's life.
    let lib = unsafe { libloading::Library::new("libnccl.so.2") }.ok()?;
    std::mem::forget(lib);
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let path = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.contains("libnccl.so"))?;
    Some(PathBuf::from(path))
}
// ANCHOR_END: find

/// NCCL's version, e.g. "2.28.3".
pub fn version() -> Result<String> {
    let code = result::get_nccl_version().map_err(|e| anyhow!("NCCL did not give its version: {e:?}"))?;
    Ok(format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100))
}

/// One communicator per GPU of this process, ranks in the order of the GPUs given.
pub struct Comms {
    comms: Vec<sys::ncclComm_t>,
}

// ANCHOR: calls
impl Comms {
    /// A communicator for each of `ordinals`, all made by this one process.
    pub fn all(ordinals: &[usize]) -> Result<Comms> {
        let devices: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: one communicator is written per device listed.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), devices.len() as i32, devices.as_ptr()) }
            .map_err(|e| anyhow!("NCCL could not join the GPUs {ordinals:?}: {e:?}"))?;
        Ok(Comms { comms })
    }

    /// Every rank's calls queued as one group, as NCCL requires when one thread drives several
    /// GPUs (each call would otherwise wait for its peers' calls, which this thread has not made).
    pub fn group(&self, calls: impl FnOnce(&Self) -> Result<()>) -> Result<()> {
        result::group_start().map_err(|e| anyhow!("NCCL could not start a group: {e:?}"))?;
        let queued = calls(self);
        let ended = result::group_end().map_err(|e| anyhow!("NCCL could not run a group: {e:?}"));
        queued.and(ended.map(|_| ()))
    }

    /// Queues rank `rank`'s half of a ring step on `stream`: `count` floats from `send` to rank
    /// `to`, and as many from rank `from` into `recv`.
    ///
    /// # Safety
    /// `send` and `recv` are device buffers of at least `count` floats on rank `rank`'s GPU, left
    /// alone by other streams until the stream passes this call.
    pub unsafe fn ring_step(
        &self,
        rank: usize,
        (send, recv): (u64, u64),
        (to, from): (usize, usize),
        count: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        let (comm, s) = (self.comms[rank], stream.cu_stream() as _);
        let float = sys::ncclDataType_t::ncclFloat32;
        // SAFETY: as the caller promises.
        unsafe {
            result::send(send as *const c_void, count, float, to as i32, comm, s)
                .map_err(|e| anyhow!("NCCL could not queue rank {rank}'s send: {e:?}"))?;
            result::recv(recv as *mut c_void, count, float, from as i32, comm, s)
                .map_err(|e| anyhow!("NCCL could not queue rank {rank}'s receive: {e:?}"))?;
        }
        Ok(())
    }

    // ANCHOR_END: calls

    /// Queues rank `rank`'s part of an all-gather: its `count` floats at `send` into its slot of
    /// `recv`, which receives every rank's in rank order.
    ///
    /// # Safety
    /// `send` holds `count` floats and `recv` G·`count`, on rank `rank`'s GPU.
    pub unsafe fn all_gather(
        &self,
        rank: usize,
        (send, recv): (u64, u64),
        count: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        let float = sys::ncclDataType_t::ncclFloat32;
        // SAFETY: as the caller promises.
        unsafe {
            result::all_gather(
                send as *const c_void,
                recv as *mut c_void,
                count,
                float,
                self.comms[rank],
                stream.cu_stream() as _,
            )
        }
        .map(|_| ())
        .map_err(|e| anyhow!("NCCL could not queue rank {rank}'s all-gather: {e:?}"))
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for &comm in &self.comms {
            // SAFETY: each communicator was made by `all` and is destroyed once; a failure to
            // destroy one at exit leaves nothing to do.
            let _ = unsafe { result::comm_destroy(comm) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine with no NCCL under either name, a run over GPUs is refused with one
    /// sentence that says how to get it or what runs without it.
    #[test]
    #[ignore = "needs a machine without NCCL"]
    fn without_nccl_a_run_over_gpus_is_refused_in_one_sentence() {
        assert!(!present() && versioned().is_none(), "this machine has NCCL; the test needs one without");
        let e = find().expect_err("no NCCL, yet it was found").to_string();
        assert_eq!(e, NO_NCCL);
        assert!(!e.contains('\n') && e.matches(". ").count() == 0, "more than one sentence: {e}");
        assert!(e.contains("--simulate") && e.contains("libnccl.so.2"));
    }
}
