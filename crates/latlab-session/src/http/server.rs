//! The server: hyper's HTTP/1.1 on a tokio runtime of one thread.
//!
//! Why hyper on tokio rather than tiny_http or a server of our own: a slow client must
//! cost a timer and a few kilobytes, never a thread, because `--listen` serves from
//! inside the measuring process, whose memory is locked (and whose resident size the
//! benchmarks hold against cyclictest's). tiny_http answers each connection on a thread
//! of a pool that grows without bound and sets no timeout on its sockets (its
//! `ServerConfig` has none), so it would need the same hand-written guards that failed
//! here twice. tokio was already in the binary (the PostgreSQL client runs on it) with
//! the runtime, network, timer and sync parts this needs; hyper, hyper-util and http
//! are what this adds. Measured on the release build (`cargo build --release -p
//! latlab`; peak RSS by `/usr/bin/time`, median of 5 interleaved 6 s runs on one CPU,
//! scraped once a second):
//!
//! | release build of `latlab`          | binary        | `run` peak RSS | `run --listen` peak RSS |
//! |------------------------------------|---------------|----------------|-------------------------|
//! | two hand-written servers (before)  | 12 122 488 B  | 9 880 KiB      | 9 848 KiB               |
//! | hyper 1.12 + hyper-util on tokio   | 12 476 984 B  | 10 160 KiB     | 10 536 KiB              |
//!
//! +346 KiB of binary; +688 KiB of peak RSS with `--listen` (280 KiB of it without, the
//! binary's own growth), flat with 40 slow clients connected (10 752 KiB), where a
//! thread per connection would lock a stack for each.

use super::{Limits, Rendering, Request, Response, Site, Status};
use hyper::body::Incoming;
use hyper::header::{
    HeaderName, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Method;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};

/// The longest request head read; a longer one is answered 431.
pub const MAX_HEAD: usize = 16 * 1024;

/// How long stopping waits for the answers under way.
const DRAIN: Duration = Duration::from_millis(500);

/// How long stopping then waits for answers still being made on their own threads,
/// which are left to end with the process.
const ABANDON: Duration = Duration::from_millis(300);

/// A server answering on a thread of its own until stopped (or dropped).
pub struct Server {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `socket` with `site` under `limits` on a thread named after `name`, at
    /// SCHED_OTHER whatever the thread that starts it.
    pub fn start<S: Site>(
        socket: std::net::TcpListener,
        site: Arc<S>,
        limits: Limits,
        name: &str,
    ) -> std::io::Result<Server> {
        socket.set_nonblocking(true)?;
        let mut runtime = tokio::runtime::Builder::new_current_thread();
        runtime.enable_io().enable_time();
        if let Rendering::OnThreads(threads) = limits.rendering {
            runtime
                .max_blocking_threads(threads.max(1))
                .thread_name(format!("latlab-{name}-page"));
        }
        let runtime = runtime.build()?;
        let listener = {
            let _context = runtime.enter();
            TcpListener::from_std(socket)?
        };
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("latlab-{name}"))
            .spawn(move || {
                // Never compete with the measuring threads.
                let _ = latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Other {
                    nice: 0,
                });
                runtime.block_on(serve(listener, site, limits, stopped));
                runtime.shutdown_timeout(ABANDON);
            })?;
        Ok(Server {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops accepting, gives the answers under way half a second, and closes every
    /// connection: returns within a second whatever the clients do.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Accepts and answers until `stopped`, then drains for a while.
async fn serve<S: Site>(
    listener: TcpListener,
    site: Arc<S>,
    limits: Limits,
    stopped: oneshot::Receiver<()>,
) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let accepting = tokio::spawn(accept(listener, site.clone(), limits, slots.clone()));
    let ticking = tokio::spawn(async move {
        let second = Duration::from_secs(1);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + second, second);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            site.each_second();
        }
    });
    // Told to stop, or the server dropped: the same.
    let _ = stopped.await;
    // The socket closes now: nobody else is let in.
    accepting.abort();
    ticking.abort();
    let all = u32::try_from(limits.connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN, slots.acquire_many(all)).await;
}

/// Accepts connections while fewer than `limits.connections` are open, each answered
/// on its own task within `limits.connection`.
async fn accept<S: Site>(
    listener: TcpListener,
    site: Arc<S>,
    limits: Limits,
    slots: Arc<Semaphore>,
) {
    loop {
        // The next client waits in the kernel's queue until a slot is free.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors, say: try again in a moment rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let site = site.clone();
        tokio::spawn(async move {
            // Past its time the connection is dropped, which closes it.
            let _ = tokio::time::timeout(limits.connection, connection(stream, site, limits)).await;
            drop(slot);
        });
    }
}

/// Reads one request from `stream` and answers it.
async fn connection<S: Site>(stream: TcpStream, site: Arc<S>, limits: Limits) {
    let service = service_fn(move |request| {
        let site = site.clone();
        async move { Ok::<_, Infallible>(answer(site, request, limits.rendering).await) }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_head)
        .keep_alive(false)
        // Header names as most servers write them, for clients that match them exactly.
        .title_case_headers(true)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// The site's answer to `request` (hyper leaves the body out in answer to a HEAD).
async fn answer<S: Site>(
    site: Arc<S>,
    request: hyper::Request<Incoming>,
    rendering: Rendering,
) -> hyper::Response<String> {
    let method = request.method();
    if method != Method::GET && method != Method::HEAD {
        let refusal = site
            .error(
                Status::MethodNotAllowed,
                "Read-only",
                "This server only reads: it answers GET and HEAD.",
            )
            .with_header("Allow", "GET, HEAD");
        return response(refusal);
    }
    let ours = Request {
        target: request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        accept: request
            .headers()
            .get(ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let answer = match rendering {
        Rendering::OnServerThread => site.get(&ours),
        Rendering::OnThreads(_) => {
            let on_thread = site.clone();
            tokio::task::spawn_blocking(move || on_thread.get(&ours))
                .await
                .unwrap_or_else(|_| {
                    site.error(
                        Status::InternalServerError,
                        "Cannot show this page",
                        "Making this page failed.",
                    )
                })
        }
    };
    response(answer)
}

/// `answer` as hyper sends it, with the headers every answer has.
fn response(answer: Response) -> hyper::Response<String> {
    let mut response = hyper::Response::new(answer.body);
    *response.status_mut() = hyper::StatusCode::from_u16(answer.status.code())
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    for (name, value) in answer.headers {
        // The sites' own; one that is not a valid header is left out.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}
