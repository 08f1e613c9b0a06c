//! Images: present locally, pulled from a registry with a progress bar
//! (plain lines off a terminal), or a clear error naming how to build the
//! local ones on a machine without a registry.

use super::DockerBackendError;
use super::client::{DockerClient, PullStep};
use crate::progress::{ByteBar, mib};
use std::collections::BTreeMap;
use std::time::Duration;

/// Images that exist only as local builds (scripts/images.sh, `benchcage
/// image build`); pulling them would at best fetch someone else's image of
/// the same name.
pub const LOCAL_PREFIX: &str = "benchcage/";

/// How long a pull may wait for the registry's first answer.
pub const PULL_FIRST_ANSWER: Duration = Duration::from_secs(20);

/// What to do with an image that is not on this machine (`run --pull`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PullPolicy {
    /// Pull it, waiting this long for the registry's first answer.
    Missing(Duration),
    /// Never pull: a missing image fails its cell with no traffic to any
    /// registry (offline machines, tests, runs that must use what is here).
    Never,
}

impl Default for PullPolicy {
    fn default() -> Self {
        PullPolicy::Missing(PULL_FIRST_ANSWER)
    }
}

/// The registry an image reference names, by Docker's rule: a first
/// component with a `.` or a `:`, or `localhost`, is a registry host;
/// anything else is on Docker Hub.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first,
        _ => "docker.io",
    }
}

/// How to get a local-only image: the command that builds it.
pub fn build_hint(image: &str) -> String {
    match image.strip_prefix(LOCAL_PREFIX) {
        Some(rest) if rest.starts_with("tokumx:") => format!(
            "build it from the TokuMX release tarball: `benchcage image build tokumx --tarball tokumx-{}-linux-x86_64-main.tar.gz`",
            rest.trim_start_matches("tokumx:")
        ),
        _ => "build the local engine images with `make images` (benchcage/postgres, benchcage/mariadb, benchcage/redis)".into(),
    }
}

/// Whether the image was there or had to be pulled.
#[derive(Debug, Clone, PartialEq)]
pub enum Presence {
    Local,
    Pulled { bytes: u64, seconds: f64 },
}

/// One layer of a pull as the daemon reports it.
#[derive(Debug, Clone, Default)]
struct Layer {
    downloaded: u64,
    extracted: u64,
    total: u64,
    done: bool,
}

/// The layers of a pull so far, by id.
#[derive(Debug, Default)]
struct Layers(BTreeMap<String, Layer>);

impl Layers {
    /// Record one step of the pull; whether it finished its layer. Steps
    /// of other kinds (`Pulling from ...` names the tag as its id) are not
    /// layers.
    fn record(&mut self, id: &str, step: &PullStep) -> bool {
        let status = step.status.as_str();
        if !matches!(
            status,
            "Pulling fs layer"
                | "Waiting"
                | "Downloading"
                | "Download complete"
                | "Extracting"
                | "Pull complete"
                | "Already exists"
        ) {
            return false;
        }
        let l = self.0.entry(id.to_string()).or_default();
        match status {
            "Downloading" => {
                l.downloaded = step.current.unwrap_or(l.downloaded);
                l.total = step.total.unwrap_or(l.total);
            }
            "Download complete" => l.downloaded = l.total,
            "Extracting" => {
                l.downloaded = l.total;
                l.extracted = step.current.unwrap_or(l.extracted);
            }
            "Pull complete" | "Already exists" => {
                (l.downloaded, l.extracted) = (l.total, l.total);
                return !std::mem::replace(&mut l.done, true);
            }
            _ => {}
        }
        false
    }

    fn sum(&self, of: impl Fn(&Layer) -> u64) -> u64 {
        self.0.values().map(of).sum()
    }

    /// Bring the bar up to date; a finished layer gets a line of its own.
    fn draw(&self, bar: &mut ByteBar, finished: Option<&str>) {
        let total = self.sum(|l| l.total);
        let downloaded = self.sum(|l| l.downloaded);
        // Sizes are known once layers start downloading; layers are
        // extracted once all are downloaded.
        if total > 0 && downloaded < total {
            bar.stage("downloading");
            bar.update(downloaded, total);
        } else if total > 0 {
            bar.stage("extracting");
            bar.update(self.sum(|l| l.extracted), total);
        }
        if let Some(id) = finished {
            let n = self.0.values().filter(|l| l.done).count();
            bar.note(&format!("layer {id} done ({n} of {})", self.0.len()));
        }
    }
}

/// Make sure `image` is present: nothing to do when it is; a pull with a
/// progress bar when a registry may have it; else an error that names the
/// image, and the registry when it was asked.
pub async fn ensure_image(
    client: &DockerClient,
    image: &str,
    policy: PullPolicy,
) -> Result<Presence, DockerBackendError> {
    if client.image_exists(image).await? {
        return Ok(Presence::Local);
    }
    if image.starts_with(LOCAL_PREFIX) {
        return Err(DockerBackendError::ImageMissing {
            image: image.to_string(),
            why: "benchcage/ images are built locally, never pulled".into(),
            hint: build_hint(image),
        });
    }
    let first_answer = match policy {
        PullPolicy::Missing(first_answer) => first_answer,
        PullPolicy::Never => {
            return Err(DockerBackendError::ImageMissing {
                image: image.to_string(),
                why: "`--pull never` forbids pulling it".into(),
                hint: format!(
                    "put it on this machine (`docker pull {image}` where {} is reachable, or `docker load`), or run without `--pull never`",
                    registry_of(image)
                ),
            });
        }
    };
    let registry = registry_of(image);
    let mut bar = ByteBar::new(format!("pulling {image} from {registry}"));
    let mut layers = Layers::default();
    let result = client
        .pull(image, first_answer, |step: PullStep| {
            let Some(id) = step.layer.clone() else { return };
            let finished = layers.record(&id, &step);
            layers.draw(&mut bar, finished.then_some(id.as_str()));
        })
        .await;
    let took = bar.finish();
    let bytes = layers.sum(|l| l.total);
    match result {
        Ok(()) => {
            eprintln!(
                "pulled {image} from {registry}: {} layer(s), {} in {:.1}s",
                layers.0.len(),
                mib(bytes),
                took.as_secs_f64()
            );
            Ok(Presence::Pulled {
                bytes,
                seconds: took.as_secs_f64(),
            })
        }
        Err(e) => Err(DockerBackendError::PullFailed {
            image: image.to_string(),
            registry: registry.to_string(),
            cause: e
                .cause()
                .map(ToString::to_string)
                .unwrap_or_else(|| e.to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_is_the_first_component_when_it_names_a_host() {
        for (image, registry) in [
            ("127.0.0.1:5000/x/redis:7.0", "127.0.0.1:5000"),
            ("localhost/redis:7", "localhost"),
            ("quay.io/percona/mongod:4.4", "quay.io"),
            ("mongo:3.2.6", "docker.io"),
            ("percona/percona-server-mongodb:4.4", "docker.io"),
        ] {
            assert_eq!(registry_of(image), registry, "{image}");
        }
    }

    #[test]
    fn a_pull_counts_its_layers_once_each_and_not_the_tag_line() {
        let step = |layer: &str, status: &str, current, total| PullStep {
            layer: Some(layer.into()),
            status: status.into(),
            current,
            total,
        };
        let mut layers = Layers::default();
        assert!(!layers.record(
            "7.0",
            &step("7.0", "Pulling from library/redis", None, None)
        ));
        assert!(!layers.record("a", &step("a", "Pulling fs layer", None, None)));
        assert!(!layers.record("a", &step("a", "Downloading", Some(10), Some(40))));
        assert!(layers.record("b", &step("b", "Already exists", None, None)));
        assert_eq!(layers.0.len(), 2, "the tag line is not a layer");
        assert_eq!(layers.sum(|l| l.downloaded), 10);
        assert!(layers.record("a", &step("a", "Pull complete", None, None)));
        assert!(!layers.record("a", &step("a", "Pull complete", None, None)));
        assert_eq!(layers.sum(|l| l.extracted), 40);
    }

    #[test]
    fn a_missing_tokumx_image_names_the_command_that_builds_it() {
        assert!(build_hint("benchcage/tokumx:2.0.2").contains(
            "benchcage image build tokumx --tarball tokumx-2.0.2-linux-x86_64-main.tar.gz"
        ));
        assert!(build_hint("benchcage/redis:7.0").contains("make images"));
    }
}
