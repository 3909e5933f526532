//! `latlab run`: resolve the plan, wire the sinks (display, `--listen`, checkpoints),
//! let the session measure, keep and print the Run.

use crate::cli::RunArgs;
use crate::display::LiveDisplay;
use crate::error::CliError;
use crate::keep::keep;
use crate::listen::{Listener, LiveCauses};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_measure::check;
use latlab_measure::cpus::CpuInventory;
use latlab_measure::facts::FactReader;
use latlab_measure::plan;
use latlab_model::stamp::run_id;
use latlab_session::journal::{self, Journal, Targets};
use latlab_session::session::{sweep_leftovers, Session};
use latlab_session::sink::Sink;
use latlab_store::StoreError;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// Runs `latlab run`.
pub fn execute(args: &RunArgs) -> Result<u8, CliError> {
    let cpus = CpuInventory::of_this_process();
    if cpus.usable.is_empty() {
        return Err(CliError::runtime(
            "cannot read the CPUs this process may use (/sys/devices/system/cpu/online, \
             its affinity)",
        ));
    }
    let plan = plan::resolve(&args.input(), &cpus).map_err(CliError::config)?;
    let labels = args.labels.checked()?;
    let checkpoint_every =
        journal::interval(&args.checkpoint).map_err(|e| CliError::usage("--checkpoint", e))?;
    let store_location = match args.no_store {
        true => None,
        false => Some(StoreLocation::resolve(args.store.as_ref())?),
    };
    sweep_leftovers(&plan);
    let (mut json, human) =
        crate::store::open_run_json(args.json.as_deref(), store_location.as_ref())?;
    // Handed to the store before the signals raise it: a stop cuts a wait on a
    // central store short. Until they do, Ctrl-C ends latlab at once (nothing started).
    let stop = Arc::new(AtomicBool::new(false));
    let mut store = store_location
        .as_ref()
        .map(|location| crate::store::open_for_run(location, &stop))
        .transpose()?;
    if let Some(store) = &store {
        labels.check_name_is_free(&**store)?;
    }
    crate::stop::raise_on(&stop, &crate::stop::ENDING)?;
    let host = FactReader::system().gather();
    // Stamped now: the store holds the run from its start, and the live series carry
    // the kept run's id. The listener binds before anything is measured: a port in
    // use is an error, not a lost run.
    let id = run_id(SystemTime::now());
    let mut listener = match &args.listen {
        Some(addr) => Some(Listener::start(addr, args.listen_any, &id, &host.hostname)?),
        None => None,
    };
    let audit = (!args.no_audit).then(|| check::audit_of_plan(&plan));
    let mut base = Session::base_run(&plan, host, audit, id.clone());
    labels.apply(&mut base);
    // The run is kept in the store (and the --json file) from its start, and extended
    // at every checkpoint. Saved before anything is set up: the store's unique index
    // claims the name, so another latlab that took it since the check above is an
    // error now, not a run measured for nothing. A store that cannot take the run now
    // gets it at the end.
    let start = checkpoint_every.map(|every| {
        let mut start = base.clone();
        start.progress = Some(journal::starting(every));
        start
    });
    let mut begun_in = None;
    if let Some(start) = &start {
        if let Some(mut kept) = store.take() {
            match kept.save(start) {
                Ok(()) => begun_in = Some(kept),
                Err(e @ StoreError::NameTaken { .. }) => return Err(CliError::usage("--name", e)),
                Err(e) => {
                    eprintln!(
                        "latlab: warning: the run cannot be kept in the store from its \
                         start ({e}); it is saved when it ends"
                    );
                    store = Some(kept);
                }
            }
        }
    }
    let begun = begun_in.is_some();
    let live_causes = listener
        .as_ref()
        .filter(|_| plan.explain.is_some())
        .map(|l| {
            let causes = LiveCauses::default();
            l.show_causes(causes.clone());
            causes
        });
    let mut session = Session::start(plan, base, live_causes);
    let mut journal = None;
    if let (Some(every), Some(start)) = (checkpoint_every, start) {
        let targets = Targets {
            store: begun_in,
            json: match &json {
                Some(OutputTarget::File { path, .. }) => Some(path.clone()),
                _ => None,
            },
        };
        if targets.store.is_some() || targets.json.is_some() {
            let (ledger, cpus) = (session.ledger(), session.housekeeping_cpus());
            let explain = session.explain_source();
            journal = Some(Journal::start(start, ledger, targets, every, cpus, explain));
        }
    }
    let mut display = LiveDisplay::new(human, args.quiet);
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut display];
    if let Some(listener) = listener.as_mut() {
        sinks.push(listener);
    }
    if let Some(journal) = journal.as_mut() {
        sinks.push(journal);
    }
    let measured = session.measure(&stop, &mut sinks);
    drop(sinks);
    let run = session.finish();
    drop(listener);
    // The last checkpoint is written before the run's final form replaces it.
    let checkpoints = journal.map(|journal| {
        let (journal_store, stats) = journal.finish();
        if journal_store.is_some() {
            store = journal_store;
        }
        stats
    });
    if let Err(e) = measured {
        // Nothing measured: a plain error, and no run to keep.
        if let (true, Some(store)) = (begun, store.as_mut()) {
            let _ = store.remove(std::slice::from_ref(&id));
        }
        return Err(e);
    }
    // The exit code is settled first: no output problem may change a verdict. A
    // threshold that cannot be judged on what was measured is not a pass (2); a failure
    // to measure, kept in the Run as a warning, outranks the verdict (3).
    let code = run.exit_status().code();
    // Keep the run before anything else can go wrong.
    let kept = keep(&run, store.as_deref_mut(), json.as_mut(), begun);
    // A reader that went away (a pager, `head`) is not an error; the verdict stands.
    output::ignore_closed(human.write(&crate::cmd::show::summary_for(&run, human)))?;
    if let Some(explain) = &run.explain {
        let next = match (&args.store, args.no_store) {
            (_, true) => "latlab explain reads runs from a store (this one was not kept: \
                          --no-store)"
                .to_string(),
            (Some(location), false) => format!("latlab explain last --store {location}"),
            (None, false) => "latlab explain last".to_string(),
        };
        let summary = crate::display::explain_summary(explain, &next, human);
        output::ignore_closed(human.write(&summary))?;
    }
    output::ignore_closed(human.write(&kept.said))?;
    if let Some(stats) = checkpoints {
        output::ignore_closed(human.write(&stats.summary()))?;
    }
    if !kept.errors.is_empty() {
        let _ = Human::Stderr.write(&kept.errors);
    }
    Ok(code.max(kept.code))
}
