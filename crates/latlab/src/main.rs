//! latlab: a real-time latency laboratory for Linux.
//!
//! This file only wires: parse the command line, run the command, map the outcome to
//! an exit code. Everything else lives in modules.

mod cli;
mod cmd;
mod display;
mod stop;
mod terminal;

// What a run is made of lives in the library; the commands name it as their own.
use latlab_session::{error, keep, listen, output, store};

use error::exit;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    // A load worker's threads allocate as they work: it keeps its own malloc arenas.
    if let Some(code) = latlab_measure::load::worker::main_if_worker(&args) {
        return ExitCode::from(code);
    }
    latlab_rt::memory::share_one_malloc_arena();
    let args = cli::expand_percentile_flags(args);
    let cli = match cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    terminal::choose_colour(cli.color);
    terminal::choose_layout(cli.command.layout());
    let result = match cli.command {
        cli::Command::Run(run) => cmd::run::execute(&run),
        cli::Command::Cyclictest(c) => match latlab_session::cyclictest::translate(&c.args) {
            Err(e) => Err(error::CliError::usage("cyclictest", e)),
            Ok(t) => {
                eprintln!("latlab: as `{}`", t.command());
                t.notes.iter().for_each(|n| eprintln!("latlab:   {n}"));
                let args = ["latlab", "run"].iter().map(|a| a.into());
                match cli::parse(
                    &args
                        .chain(t.run.iter().map(|a| a.into()))
                        .collect::<Vec<_>>(),
                ) {
                    Ok(cli::Cli {
                        command: cli::Command::Run(run),
                        ..
                    }) => cmd::run::execute(&run),
                    Ok(_) => unreachable!("parsed as `latlab run`"),
                    Err(e) => Err(error::CliError::usage("cyclictest", e.to_string())),
                }
            }
        },
        cli::Command::Runs(runs) => cmd::runs::execute(&runs),
        cli::Command::Show(show) => cmd::show::execute(&show),
        cli::Command::Explain(explain) => cmd::explain::execute(&explain),
        cli::Command::Rm(rm) => cmd::rm::execute(&rm),
        cli::Command::Prune(prune) => cmd::rm::prune(&prune),
        cli::Command::Push(push) => cmd::push::execute(&push),
        cli::Command::Attach(attach) => cmd::attach::execute(&attach),
        cli::Command::Export(export) => cmd::export::execute(&export),
        cli::Command::Compare(compare) => cmd::compare::execute(&compare),
        cli::Command::Report(report) => cmd::report::execute(&report),
        cli::Command::Trend(trend) => cmd::trend::execute(&trend),
        cli::Command::Serve(serve) => cmd::serve::execute(&serve),
        cli::Command::Import(import) => cmd::import::execute(&import),
        cli::Command::Check(check) => cmd::check::execute(&check),
        cli::Command::Methods(_) => cmd::methods::execute(),
        cli::Command::Probes(p) => cmd::probes::execute(p.long),
        cli::Command::Loads(_) => cmd::loads::execute(),
        cli::Command::Scenarios(s) => match s.words.as_slice() {
            [] => cmd::scenarios::execute(None),
            [show, name] if show == "show" => cmd::scenarios::execute(Some(name)),
            _ => Err(error::CliError::usage(
                "scenarios",
                "write `latlab scenarios` or `latlab scenarios show NAME`",
            )),
        },
        cli::Command::Completions(c) => cmd::completions::execute(&c),
        cli::Command::Man(m) => cmd::man::execute(&m),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if e.code == exit::OK => ExitCode::SUCCESS,
        Err(e) => {
            // Messages quote scenario and result files, which may hold escapes.
            let message = e.to_string();
            eprintln!(
                "latlab: error: {}",
                latlab_model::text::terminal_safe_lines(&message)
            );
            ExitCode::from(e.code)
        }
    }
}
