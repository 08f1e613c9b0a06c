//! Specs: environment, engine and scenario models and their validation.
//!
//! `Project::load` reads every spec under a project home, checks each one
//! and the references between them, and returns every problem at once as
//! `Diagnostics` (file:line:column, field, message, hint).
//! [`crate::plan`] turns a scenario into cells with resolved limits and
//! rendered configs.

pub mod claims;
pub mod de;
pub mod default_cache;
pub mod diag;
pub mod engine;
pub mod environment;
pub mod facts;
pub mod files;
pub mod knob_versions;
pub mod overhead;
pub mod overrides;
pub mod scenario;
pub mod scenario_set;
pub mod topology;
pub mod writeup;
pub mod yaml;

pub use diag::{Diagnostic, Diagnostics};
pub use engine::Engine;
pub use environment::Environment;
pub use scenario::Scenario;

use diag::{Cx, Origin, unknown_hint};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every spec of a project home, validated.
#[derive(Debug, Clone)]
pub struct Project {
    pub home: PathBuf,
    pub environments: BTreeMap<String, Environment>,
    pub engines: BTreeMap<String, Engine>,
    pub scenarios: BTreeMap<String, Scenario>,
    /// Specs whose files exist but did not parse (already reported), so that
    /// references to them are not reported again as unknown.
    broken: std::collections::BTreeSet<String>,
    /// The file(s) of every spec found, by `folder/name` (two when a name
    /// is ambiguous: `x.yaml` and `x.yml`).
    files: BTreeMap<String, Vec<PathBuf>>,
}

/// The three spec kinds, by folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Environment,
    Engine,
    Scenario,
}

impl Kind {
    pub fn folder(self) -> &'static str {
        match self {
            Kind::Environment => "environments",
            Kind::Engine => "engines",
            Kind::Scenario => "scenarios",
        }
    }
    /// The kind of a spec file from its parent folder.
    pub(crate) fn of_path(p: &Path) -> Option<Kind> {
        let parent = p.parent()?.file_name()?.to_str()?;
        [Kind::Environment, Kind::Engine, Kind::Scenario]
            .into_iter()
            .find(|k| k.folder() == parent)
    }
}

/// Spec file name to spec name: `scenarios/quickstart.yaml` -> `quickstart`.
pub(crate) fn spec_name(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string()
}

fn display_path(home: &Path, p: &Path) -> String {
    p.strip_prefix(home).unwrap_or(p).display().to_string()
}

/// Read a spec file (a regular file, bounded); a problem goes into `diags`.
pub(crate) fn read_spec(shown: &str, path: &Path, diags: &mut Diagnostics) -> Option<String> {
    match files::read_bounded(path, files::MAX_SPEC_BYTES) {
        Ok(t) => Some(t),
        Err(e) => {
            diags.push(Diagnostic::flag(
                shown,
                String::new(),
                format!("this file {e}"),
                Some("remove it or replace it with a spec file".into()),
            ));
            None
        }
    }
}

/// Parse one spec file of a known kind. Problems go into `diags`.
fn parse_file(home: &Path, path: &Path, kind: Kind, diags: &mut Diagnostics) -> Option<Parsed> {
    let shown = display_path(home, path);
    let text = read_spec(&shown, path, diags)?;
    parse_text(&shown, &spec_name(path), &text, kind, diags)
}

/// A spec of any kind, parsed.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Environment(Environment),
    /// Boxed: an engine spec is the largest of the three.
    Engine(Box<Engine>),
    Scenario(Scenario),
}

/// Parse spec text (`shown` is the file name used in messages).
pub(crate) fn parse_text(
    shown: &str,
    name: &str,
    text: &str,
    kind: Kind,
    diags: &mut Diagnostics,
) -> Option<Parsed> {
    let node = match yaml::parse(text) {
        Ok(n) => n,
        Err(e) => {
            diags.push(Diagnostic {
                file: shown.to_string(),
                line: e.pos.line,
                column: e.pos.column,
                field: String::new(),
                hint: e
                    .message
                    .starts_with("malformed YAML")
                    .then(|| "check indentation, colons and brackets around this spot".into()),
                message: e.message,
            });
            return None;
        }
    };
    let mut cx = Cx::new(shown);
    let parsed = match kind {
        Kind::Environment => Environment::from_node(name, &node, &mut cx).map(Parsed::Environment),
        Kind::Engine => {
            Engine::from_node(name, &node, &mut cx).map(|e| Parsed::Engine(Box::new(e)))
        }
        Kind::Scenario => Scenario::from_node(name, &node, &mut cx).map(Parsed::Scenario),
    };
    let origin = Origin {
        file: shown.to_string(),
        positions: std::mem::take(&mut cx.positions),
    };
    let failed = !cx.diags.is_empty();
    diags.extend(cx.diags);
    let parsed = parsed.map(|p| match p {
        Parsed::Environment(mut e) => {
            e.origin = origin;
            for d in e.static_checks() {
                diags.push(d);
            }
            Parsed::Environment(e)
        }
        Parsed::Engine(mut e) => {
            e.origin = origin;
            Parsed::Engine(e)
        }
        Parsed::Scenario(mut s) => {
            s.origin = origin;
            Parsed::Scenario(s)
        }
    });
    if failed { None } else { parsed }
}

impl Project {
    /// Load and validate every spec under `home`: each file on its own, then
    /// the references between them (engines, versions, knobs and their
    /// types, templates, environments). Whether a scenario fits this host
    /// is checked by planning it ([`crate::plan::validate_on_host`]).
    pub fn load(home: &Path) -> Result<Project, Diagnostics> {
        let (project, diags) = Project::load_all(home);
        diags.into_result(project)
    }

    /// Load every spec that can be loaded, and every problem found: the
    /// project holds the specs that are fine.
    pub(crate) fn load_all(home: &Path) -> (Project, Diagnostics) {
        let mut diags = Diagnostics::default();
        let mut project = Project {
            home: home.to_path_buf(),
            environments: BTreeMap::new(),
            engines: BTreeMap::new(),
            scenarios: BTreeMap::new(),
            broken: Default::default(),
            files: BTreeMap::new(),
        };
        let mut found_any = false;
        for kind in [Kind::Engine, Kind::Environment, Kind::Scenario] {
            let paths = files::yaml_files(&home.join(kind.folder()));
            for path in &paths {
                let key = format!("{}/{}", kind.folder(), spec_name(path));
                project.files.entry(key).or_default().push(path.clone());
            }
            let ambiguous = files::ambiguous(&paths);
            for (name, both) in &ambiguous {
                project.broken.insert(format!("{}/{name}", kind.folder()));
                let shown: Vec<String> = both.iter().map(|p| display_path(home, p)).collect();
                for f in &shown {
                    diags.push(Diagnostic::flag(
                        f.clone(),
                        "",
                        format!(
                            "{} files define `{name}`: {}",
                            shown.len(),
                            shown.join(" and ")
                        ),
                        Some("keep one of them, so that the name says which file runs".into()),
                    ));
                }
            }
            for path in paths {
                found_any = true;
                if ambiguous.iter().any(|(n, _)| *n == spec_name(&path)) {
                    continue;
                }
                match parse_file(home, &path, kind, &mut diags) {
                    Some(Parsed::Environment(e)) => {
                        project.environments.insert(e.name.clone(), e);
                    }
                    Some(Parsed::Engine(e)) => {
                        project.engines.insert(e.name.clone(), *e);
                    }
                    Some(Parsed::Scenario(s)) => {
                        project.scenarios.insert(s.name.clone(), s);
                    }
                    None => {
                        project
                            .broken
                            .insert(format!("{}/{}", kind.folder(), spec_name(&path)));
                    }
                }
            }
        }
        if !found_any {
            diags.push(Diagnostic::flag(
                home.display().to_string(),
                "",
                "no specs here (no environments/, engines/ or scenarios/ with .yaml files)",
                Some(
                    "run from the benchcage checkout, or pass --home DIR / set BENCHCAGE_HOME"
                        .into(),
                ),
            ));
        }
        for e in project.engines.values() {
            for d in project.check_engine(e) {
                diags.push(d);
            }
        }
        for s in project.scenarios.values() {
            diags.extend(project.check_scenario(s));
        }
        (project, diags)
    }

    /// The spec files (as shown in messages) that `scenario` needs: its own
    /// file and those of its engines and environments.
    pub(crate) fn files_needed_by(
        &self,
        scenario: &Scenario,
    ) -> std::collections::BTreeSet<String> {
        let mut keys: Vec<String> = Vec::new();
        for e in &scenario.matrix.engines {
            keys.push(format!("engines/{}", e.engine));
        }
        for e in &scenario.matrix.environments {
            keys.push(format!("environments/{}", e.name));
        }
        let mut out: std::collections::BTreeSet<String> = keys
            .iter()
            .filter_map(|k| self.files.get(k))
            .flatten()
            .map(|p| display_path(&self.home, p))
            .collect();
        out.insert(scenario.origin.file.clone());
        out
    }

    /// Whether `shown` (as in a diagnostic) is a spec file of this home.
    pub(crate) fn is_spec_file(&self, shown: &str) -> bool {
        self.files
            .values()
            .flatten()
            .any(|p| display_path(&self.home, p) == shown)
    }

    /// Split the problems of a home into those a command that runs
    /// `scenario` must stop for and those it only warns about: a broken
    /// spec the scenario does not use stops nothing.
    pub(crate) fn split_for(
        &self,
        scenario: &Scenario,
        diags: Diagnostics,
    ) -> (Diagnostics, Diagnostics) {
        let needed = self.files_needed_by(scenario);
        let (mut fatal, mut warn) = (Diagnostics::default(), Diagnostics::default());
        for d in diags.0 {
            if self.is_spec_file(&d.file) && !needed.contains(&d.file) {
                warn.push(d);
            } else {
                fatal.push(d);
            }
        }
        (fatal, warn)
    }

    /// Templates exist under templates/ and render with every knob at its
    /// default for a sample environment.
    fn check_engine(&self, e: &Engine) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (i, cf) in e.config_files.iter().enumerate() {
            let p = self.home.join("templates").join(&cf.template);
            if !p.is_file() {
                out.push(e.origin.diag(
                    &format!("config_files[{i}].template"),
                    format!("template `{}` does not exist under templates/", cf.template),
                    Some(format!("create templates/{}", cf.template)),
                ));
            }
        }
        out
    }

    /// Parse one scenario file that may live outside scenarios/ and check it
    /// against this project.
    pub(crate) fn load_scenario_file(&self, path: &Path) -> Result<Scenario, Diagnostics> {
        let mut diags = Diagnostics::default();
        let parsed = parse_file(&self.home, path, Kind::Scenario, &mut diags);
        let Some(Parsed::Scenario(s)) = parsed else {
            return Err(diags);
        };
        diags.extend(self.check_scenario(&s));
        diags.into_result(s)
    }

    /// A scenario by name (`quickstart`) or path (`scenarios/quickstart.yaml`).
    /// A name that two files claim (`x.yaml` and `x.yml`) is refused.
    pub fn find_scenario(&self, arg: &str) -> Result<Scenario, Diagnostics> {
        let p = Path::new(arg);
        let candidates = [p.to_path_buf(), self.home.join(p)];
        // Anything by that name, whatever it is (a FIFO, a device, a loop):
        // reading it says what is wrong. A folder counts when named as a spec.
        let named_spec = matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"));
        if let Some(file) = candidates
            .iter()
            .find(|c| c.symlink_metadata().is_ok() && (named_spec || !c.is_dir()))
        {
            let own = self
                .scenarios
                .get(&spec_name(file))
                .filter(|s| same_file(file, &self.home.join(&s.origin.file)));
            return match own {
                Some(s) => Ok(s.clone()),
                None => self.load_scenario_file(file),
            };
        }
        if let Some(paths) = self.files.get(&format!("scenarios/{arg}")) {
            let shown: Vec<String> = paths.iter().map(|p| display_path(&self.home, p)).collect();
            return match (self.scenarios.get(arg), &paths[..]) {
                (Some(s), [_]) => Ok(s.clone()),
                (_, [one]) => self.load_scenario_file(one),
                _ => Err(Diagnostics(vec![Diagnostic::flag(
                    arg,
                    "",
                    format!(
                        "the scenario name `{arg}` is ambiguous: {}",
                        shown.join(" and ")
                    ),
                    Some("keep one of the files, or name the file to run".into()),
                )])),
            };
        }
        match self.scenarios.get(arg) {
            Some(s) => Ok(s.clone()),
            None => {
                let known: Vec<&str> = self.scenarios.keys().map(String::as_str).collect();
                Err(Diagnostics(vec![Diagnostic::flag(
                    arg,
                    "",
                    format!("no scenario `{arg}` (neither a file nor a name under scenarios/)"),
                    Some(unknown_hint(arg, &known)),
                )]))
            }
        }
    }

    /// References of a scenario (engines, versions, environments, knobs) and
    /// knob values.
    pub(crate) fn check_scenario(&self, s: &Scenario) -> Diagnostics {
        let mut diags = Diagnostics::default();
        self.check_engine_refs(s, &mut diags);
        check_labels(self, s, &mut diags);
        check_tpcc_schema(self, s, &mut diags);
        self.check_env_refs(s, &mut diags);
        diags
    }

    /// Each engine of the matrix exists, with its version, and the knobs
    /// given to it are its own and parse.
    fn check_engine_refs(&self, s: &Scenario, diags: &mut Diagnostics) {
        let engines: Vec<&str> = self.engines.keys().map(String::as_str).collect();
        for er in &s.matrix.engines {
            match self.engines.get(&er.engine) {
                None if self.broken.contains(&format!("engines/{}", er.engine)) => {}
                None => {
                    diags.push(s.origin.diag(
                        &er.field,
                        format!("unknown engine `{}`", er.engine),
                        Some(unknown_hint(&er.engine, &engines)),
                    ));
                }
                Some(e) => {
                    if let Some(v) = &er.version
                        && e.version(Some(v)).is_none()
                    {
                        diags.push(s.origin.diag(
                            &er.field,
                            format!("{} has no version `{v}`", e.name),
                            Some(unknown_hint(v, &e.version_names())),
                        ));
                    }
                    for (k, v) in s
                        .knobs
                        .iter()
                        .map(|(k, v)| ("knobs", (k, v)))
                        .chain(er.knobs.iter().map(|(k, v)| ("", (k, v))))
                    {
                        let (field, (name, value)) = (k, v);
                        let field = if field.is_empty() {
                            format!("{}.knobs.{name}", er.field)
                        } else {
                            format!("knobs.{name}")
                        };
                        match e.knobs.get(name.as_str()) {
                            None => {
                                diags.push(s.origin.diag(
                                    &field,
                                    format!("{} has no knob `{name}`", e.name),
                                    Some(unknown_hint(name, &e.knob_names())),
                                ));
                            }
                            Some(knob) => {
                                if let Err(msg) = knob.parse(value) {
                                    diags.push(s.origin.diag(&field, msg, None));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Each environment of the matrix exists, once, and its `set:` keys
    /// and values are environment fields.
    fn check_env_refs(&self, s: &Scenario, diags: &mut Diagnostics) {
        let envs: Vec<&str> = self.environments.keys().map(String::as_str).collect();
        let mut env_names: Vec<&str> = Vec::new();
        for env in &s.matrix.environments {
            if env_names.contains(&env.name.as_str()) {
                diags.push(s.origin.diag(
                    &env.field,
                    format!("environment `{}` appears twice in the matrix", env.name),
                    None,
                ));
            }
            env_names.push(&env.name);
            if !self.environments.contains_key(&env.name)
                && !self.broken.contains(&format!("environments/{}", env.name))
            {
                diags.push(s.origin.diag(
                    &env.field,
                    format!("unknown environment `{}`", env.name),
                    Some(unknown_hint(&env.name, &envs)),
                ));
            }
            for (k, v) in &env.set {
                if let Err(msg) = overrides::check_env_key(k, v) {
                    diags.push(
                        s.origin
                            .diag(&format!("{}.set.{k}", env.field), msg.0, msg.1),
                    );
                }
            }
        }
    }
}

/// py-tpcc's `denormalize` chooses a MongoDB document schema: an engine of
/// the matrix that speaks SQL runs TPC-C's relational schema, so a
/// scenario that gives it is refused, at the field that gave it.
fn check_tpcc_schema(project: &Project, s: &Scenario, diags: &mut Diagnostics) {
    let given = std::iter::once("load.denormalize".to_string())
        .chain((0..s.phases.len()).map(|i| format!("phases[{i}].builtin.denormalize")))
        .find(|f| s.origin.positions.contains_key(f));
    let Some(field) = given else {
        return;
    };
    for er in &s.matrix.engines {
        let Some(e) = project.engines.get(&er.engine) else {
            continue;
        };
        if matches!(
            e.readiness.probe,
            crate::model::Probe::Postgres { .. } | crate::model::Probe::Mysql { .. }
        ) {
            diags.push(s.origin.diag(
                &field,
                format!(
                    "`denormalize` is py-tpcc's MongoDB document schema, but engine `{}` \
                     runs TPC-C in its relational schema",
                    er.engine
                ),
                Some(
                    "leave `denormalize` out, or run TPC-C with it on mongodb engines only".into(),
                ),
            ));
        }
    }
}

/// Each engine of the matrix appears once under its label.
fn check_labels(project: &Project, s: &Scenario, diags: &mut Diagnostics) {
    let mut labels: Vec<String> = Vec::new();
    for er in &s.matrix.engines {
        let l = er.label.clone().unwrap_or_else(|| {
            match (&er.version, project.engines.get(&er.engine)) {
                (Some(v), _) => format!("{}@{v}", er.engine),
                (None, Some(e)) => format!("{}@{}", er.engine, e.default_version),
                (None, None) => er.engine.clone(),
            }
        });
        if labels.contains(&l) {
            diags.push(s.origin.diag(
                &er.field,
                format!("`{l}` appears twice in the matrix"),
                Some("give the second one `label: NAME` (e.g. {engine: mongodb@3.2, label: mongodb-sync60, knobs: {...}})".into()),
            ));
        }
        labels.push(l);
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
