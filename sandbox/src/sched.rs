//! The daemon's own threads yield to the task they wake on; commands get
//! the scheduling policy praxisd was started with.
//!
//! A client connecting to praxisd wakes one of its threads, which, as an
//! ordinary task, preempts the client at once: it accepts the connection,
//! finds no request yet, and sleeps until the client, resumed, sends it. Two
//! wake-ups and two passes through the daemon per request, on cold caches
//! when an agent's requests come seconds apart. Under `SCHED_BATCH` a woken
//! thread does not preempt: the client runs on until it waits for the
//! answer, and the daemon takes the connection and the request in one pass.
//! The cost: while other tasks keep a core busy, a woken daemon thread waits
//! for the running task's time slice to end (a few milliseconds at most)
//! rather than preempting it.
//!
//! What praxisd runs must not inherit that: the spawner thread, which clones
//! every command, takes back the policy the process started with
//! ([`as_started`]), whichever thread started the spawner.

use std::io;
use std::sync::OnceLock;

/// The calling thread's policy and priority when [`yield_on_wake`] first ran.
static STARTED: OnceLock<(libc::c_int, libc::sched_param)> = OnceLock::new();

/// The calling thread's scheduling policy and priority.
fn current() -> io::Result<(libc::c_int, libc::sched_param)> {
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: queries the calling thread into a local struct.
    let policy = unsafe { libc::sched_getscheduler(0) };
    // SAFETY: as above.
    if policy < 0 || unsafe { libc::sched_getparam(0, &mut param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy, param))
}

fn set(policy: libc::c_int, param: &libc::sched_param) -> io::Result<()> {
    // SAFETY: sets the calling thread's policy from a live struct.
    if unsafe { libc::sched_setscheduler(0, policy, param) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts the calling thread, and the threads it starts from now on, under
/// `SCHED_BATCH`, when it runs under the ordinary policy (a policy an
/// operator chose is kept). Records the policy it had for [`as_started`].
pub fn yield_on_wake() -> io::Result<()> {
    let (policy, param) = current()?;
    STARTED.get_or_init(|| (policy, param));
    if policy == libc::SCHED_OTHER {
        set(libc::SCHED_BATCH, &param)?;
    }
    Ok(())
}

/// Gives the calling thread the policy the process had before
/// [`yield_on_wake`], if that ran; its nice value is kept.
pub(crate) fn as_started() -> io::Result<()> {
    match STARTED.get() {
        Some((policy, param)) if current()?.0 != *policy => set(*policy, param),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        current().unwrap().0
    }

    #[test]
    fn threads_started_after_yield_inherit_it_and_the_spawner_takes_the_start_back() {
        // On a thread of its own: the policy it changes is per thread.
        std::thread::spawn(|| {
            let before = policy();
            yield_on_wake().unwrap();
            let expected = if before == libc::SCHED_OTHER {
                libc::SCHED_BATCH
            } else {
                before
            };
            assert_eq!(policy(), expected);
            let inherited = std::thread::spawn(policy).join().unwrap();
            assert_eq!(inherited, expected);
            let taken_back = std::thread::spawn(|| {
                as_started().unwrap();
                policy()
            })
            .join()
            .unwrap();
            assert_eq!(taken_back, before);
        })
        .join()
        .unwrap();
    }
}
