//! The per-second sampler and the fidelity record.
