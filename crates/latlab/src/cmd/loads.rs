//! `latlab loads`, and the hidden `latlab __load` that runs one load.

use crate::cli::LoadWorkerArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::facts::parse_kernel_cpu_list;
use latlab_measure::load::{describe_params, worker, REGISTRY};

/// Lists every load with its description and parameters.
pub fn execute() -> Result<u8, CliError> {
    let mut text = String::new();
    for load in REGISTRY {
        text.push_str(&format!(
            "{:<10} {}\n{:<10} rate in {}; parameters: {}\n",
            load.name,
            load.summary,
            "",
            load.work.rate_unit,
            describe_params(load)
        ));
    }
    text.push_str(
        "\nUse: latlab run --load NAME[:key=value,...] (repeatable), --load-cpus LIST.\n",
    );
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}

/// Runs one load in this process until it is told to stop.
pub fn worker(args: &LoadWorkerArgs) -> u8 {
    let cpus = parse_kernel_cpu_list(&args.cpus);
    worker::worker_main(&args.spec, &args.dir, &cpus) as u8
}
