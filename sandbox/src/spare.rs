//! The next command's scratch dir, Landlock ruleset and cgroups, made ahead.
//!
//! Most of `prepare`'s time went to adding the carve's rules to a fresh
//! ruleset (one system call per opened inode, a few hundred of them) and to
//! making the command's cgroups. Once spares are on ([`keep_spares`]), each
//! `prepare` leaves word of the same pieces for the next command with the
//! same inputs, which a background thread makes when asked ([`make_spare`],
//! after the command's exit is reported): a scratch dir, a fresh ruleset holding the
//! carve's rules and that dir's grant, and fresh cgroups. The next
//! `prepare` takes them all when its inputs are equal and its carve is the
//! very one they were made from (the carve cache has just checked that it is
//! current). Otherwise, when only its limits are equal, it takes the
//! spare's cgroups with the launcher waiting in them (and its network
//! namespace) and makes the rest; else it makes its own. A spare is used once,
//! exactly as a freshly made one would be, so a command gets the same rules
//! either way; the command's write grants are added after it is taken.
//! The spare's launcher also mounts the private `/tmp` of the command that
//! wanted it, which a next command takes only if it is exactly its own
//! (see `launcher`).
//!
//! Off by default: a process that turns spares on removes the last one with
//! [`discard_spare`] before it ends (the guardian sweeps its cgroup if it
//! dies first).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use crate::carve_cache::{self, Carved};
use crate::cgroup::CommandCgroup;
use crate::fs_rules::{self, Grant};
use crate::launcher::Launcher;
use crate::private_tmp::TmpPlan;
use crate::scratch::ScratchDir;
use crate::{Limits, SandboxError};

/// What the pieces are made from, besides the carve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inputs {
    pub(crate) carve: carve_cache::Key,
    pub(crate) scratch_root: PathBuf,
    /// Owner of the scratch dir (the command's uid and gid when it runs as another user).
    pub(crate) owner: Option<(u32, u32)>,
    pub(crate) network_off: bool,
    /// Whether the command's network namespace is made here, ahead (the
    /// daemon holds CAP_SYS_ADMIN), rather than by the child.
    pub(crate) netns_ahead: bool,
    pub(crate) limits: Limits,
}

/// A command's scratch dir, its ruleset with the carve's rules and the
/// scratch grant, and its cgroups.
#[derive(Debug)]
pub(crate) struct Made {
    /// A process waiting in those cgroups to start the command (spares
    /// only): it goes before them.
    pub(crate) launcher: Option<Launcher>,
    pub(crate) scratch: ScratchDir,
    pub(crate) ruleset: OwnedFd,
    pub(crate) rule_count: usize,
    pub(crate) cgroup: Option<CommandCgroup>,
    /// The command's network namespace, `lo` up, when made ahead.
    pub(crate) netns: Option<OwnedFd>,
}

/// Where a command's cgroups (and network namespace) come from.
pub(crate) enum Placement {
    /// Made now, for the command at hand: it joins them itself.
    Make,
    /// Made now for a spare, with a launcher placed in them that mounts
    /// `tmp` ahead (the private `/tmp` of the command that wanted it).
    Ahead { tmp: Option<TmpPlan> },
    /// Made already, with the launcher waiting in them: another command's
    /// spare made with the same limits (with its network namespace), or
    /// those placed at start. A command that differs from the last in
    /// anything else (its workspace, its network) still starts without a
    /// cgroup move.
    Placed {
        launcher: Option<Launcher>,
        cgroup: Option<CommandCgroup>,
        netns: Option<OwnedFd>,
    },
}

impl Made {
    /// Makes the pieces; the scratch root must exist (it is never made here,
    /// so a spare cannot bring back a root removed meanwhile). Made ahead
    /// (a spare), they come with a launcher already in the cgroups; where
    /// one cannot be placed, the command joins them itself, as one made on
    /// the spot does.
    pub(crate) fn new(
        inputs: &Inputs,
        carved: &Carved,
        placement: Placement,
    ) -> Result<Made, SandboxError> {
        let scratch = ScratchDir::create_in(&inputs.scratch_root, inputs.owner)?;
        let restricted = inputs.carve.restricted;
        let scratch_rules = if restricted {
            let grant = Grant {
                path: scratch.0.clone(),
                access: fs_rules::write_rights(),
            };
            fs_rules::carve(&[grant], &carved.write_exclusions, &mut Vec::new())?
        } else {
            Vec::new()
        };
        let ruleset = fs_rules::ruleset(restricted, inputs.network_off)?;
        fs_rules::add_rules(&ruleset, &carved.rules)?;
        fs_rules::add_rules(&ruleset, &scratch_rules)?;
        let (launcher, cgroup, netns) = match placement {
            Placement::Make => (None, CommandCgroup::create(&inputs.limits)?, None),
            Placement::Ahead { tmp } => {
                let cgroup = CommandCgroup::create(&inputs.limits)?;
                let launcher = cgroup
                    .as_ref()
                    .and_then(|cgroup| Launcher::place(&cgroup.procs_fds(), tmp.as_ref()).ok());
                (launcher, cgroup, None)
            }
            Placement::Placed {
                launcher,
                cgroup,
                netns,
            } => (launcher, cgroup, netns),
        };
        let netns = match netns {
            Some(netns) if inputs.netns_ahead => Some(netns),
            _ if inputs.netns_ahead => Some(crate::netns::make()?),
            _ => None,
        };
        Ok(Made {
            launcher,
            scratch,
            ruleset,
            rule_count: carved.rules.len() + scratch_rules.len(),
            cgroup,
            netns,
        })
    }

    /// Its cgroups, launcher and network namespace, for a command with the
    /// same limits; the rest is dropped (its scratch dir removed).
    fn placement(self) -> Placement {
        let Made {
            launcher,
            cgroup,
            netns,
            ..
        } = self;
        Placement::Placed {
            launcher,
            cgroup,
            netns,
        }
    }
}

/// A spare: its inputs, the carve it was made from, and the pieces.
type Spare = (Inputs, Arc<Carved>, Made);

/// What a spare is made for: the inputs and carve of the command that
/// wants it, and that command's private `/tmp`, which its launcher mounts
/// ahead for a next command of the same session.
type Wanted = (Inputs, Arc<Carved>, Option<TmpPlan>);

/// The spare kept, the one the last command wants made next, and the
/// inputs of the one being made.
struct Kept {
    spare: Option<Spare>,
    wanted: Option<Wanted>,
    making: Option<Inputs>,
    /// Cgroups and a launcher placed from the limits alone, for the first
    /// command (no spare is wanted before a command has run).
    placed: Option<(Limits, Placement)>,
}

static ON: AtomicBool = AtomicBool::new(false);
static KEPT: Mutex<Kept> = Mutex::new(Kept {
    spare: None,
    wanted: None,
    making: None,
    placed: None,
});
/// Signalled when a spare being made is kept (or given up).
static MADE: Condvar = Condvar::new();
static MAKER: OnceLock<SyncSender<Wanted>> = OnceLock::new();

/// How long a command waits for a spare being made for its inputs before
/// making its own (making one takes about a millisecond).
const WAIT_FOR_SPARE: Duration = Duration::from_millis(20);

/// Turns spares on for this process (praxisd, once its self-test is done).
pub fn keep_spares() {
    ON.store(true, Ordering::Relaxed);
}

/// Places cgroups with `limits`, and a launcher in them, for the first
/// command to take: before a command has run, no spare is wanted. Pays the
/// cgroup move now (praxisd calls it at start); nothing when spares are off
/// or commands get no cgroups.
pub fn place_ahead(limits: Limits) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let Ok(Some(cgroup)) = CommandCgroup::create(&limits) else {
        return;
    };
    let launcher = Launcher::place(&cgroup.procs_fds(), None).ok();
    let placement = Placement::Placed {
        launcher,
        cgroup: Some(cgroup),
        netns: None,
    };
    let stale = lock().placed.replace((limits, placement));
    drop(stale);
}

/// Turns spares off and removes the one kept, if any: its scratch dir and
/// its cgroups.
pub fn discard_spare() {
    ON.store(false, Ordering::Relaxed);
    // One being made is dropped by its maker, which sees spares off.
    let mut kept = MADE
        .wait_timeout_while(lock(), WAIT_FOR_SPARE, |k| k.making.is_some())
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .0;
    kept.wanted = None;
    // Dropping the pieces removes the dir and the (empty) cgroups.
    let spare = kept.spare.take();
    let placed = kept.placed.take();
    drop(kept);
    drop(spare);
    drop(placed);
}

/// Makes, in the background, the spare the last `prepare` wants for the
/// next command. praxisd calls it once a command's client has gone: made
/// then, the spare does not compete with a command starting (making
/// cgroups and joining one take the same kernel lock), nor hold up the
/// client's exit (joining a cgroup holds up every exit and fork meanwhile).
pub fn make_spare() {
    let mut kept = lock();
    let Some(wanted) = kept.wanted.take() else {
        return;
    };
    if !ON.load(Ordering::Relaxed) || kept.making.is_some() {
        return;
    }
    kept.making = Some(wanted.0.clone());
    drop(kept);
    if maker().try_send(wanted).is_err() {
        lock().making = None;
    }
}

fn lock() -> MutexGuard<'static, Kept> {
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The pieces for a command with `inputs` and the carve `carved`: the spare
/// when it was made from both, else made now. With spares on and the carve
/// kept for later commands, a spare like it is wanted next
/// ([`make_spare`]), its launcher mounting `tmp` ahead.
pub(crate) fn take_or_make(
    inputs: &Inputs,
    carved: &Arc<Carved>,
    tmp: Option<&TmpPlan>,
) -> Result<Made, SandboxError> {
    let mut kept = lock();
    if kept.making.as_ref() == Some(inputs) {
        kept = MADE
            .wait_timeout_while(kept, WAIT_FOR_SPARE, |k| k.making.is_some())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    let taken = kept.spare.take();
    let placed = kept.placed.take();
    if ON.load(Ordering::Relaxed) && carve_cache::is_kept(&inputs.carve, carved) {
        kept.wanted = Some((inputs.clone(), Arc::clone(carved), tmp.cloned()));
    }
    drop(kept);
    match (taken, placed) {
        (Some((was, from, made)), _) if was == *inputs && Arc::ptr_eq(&from, carved) => Ok(made),
        (Some((was, _, made)), _) if was.limits == inputs.limits => {
            Made::new(inputs, carved, made.placement())
        }
        (_, Some((limits, placement))) if limits == inputs.limits => {
            Made::new(inputs, carved, placement)
        }
        // Pieces made with other limits are dropped here (their dirs and
        // cgroups go).
        _ => Made::new(inputs, carved, Placement::Make),
    }
}

/// The thread that makes spares, started on first use.
fn maker() -> &'static SyncSender<Wanted> {
    MAKER.get_or_init(|| {
        let (asks, asked) = mpsc::sync_channel::<Wanted>(1);
        let started = std::thread::Builder::new()
            .name(String::from("praxis-spare"))
            .spawn(move || {
                for (inputs, carved, tmp) in asked {
                    // A failure only means the next command makes its own.
                    let made = Made::new(&inputs, &carved, Placement::Ahead { tmp });
                    let mut kept = lock();
                    kept.making = None;
                    // Turned off meanwhile: nothing may be left behind.
                    if let Ok(made) = made
                        && ON.load(Ordering::Relaxed)
                    {
                        kept.spare = Some((inputs, carved, made));
                    }
                    drop(kept);
                    MADE.notify_all();
                }
            });
        if started.is_err() {
            ON.store(false, Ordering::Relaxed);
        }
        asks
    })
}
