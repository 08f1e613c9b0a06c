//! The image a container ran, as the daemon knows it.

/// The image a container ran, as the daemon knows it: what a cell records
/// so that a tag that moved later still says what ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageRecord {
    /// The reference the engine spec names (`mongo:3.2.6`).
    pub reference: String,
    /// The image id (`sha256:...`, the hash of its config): the same for
    /// the same image whatever registry or tag it came by.
    pub id: String,
    /// `repo@sha256:...` of each registry it was pulled from or pushed to;
    /// empty for an image built here (`docker import`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repo_digests: Vec<String>,
}

impl ImageRecord {
    /// `mongo:3.2.6 (mongo@sha256:..., id sha256:...)`; an image without a
    /// registry digest says it was built here.
    pub(crate) fn describe(&self) -> String {
        if self.repo_digests.is_empty() {
            format!(
                "{} (id {}, built here: no registry digest)",
                self.reference, self.id
            )
        } else {
            format!(
                "{} ({}, id {})",
                self.reference,
                self.repo_digests.join(", "),
                self.id
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ImageRecord;

    #[test]
    fn an_image_is_described_by_its_digests_and_id_or_as_built_here() {
        let pulled = ImageRecord {
            reference: "mongo:3.2.6".into(),
            id: "sha256:aa".into(),
            repo_digests: vec!["mongo@sha256:bb".into()],
        };
        assert_eq!(
            pulled.describe(),
            "mongo:3.2.6 (mongo@sha256:bb, id sha256:aa)"
        );
        let local = ImageRecord {
            repo_digests: Vec::new(),
            ..pulled
        };
        assert_eq!(
            local.describe(),
            "mongo:3.2.6 (id sha256:aa, built here: no registry digest)"
        );
    }
}
