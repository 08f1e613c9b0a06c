//! `benchcage image build ENGINE --tarball FILE`: an engine image from its
//! release tarball and the debootstrap base, imported into the local
//! daemon as `benchcage/ENGINE:VERSION`; no registry involved. Everything
//! the user can get wrong (engine, file name, tag, contents, an image
//! that exists) is checked before the base is built or anything imported.

use crate::cli::{ImageAction, ImageArgs, ImageBuildArgs};
use crate::error::bad_input;
use crate::images::{self, Recipe, base, tarball};
use crate::sandbox::docker::client::DockerClient;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

pub async fn run(home: &Path, args: &ImageArgs) -> anyhow::Result<ExitCode> {
    match &args.action {
        ImageAction::Build(b) => build(home, b).await,
    }
}

/// Chunks of the tar stream handed to the daemon.
const CHUNK: usize = 1 << 20;

async fn build(home: &Path, args: &ImageBuildArgs) -> anyhow::Result<ExitCode> {
    let input = BuildInput::of(args)?;
    let layout = scan_checked(&input).await?;
    let image = input.recipe.image(&input.tag);
    let client = DockerClient::connect().await?;
    let old = client.image_facts(&image).await?;
    if let (Some(old), false) = (&old, args.replace) {
        return Err(bad_input(format!(
            "{image} exists already ({}); give --replace to build it again from {}",
            short_id(&old.id),
            input.file_name
        )));
    }
    let stop = stop_on_signal().context("installing the Ctrl-C handler")?;
    let Some(base_tar) = base_root(&stop, &image).await? else {
        return Ok(ExitCode::from(130));
    };
    eprintln!(
        "image: {image} from {} ({} files, {}) on {}",
        input.path.display(),
        layout.entries,
        crate::units::Bytes(layout.bytes),
        base_tar.display()
    );
    if import(&client, &input, layout, base_tar, &image, &stop).await? == Imported::Cancelled {
        return Ok(ExitCode::from(130));
    }
    let facts = client
        .image_facts(&image)
        .await?
        .with_context(|| format!("the daemon accepted {image} but does not list it"))?;
    println!(
        "built {image} ({}, {}) from {}",
        short_id(&facts.id),
        crate::units::Bytes(facts.size),
        input.file_name
    );
    // The image it replaced lost its name; it would stay as a nameless
    // leftover.
    if let Some(old) = old.filter(|o| o.id != facts.id) {
        remove_replaced(&client, &old.id).await;
    }
    say_engine_match(home, input.recipe, &image);
    Ok(ExitCode::SUCCESS)
}

/// What `image build` was asked for, checked before anything is read.
struct BuildInput {
    recipe: &'static Recipe,
    /// `--tarball` and its file name.
    path: PathBuf,
    file_name: String,
    /// The version the file name says.
    version: String,
    /// `--tag`, else the version.
    tag: String,
}

impl BuildInput {
    /// The recipe of the engine, the version from the tarball's name, the
    /// tag; bad input when any is wrong or the tarball is not a file.
    fn of(args: &ImageBuildArgs) -> anyhow::Result<BuildInput> {
        let recipe = images::recipe(&args.engine).ok_or_else(|| {
            let known: Vec<&str> = images::RECIPES.iter().map(|r| r.engine).collect();
            bad_input(format!(
                "`benchcage image build` builds {} from a release tarball, not `{}`; the images of postgres, mariadb and redis come from `make images`",
                known.join(", "),
                crate::error::excerpt(&args.engine)
            ))
        })?;
        let path = args.tarball.clone();
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| bad_input(format!("--tarball {}: not a file name", path.display())))?
            .to_string();
        let version = tarball::version_from_name(recipe.engine, &file_name)
            .map_err(|e| bad_input(format!("--tarball {e}")))?;
        let tag = match &args.tag {
            Some(t) if images::is_tag(t) => t.clone(),
            Some(t) => {
                return Err(bad_input(format!(
                    "--tag `{}`: a tag is letters, digits, `_`, `.` and `-` (not first), at most 128",
                    crate::error::excerpt(t)
                )));
            }
            None => version.clone(),
        };
        check_regular_file(&path)?;
        Ok(BuildInput {
            recipe,
            path,
            file_name,
            version,
            tag,
        })
    }
}

/// A FIFO or a device would block or never end; only a file is read.
fn check_regular_file(path: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(bad_input(format!(
            "--tarball {}: not a regular file",
            path.display()
        ))),
        Err(e) => Err(bad_input(format!(
            "--tarball {}: {e}; give the path of the release tarball you downloaded",
            path.display()
        ))),
    }
}

/// The tarball's layout; bad input when it is not a release of the
/// recipe's engine or its folder names another version than its file.
async fn scan_checked(input: &BuildInput) -> anyhow::Result<tarball::Layout> {
    let (p, binary) = (input.path.clone(), input.recipe.binary);
    let layout = tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&p).map_err(|e| tarball::TarballError::Unreadable {
            path: p.clone(),
            detail: e.to_string(),
        })?;
        tarball::scan(&p, std::io::BufReader::new(f), binary)
    })
    .await
    .context("scanning the tarball")?
    .map_err(|e| bad_input(format!("--tarball {e}")))?;
    tarball::check_folder(&input.path, input.recipe.engine, &input.version, &layout)
        .map_err(|e| bad_input(format!("--tarball {e}")))?;
    Ok(layout)
}

/// The debootstrap base's tar, built when the cache lacks it; `None`
/// when a signal stopped it (said on stderr).
async fn base_root(stop: &CancellationToken, image: &str) -> anyhow::Result<Option<PathBuf>> {
    match base::ensure(&base::cache_dir(), stop, |m| eprintln!("image: {m}")).await {
        Err(base::BaseError::Interrupted) => {
            eprintln!(
                "{}; no image {image} was made",
                base::BaseError::Interrupted
            );
            Ok(None)
        }
        other => other
            .with_context(|| format!("building the base root filesystem of {image}"))
            .map(Some),
    }
}

/// How an import ended when it did not fail.
#[derive(Debug, PartialEq)]
enum Imported {
    Done,
    Cancelled,
}

/// The base and the tarball streamed into the daemon as `image`.
async fn import(
    client: &DockerClient,
    input: &BuildInput,
    layout: tarball::Layout,
    base_tar: PathBuf,
    image: &str,
    stop: &CancellationToken,
) -> anyhow::Result<Imported> {
    let changes = input.recipe.changes(&layout, &input.file_name);
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    let producer = spawn_producer(*input.recipe, base_tar, input.path.clone(), layout, tx);
    let body = tokio_stream_of(rx);
    let imported = tokio::select! {
        r = client.import(image, changes, body) => r,
        _ = stop.cancelled() => {
            producer.abort();
            eprintln!("interrupted: the import was cancelled; no image {image} was made");
            return Ok(Imported::Cancelled);
        }
    };
    // The producer's own error says more than the aborted upload.
    let produced = producer
        .await
        .context("writing the image's root filesystem")?;
    produced.with_context(|| format!("building {image}"))?;
    imported.with_context(|| format!("importing {image}"))?;
    Ok(Imported::Done)
}

/// The image a rebuild replaced, removed (a warning when it stays).
async fn remove_replaced(client: &DockerClient, old_id: &str) {
    match client.remove_image(old_id).await {
        Ok(()) => println!("removed the image it replaced ({})", short_id(old_id)),
        Err(e) => eprintln!(
            "warning: the image it replaced ({}) stays: {e}",
            short_id(old_id)
        ),
    }
}

/// A token cancelled by Ctrl-C, SIGTERM or SIGHUP: the build stops, keeps
/// nothing half made, and exits 130.
fn stop_on_signal() -> std::io::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        eprintln!("\ninterrupted: stopping the image build");
        t.cancel();
    });
    Ok(token)
}

/// `sha256:0123456789ab`.
fn short_id(id: &str) -> &str {
    &id[..id.len().min("sha256:".len() + 12)]
}

/// Writes the image's tar (base, then the tarball under the recipe's
/// folder) into `tx` in chunks; an error is sent too, so that the upload
/// aborts instead of ending as a short but valid tar.
fn spawn_producer(
    recipe: Recipe,
    base_tar: PathBuf,
    tarball_path: PathBuf,
    layout: tarball::Layout,
    tx: tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>,
) -> tokio::task::JoinHandle<Result<(), tarball::TarballError>> {
    tokio::task::spawn_blocking(move || {
        let open = |p: &Path| {
            std::fs::File::open(p)
                .map(std::io::BufReader::new)
                .map_err(|e| tarball::TarballError::Unreadable {
                    path: p.to_path_buf(),
                    detail: e.to_string(),
                })
        };
        let result = (|| {
            let base = open(&base_tar)?;
            let release = open(&tarball_path)?;
            let out = ChunkWriter {
                tx: tx.clone(),
                buf: Vec::with_capacity(CHUNK),
            };
            let mut out = tarball::compose(
                &base_tar,
                base,
                &tarball_path,
                release,
                &layout,
                Path::new(recipe.dest),
                out,
            )?;
            std::io::Write::flush(&mut out).map_err(|e| tarball::TarballError::Write(e.to_string()))
        })();
        if let Err(e) = &result {
            let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
        result
    })
}

/// A `Write` that hands full chunks to the upload.
struct ChunkWriter {
    tx: tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the daemon stopped reading the image",
            )
        })
    }
}

impl std::io::Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Say which engine version runs the image, or how to make one run it.
fn say_engine_match(home: &Path, recipe: &Recipe, image: &str) {
    let engine_file = home.join("engines").join(format!("{}.yaml", recipe.engine));
    let Ok(project) = crate::spec::Project::load(home) else {
        return;
    };
    let Some(engine) = project.engines.get(recipe.engine) else {
        return;
    };
    let versions: Vec<&String> = engine
        .versions
        .iter()
        .filter(|(_, v)| v.image.as_deref() == Some(image))
        .map(|(k, _)| k)
        .collect();
    match versions.first() {
        Some(v) => println!(
            "{}@{v} runs it: benchcage run SCENARIO --set backend=docker",
            recipe.engine
        ),
        None => {
            let named: Vec<String> = engine
                .versions
                .iter()
                .filter_map(|(_, v)| v.image.clone())
                .collect();
            println!(
                "note: no version in {} names {image} (they name {}); add one, or build with --tag to match",
                engine_file.display(),
                if named.is_empty() {
                    "no image".to_string()
                } else {
                    named.join(", ")
                }
            );
        }
    }
}
