//! Engine config files rendered with Tera from knobs and the environment.
