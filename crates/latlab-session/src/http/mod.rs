//! The one HTTP layer of latlab: read-only HTTP/1.1 for `latlab serve` and `latlab run
//! --listen`. GET and HEAD only, one request per connection; what a request gets is the
//! caller's [`Site`]: a function of its target.
//!
//! No peer can hang a rig: every connection has a time to send its request head and a
//! time for the whole exchange, after which it is closed; at most
//! [`Limits::connections`] are served at once, the next waiting in the kernel's queue
//! until one of them ends, so no client delays another by more than its own time; and
//! [`Server::stop`] returns within a second, whatever the clients do. A request head
//! larger than [`MAX_HEAD`] is answered 431 (Request Header Fields Too Large).

mod query;
mod server;

pub use query::{decoded, given, parsed_query};
pub use server::{Server, MAX_HEAD};

use std::time::Duration;

/// How a server treats its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// How long a client may take to send its request head.
    pub request_head: Duration,
    /// How long a connection may last in all: its request, the answer's making, and
    /// the answer's sending.
    pub connection: Duration,
    /// Where answers are made.
    pub rendering: Rendering,
}

/// Where a server makes its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// On the server's own thread, between reads and writes: for answers made from
    /// memory at once. No other thread is ever started (`--listen`, in the measuring
    /// process).
    OnServerThread,
    /// On up to this many threads of their own, so that answers that read a store do
    /// not hold up the reading and writing of other connections (`serve`).
    OnThreads(usize),
}

/// A request, as a [`Site`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Its target as sent: the path and the query (`/run/ID?…`).
    pub target: String,
    /// Its `Accept` header, when it has one.
    pub accept: Option<String>,
}

impl Request {
    /// The target's path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// An answer's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 200.
    Ok,
    /// 400: the request's parameters are wrong.
    BadRequest,
    /// 404.
    NotFound,
    /// 405: neither GET nor HEAD.
    MethodNotAllowed,
    /// 500: the answer could not be made.
    InternalServerError,
}

impl Status {
    /// Its code.
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::InternalServerError => 500,
        }
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Its status.
    pub status: Status,
    /// Its content type.
    pub content_type: &'static str,
    /// Further headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body (not sent in answer to a HEAD).
    pub body: String,
}

impl Response {
    /// An answer of `status` with `body` of `content_type`.
    pub fn new(status: Status, content_type: &'static str, body: String) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body,
        }
    }

    /// An HTML page of `status`, under a policy that lets it run no script and load
    /// nothing (its plots are inline, its images data: URLs).
    pub fn page(status: Status, body: String) -> Response {
        Response::new(status, "text/html; charset=utf-8", body).with_header(
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'",
        )
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// What a server answers.
pub trait Site: Send + Sync + 'static {
    /// The answer to a GET (or HEAD) of `request`.
    fn get(&self, request: &Request) -> Response;

    /// An answer saying what went wrong (`title`, `message`), with `status`.
    fn error(&self, status: Status, title: &str, message: &str) -> Response;

    /// Work to do once a second beside the answers (the live metrics close their
    /// one-second windows), on the server's thread.
    fn each_second(&self) {}
}
