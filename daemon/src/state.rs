//! The daemon's shared state: configuration, the loaded policy, the audit
//! store, the kill switch and the running commands.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use praxis_policy::Policy;
use praxis_policy::redact::{Redactor, builtin_config};

use crate::children::Children;
use crate::config::Config;
use crate::egress::EgressHub;
use crate::program_cache::ProgramCache;
use crate::stage::kill_switch::KillSwitch;
use crate::store::audit::{Appended, AuditStore, Durability, Event};
use crate::store::credential_rows::RowCache;
use crate::store::credentials;
use crate::store::memory::db::MemoryStore;
use crate::store::sessions::Sessions;

/// The policy in force. `Err` when no policy has ever loaded (a bad file at
/// start-up): the daemon then serves nothing but HOLD with that reason.
pub type LoadedPolicy = Result<Arc<Policy>, String>;

/// Request counters for `praxis status`.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub allowed: AtomicU64,
    pub held: AtomicU64,
    pub stopped: AtomicU64,
}

impl Counters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Everything a request or an operator command may touch.
pub struct Daemon {
    pub config: Config,
    policy: RwLock<LoadedPolicy>,
    pub audit: Arc<AuditStore>,
    pub kill_switch: Arc<KillSwitch>,
    pub children: Arc<Children>,
    pub counters: Counters,
    /// `Err(why)` when the sandbox self-test failed: every request is HOLD.
    pub self_test: Result<String, String>,
    /// Set by SIGTERM: no new work.
    pub draining: AtomicBool,
    /// The shipped secret rules, for notes and logs while no policy is loaded;
    /// commands use their policy's redactor. `Err`: nothing can be masked.
    pub redactor: Result<Redactor, String>,
    /// Where reversible commands keep what they remove. `Err`: nothing can
    /// be kept, so no command is reversible.
    pub snapshots: Result<praxis_snapshot::Store, String>,
    /// The egress proxy for commands with network grants. `Err`: such
    /// commands are HOLD, never given raw network instead.
    pub egress: Result<Arc<EgressHub>, String>,
    /// The session control plane: detector and per-session state.
    pub sessions: Arc<Sessions>,
    /// Judgment memory. `Err`: nothing is remembered or recalled, and
    /// every HOLD stands.
    pub memory: Result<MemoryStore, String>,
    /// The operator's credential rows as last read (told of every change).
    pub credential_rows: RowCache,
    /// Where program names resolve, kept while nothing it depended on changed.
    pub programs: ProgramCache,
    /// The web console's address and its operators' logins.
    pub console: Arc<crate::logins::Logins>,
}

/// The shipped secret rules, compiled and checked against their examples.
pub fn base_redactor() -> Result<Redactor, String> {
    builtin_config()
        .and_then(|config| Redactor::new(&config))
        .map_err(|e| format!("redactor: {}", crate::errors::one_line(&e)))
}

impl Daemon {
    pub fn new(
        config: Config,
        policy: LoadedPolicy,
        audit: AuditStore,
        self_test: Result<String, String>,
    ) -> Daemon {
        let children = Arc::new(Children::default());
        let kill_switch = Arc::new(KillSwitch::new(
            config.kill_file.clone(),
            Arc::clone(&children),
            config.kill_grace,
        ));
        let snapshots = praxis_snapshot::Store::open(
            config.layout.state_dir.join("snapshots"),
            config.snapshots.limits.clone(),
        )
        .map_err(|e| format!("snapshot store: {e}"));
        let egress = EgressHub::open(
            &config.layout.state_dir,
            &config.layout.egress_public_dir(),
            &config.egress_upstream_roots,
        )
        .map(Arc::new)
        .map_err(|e| e.to_string());
        let memory = MemoryStore::open(&config.layout.state_dir.join("memory.db"))
            .map_err(|e| crate::errors::one_line(&e));
        Daemon {
            memory,
            snapshots,
            egress,
            sessions: Arc::new(Sessions::open(&config)),
            config,
            policy: RwLock::new(policy),
            audit: Arc::new(audit),
            kill_switch,
            children,
            counters: Counters::default(),
            self_test,
            draining: AtomicBool::new(false),
            redactor: base_redactor(),
            credential_rows: RowCache::default(),
            programs: ProgramCache::default(),
            console: Arc::new(crate::logins::Logins::new()),
        }
    }

    /// The policy in force now; a request keeps the one it started with.
    pub fn policy(&self) -> LoadedPolicy {
        self.policy
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    pub fn set_policy(&self, policy: Arc<Policy>) {
        *self
            .policy
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Ok(policy);
    }

    /// `text` with every secret the policy in force (else the shipped rules)
    /// knows masked, for notes and logs.
    pub fn redact(&self, text: &str) -> String {
        if let Ok(policy) = self.policy() {
            return policy.redactor().redact_str(text).into_owned();
        }
        match &self.redactor {
            Ok(r) => r.redact_str(text).into_owned(),
            Err(_) => String::from("[REDACTED: redactor unavailable]"),
        }
    }

    /// Where credentials come from, for the credential store.
    pub fn credentials(&self) -> credentials::Sources<'_> {
        credentials::Sources {
            configured: &self.config.credentials,
            audit: &self.audit,
            rows: &self.credential_rows,
        }
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Appends an audit event from async code without blocking the runtime.
    pub async fn record(&self, event: Event, durability: Durability) -> Result<Appended, String> {
        crate::store::record(&self.audit, event, durability).await
    }

    /// Appends an audit event from a blocking context (watcher threads).
    pub fn record_blocking(
        &self,
        event: Event,
        durability: Durability,
    ) -> Result<Appended, String> {
        self.audit
            .append(event, durability)
            .map_err(|e| crate::errors::one_line(&e))
    }
}
