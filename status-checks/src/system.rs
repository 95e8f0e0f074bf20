//! Free disk space and process memory, as threshold checks.

use std::path::PathBuf;

use status_core::check::{blocking, Blocking, CheckOutcome, Threshold};
use status_core::CheckStatus;

/// The free space of the file system holding `path`, in percent, graded by `threshold`
/// (typically [`Threshold::at_least`]). Runs on the blocking pool: a hung network file
/// system cannot stall the workers.
///
/// # Example
///
/// ```
/// use status_checks::system::disk_space;
/// use status_core::check::Threshold;
///
/// // OK above 20 % free, MINOR above 10 %, MAJOR above 5 %, OUTAGE below.
/// let check = disk_space("/var/lib/app", Threshold::at_least(20.0, 10.0, 5.0).unwrap());
/// # let _ = check;
/// ```
pub fn disk_space(
    path: impl Into<PathBuf>,
    threshold: Threshold,
) -> Blocking<impl Fn() -> CheckOutcome + Send + Sync + 'static> {
    let path = path.into();
    blocking(move || match rustix::fs::statvfs(&path) {
        Ok(stats) => {
            let block = stats.f_frsize.max(1);
            let total = stats.f_blocks.saturating_mul(block);
            let free = stats.f_bavail.saturating_mul(block);
            if total == 0 {
                return CheckOutcome::new(
                    CheckStatus::Outage,
                    format!("{}: empty file system", path.display()),
                );
            }
            #[allow(clippy::cast_precision_loss)] // sizes far below 2^52 bytes matter here
            let percent = free as f64 / total as f64 * 100.0;
            let graded = threshold.grade(percent);
            let message = format!(
                "{}: {percent:.1}% free ({} of {} MiB)",
                path.display(),
                free >> 20,
                total >> 20
            );
            CheckOutcome::new(graded.status(), message)
                .with_value_in(percent, status_core::check::Unit::Percent)
        }
        Err(e) => CheckOutcome::from_error(std::io::Error::from(e)),
    })
}

/// The resident memory of this process, in MiB, graded by `threshold` (typically
/// [`Threshold::at_most`]). Linux only: elsewhere the check reports OUTAGE, unsupported.
///
/// # Example
///
/// ```
/// use status_checks::system::process_memory;
/// use status_core::check::Threshold;
///
/// let check = process_memory(Threshold::at_most(512.0, 768.0, 1024.0).unwrap());
/// # let _ = check;
/// ```
pub fn process_memory(
    threshold: Threshold,
) -> Blocking<impl Fn() -> CheckOutcome + Send + Sync + 'static> {
    blocking(move || match resident_bytes() {
        Ok(bytes) => {
            #[allow(clippy::cast_precision_loss)]
            let mib = bytes as f64 / f64::from(1u32 << 20);
            let graded = threshold.grade(mib);
            CheckOutcome::new(graded.status(), format!("{mib:.1} MiB resident"))
                .with_value_in(mib, status_core::check::Unit::Mebibytes)
        }
        Err(e) => CheckOutcome::from_error(e),
    })
}

fn resident_bytes() -> std::io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| std::io::Error::other("unexpected /proc/self/statm"))?;
    Ok(pages * rustix::param::page_size() as u64)
}
