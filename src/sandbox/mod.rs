//! Sandboxes: the trait, cgroup and docker backends, the hog, the ledger, readiness.
