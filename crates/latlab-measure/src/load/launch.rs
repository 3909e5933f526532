//! `launch`: a fork/exec storm of a trivial program that prints (Realfeel's launch load).

use super::{Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work};
use std::process::{Command, Stdio};

pub(super) struct Launch;

/// The launch load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "launch",
    summary: "starts a trivial program that prints, one after another (Realfeel's launch load)",
    params: &[ParamInfo {
        key: "program",
        choices: &[],
        default: "echo",
        help: "program to launch, found on PATH, run with one argument",
    }],
    work: Work {
        unit: "execs",
        rate_unit: "execs/s",
        scale: 1.0,
    },
    load: &Launch,
};

impl Load for Launch {
    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let program = params.get("program").map(String::as_str).unwrap_or("echo");
        let launch = || {
            Command::new(program)
                .arg("latlab launch load")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        };
        launch().map_err(|e| LoadError::Failed(format!("cannot run {program}: {e}")))?;
        ctx.ready();
        while !ctx.stopped() {
            if launch().is_ok() {
                ctx.count(0, 1);
            }
        }
        Ok(())
    }
}
