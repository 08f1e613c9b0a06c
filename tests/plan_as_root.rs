//! What `plan` shows of the commands a cell runs when benchcage runs as
//! root (as `make test` does): the client runs as root. Needs root.

mod support;

use support::cli::{Out, bc_home, repo};
use support::files::temp_home;

#[test]
fn plan_shows_the_user_every_command_and_the_environment_a_cell_runs() {
    let home = temp_home("benchcage-specs-");
    let redis = std::fs::read_to_string(repo().join("engines/redis.yaml")).unwrap();
    let traced = redis.replacen(
        "port: 6379",
        "port: 6379\ninit:\n  - [/bin/echo, \"prepare {data_dir}\", \"{config:redis.conf}\"]\nenv: {LD_PRELOAD: /opt/trace/libtrace.so, MALLOC_ARENA_MAX: \"2\"}",
        1,
    );
    std::fs::write(home.path().join("engines/traced.yaml"), traced).unwrap();
    std::fs::write(
        home.path().join("scenarios/traced.yaml"),
        "matrix: {engines: [traced, postgres], environments: [quickstart]}\nphases:\n  - {name: probe, tool: {command: {argv: [/usr/bin/redis-benchmark, -p, \"{port}\", -c, \"{threads}\"], throughput: \"([0-9.]+) requests per second\"}}, duration: 5s}\n",
    )
    .unwrap();
    let o = bc_home(home.path())
        .env("BENCHCAGE_WORK_FREE", "64TiB")
        .args(["plan", "traced"])
        .output()
        .unwrap();
    let o = Out::of(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = o.stdout;
    for want in [
        "  user      nobody (the default: traced has no `user:`)",
        "  init      /bin/echo 'prepare {data_dir}' {config_dir}/redis.conf",
        "  command   /usr/bin/redis-server {config_dir}/redis.conf --port {port} --dir {data_dir}",
        "  env       LD_PRELOAD=/opt/trace/libtrace.so",
        "  env       MALLOC_ARENA_MAX=2",
        "  client    probe: /usr/bin/redis-benchmark -p {port} -c {threads}, as root, in the client group",
        "  user      postgres\n",
        "  init      /usr/lib/postgresql/15/bin/initdb -D {data_dir} -U postgres",
        "  command   /usr/lib/postgresql/15/bin/postgres -D {data_dir} -c config_file={config_dir}/postgresql.conf -p {port}",
        "  env       none added",
    ] {
        assert!(text.contains(want), "no `{want}` in:\n{text}");
    }
    for line in text.lines().filter(|l| {
        [
            "  user ",
            "  init ",
            "  command ",
            "  env ",
            "  client ",
            "  where ",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    }) {
        assert!(
            !line.contains("Some(") && !line.contains("[\"") && !line.contains(" { "),
            "debug formatting: {line}"
        );
    }
}
