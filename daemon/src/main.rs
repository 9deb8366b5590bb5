//! praxisd: the Praxis daemon. Thin: it sets up the layout, the audit store,
//! the policy and the watchers, then serves [`praxis_daemon::front::server`].

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use nix::fcntl::{Flock, FlockArg};
use praxis_daemon::config::Config;
use praxis_daemon::front::door::Door;
use praxis_daemon::front::{console, server};
use praxis_daemon::stage::kill_switch;
use praxis_daemon::state::Daemon;
use praxis_daemon::store::audit::{self, AuditStore, Durability, Event, EventKind};
use praxis_daemon::store::{approvals, credentials};
use praxis_daemon::{errors, private_tmp, reload, resident};
use praxis_proto::{Layout, Mode};
use tokio::signal::unix::{SignalKind, signal};

/// Exit status when praxisd cannot start (the client reads it as HOLD).
const EXIT_FAILED: i32 = 125;
/// How long running commands get to finish on SIGTERM before they are killed.
const DRAIN_GRACE: Duration = Duration::from_secs(5);
/// How often approvals that expired unused are recorded.
const EXPIRY_SWEEP: Duration = Duration::from_secs(30);

/// Records approvals that expired unused, for as long as the daemon runs.
async fn sweep_expired(daemon: Arc<Daemon>) {
    let mut every = tokio::time::interval(EXPIRY_SWEEP);
    loop {
        every.tick().await;
        let audit = Arc::clone(&daemon.audit);
        let _ = tokio::task::spawn_blocking(move || approvals::record_expired(&audit)).await;
    }
}

/// How often private tmp dirs unused past their retention are removed.
const TMP_SWEEP: Duration = Duration::from_secs(3600);

/// Removes private tmp dirs unused past `[tmp] retention_hours`, at start and
/// then hourly, never one a running command has mounted.
async fn sweep_private_tmp(daemon: Arc<Daemon>) {
    let mut every = tokio::time::interval(TMP_SWEEP);
    loop {
        every.tick().await;
        let d = Arc::clone(&daemon);
        let swept = tokio::task::spawn_blocking(move || {
            let in_use = private_tmp::mounted_by(&d.children.pgids());
            private_tmp::sweep(
                &d.config.layout.private_tmp_root(),
                d.config.tmp_retention,
                std::time::SystemTime::now(),
                &in_use,
            )
        })
        .await;
        match swept {
            Ok(Ok(0)) | Err(_) => {}
            Ok(Ok(n)) => {
                tracing::info!("removed {n} private tmp dir(s) unused past their retention")
            }
            Ok(Err(e)) => tracing::warn!("cannot sweep private tmp dirs: {e}"),
        }
    }
}

#[derive(Debug, Parser)]
#[command(name = "praxisd", version, about = "Praxis execution authority daemon")]
struct Cli {
    /// Per-user daemon (the default without a system config).
    #[arg(long, conflicts_with = "system")]
    user: bool,
    /// System daemon: socket under /run/praxis, state under /var/lib/praxis.
    #[arg(long)]
    system: bool,
    /// Leave the caller's session (used when praxis-run starts the daemon).
    #[arg(long)]
    detach: bool,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Verify the audit chain offline, without a running daemon.
    Verify {
        /// State directory holding audit.db (default: the mode's).
        #[arg(long)]
        state: Option<PathBuf>,
    },
}

fn mode_of(cli: &Cli) -> Mode {
    if cli.user {
        Mode::User
    } else if cli.system {
        Mode::System
    } else {
        Mode::detect()
    }
}

fn make_dir(path: &Path, mode: u32) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .map_err(|e| format!("cannot create {}: {}", path.display(), errors::one_line(&e)))
}

fn verify_offline(layout: &Layout, state: Option<PathBuf>) -> i32 {
    let db = state
        .map(|s| s.join("audit.db"))
        .unwrap_or_else(|| layout.audit_db());
    match audit::verify_file(&db) {
        Ok(report) if report.ok => {
            println!(
                "audit chain intact: {} events verified ({})",
                report.events_checked,
                db.display()
            );
            0
        }
        Ok(report) => {
            println!(
                "audit chain BROKEN at seq {}: {}",
                report
                    .first_broken
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "?".into()),
                report.problem.unwrap_or_default()
            );
            1
        }
        Err(e) => {
            eprintln!(
                "praxisd: cannot verify {}: {}",
                db.display(),
                errors::one_line(&e)
            );
            2
        }
    }
}

fn main() {
    // `praxisd verify | head` ends quietly instead of panicking.
    // SAFETY: restoring the default disposition of one signal before any
    // thread starts; no handler code is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let layout = Layout::for_mode(mode_of(&cli));
    if let Some(Cmd::Verify { state }) = cli.cmd {
        std::process::exit(verify_offline(&layout, state));
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PRAXIS_LOG")
                .unwrap_or_else(|_| "praxisd=info,warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if cli.detach {
        // Already a session leader only if started that way; either is fine.
        let _ = nix::unistd::setsid();
    }
    match start(layout) {
        Ok(code) => std::process::exit(code),
        Err(why) => {
            eprintln!("praxisd: {why}");
            std::process::exit(EXIT_FAILED);
        }
    }
}

/// How long a starting praxisd waits for another instance's lock.
const INSTANCE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn start(layout: Layout) -> Result<i32, String> {
    let private = if layout.mode == Mode::User {
        0o700
    } else {
        0o755
    };
    make_dir(&layout.runtime_dir, private)?;
    make_dir(&layout.state_dir, 0o700)?;
    if layout.mode == Mode::User {
        make_dir(&layout.config_dir, 0o700)?;
    }
    let lock_file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(layout.instance_lock())
        .map_err(|e| format!("cannot open {}: {e}", layout.instance_lock().display()))?;
    // A praxisd started right after one was killed may find the lock still
    // held for a moment by the dead one's last processes (its spare
    // launchers share its file table until they die with it): wait briefly.
    let mut lock_file = lock_file;
    let deadline = std::time::Instant::now() + INSTANCE_LOCK_WAIT;
    let _instance = loop {
        match Flock::lock(lock_file, FlockArg::LockExclusiveNonblock) {
            Ok(held) => break held,
            Err((file, _)) if std::time::Instant::now() < deadline => {
                lock_file = file;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(_) => {
                eprintln!(
                    "praxisd: another instance holds {}",
                    layout.instance_lock().display()
                );
                return Ok(0);
            }
        }
    };

    let mut config = Config::load(layout.clone()).map_err(|e| errors::one_line(&e))?;
    // The console's port is taken now, so that the policy knows it as one
    // of Praxis' own from the first request on.
    let console = std::net::TcpListener::bind(config.console)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot bind the console on {}: {e}", config.console))?;
    config.console = console
        .local_addr()
        .map_err(|e| format!("console address: {e}"))?;
    // Pending requests, approvals, the retry budget and credential references
    // live beside the events, so they change in the events' transactions.
    let store =
        AuditStore::open_with_schema(layout.audit_db(), &[approvals::SCHEMA, credentials::SCHEMA])
            .map_err(|e| errors::one_line(&e))?;
    if layout.mode == Mode::System {
        store.anchor_to_syslog();
    }
    let policy = reload::load(&config).map(Arc::new);
    if let Err(why) = &policy {
        tracing::error!("policy failed to load, serving only HOLD: {why}");
    }
    // Detected once, before any command: creates this daemon's cgroup bases
    // and kills what dead daemons left in theirs.
    match praxis_sandbox::tracking() {
        tracking @ praxis_sandbox::Tracking::Cgroup(_) => {
            tracing::info!("process tracking: {tracking}");
        }
        tracking @ praxis_sandbox::Tracking::ProcessGroup(_) => tracing::warn!(
            "process tracking: {tracking}; a command's descendant that calls setsid can \
             outlive it"
        ),
    }
    match praxis_sandbox::limiting() {
        limiting @ praxis_sandbox::Limiting::Rlimits(_) => {
            tracing::warn!("{limiting}; a command running as root has no process ceiling")
        }
        limiting => tracing::info!("{limiting}"),
    }
    // Still one thread here, as the fork needs: the guardian ends every
    // running command if this daemon dies, SIGKILL included.
    if let Err(e) = praxis_sandbox::guardian::start() {
        tracing::error!("guardian: {e}; commands would outlive a crash of praxisd");
    }
    // We hold the instance lock: command dirs in the scratch root are an
    // earlier daemon's.
    match praxis_sandbox::sweep_scratch(&config.layout.scratch_root()) {
        0 => {}
        n => tracing::info!("removed {n} scratch dir(s) an earlier praxisd left"),
    }
    let self_test = praxis_daemon::spawn::self_test(&config.layout.scratch_root());
    if let Err(why) = &self_test {
        tracing::error!("sandbox self-test failed, serving only HOLD: {why}");
    }
    // Each command's scratch dir, ruleset and cgroups are made while the
    // previous one runs (removed again at shutdown); the first command's
    // cgroups, with a launcher in them, now.
    praxis_sandbox::keep_spares();
    praxis_sandbox::place_ahead(config.command_limits);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("praxisd")
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let daemon = Arc::new(Daemon::new(config, policy, store, self_test));
    runtime.block_on(run(daemon, console))
}

/// Binds a socket of ours at `path` with `bind`, removing a file left
/// there first (we hold the instance lock, so it is stale), and gives it
/// `mode`.
fn bind_fresh<T>(
    path: &Path,
    mode: u32,
    bind: impl FnOnce(&Path) -> std::io::Result<T>,
) -> Result<T, String> {
    let _ = fs::remove_file(path);
    let socket = bind(path).map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set permissions on {}: {e}", path.display()))?;
    Ok(socket)
}

async fn run(daemon: Arc<Daemon>, console: std::net::TcpListener) -> Result<i32, String> {
    let layout = daemon.config.layout.clone();
    let mut detail = serde_json::Map::new();
    detail.insert("mode".into(), layout.mode.as_str().into());
    detail.insert("socket".into(), layout.socket.display().to_string().into());
    detail.insert("self_test".into(), format!("{:?}", daemon.self_test).into());
    detail.insert(
        "process_tracking".into(),
        praxis_sandbox::process_control().into(),
    );
    let startup = Event {
        policy_revision: daemon.policy().ok().map(|p| p.revision().to_owned()),
        reason: daemon.policy().err(),
        pid: Some(std::process::id()),
        detail: Some(detail),
        ..Event::new(EventKind::Startup)
    };
    // A store that cannot be trusted is kept as it is: the daemon serves
    // (status, verify, refusals) but records and runs nothing.
    match daemon.record(startup, Durability::Full).await {
        Ok(_) => {}
        Err(why) if daemon.audit.lost().is_some() => tracing::error!("{why}"),
        Err(why) => return Err(why),
    }
    match praxis_daemon::recovery::record_interrupted(&daemon).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            "{n} command(s) were running when praxisd last ended: recorded as interrupted"
        ),
        Err(why) => tracing::error!("cannot record interrupted commands: {why}"),
    }

    kill_switch::watch(Arc::clone(&daemon.kill_switch), Arc::clone(&daemon.audit))
        .map_err(|e| errors::one_line(&e))?;
    if let Err(why) = reload::watch(Arc::clone(&daemon)) {
        // SIGHUP and `praxis reload` still work.
        tracing::warn!("{why}");
    }

    // System mode: any local user may submit requests (operator requests are
    // checked by uid); user mode: the directory is already private.
    let socket_mode = if layout.mode == Mode::System {
        0o666
    } else {
        0o600
    };
    // The judge API: HTTP/1.1 JSON beside the request socket, every peer
    // checked by its kernel credentials. It comes up first, so a client that
    // sees the request socket finds every listener ready.
    let api_socket = layout.socket.with_file_name("praxisd-api.sock");
    let api = bind_fresh(&api_socket, socket_mode, |p| {
        tokio::net::UnixListener::bind(p)
    })?;
    tokio::spawn(praxis_daemon::front::memory_api::serve(
        Arc::clone(&daemon),
        api,
    ));
    // Optionally also on loopback TCP, to holders of the bearer token.
    if let Some(addr) = daemon.config.api_tcp {
        let token =
            praxis_daemon::front::memory_api::token::ApiToken::load_or_create(&layout.state_dir)
                .map_err(|e| format!("judge API token: {e}"))?;
        let tcp = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot bind the judge API on {addr}: {e}"))?;
        tracing::info!("judge API also on http://{addr} (bearer token in the state dir)");
        tokio::spawn(praxis_daemon::front::memory_api::serve_tcp(
            Arc::clone(&daemon),
            tcp,
            token,
        ));
    }

    // The operator's web console, on host loopback.
    let console_listener =
        tokio::net::TcpListener::from_std(console).map_err(|e| format!("console listener: {e}"))?;
    daemon.console.listening_on(daemon.config.console);
    let local = console::backend::Local::new(Arc::clone(&daemon));
    let logins = Arc::clone(&daemon.console);
    match daemon.config.console_fleet.clone() {
        Some(operator_url) => tokio::spawn(console::serve(
            Arc::new(console::Console {
                backend: console::fleet::Fleet::new(local, operator_url),
                logins,
            }),
            console_listener,
        )),
        None => tokio::spawn(console::serve(
            Arc::new(console::Console {
                backend: local,
                logins,
            }),
            console_listener,
        )),
    };

    // The door comes up before the request socket, which clients wait for.
    let door = bind_fresh(&layout.door(), socket_mode, Door::bind)?;
    let listener = bind_fresh(&layout.socket, socket_mode, |p| {
        tokio::net::UnixListener::bind(p)
    })?;
    tracing::info!(
        "praxisd serving on {} ({} mode)",
        layout.socket.display(),
        layout.mode.as_str()
    );

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server::serve(Arc::clone(&daemon), listener, door, stop_rx));
    tokio::spawn(sweep_expired(Arc::clone(&daemon)));
    if let Some(fleet) = daemon.config.fleet.clone() {
        tokio::spawn(praxis_daemon::front::fleet::run(Arc::clone(&daemon), fleet));
    }
    tokio::spawn(sweep_private_tmp(Arc::clone(&daemon)));
    // Every command and hook starts praxis-run: its pages stay in memory.
    if let Some(client) = resident::client_beside_this_program() {
        tokio::spawn(resident::keep(client));
    }
    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    loop {
        tokio::select! {
            _ = hup.recv() => {
                let d = Arc::clone(&daemon);
                let _ = tokio::task::spawn_blocking(move || reload::reload(&d, "SIGHUP", None)).await;
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    daemon
        .draining
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = stop_tx.send(true);
    let _ = fs::remove_file(&layout.socket);
    let _ = fs::remove_file(layout.door());
    let _ = fs::remove_file(&api_socket);
    if let Ok(tasks) = serving.await {
        server::drain(&daemon, tasks, DRAIN_GRACE).await;
    }
    // Held actions memory queued are written before the daemon goes.
    if let Ok(store) = &daemon.memory {
        store.flush();
    }
    // So are the session states still waiting to be saved.
    daemon.sessions.flush();
    praxis_sandbox::discard_spare();
    praxis_sandbox::tidy_now();
    let _ = daemon
        .record(
            Event {
                pid: Some(std::process::id()),
                ..Event::new(EventKind::Shutdown)
            },
            Durability::Full,
        )
        .await;
    Ok(0)
}
