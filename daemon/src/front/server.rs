//! The socket server: accepts connections and takes those handed in through
//! the door, identifies the peer, receives the first frame with its
//! descriptors and hands it to the pipeline or to the operator handler. A
//! bad frame is refused with an error frame and the connection closed; the
//! server keeps serving.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use praxis_proto::frame::FrameError;
use praxis_proto::{ClientMsg, Mode};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::conn::{self, Peer, Writer};
use crate::errors;
use crate::front::door::{Door, DoorError};
use crate::pinned::PinnedPeer;
use crate::pipeline::{self, Inbound};
use crate::state::Daemon;

/// How long the next command's spare, the removal of what a finished
/// command left, and the hand-over of a judged call's session states wait
/// for its client to hang up before they go ahead.
const AFTER_CLIENT: Duration = Duration::from_millis(100);

/// Serves until `stop` turns true, then stops accepting and returns the
/// connections still being served.
pub async fn serve(
    daemon: Arc<Daemon>,
    listener: UnixListener,
    door: Door,
    mut stop: watch::Receiver<bool>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => serve_one(&mut tasks, &daemon, stream),
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            handed_in = door.receive() => match handed_in {
                Ok(stream) => serve_one(&mut tasks, &daemon, stream),
                Err(DoorError::Io(e)) => {
                    tracing::warn!("the door failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // Like a bad frame on the socket, not logged above debug:
                // any local user may knock, as often as they like.
                Err(refused) => tracing::debug!("refused at the door: {refused}"),
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = stop.changed() => {
                if *stop.borrow() {
                    return tasks;
                }
            }
        }
    }
}

fn serve_one(tasks: &mut JoinSet<()>, daemon: &Arc<Daemon>, stream: UnixStream) {
    let daemon = Arc::clone(daemon);
    tasks.spawn(async move {
        handle(Arc::clone(&daemon), stream).await;
        // The session states the request stepped, once its reply is out:
        // handing them over wakes a thread.
        daemon.sessions.hand_over();
    });
}

async fn handle(daemon: Arc<Daemon>, mut stream: UnixStream) {
    let peer = match Peer::of(&stream) {
        Ok(peer) => peer,
        Err(e) => return conn::refuse(&mut stream, format!("cannot identify peer: {e}")).await,
    };
    // An idle or half-sent request holds a task and a descriptor: bounded.
    let first =
        tokio::time::timeout(daemon.config.idle_timeout, conn::read_first(&mut stream)).await;
    let (frame, fds) = match first {
        Ok(Ok(got)) => got,
        Ok(Err(FrameError::Closed)) => return,
        Ok(Err(e)) => return conn::refuse(&mut stream, errors::one_line(&e)).await,
        Err(_) => {
            return conn::refuse(
                &mut stream,
                String::from("no request within the time limit"),
            )
            .await;
        }
    };
    let msg = match frame.parse_message::<ClientMsg>() {
        Ok(msg) => msg,
        Err(e) => return conn::refuse(&mut stream, errors::one_line(&e)).await,
    };
    match msg {
        ClientMsg::Exec(request) => {
            if let Some(why) = foreign_user(&daemon, peer) {
                return conn::refuse(&mut stream, why).await;
            }
            let Ok::<[OwnedFd; 2], _>([stdin, cwd_dir]) = fds.try_into() else {
                return conn::refuse(
                    &mut stream,
                    String::from("exec needs exactly two descriptors: stdin and cwd"),
                )
                .await;
            };
            let peer = at_request(&daemon, &stream, peer);
            let (reader, writer) = stream.into_split();
            let mut writer = Writer::new(writer);
            let inbound = Inbound {
                peer,
                request,
                stdin,
                cwd_dir,
            };
            pipeline::run(&daemon, inbound, reader, &mut writer).await;
            // The next command's spare joins its cgroups, and a cgroup move
            // holds up every process on the host that forks or exits until
            // it is done (after an idle moment, an RCU grace period): made
            // while this client still exits, it would wait for it. So
            // would removing what the command left, which frees namespaces
            // and cgroups and reaps its leader.
            writer.close_and_outwait(AFTER_CLIENT).await;
            praxis_sandbox::make_spare();
            praxis_sandbox::client_gone();
        }
        ClientMsg::Operator { request } => {
            drop(fds);
            // Pinned once the request is in; examined as it is handled.
            let process = PinnedPeer::of(stream.as_fd());
            let (_reader, writer) = stream.into_split();
            let mut writer = Writer::new(writer);
            crate::front::operator::handle(&daemon, peer, &process, request, &mut writer).await;
        }
        ClientMsg::Judge(request) => {
            if let Some(why) = foreign_user(&daemon, peer) {
                return conn::refuse(&mut stream, why).await;
            }
            let Ok::<[OwnedFd; 1], _>([cwd_dir]) = fds.try_into() else {
                return conn::refuse(
                    &mut stream,
                    String::from("judge needs exactly one descriptor: cwd"),
                )
                .await;
            };
            let peer = at_request(&daemon, &stream, peer);
            let (_reader, writer) = stream.into_split();
            let mut writer = Writer::new(writer);
            crate::front::hooks::tool_call(&daemon, peer, request, cwd_dir, &mut writer).await;
            // The session states it stepped are handed over (a thread
            // woken) once the client is gone, not while it still answers
            // its runtime.
            writer.close_and_outwait(AFTER_CLIENT).await;
        }
        ClientMsg::Note(request) => {
            drop(fds);
            if let Some(why) = foreign_user(&daemon, peer) {
                return conn::refuse(&mut stream, why).await;
            }
            let (_reader, writer) = stream.into_split();
            crate::front::hooks::note(&daemon, peer, request, &mut Writer::new(writer)).await;
        }
        ClientMsg::Cancel => {
            conn::refuse(
                &mut stream,
                String::from("cancel without a running request"),
            )
            .await
        }
    }
}

/// The peer as its process is now that its request is in: pinned by its
/// pidfd, its pid read through it and whether it lies inside a command
/// praxis runs (its cgroup or its ancestry). A process that cannot be
/// examined (exited, or no pidfd) counts as inside.
fn at_request(daemon: &Daemon, stream: &UnixStream, peer: Peer) -> Peer {
    let now = PinnedPeer::of(stream.as_fd())
        .and_then(|pinned| pinned.examine(|now| (now.pid, daemon.children.contains(now))));
    match now {
        Ok((pid, inside)) => Peer {
            pid: Some(pid),
            inside: Some(inside),
            ..peer
        },
        Err(_) => Peer {
            inside: Some(true),
            ..peer
        },
    }
}

/// A user-mode daemon serves its own user only.
fn foreign_user(daemon: &Daemon, peer: Peer) -> Option<String> {
    (daemon.config.mode() == Mode::User && peer.uid != nix::unistd::geteuid().as_raw())
        .then(|| format!("uid {} may not use this user-mode praxisd", peer.uid))
}

/// Drains: no new work (the caller stopped accepting and set `draining`),
/// running commands get `grace` to finish, then are killed; the connections
/// get a moment to send their exit frames.
pub async fn drain(daemon: &Arc<Daemon>, mut tasks: JoinSet<()>, grace: Duration) {
    daemon.draining.store(true, Ordering::SeqCst);
    let waited =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if waited.is_err() {
        let d = Arc::clone(daemon);
        let _ = tokio::task::spawn_blocking(move || {
            d.children
                .terminate_all("praxisd shutting down", d.config.kill_grace)
        })
        .await;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
    }
}
