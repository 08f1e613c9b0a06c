//! The layering of docs/ARCHITECTURE.md that a change could quietly undo:
//! what a cell runs reaches `run`, `workload`, `render` and `snapshot`
//! as plan-owned or model types, never as a spec type. A module named
//! here must not name `crate::spec` outside its `#[cfg(test)]` module
//! (tests may load the shipped specs to build a plan).

use std::path::{Path, PathBuf};

/// (a file or folder under src/, the modules it must not name).
const RULES: &[(&str, &[&str])] = &[
    ("run", &["spec"]),
    ("workload", &["spec", "run", "plan"]),
    ("render.rs", &["spec", "plan", "run"]),
    ("render", &["spec", "plan", "run"]),
    ("snapshot", &["spec", "plan", "run"]),
    ("results", &["spec", "plan", "run", "snapshot"]),
    ("model", &["spec", "plan", "run", "workload", "sandbox"]),
    ("bounded.rs", &["spec"]),
];

fn rust_files(at: &Path, out: &mut Vec<PathBuf>) {
    if at.is_file() {
        out.push(at.to_path_buf());
        return;
    }
    let Ok(dir) = std::fs::read_dir(at) else {
        return;
    };
    for e in dir.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's lines before its test module, without comment lines.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

/// Every `crate::X` path (also `crate::{X, ...}`) a line names.
fn named_modules(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            out.extend(
                inner
                    .split(',')
                    .filter_map(|p| p.trim().split("::").next())
                    .map(String::from),
            );
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(word);
        }
    }
    out
}

#[test]
fn lower_modules_never_name_the_modules_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (place, forbidden) in RULES {
        let mut files = Vec::new();
        rust_files(&src.join(place), &mut files);
        assert!(!files.is_empty(), "src/{place} holds no Rust file");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in code_lines(&text) {
                for m in named_modules(line) {
                    if forbidden.contains(&m.as_str()) {
                        broken.push(format!(
                            "{}:{}: names crate::{m}: {}",
                            file.strip_prefix(&src).unwrap().display(),
                            n + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "upward arrows (docs/ARCHITECTURE.md, Layers: hand the lower module a plan-owned or model type instead):\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_scan_sees_grouped_and_plain_paths() {
    assert_eq!(named_modules("use crate::spec::engine::X;"), ["spec"]);
    assert_eq!(
        named_modules("use crate::{plan::Plan, spec::Diagnostics};"),
        ["plan", "spec"]
    );
    assert_eq!(
        named_modules("let p = crate::spec::Project::load(h); crate::units::Bytes(1)"),
        ["spec", "units"]
    );
    let text = "use crate::units::Bytes;\n// crate::spec in a comment\n#[cfg(test)]\nmod tests { use crate::spec::Project; }\n";
    let seen: Vec<String> = code_lines(text)
        .flat_map(|(_, l)| named_modules(l))
        .collect();
    assert_eq!(seen, ["units"]);
}
