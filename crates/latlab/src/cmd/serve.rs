//! `latlab serve`: the store's runs as web pages, read-only, until SIGINT or SIGTERM.
//!
//! Served by [`latlab_session::http`] (GET and HEAD, timeouts on every connection, a
//! bounded number at once, pages made on a few threads of their own).
//! Every page is rendered by the report code (`latlab_report::report::site`) from the
//! store as it is at that request, so a running run's page shows its last checkpoint.
//! The store is opened read-only for each request and never written.

use crate::cli::{RunFilterArgs, ServeArgs};
use crate::cmd::runs::filter_of;
use crate::cmd::trend::{matching_runs, open_store};
use crate::error::{exit, CliError};
use crate::listen::resolve;
use crate::output::{ignore_closed, Human};
use crate::store::StoreLocation;
use latlab_model::progress::RunState;
use latlab_model::run::Run;
use latlab_model::stamp::parse_rfc3339;
use latlab_report::report::farm::{self, Farm, FarmRun};
use latlab_report::report::site::{self, Index, IndexRow};
use latlab_report::report::{GroupBy, LatencyAxis, Trend, TrendMetric};
use latlab_session::http::{
    decoded, given, parsed_query, Limits, Rendering, Request, Response, Server, Site, Status,
};
use latlab_session::listing::columns;
use latlab_store::{RunStore, StoreError};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How serve treats its clients. Slow clients cost a connection each, not a thread,
/// so many may be open while others are answered; pages are made on a few threads (a
/// page reads the store and renders it), as many as a small machine has cores and one
/// more.
const LIMITS: Limits = Limits {
    connections: 256,
    request_head: Duration::from_secs(5),
    connection: Duration::from_secs(30),
    rendering: Rendering::OnThreads(3),
};

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
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| CliError::runtime(format!("cannot handle signals: {e}")))?;
    let place = location.to_string();
    let server = Server::start(socket, Arc::new(Pages(location)), LIMITS, "serve")
        .map_err(|e| CliError::runtime(format!("cannot serve {bound}: {e}")))?;
    ignore_closed(Human::Stdout.write(&format!(
        "Serving the runs of {place} at http://{bound}/ (read-only; Ctrl-C stops)\n"
    )))?;
    // Until SIGINT or SIGTERM: the server answers on its own thread.
    let _ = signals.forever().next();
    server.stop();
    // Nobody may be reading any more (a closed terminal, a test).
    ignore_closed(Human::Stdout.write(&format!("Stopped serving {bound}\n")))?;
    Ok(exit::OK)
}

/// The pages of the store at a location.
struct Pages(StoreLocation);

impl Site for Pages {
    fn get(&self, request: &Request) -> Response {
        route(&request.target, &self.0)
    }

    fn error(&self, status: Status, title: &str, message: &str) -> Response {
        error(status, title, message)
    }
}

/// A page found: 200.
fn page(body: String) -> Response {
    Response::page(Status::Ok, body)
}

/// The page of an error.
fn error(status: Status, title: &str, message: &str) -> Response {
    Response::page(status, site::error_page(title, message))
}

/// The page `target` (`/run/ID?…`) names.
fn route(target: &str, store: &StoreLocation) -> Response {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (Some(path), Some(query)) = (decoded(path, false), parsed_query(query)) else {
        return error(
            Status::BadRequest,
            "Bad request",
            "The address is not valid percent-encoded UTF-8.",
        );
    };
    let page = match path.as_str() {
        "/" => index(store, &query),
        "/farm" => farm(store, &query),
        "/compare" => compare(store, &query),
        "/trend" => trend(store, &query),
        _ => match path.strip_prefix("/run/") {
            Some(reference) if !reference.is_empty() => run(store, reference),
            _ => {
                return error(
                    Status::NotFound,
                    "Not found",
                    &format!(
                        "There is no page {path}: the pages are /, /farm, /run/RUN, \
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
    error(Status::BadRequest, "Bad request", &message)
}

/// A store that could not be read, or a run that could not be rendered: 500.
fn failed(e: impl std::fmt::Display) -> Response {
    error(
        Status::InternalServerError,
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
    let given = |name: &str| given(query, name).map(|v| v.trim().to_string());
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
    .map(page)
    .map_err(failed)
}

/// `/farm?FILTERS`: each rig's latest run and each series' worst figures, read from the
/// store's index; the latest run of each series judged against the one before it.
fn farm(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let filter = filter_of(&filter_args(query)).map_err(bad_parameter)?;
    let opened = opened(store)?;
    let listed = opened.list(&filter, None).map_err(failed)?;
    let mut figures = opened.series_figures(&listed).map_err(failed)?;
    let time = |t: Option<String>| t.as_deref().and_then(parse_rfc3339);
    let runs = listed.into_iter().filter_map(|s| {
        Some(FarmRun {
            series: figures.remove(&s.id)?,
            started_at: time(s.started_at),
            added_at: time(s.added_at),
            id: s.id,
            host: s.host,
            kernel: s.kernel,
            verdict: s.verdict,
            progress: s.progress,
        })
    });
    let farm = Farm::gather(runs.collect(), SystemTime::now(), |id| opened.load(id));
    farm::farm_page(&farm.map_err(failed)?, &store.to_string(), query)
        .map(page)
        .map_err(failed)
}

/// The run `reference` names, or 404.
fn resolved(store: &dyn RunStore, reference: &str) -> Result<Run, Response> {
    store.resolve(reference).map_err(|e| match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => {
            error(Status::NotFound, "No such run", &e.to_string())
        }
        other => failed(other),
    })
}

/// `/run/RUN`: its report.
fn run(store: &StoreLocation, reference: &str) -> Page {
    let run = resolved(opened(store)?.as_ref(), reference)?;
    site::run_page(&run).map(page).map_err(failed)
}

/// `/compare?base=RUN&new=RUN`: the two runs' report, compared.
fn compare(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let (Some(base), Some(new)) = (given(query, "base"), given(query, "new")) else {
        return Err(error(
            Status::BadRequest,
            "Choose two runs",
            "A comparison needs a base and a new run: choose one of each in the runs index.",
        ));
    };
    let store = opened(store)?;
    let runs = [
        resolved(store.as_ref(), base)?,
        resolved(store.as_ref(), new)?,
    ];
    site::compare_page(&runs).map(page).map_err(failed)
}

/// `/trend?metric=…&by=…&series=…&FILTERS`: the trend page.
fn trend(store: &StoreLocation, query: &[(String, String)]) -> Page {
    let metric: TrendMetric = given(query, "metric")
        .unwrap_or("p99.9")
        .parse()
        .map_err(|e| bad_parameter(CliError::usage("metric", e)))?;
    let by = GroupBy::parse_list(given(query, "by").unwrap_or("series"))
        .map_err(|e| bad_parameter(CliError::usage("by", e)))?;
    let filter = filter_of(&filter_args(query)).map_err(bad_parameter)?;
    let runs = matching_runs(opened(store)?.as_ref(), &filter).map_err(failed)?;
    let trend = Trend::of(&runs, metric, by)
        .of_series(given(query, "series"))
        .map_err(|e| bad_parameter(CliError::usage("series", e)))?;
    site::trend_page(&trend, LatencyAxis::Auto, query)
        .map(page)
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_parameters_are_not_filters() {
        let query = parsed_query("host=&tag=a&tag=&since=2d").unwrap();
        let args = filter_args(&query);
        assert_eq!(args.host, None);
        assert_eq!(args.tags, ["a"]);
        assert_eq!(args.since.as_deref(), Some("2d"));
    }
}
