//! Specs: environment, engine and scenario models and their validation.
