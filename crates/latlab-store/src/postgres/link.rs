//! One connection to the server, driven on a runtime of its own so that every wait on
//! the server has a deadline ([`super::timeouts`]) and a stop signal cuts a wait short:
//! neither a server that takes the connection and never answers, nor one stopped in the
//! middle of a run, hangs the command. A wait given up leaves the connection in an
//! unknown state, so it is not used again: every later call fails at once the same way.

use crate::NoAnswer;
use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::Client;

/// Once the command is asked to stop, how much longer a wait on the server may last:
/// Ctrl-C ends a run within about a second whatever the server does.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// How often a wait looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// How long closing a connection waits for its goodbye to be sent, so that the server
/// logs no lost client.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// Why a wait on the server ended without its result.
#[derive(Debug)]
pub(super) enum Failure {
    /// The server (or the driver) said why.
    Driver(tokio_postgres::Error),
    /// No answer in time.
    GaveUp(NoAnswer),
}

/// The runtime that drives the connection, and the rules of waiting on it.
pub(super) struct Waiter {
    runtime: Runtime,
    /// How long the answer to one statement is awaited; `None`: as long as it takes.
    answer: Option<Duration>,
    /// Set when the command is asked to stop.
    stop: Option<Arc<AtomicBool>>,
    /// The wait given up, once one was: the connection is not used again.
    abandoned: Cell<Option<NoAnswer>>,
}

/// A connection and its waiter.
pub(super) struct Link {
    /// Dropped first, so that the connection sends its goodbye.
    client: Option<Client>,
    /// The task that reads and writes the connection's socket.
    connection: Option<JoinHandle<()>>,
    pub(super) waiter: Waiter,
}

impl Waiter {
    /// A waiter whose statements are answered within `answer`.
    pub(super) fn new(answer: Option<Duration>) -> std::io::Result<Waiter> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        Ok(Waiter {
            runtime,
            answer,
            stop: None,
            abandoned: Cell::new(None),
        })
    }

    /// Waits for the answer to one statement (or a few sent as one), within the answer
    /// time.
    pub(super) fn wait<T>(
        &self,
        work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Failure> {
        self.wait_within(self.answer.map(|d| (d, NoAnswer::Statement(d))), work)
    }

    /// Waits for `work` at most `limit`'s time, after which the server counts as not
    /// answering as `limit` says; and at most [`STOP_GRACE`] after the stop flag is
    /// seen.
    pub(super) fn wait_within<T>(
        &self,
        limit: Option<(Duration, NoAnswer)>,
        work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Failure> {
        if let Some(why) = self.abandoned.get() {
            return Err(Failure::GaveUp(why));
        }
        let began = Instant::now();
        let stop = self.stop.clone();
        let outcome = self.runtime.block_on(async move {
            let mut work = std::pin::pin!(work);
            if limit.is_none() && stop.is_none() {
                return Ok(work.await);
            }
            let mut stopping_since: Option<Instant> = None;
            loop {
                let now = Instant::now();
                if stopping_since.is_none()
                    && stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
                {
                    stopping_since = Some(now);
                }
                let by_limit = limit.map(|(d, why)| (began + d, why));
                let by_stop =
                    stopping_since.map(|s| (s + STOP_GRACE, NoAnswer::Stopping(STOP_GRACE)));
                let deadline = by_limit
                    .into_iter()
                    .chain(by_stop)
                    .min_by_key(|(at, _)| *at);
                if let Some((at, why)) = deadline {
                    if now >= at {
                        return Err(why);
                    }
                }
                let look_again = match (&stop, stopping_since) {
                    (Some(_), None) => Some(now + STOP_POLL),
                    _ => None,
                };
                let until = match (deadline.map(|(at, _)| at), look_again) {
                    (Some(a), Some(b)) => a.min(b),
                    (Some(a), None) | (None, Some(a)) => a,
                    (None, None) => return Ok(work.await),
                };
                if let Ok(done) = tokio::time::timeout_at(until.into(), work.as_mut()).await {
                    return Ok(done);
                }
            }
        });
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Failure::Driver(e)),
            Err(why) => {
                self.abandoned.set(Some(why));
                Err(Failure::GaveUp(why))
            }
        }
    }

    /// From now on, a wait ends within [`STOP_GRACE`] once `stop` is set.
    pub(super) fn stop_when(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }
}

impl Link {
    /// Connects with `connect` (the driver's connect, whatever its TLS), within
    /// `limit` (`None`: as long as it takes).
    pub(super) fn open<F, C>(
        waiter: Waiter,
        limit: Option<Duration>,
        connect: F,
    ) -> Result<Link, Failure>
    where
        F: Future<Output = Result<(Client, C), tokio_postgres::Error>>,
        C: Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
    {
        let (client, connection) =
            waiter.wait_within(limit.map(|d| (d, NoAnswer::Connecting(d))), connect)?;
        let connection = waiter.runtime.spawn(async move {
            // Its end is seen by the client's next call.
            let _ = connection.await;
        });
        Ok(Link {
            client: Some(client),
            connection: Some(connection),
            waiter,
        })
    }

    /// The client, to send statements with; their futures are awaited with
    /// [`Waiter::wait`].
    pub(super) fn client(&self) -> &Client {
        self.client.as_ref().expect("a client until dropped")
    }

    /// The client to begin a transaction on, and the waiter to await it with.
    pub(super) fn parts(&mut self) -> (&mut Client, &Waiter) {
        (
            self.client.as_mut().expect("a client until dropped"),
            &self.waiter,
        )
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        drop(self.client.take());
        // A connection that answers says goodbye (the client's end makes it send
        // Terminate and close); one given up on is just closed with the runtime.
        if let (Some(connection), None) = (self.connection.take(), self.waiter.abandoned.get()) {
            let _ = self
                .waiter
                .runtime
                .block_on(async { tokio::time::timeout(CLOSE_WAIT, connection).await });
        }
    }
}
