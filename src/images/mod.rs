//! Local engine images built without a registry: the base root filesystem
//! (`base`, debootstrap as scripts/images.sh makes it) plus an engine's
//! release tarball (`tarball`), streamed to the daemon's import as one tar.
//! TokuMX has no official image; its users have its release tarball.

pub mod base;
pub mod tarball;

use std::path::{Path, PathBuf};

/// An engine whose image is built from its release tarball.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe {
    pub engine: &'static str,
    /// The server binary the tarball must hold in `bin/`.
    pub binary: &'static str,
    /// Where the tarball's top folder goes inside the image.
    pub dest: &'static str,
    /// The image name without the tag.
    pub repository: &'static str,
}

/// Engines `benchcage image build` knows.
pub const RECIPES: &[Recipe] = &[Recipe {
    engine: "tokumx",
    binary: "mongod",
    dest: "opt/tokumx",
    repository: "benchcage/tokumx",
}];

/// The recipe of `engine`, if there is one.
pub fn recipe(engine: &str) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.engine == engine)
}

/// The PATH of images built here (scripts/images.sh sets the same, plus
/// the engine's folder in front).
const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Recipe {
    /// `benchcage/tokumx:2.0.2`.
    pub fn image(&self, tag: &str) -> String {
        format!("{}:{tag}", self.repository)
    }

    /// The Dockerfile instructions the import applies: the engine's
    /// binaries first on PATH, its libraries found, and the tarball it
    /// came from as labels.
    pub fn changes(&self, layout: &tarball::Layout, tarball_name: &str) -> Vec<String> {
        let dest = Path::new("/").join(self.dest);
        let mut changes = vec![
            format!("ENV PATH={}:{SYSTEM_PATH}", dest.join("bin").display()),
            "ENV LANG=C.UTF-8".to_string(),
        ];
        if !layout.lib_dirs.is_empty() {
            let libs: Vec<String> = layout
                .lib_dirs
                .iter()
                .map(|d| dest.join(d).display().to_string())
                .collect();
            changes.push(format!("ENV LD_LIBRARY_PATH={}", libs.join(":")));
        }
        changes.push(format!(
            "LABEL benchcage.source={} benchcage.source-sha256={}",
            label_value(tarball_name),
            layout.sha256
        ));
        changes
    }
}

/// A label value quoted for a Dockerfile instruction.
fn label_value(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A docker tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn is_tag(tag: &str) -> bool {
    let b = tag.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// What was built.
#[derive(Debug, Clone)]
pub struct Built {
    pub image: String,
    pub id: String,
    pub size: u64,
    pub base: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_puts_the_engine_first_on_path_and_labels_its_tarball() {
        let r = recipe("tokumx").unwrap();
        let layout = tarball::Layout {
            top: "tokumx-2.0.2-linux-x86_64".into(),
            sha256: "ab".repeat(32),
            entries: 3,
            bytes: 10,
            lib_dirs: vec!["lib64".into()],
        };
        assert_eq!(r.image("2.0.2"), "benchcage/tokumx:2.0.2");
        assert_eq!(
            r.changes(&layout, "tokumx-2.0.2-linux-x86_64-main.tar.gz"),
            vec![
                "ENV PATH=/opt/tokumx/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
                "ENV LANG=C.UTF-8".into(),
                "ENV LD_LIBRARY_PATH=/opt/tokumx/lib64".into(),
                format!(
                    "LABEL benchcage.source=\"tokumx-2.0.2-linux-x86_64-main.tar.gz\" benchcage.source-sha256={}",
                    "ab".repeat(32)
                ),
            ]
        );
    }

    #[test]
    fn tags_follow_dockers_rule() {
        for ok in ["2.0.2", "1.5", "test_1-a"] {
            assert!(is_tag(ok), "{ok}");
        }
        for bad in ["", ".x", "-x", "a:b", "a/b", "a b", &"x".repeat(129)] {
            assert!(!is_tag(bad), "{bad}");
        }
    }
}
