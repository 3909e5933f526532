//! A small read-only HTTP/1.1 server on `std::net` for `latlab serve`: one thread per
//! connection (at most [`MAX_CONNECTIONS`] at once, one more is told to come back
//! later), GET and HEAD only, one request per connection, a bounded request head read
//! within a time limit. What a request gets is the caller's: a function of its target.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections answered at once; one more is told to try again (503).
pub const MAX_CONNECTIONS: usize = 16;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// How long stopping waits for the requests being answered.
const DRAIN: Duration = Duration::from_secs(5);

/// An HTTP answer, an HTML page.
pub struct Response {
    /// The status line's code and words (`404 Not Found`).
    pub status: &'static str,
    /// The page.
    pub body: String,
    /// Extra header lines, each ending in CRLF.
    pub headers: String,
}

impl Response {
    /// A page: 200.
    pub fn page(body: String) -> Response {
        Response {
            status: "200 OK",
            body,
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

/// What a server answers: a page for a GET or HEAD of a target (`/run/ID?…`), and the
/// page of an error (status, title, message).
pub trait Site: Send + Sync + 'static {
    /// The answer to a GET (or HEAD) of `target`.
    fn get(&self, target: &str) -> Response;
    /// A page saying what went wrong.
    fn error(&self, status: &'static str, title: &str, message: &str) -> Response;
}

/// Answers requests on `socket` (non-blocking) with `site` until `stop` is set, then
/// waits a little for the answers under way.
pub fn serve<S: Site>(socket: &TcpListener, site: Arc<S>, stop: &AtomicBool) {
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
            let busy = site.error(
                "503 Service Unavailable",
                "Busy",
                "Too many pages are being rendered at once; try again in a moment.",
            );
            send(connection, &busy, false);
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let (in_thread, site) = (active.clone(), site.clone());
        let spawned = std::thread::Builder::new()
            .name("serve".to_string())
            .spawn(move || {
                answer(connection, &*site);
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
}

fn send(mut connection: TcpStream, response: &Response, head_only: bool) {
    let _ = connection.set_nonblocking(false);
    let _ = connection.write_all(&response.bytes(head_only));
}

/// Reads one request from `connection` and answers it.
fn answer(mut connection: TcpStream, site: &dyn Site) {
    let _ = connection.set_nonblocking(false);
    let _ = connection.set_read_timeout(Some(REQUEST_TIMEOUT));
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            let response = site.error(
                "431 Request Header Fields Too Large",
                "Bad request",
                "The request's head is too long.",
            );
            send(connection, &response, false);
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
        "GET" | "HEAD" => site.get(target),
        _ => Response {
            headers: "Allow: GET, HEAD\r\n".to_string(),
            ..site.error(
                "405 Method Not Allowed",
                "Read-only",
                "latlab serve only reads: it answers GET and HEAD.",
            )
        },
    };
    send(connection, &response, method == "HEAD");
}

/// A query string's parameters, decoded (`+` is a space); `None` when one is not
/// valid percent-encoded UTF-8.
pub fn parsed_query(query: &str) -> Option<Vec<(String, String)>> {
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
pub fn decoded(text: &str, plus: bool) -> Option<String> {
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
}
