//! The built-in load generator, stores and external tools.
