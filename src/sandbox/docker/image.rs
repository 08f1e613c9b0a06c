//! Images: present locally, pulled from a registry with a progress bar, or
//! a clear error naming `make images` on a machine without a registry.

use super::DockerBackendError;
use super::client::{DockerClient, PullStep};
use crate::workload::progress::ByteBar;
use std::collections::BTreeMap;
use std::time::Duration;

/// Images that exist only as local builds of scripts/images.sh; pulling
/// them would at best fetch someone else's image of the same name.
pub const LOCAL_PREFIX: &str = "benchcage/";

/// How long a pull may wait for the registry's first answer.
pub const PULL_FIRST_ANSWER: Duration = Duration::from_secs(20);

/// Make sure `image` is present: nothing to do when it is, a pull with a
/// progress bar when a registry may have it, else [`DockerBackendError::ImageMissing`].
pub async fn ensure_image(
    client: &DockerClient,
    image: &str,
    first_answer: Duration,
) -> Result<(), DockerBackendError> {
    if client.image_exists(image).await? {
        return Ok(());
    }
    if image.starts_with(LOCAL_PREFIX) {
        return Err(DockerBackendError::ImageMissing {
            image: image.to_string(),
            why: "benchcage/ images are built locally, never pulled".into(),
        });
    }
    let bar = ByteBar::new(format!("pulling {image}"));
    let mut layers: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let result = client
        .pull(image, first_answer, |step: PullStep| {
            if let (Some(layer), Some(current), Some(total)) =
                (step.layer, step.current, step.total)
            {
                layers.insert(layer, (current, total));
                let (done, all) = layers
                    .values()
                    .fold((0, 0), |(d, a), (c, t)| (d + c, a + t));
                bar.update(done, all);
            }
        })
        .await;
    bar.finish();
    match result {
        Ok(()) => Ok(()),
        Err(e) => Err(DockerBackendError::ImageMissing {
            image: image.to_string(),
            why: format!("pulling it failed: {e}"),
        }),
    }
}
