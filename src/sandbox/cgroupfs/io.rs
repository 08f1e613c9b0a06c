//! IO throttles on the data directory's block device (v1 blkio.throttle,
//! v2 io.max).

use super::files::{self, *};
use crate::model::IoLimits;
use crate::sandbox::SandboxError;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `major:minor` of the whole disk holding `path` (or its nearest existing
/// ancestor). Throttles on a partition are mapped to its disk, because the
/// block layer throttles whole devices.
pub(crate) fn data_device(path: &Path, sys_dev_block: &Path) -> Result<String, SandboxError> {
    let mut probe: PathBuf = path.to_path_buf();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    let meta = std::fs::metadata(&probe).map_err(|source| SandboxError::DataDevice {
        path: probe.clone(),
        source,
    })?;
    let dev = meta.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return Err(SandboxError::Unsupported(format!(
            "{} is on a filesystem without a block device ({major}:{minor}); IO limits need the data dir on a disk",
            path.display()
        )));
    }
    let node = sys_dev_block.join(format!("{major}:{minor}"));
    if node.join("partition").exists() {
        let disk_dev = node.join("..").join("dev");
        if let Ok(text) = std::fs::read_to_string(&disk_dev) {
            return Ok(text.trim().to_string());
        }
    }
    Ok(format!("{major}:{minor}"))
}

fn v1_pairs(io: &IoLimits) -> [(&'static str, Option<u64>); 4] {
    [
        (V1_BLKIO_READ_BPS, io.read_bps),
        (V1_BLKIO_WRITE_BPS, io.write_bps),
        (V1_BLKIO_READ_IOPS, io.read_iops),
        (V1_BLKIO_WRITE_IOPS, io.write_iops),
    ]
}

/// The v2 `io.max` line for the limits, `None` when nothing is throttled.
pub(crate) fn v2_line(dev: &str, io: &IoLimits) -> Option<String> {
    let fields: Vec<String> = [
        ("rbps", io.read_bps),
        ("wbps", io.write_bps),
        ("riops", io.read_iops),
        ("wiops", io.write_iops),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
    .collect();
    (!fields.is_empty()).then(|| format!("{dev} {}", fields.join(" ")))
}

/// Apply v1 throttles for `dev`.
pub(crate) fn apply_v1(dir: &Path, dev: &str, io: &IoLimits) -> Result<(), SandboxError> {
    for (name, value) in v1_pairs(io) {
        if let Some(v) = value {
            files::write(&dir.join(name), &format!("{dev} {v}"))?;
        }
    }
    Ok(())
}

/// Apply v2 throttles for `dev`.
pub(crate) fn apply_v2(dir: &Path, dev: &str, io: &IoLimits) -> Result<(), SandboxError> {
    match v2_line(dev, io) {
        Some(line) => files::write(&dir.join(V2_IO_MAX), &line),
        None => Ok(()),
    }
}

/// Read v1 throttles back.
pub(crate) fn read_back_v1(
    dir: &Path,
    label: &str,
    dev: &str,
    io: &IoLimits,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    for (name, value) in v1_pairs(io) {
        let Some(want) = value else { continue };
        let text = files::read(&dir.join(name))?;
        let got = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{dev} ")))
            .unwrap_or("")
            .trim()
            .to_string();
        let file = format!("{label}/{name}");
        if got != want.to_string() {
            return Err(SandboxError::LimitMismatch {
                file,
                want: format!("{dev} {want}"),
                got: text.trim().to_string(),
            });
        }
        out.insert(file, format!("{dev} {got}"));
    }
    Ok(())
}

/// Read v2 throttles back.
pub(crate) fn read_back_v2(
    dir: &Path,
    label: &str,
    dev: &str,
    io: &IoLimits,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    let Some(want) = v2_line(dev, io) else {
        return Ok(());
    };
    let text = files::read(&dir.join(V2_IO_MAX))?;
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{dev} ")))
        .unwrap_or("")
        .to_string();
    let file = format!("{label}/{V2_IO_MAX}");
    // The kernel lists all four keys (unset ones as `max`): check ours.
    let got: Vec<&str> = line.split_whitespace().collect();
    for field in want.split_whitespace().skip(1) {
        if !got.contains(&field) {
            return Err(SandboxError::LimitMismatch {
                file,
                want,
                got: line,
            });
        }
    }
    out.insert(file, line);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_max_line_lists_only_the_limits_that_are_set() {
        let io = IoLimits {
            read_bps: Some(1048576),
            write_iops: Some(100),
            ..IoLimits::default()
        };
        assert_eq!(
            v2_line("254:0", &io).unwrap(),
            "254:0 rbps=1048576 wiops=100"
        );
        assert_eq!(v2_line("254:0", &IoLimits::default()), None);
    }

    #[test]
    fn io_max_read_back_accepts_the_kernel_listing_unset_keys_as_max() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join(V2_IO_MAX),
            "254:0 rbps=1048576 wbps=max riops=max wiops=100\n",
        )
        .unwrap();
        let io = IoLimits {
            read_bps: Some(1048576),
            write_iops: Some(100),
            ..IoLimits::default()
        };
        let mut out = BTreeMap::new();
        read_back_v2(t.path(), "server", "254:0", &io, &mut out).unwrap();
        let io2 = IoLimits {
            read_bps: Some(2),
            ..IoLimits::default()
        };
        assert!(read_back_v2(t.path(), "server", "254:0", &io2, &mut out).is_err());
    }
}
