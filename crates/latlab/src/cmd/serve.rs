//! `latlab serve`: the store's runs as web pages, read-only, until SIGINT or SIGTERM.
//!
//! A small HTTP/1.1 server on `std::net`, like `--listen`: one thread per connection
//! (at most [`MAX_CONNECTIONS`] at once), GET and HEAD only, one request per
//! connection. Every page is rendered by the report code (`latlab_report::report::site`)
//! from the store as it is at that request, so a running run's page shows its last
//! checkpoint. The store is opened read-only for each request and never written.

use crate::cli::{RunFilterArgs, ServeArgs};
use crate::cmd::runs::{columns, filter_of};
use crate::cmd::trend::{matching_runs, open_store};
use crate::error::{exit, CliError};
use crate::listen::resolve;
use crate::output::{ignore_closed, Human};
use crate::store::StoreLocation;
use latlab_model::progress::RunState;
use latlab_model::run::Run;
use latlab_report::report::site::{self, Index, IndexRow};
use latlab_report::report::{GroupBy, LatencyAxis, Trend, TrendMetric};
use latlab_store::{RunStore, StoreError};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections answered at once; one more is told to try again (503).
const MAX_CONNECTIONS: usize = 16;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// How long stopping waits for the requests being answered.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves until SIGINT or SIGTERM.
pub fn execute(args: &ServeArgs) -> Result<u8, CliError> {
    let address = resolve(&args.listen, args.listen_any, "every stored run")?;
    let location = StoreLocation::resolve(args.store.as_ref())?;
    // A store that cannot be read is an error now, not on the first request.
    drop(open_store(&location)?);
    let socket = TcpListener::bind(address).map_err(|e| {
        CliError::runtime(format!(
            "cannot listen on {address}: {e}; choose another port with --listen"
        ))
    })?;
    let bound = socket
        .local_addr()
        .map_err(|e| CliError::runtime(format!("cannot tell the address served: {e}")))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| CliError::runtime(format!("cannot serve {bound}: {e}")))?;
    let stop = crate::stop::flag_on(&[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    ignore_closed(Human::Stdout.write(&format!(
        "Serving the runs of {location} at http://{bound}/ (read-only; Ctrl-C stops)\n"
    )))?;
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        let connection = match socket.accept() {
            Ok((connection, _)) => connection,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            answer_busy(connection);
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let (in_thread, location) = (active.clone(), location.clone());
        let spawned = std::thread::Builder::new()
            .name("serve".to_string())
            .spawn(move || {
                answer(connection, &location);
                in_thread.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let deadline = Instant::now() + DRAIN;
    while active.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nobody may be reading any more (a closed terminal, a test).
    ignore_closed(Human::Stdout.write(&format!("Stopped serving {bound}\n")))?;
    Ok(exit::OK)
}

/// An HTTP answer.
struct Response {
    status: &'static str,
    body: String,
    /// Extra header lines, each ending in CRLF.
    headers: String,
}

impl Response {
    fn page(body: String) -> Response {
        Response {
            status: "200 OK",
            body,
            headers: String::new(),
        }
    }

    fn error(status: &'static str, title: &str, message: &str) -> Response {
        Response {
            status,
            body: site::error_page(title, message),
            headers: String::new(),
        }
    }

    /// The bytes sent: the status line, the headers (a policy that lets the page run
    /// no script and load nothing), and the body unless `head_only`.
    fn bytes(&self, head_only: bool) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
             Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; \
             img-src data:; form-action 'self'\r\n{}Connection: close\r\n\r\n",
            self.status,
            self.body.len(),
            self.headers
        )
        .into_bytes();
        if !head_only {
            out.extend_from_slice(self.body.as_bytes());
        }
        out
    }
}

/// Tells a client that too many requests are being answered.
fn answer_busy(mut connection: TcpStream) {
    let response = Response::error(
        "503 Service Unavailable",
        "Busy",
        "Too many pages are being rendered at once; try again in a moment.",
    );
    let _ = connection.set_nonblocking(false);
    let _ = connection.write_all(&response.bytes(false));
}

/// Reads one request from `connection` and answers it.
fn answer(mut connection: TcpStream, store: &StoreLocation) {
    let _ = connection.set_nonblocking(false);
    let _ = connection.set_read_timeout(Some(REQUEST_TIMEOUT));
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            let response = Response::error(
                "431 Request Header Fields Too Large",
                "Bad request",
                "The request's head is too long.",
            );
            let _ = connection.write_all(&response.bytes(false));
            return;
        }
        match connection.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or("").split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let response = match method {
        "GET" | "HEAD" => route(target, store),
        _ => Response {
            headers: "Allow: GET, HEAD\r\n".to_string(),
            ..Response::error(
                "405 Method Not Allowed",
                "Read-only",
                "latlab serve only reads: it answers GET and HEAD.",
            )
        },
    };
    let _ = connection.write_all(&response.bytes(method == "HEAD"));
}

/// The page `target` (`/run/ID?…`) names.
fn route(target: &str, store: &StoreLocation) -> Response {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (Some(path), Some(query)) = (decoded(path, false), parsed_query(query)) else {
        return Response::error(
            "400 Bad Request",
            "Bad request",
            "The address is not valid percent-encoded UTF-8.",
        );
    };
    let page = match path.as_str() {
        "/" => index(store, &query),
        "/compare" => compare(store, &query),
        "/trend" => trend(store, &query),
        _ => match path.strip_prefix("/run/") {
            Some(reference) if !reference.is_empty() => run(store, reference),
            _ => {
                return Response::error(
                    "404 Not Found",
                    "Not found",
                    &format!(
                        "There is no page {path}: the pages are /, /run/RUN, \
                         /compare?base=RUN&new=RUN and /trend."
                    ),
                )
            }
        },
    };
    page.unwrap_or_else(|failure| failure)
}

/// A page, or the answer that says why there is none.
type Page = Result<Response, Response>;

/// A usage error in a request's parameters: 400, with what to change.
fn bad_parameter(e: CliError) -> Response {
    let message = e.message.trim_start_matches("--").to_string();
    Response::error("400 Bad Request", "Bad request", &message)
}

/// A store that could not be read, or a run that could not be rendered: 500.
fn failed(e: impl std::fmt::Display) -> Response {
    Response::error(
        "500 Internal Server Error",
        "Cannot show this page",
        &e.to_string(),
    )
}

/// The store, opened for this request.
fn opened(store: &StoreLocation) -> Result<Box<dyn RunStore + Send>, Response> {
    open_store(store).map_err(failed)
}

/// The filters of `latlab runs` from the request's parameters (empty: not given).
fn filter_args(query: &[(String, String)]) -> RunFilterArgs {
    let given = |name: &str| {
        query
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.trim().to_string())
    };
    RunFilterArgs {
        host: given("host"),
        kernel: given("kernel"),
        scenario: given("scenario"),
        tags: query
            .iter()
            .filter(|(n, v)| n == "tag" && !v.is_empty())
            .map(|(_, v)| v.trim().to_string())
            .collect(),
        since: given("since"),
        before: given("before"),
    }
}

/// `/`: the runs the filters let through, as `latlab runs` lists them.
fn index(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let filter = filter_of(&filter_args(query)).map_err(bad_parameter)?;
    let runs = opened(store)?.list(&filter, None).map_err(failed)?;
    // The page has a state column of its own, first.
    let columns: Vec<_> = columns(&runs)
        .into_iter()
        .filter(|(title, _)| *title != "state")
        .collect();
    let titles: Vec<&str> = columns.iter().map(|(title, _)| *title).collect();
    let rows: Vec<IndexRow> = runs
        .iter()
        .map(|r| IndexRow {
            id: r.id.clone(),
            cells: columns.iter().map(|(_, cell)| cell(r)).collect(),
            state: r.progress.as_ref().map(|p| p.describe()),
            running: r
                .progress
                .as_ref()
                .is_some_and(|p| p.state == RunState::Running),
        })
        .collect();
    let place = store.to_string();
    site::index_page(&Index {
        store: &place,
        columns: &titles,
        rows: &rows,
        matching: runs.len(),
        query,
    })
    .map(Response::page)
    .map_err(failed)
}

/// The run `reference` names, or 404.
fn resolved(store: &dyn RunStore, reference: &str) -> Result<Run, Response> {
    store.resolve(reference).map_err(|e| match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => {
            Response::error("404 Not Found", "No such run", &e.to_string())
        }
        other => failed(other),
    })
}

/// `/run/RUN`: its report.
fn run(store: &StoreLocation, reference: &str) -> Page {
    let run = resolved(opened(store)?.as_ref(), reference)?;
    site::run_page(&run).map(Response::page).map_err(failed)
}

/// `/compare?base=RUN&new=RUN`: the two runs' report, compared.
fn compare(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let given = |name: &str| {
        query
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    };
    let (Some(base), Some(new)) = (given("base"), given("new")) else {
        return Err(Response::error(
            "400 Bad Request",
            "Choose two runs",
            "A comparison needs a base and a new run: choose one of each in the runs index.",
        ));
    };
    let store = opened(store)?;
    let runs = [
        resolved(store.as_ref(), base)?,
        resolved(store.as_ref(), new)?,
    ];
    site::compare_page(&runs)
        .map(Response::page)
        .map_err(failed)
}

/// `/trend?metric=…&by=…&FILTERS`: the trend page.
fn trend(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let given = |name: &str, default: &'static str| {
        query
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map_or(default, |(_, v)| v.as_str())
    };
    let metric: TrendMetric = given("metric", "p99.9")
        .parse()
        .map_err(|e| bad_parameter(CliError::usage("metric", e)))?;
    let by = GroupBy::parse_list(given("by", "host"))
        .map_err(|e| bad_parameter(CliError::usage("by", e)))?;
    let filter = filter_of(&filter_args(query)).map_err(bad_parameter)?;
    let runs = matching_runs(opened(store)?.as_ref(), &filter).map_err(failed)?;
    let trend = Trend::of(&runs, metric, by);
    site::trend_page(&trend, LatencyAxis::Auto, query)
        .map(Response::page)
        .map_err(failed)
}

/// A query string's parameters, decoded (`+` is a space); `None` when one is not
/// valid percent-encoded UTF-8.
fn parsed_query(query: &str) -> Option<Vec<(String, String)>> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((decoded(name, true)?, decoded(value, true)?))
        })
        .collect()
}

/// `text` with its `%XX` escapes decoded, and `+` as a space in a query (`plus`);
/// `None` when an escape is broken or the result is not UTF-8.
fn decoded(text: &str, plus: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            parsed_query("host=rig+1&kernel=6.18%2A&tag=board%3Dx1&&since=").unwrap(),
            [
                ("host".to_string(), "rig 1".to_string()),
                ("kernel".to_string(), "6.18*".to_string()),
                ("tag".to_string(), "board=x1".to_string()),
                ("since".to_string(), String::new()),
            ]
        );
        assert_eq!(decoded("/run/a+b", false).unwrap(), "/run/a+b");
        assert_eq!(decoded("%C3%A9", true).unwrap(), "é");
        assert!(decoded("%zz", true).is_none());
        assert!(decoded("%4", true).is_none());
        assert!(decoded("%FF", true).is_none(), "not UTF-8");
    }

    #[test]
    fn empty_parameters_are_not_filters() {
        let query = parsed_query("host=&tag=a&tag=&since=2d").unwrap();
        let args = filter_args(&query);
        assert_eq!(args.host, None);
        assert_eq!(args.tags, ["a"]);
        assert_eq!(args.since.as_deref(), Some("2d"));
    }
}
