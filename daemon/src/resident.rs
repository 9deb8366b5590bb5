//! Keeps the client program's pages in memory.
//!
//! `praxis-run` starts for every command and every hook an agent runs, and
//! each of its pages that is not in memory is a read from disk on that
//! request's path. Between an agent's calls no process maps it, and file
//! pages that nothing maps are the first the kernel reclaims; some hosts
//! page them out on purpose after a while unused. praxisd maps the
//! `praxis-run` installed beside it, shared and read-only, so its pages
//! count as in use, and checks now and then that they are still in memory
//! and that the file is still the one it mapped: an upgrade puts a new one
//! there. praxisd never reads the mapping; the memory is the page cache's,
//! shared with every client start.

use std::fs::File;
use std::io;
use std::num::NonZeroUsize;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::time::Duration;

use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mmap, munmap};

/// How often the mapping is checked: the file replaced, pages reclaimed.
const CHECK_EVERY: Duration = Duration::from_secs(20);

/// Why the client program could not be kept in memory.
#[derive(Debug, thiserror::Error)]
enum ResidentError {
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("{0} is empty")]
    Empty(PathBuf),
    #[error("cannot map {path}: {source}")]
    Map { path: PathBuf, source: nix::Error },
}

/// What identifies the file's contents: another file put at the path, or
/// this one rewritten, changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

/// A read-only shared mapping of a whole file, unmapped when dropped.
struct Mapping {
    stamp: Stamp,
    // An address, not a pointer: praxisd never reads through it, and the
    // mapping moves between threads.
    addr: usize,
    len: NonZeroUsize,
}

impl Mapping {
    fn of(path: &Path) -> Result<Mapping, ResidentError> {
        let open_error = |source| ResidentError::Open {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(open_error)?;
        let meta = file.metadata().map_err(open_error)?;
        let len = usize::try_from(meta.len())
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| ResidentError::Empty(path.to_owned()))?;
        // SAFETY: a fresh mapping at an address the kernel picks, over a
        // file we hold open; nothing reads or writes through it, so a file
        // truncated under it (SIGBUS on access) can do no harm.
        let addr = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ,
                MapFlags::MAP_SHARED | MapFlags::MAP_POPULATE,
                &file,
                0,
            )
        }
        .map_err(|source| ResidentError::Map {
            path: path.to_owned(),
            source,
        })?;
        Ok(Mapping {
            stamp: stamp(&meta),
            addr: addr.as_ptr() as usize,
            len,
        })
    }

    /// Reads back in whatever the kernel took out of memory since.
    fn repopulate(&self) {
        let Some(addr) = NonNull::new(self.addr as *mut libc::c_void) else {
            return;
        };
        // SAFETY: the range is exactly our own live mapping. Populating a
        // read-only file mapping only faults its pages in. A kernel without
        // MADV_POPULATE_READ (before 5.14) refuses it: nothing happens.
        let _ = unsafe { madvise(addr, self.len.get(), MmapAdvise::MADV_POPULATE_READ) };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if let Some(addr) = NonNull::new(self.addr as *mut libc::c_void) {
            // SAFETY: the range is exactly our own mapping, made in
            // `Mapping::of` and unmapped only here.
            let _ = unsafe { munmap(addr, self.len.get()) };
        }
    }
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
    }
}

/// One program kept in memory.
struct Resident {
    path: PathBuf,
    mapping: Option<Mapping>,
}

impl Resident {
    fn new(path: PathBuf) -> Resident {
        Resident {
            path,
            mapping: None,
        }
    }

    /// Maps the file at the path if it is not the one mapped (or none is),
    /// else reads back what was reclaimed. On an error the old mapping is
    /// dropped: it holds a file that is no longer there.
    fn refresh(&mut self) -> Result<(), ResidentError> {
        let now = std::fs::metadata(&self.path)
            .map(|meta| stamp(&meta))
            .map_err(|source| ResidentError::Open {
                path: self.path.clone(),
                source,
            });
        match (&self.mapping, now) {
            (Some(mapping), Ok(now)) if mapping.stamp == now => {
                mapping.repopulate();
                Ok(())
            }
            (_, Err(e)) => {
                self.mapping = None;
                Err(e)
            }
            (_, Ok(_)) => {
                self.mapping = None;
                self.mapping = Some(Mapping::of(&self.path)?);
                Ok(())
            }
        }
    }

    /// The inode mapped now, if any.
    #[cfg(test)]
    fn mapped_inode(&self) -> Option<u64> {
        self.mapping.as_ref().map(|m| m.stamp.ino)
    }
}

/// The `praxis-run` installed beside this praxisd, if there is one.
pub fn client_beside_this_program() -> Option<PathBuf> {
    let client = std::env::current_exe().ok()?.with_file_name("praxis-run");
    client.is_file().then_some(client)
}

/// Keeps `path` in memory for as long as the daemon runs. A failure is
/// logged once until the file maps again.
pub async fn keep(path: PathBuf) {
    let mut every = tokio::time::interval(CHECK_EVERY);
    let mut resident = Resident::new(path);
    let mut failing = false;
    loop {
        every.tick().await;
        let Ok((back, result)) = tokio::task::spawn_blocking(move || {
            let result = resident.refresh();
            (resident, result)
        })
        .await
        else {
            return;
        };
        resident = back;
        match result {
            Ok(()) => failing = false,
            Err(why) if !failing => {
                tracing::warn!("the client program is not kept in memory: {why}");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// Which of the file's pages are in the page cache, seen through a
    /// mapping of our own that touches none of them.
    fn pages_in_memory(path: &Path) -> Vec<bool> {
        let file = File::open(path).unwrap();
        let len = NonZeroUsize::new(file.metadata().unwrap().len() as usize).unwrap();
        // SAFETY: a fresh read-only mapping, never read through.
        let addr = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ,
                MapFlags::MAP_SHARED,
                &file,
                0,
            )
        }
        .unwrap();
        let page = 4096;
        let mut vec = vec![0u8; len.get().div_ceil(page)];
        // SAFETY: `vec` has one byte per page of the mapping, as mincore(2)
        // writes.
        let rc = unsafe { libc::mincore(addr.as_ptr(), len.get(), vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        // SAFETY: our own mapping, made above.
        unsafe { munmap(addr, len.get()) }.unwrap();
        vec.iter().map(|b| b & 1 == 1).collect()
    }

    /// Asks the kernel to drop the file's clean pages from memory; pages a
    /// process maps stay.
    fn drop_cached(path: &Path) {
        let file = File::open(path).unwrap();
        // SAFETY: plain advice on a descriptor we hold.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
    }

    fn write_synced(path: &Path, pages: usize, byte: u8) {
        let mut file = File::create(path).unwrap();
        file.write_all(&vec![byte; pages * 4096]).unwrap();
        file.sync_all().unwrap();
    }

    /// Whether dropping clean pages works where the test writes (not on
    /// tmpfs, whose pages are its only copy).
    fn drops_pages(dir: &Path) -> bool {
        let probe = dir.join("probe");
        write_synced(&probe, 4, 1);
        drop_cached(&probe);
        !pages_in_memory(&probe).iter().all(|&p| p)
    }

    #[test]
    fn a_kept_program_stays_in_memory_when_its_cache_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("praxis-run");
        write_synced(&program, 64, 7);
        let mut resident = Resident::new(program.clone());
        resident.refresh().unwrap();
        drop_cached(&program);
        assert!(pages_in_memory(&program).iter().all(|&p| p));

        // Without the mapping, the same advice drops them: the mapping is
        // what kept them.
        drop(resident);
        drop_cached(&program);
        if drops_pages(dir.path()) {
            assert!(!pages_in_memory(&program).iter().all(|&p| p));
        }
    }

    #[test]
    fn a_program_put_in_its_place_is_mapped_instead() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("praxis-run");
        write_synced(&program, 8, 1);
        let mut resident = Resident::new(program.clone());
        resident.refresh().unwrap();
        let first = resident.mapped_inode().unwrap();

        let next = dir.path().join("praxis-run.new");
        write_synced(&next, 16, 2);
        std::fs::rename(&next, &program).unwrap();
        resident.refresh().unwrap();
        let second = resident.mapped_inode().unwrap();
        assert_ne!(first, second);
        drop_cached(&program);
        assert!(pages_in_memory(&program).iter().all(|&p| p));

        std::fs::remove_file(&program).unwrap();
        assert!(resident.refresh().is_err());
        assert_eq!(resident.mapped_inode(), None);
    }
}
