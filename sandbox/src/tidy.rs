//! What finished commands left, removed once their clients are gone.
//!
//! Removing what a command left (its `Leftovers`) costs the kernel
//! real work: reaping its leader releases its Landlock domain and seccomp
//! filter, its cgroups are emptied and removed, and freeing its mount and
//! network namespaces waits for RCU grace periods that interrupt every
//! core. Done as the exit was reported, that work took a core from the
//! report and from the client's own exit. Queued here with [`later`], it
//! waits until the caller says a client has gone ([`client_gone`]; praxisd
//! says so after every request that ran a command), then runs on one
//! background thread. [`tidy_now`] runs what is queued on the caller, for a
//! process about to end.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// One piece of queued removal.
pub(crate) type Work = Box<dyn FnOnce() + Send>;

struct Queue {
    work: Vec<Work>,
    /// A client has gone since the thread last ran the queue.
    go: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    work: Vec::new(),
    go: false,
});
static WAKE: Condvar = Condvar::new();
/// Whether the tidying thread runs (false when it could not be started).
static THREAD: OnceLock<bool> = OnceLock::new();

/// Queues `work` until the next [`client_gone`]; runs it at once where no
/// thread could be started to run it later.
pub(crate) fn later(work: Work) {
    if !*THREAD.get_or_init(start) {
        work();
        return;
    }
    // No wake-up here: waking the thread now is what this queue avoids.
    lock().work.push(work);
}

/// A client whose command is done has gone: what finished commands left is
/// removed now, on the tidying thread.
pub fn client_gone() {
    let mut queue = lock();
    if queue.work.is_empty() {
        return;
    }
    queue.go = true;
    drop(queue);
    WAKE.notify_one();
}

/// Removes what finished commands left, on the caller, now: for a process
/// about to end, whose queue would otherwise wait for a client that never
/// comes.
pub fn tidy_now() {
    let work = std::mem::take(&mut lock().work);
    work.into_iter().for_each(|w| w());
}

fn lock() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn start() -> bool {
    std::thread::Builder::new()
        .name(String::from("praxis-tidy"))
        .spawn(|| {
            let mut queue = lock();
            loop {
                queue = WAKE
                    .wait_while(queue, |q| !q.go)
                    .unwrap_or_else(PoisonError::into_inner);
                queue.go = false;
                let work = std::mem::take(&mut queue.work);
                drop(queue);
                work.into_iter().for_each(|w| w());
                queue = lock();
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn queued_work_waits_for_a_client_to_go_then_runs_off_the_caller() {
        let ran = Arc::new(AtomicUsize::new(0));
        let on = Arc::new(Mutex::new(None));
        let (count, thread) = (Arc::clone(&ran), Arc::clone(&on));
        later(Box::new(move || {
            *thread.lock().unwrap() = Some(std::thread::current().id());
            count.fetch_add(1, Ordering::SeqCst);
        }));
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(ran.load(Ordering::SeqCst), 0, "ran before a client went");
        client_gone();
        let deadline = Instant::now() + Duration::from_secs(5);
        while ran.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "never ran");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_ne!(*on.lock().unwrap(), Some(std::thread::current().id()));

        // A process about to end runs what is queued itself.
        let count = Arc::clone(&ran);
        later(Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }));
        tidy_now();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    }
}
