//! The base root filesystem of locally built images: Debian bookworm from
//! `debootstrap --variant=minbase`, from the mirror apt already uses, kept
//! as a tar in the same cache as scripts/images.sh
//! (`$BENCHCAGE_IMAGE_CACHE`, default /var/cache/benchcage/images) so that
//! later builds need no network.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The Debian suite of the base (the same as scripts/images.sh).
pub const SUITE: &str = "bookworm";

/// Where the base tar and the downloaded packages are kept.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("BENCHCAGE_IMAGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/benchcage/images"))
}

/// The cached base tar.
pub fn base_tar(cache: &Path) -> PathBuf {
    cache.join(format!("base-{SUITE}.tar"))
}

/// Why the base could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    #[error(
        "debootstrap is not installed; install it with `make deps` (Debian package debootstrap)"
    )]
    NoDebootstrap,
    #[error(
        "no apt source for {SUITE} in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources: \
         the base image is built from the Debian mirror apt already uses; add a `deb` line (or a \
         deb822 stanza) for {SUITE} pointing at your mirror"
    )]
    NoMirror,
    #[error("{path}: {detail}")]
    Io { path: PathBuf, detail: String },
    #[error("debootstrap {SUITE} from {mirror} failed ({status}); its log is {log}:\n{tail}")]
    Debootstrap {
        mirror: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("packing the base root filesystem into {path} failed: {detail}")]
    Pack { path: PathBuf, detail: String },
    #[error(
        "{dir} still has file systems mounted in it after debootstrap ended ({mounts}); unmount them, then remove {dir}"
    )]
    StillMounted { dir: PathBuf, mounts: String },
    #[error("interrupted while building the base root filesystem; nothing was kept")]
    Interrupted,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> BaseError + '_ {
    move |e| BaseError::Io {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// The mirror apt uses for `suite`: deb822 sources first, then one-line
/// sources; `None` when apt has none (benchcage names no mirror itself).
pub fn mirror(apt_dir: &Path, suite: &str) -> Option<String> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(apt_dir.join("sources.list.d"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "sources"))
                .collect()
        })
        .unwrap_or_default();
    sources.sort();
    for file in sources {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for stanza in text.split("\n\n") {
            let field = |name: &str| {
                stanza.lines().find_map(|l| {
                    l.strip_prefix(name)
                        .and_then(|r| r.strip_prefix(':'))
                        .map(str::trim)
                })
            };
            let has_suite =
                field("Suites").is_some_and(|s| s.split_whitespace().any(|x| x == suite));
            if has_suite && let Some(uri) = field("URIs").and_then(|u| u.split_whitespace().next())
            {
                return Some(uri.to_string());
            }
        }
    }
    let list = std::fs::read_to_string(apt_dir.join("sources.list")).unwrap_or_default();
    for line in list.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"deb")
            && words.contains(&suite)
            && let Some(uri) = words.iter().find(|w| w.contains("://"))
        {
            return Some(uri.to_string());
        }
    }
    None
}

/// The cached base tar, built first when it is missing (about a minute;
/// `say` hears what is happening). A build that fails or is interrupted
/// (`stop`) leaves neither its folder nor a partial tar behind.
pub async fn ensure(
    cache: &Path,
    stop: &CancellationToken,
    say: impl Fn(&str),
) -> Result<PathBuf, BaseError> {
    let tar_path = base_tar(cache);
    if std::fs::metadata(&tar_path).is_ok_and(|m| m.is_file() && m.len() > 0) {
        return Ok(tar_path);
    }
    if which("debootstrap").is_none() {
        return Err(BaseError::NoDebootstrap);
    }
    let started = Instant::now();
    let dir = debootstrap(cache, stop, &say).await?;
    // Nothing inside an image needs the package cache, docs or locales.
    for sub in [
        "var/cache/apt/archives",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
    ] {
        clear_dir(&dir.path().join(sub));
    }
    pack(cache, dir.path(), &tar_path, stop).await?;
    say(&format!(
        "base root filesystem built in {:.0}s: {}",
        started.elapsed().as_secs_f64(),
        tar_path.display()
    ));
    Ok(tar_path)
}

/// A minimal Debian in a temporary folder under /var/tmp, its packages
/// cached under `cache`; the folder is removed when the returned handle
/// drops, unless it still has mounts.
async fn debootstrap(
    cache: &Path,
    stop: &CancellationToken,
    say: impl Fn(&str),
) -> Result<tempfile::TempDir, BaseError> {
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).map_err(io(&debs))?;
    let url = mirror(Path::new("/etc/apt"), SUITE).ok_or(BaseError::NoMirror)?;
    let dir = tempfile::Builder::new()
        .prefix("benchcage-rootfs-base.")
        .tempdir_in("/var/tmp")
        .map_err(io(Path::new("/var/tmp")))?;
    let log = cache.join("base-debootstrap.log");
    say(&format!(
        "debootstrap --variant=minbase {SUITE} from {url} (about a minute; log {})",
        log.display()
    ));
    let argv = [
        "debootstrap".to_string(),
        "--variant=minbase".into(),
        format!("--cache-dir={}", debs.display()),
        SUITE.into(),
        dir.path().display().to_string(),
        url.clone(),
    ];
    let result = run_logged(&argv, &log, stop).await;
    // debootstrap mounts /proc and /sys inside the target and unmounts them
    // when it exits, also on SIGTERM; a folder that still has mounts is
    // left alone rather than deleted through them.
    let mounts = mounts_under(dir.path());
    if !mounts.is_empty() {
        let dir = dir.keep();
        return Err(BaseError::StillMounted {
            dir,
            mounts: mounts.join(", "),
        });
    }
    match result? {
        Exit::Interrupted => Err(BaseError::Interrupted),
        Exit::Failed(status) => {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            Err(BaseError::Debootstrap {
                mirror: url,
                status,
                log,
                tail,
            })
        }
        Exit::Ok => Ok(dir),
    }
}

/// The root filesystem in `dir` packed into `tar_path` (through a
/// temporary file, so a partial tar never has its name).
async fn pack(
    cache: &Path,
    dir: &Path,
    tar_path: &Path,
    stop: &CancellationToken,
) -> Result<(), BaseError> {
    let tmp = tar_path.with_extension("tar.tmp");
    let pack = [
        "tar".to_string(),
        "-C".into(),
        dir.display().to_string(),
        "--numeric-owner".into(),
        "-cf".into(),
        tmp.display().to_string(),
        ".".into(),
    ];
    let pack_log = cache.join("base-pack.log");
    let packed = run_logged(&pack, &pack_log, stop).await;
    let fail = |detail: String| {
        let _ = std::fs::remove_file(&tmp);
        BaseError::Pack {
            path: tar_path.to_path_buf(),
            detail,
        }
    };
    match packed {
        Ok(Exit::Ok) => {}
        Ok(Exit::Interrupted) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(BaseError::Interrupted);
        }
        Ok(Exit::Failed(status)) => {
            let text = std::fs::read_to_string(&pack_log).unwrap_or_default();
            return Err(fail(format!("tar {status}: {}", text.trim())));
        }
        Err(e) => return Err(fail(e.to_string())),
    }
    std::fs::rename(&tmp, tar_path).map_err(|e| fail(e.to_string()))?;
    let _ = std::fs::remove_file(&pack_log);
    Ok(())
}

enum Exit {
    Ok,
    Failed(String),
    Interrupted,
}

/// Run `argv` in its own process group with its output in `log`; on
/// `stop`, SIGTERM the group (SIGKILL after 30 s) and wait for it.
async fn run_logged(
    argv: &[String],
    log: &Path,
    stop: &CancellationToken,
) -> Result<Exit, BaseError> {
    let out = std::fs::File::create(log).map_err(io(log))?;
    let err = out.try_clone().map_err(io(log))?;
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(io(Path::new(&argv[0])))?;
    let status = tokio::select! {
        s = child.wait() => s.map_err(io(Path::new(&argv[0])))?,
        _ = stop.cancelled() => {
            if let Some(pid) = child.id() {
                signal_group(pid, libc::SIGTERM);
                if tokio::time::timeout(Duration::from_secs(30), child.wait()).await.is_err() {
                    signal_group(pid, libc::SIGKILL);
                    let _ = child.wait().await;
                }
            }
            return Ok(Exit::Interrupted);
        }
    };
    Ok(if status.success() {
        Exit::Ok
    } else {
        Exit::Failed(status.to_string())
    })
}

fn signal_group(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the process group we made.
    unsafe {
        libc::kill(-(pid as libc::pid_t), sig);
    }
}

/// Mount points at or under `dir` (from /proc/self/mountinfo).
fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|m| Path::new(m).starts_with(dir))
        .map(str::to_string)
        .collect()
}

/// Remove what `dir` holds, keeping `dir`.
fn clear_dir(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let _ = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
    }
}

/// The path of `program` on PATH.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_is_the_one_apt_uses_for_the_suite() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sources.list.d")).unwrap();
        assert_eq!(mirror(d.path(), "bookworm"), None);
        std::fs::write(
            d.path().join("sources.list"),
            "# comment\ndeb [arch=amd64] http://old.example/debian bookworm main\n",
        )
        .unwrap();
        assert_eq!(
            mirror(d.path(), "bookworm").as_deref(),
            Some("http://old.example/debian")
        );
        std::fs::write(
            d.path().join("sources.list.d/debian.sources"),
            "Types: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n\nTypes: deb\nURIs: http://new.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n",
        )
        .unwrap();
        assert_eq!(
            mirror(d.path(), "bookworm").as_deref(),
            Some("http://new.example/debian")
        );
    }
}
