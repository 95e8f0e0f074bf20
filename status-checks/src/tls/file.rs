//! A certificate file read as a hostile path cannot make it hurt: only a regular file, at most
//! 1 MiB, on a thread of its own.

use status_core::check::CheckOutcome;
use status_core::CheckStatus;

/// The most of a certificate file read: a chain is a few kilobytes, a CA bundle a few hundred.
pub(crate) const MAX_PEM: u64 = 1024 * 1024;

/// Reads of certificate files that have not ended (a hung NFS or FUSE mount): past
/// [`MAX_STUCK`], a run does not start another, and says why.
static STUCK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The most reads of certificate files left hanging at once, in the whole process.
const MAX_STUCK: usize = 4;

/// `path` read on a thread of its own, so that a path that never answers holds neither the
/// check's task, nor Tokio's blocking pool (where DNS lookups wait), nor the runtime's
/// shutdown: the run's timeout ends the wait, the thread ends when the read does. Only a
/// regular file is read (a FIFO, a device such as `/dev/zero`, a directory are refused
/// before they are opened), and at most [`MAX_PEM`] of it.
pub(super) async fn read_pem(path: &std::path::Path) -> Result<Vec<u8>, CheckOutcome> {
    use std::sync::atomic::Ordering;
    let stuck = STUCK.fetch_add(1, Ordering::AcqRel);
    if stuck >= MAX_STUCK {
        STUCK.fetch_sub(1, Ordering::AcqRel);
        return Err(CheckOutcome::new(
            CheckStatus::Outage,
            format!(
                "{}: not read: {stuck} earlier reads of certificate files never ended (a hung \
                 mount?)",
                path.display()
            ),
        ));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("status-tls-file".into())
        .spawn(move || {
            let read = read_regular(&owned);
            STUCK.fetch_sub(1, Ordering::AcqRel);
            let _ = tx.send(read);
        });
    if let Err(e) = spawned {
        STUCK.fetch_sub(1, Ordering::AcqRel);
        return Err(CheckOutcome::from_error(e));
    }
    match rx.await {
        Ok(read) => read.map_err(|e| {
            CheckOutcome::new(CheckStatus::Outage, format!("{}: {e}", path.display()))
        }),
        Err(_) => Err(CheckOutcome::new(
            CheckStatus::Outage,
            format!("{}: the read ended without an answer", path.display()),
        )),
    }
}

/// A regular file's content, at most [`MAX_PEM`].
fn read_regular(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let kind = std::fs::metadata(path)?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, a device or a directory is never read)",
        ));
    }
    let file = std::fs::File::open(path)?;
    // Checked again on what was opened: the path may have been swapped in between.
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut pem = Vec::new();
    file.take(MAX_PEM + 1).read_to_end(&mut pem)?;
    if pem.len() as u64 > MAX_PEM {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB: not a certificate chain",
            MAX_PEM / 1024
        )));
    }
    Ok(pem)
}
